/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/session-manager/save-entry.test.ts, at
 * commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT), run through the SessionManager adapter on
 * each backend.
 */
import { describe, expect, it } from "vitest";
import type { CustomEntry } from "../../../src/core/entries";
import { backends } from "../backends";
import { inMemory } from "../pi-adapter";
import { assistantMsg } from "../pi-messages";

for (const backend of backends()) {
  describe(`SessionManager.saveCustomEntry (${backend.name})`, () => {
    it("saves custom entries and includes them in tree traversal", async () => {
      const session = await inMemory(backend);

      // Save a message
      const msgId = await session.appendMessage({ role: "user", content: "hello", timestamp: 1 });

      // Save a custom entry
      const customId = await session.appendCustomEntry("my_data", { foo: "bar" });

      // Save another message
      const msg2Id = await session.appendMessage({ ...assistantMsg("hi"), timestamp: 2 });

      // Custom entry should be in entries
      const entries = await session.getEntries();
      expect(entries).toHaveLength(3);

      const customEntry = entries.find((e) => e.type === "custom") as CustomEntry;
      expect(customEntry).toBeDefined();
      expect(customEntry.customType).toBe("my_data");
      expect(customEntry.data).toEqual({ foo: "bar" });
      expect(customEntry.id).toBe(customId);
      expect(customEntry.parentId).toBe(msgId);

      // Tree structure should be correct
      const path = await session.getBranch();
      expect(path).toHaveLength(3);
      expect(path[0]?.id).toBe(msgId);
      expect(path[1]?.id).toBe(customId);
      expect(path[2]?.id).toBe(msg2Id);

      // buildSessionContext should work (custom entries skipped in messages)
      const ctx = await session.buildSessionContext();
      expect(ctx.messages).toHaveLength(2); // only message entries
    });
  });
}
