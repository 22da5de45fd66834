/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/session-manager/migration.test.ts, at
 * commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT). pi migrates the entries of a file in place;
 * here the same entries are a file that is imported into each backend (migrated on the way in)
 * and exported back to pi. The assistant usage in these entries has neither `totalTokens` nor
 * `cost`, as pi versions before December 2025 wrote it.
 */
import { describe, expect, it } from "vitest";
import type { TreeEntry } from "../../../src/core/entries";
import { exportPi } from "../../../src/core/pi-format";
import { backends } from "../backends";
import { PiSessionManager } from "../pi-adapter";

const assistant = {
  role: "assistant",
  content: [{ type: "text", text: "hello" }],
  api: "test",
  provider: "test",
  model: "test",
  usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
  stopReason: "stop",
  timestamp: 2,
};

function file(records: object[]): string {
  return `${records.map((r) => JSON.stringify(r)).join("\n")}\n`;
}

for (const backend of backends()) {
  describe(`migrateSessionEntries (${backend.name})`, () => {
    it("should add id/parentId to v1 entries", async () => {
      const manager = await PiSessionManager.open(
        await backend.repo(),
        file([
          { type: "session", id: "sess-1", timestamp: "2025-01-01T00:00:00Z", cwd: "/tmp" },
          {
            type: "message",
            timestamp: "2025-01-01T00:00:01Z",
            message: { role: "user", content: "hi", timestamp: 1 },
          },
          { type: "message", timestamp: "2025-01-01T00:00:02Z", message: assistant },
        ]),
      );

      // The file pi gets back is version 3 (v3 is current after hookMessage->custom migration)
      let exported = "";
      for await (const line of exportPi(manager.session)) exported += line;
      expect(JSON.parse(exported.split("\n")[0] as string).version).toBe(3);

      // Entries should have id/parentId
      const [msg1, msg2] = (await manager.getEntries()) as [TreeEntry, TreeEntry];

      expect(msg1.id).toBeDefined();
      expect(msg1.id.length).toBe(8);
      expect(msg1.parentId).toBeNull();

      expect(msg2.id).toBeDefined();
      expect(msg2.id.length).toBe(8);
      expect(msg2.parentId).toBe(msg1.id);
      // The usage is kept exactly as written.
      expect(msg2.type === "message" && msg2.message).toEqual(assistant);
    });

    it("should be idempotent (skip already migrated)", async () => {
      const manager = await PiSessionManager.open(
        await backend.repo(),
        file([
          { type: "session", id: "sess-1", version: 2, timestamp: "2025-01-01T00:00:00Z", cwd: "/tmp" },
          {
            type: "message",
            id: "abc12345",
            parentId: null,
            timestamp: "2025-01-01T00:00:01Z",
            message: { role: "user", content: "hi", timestamp: 1 },
          },
          {
            type: "message",
            id: "def67890",
            parentId: "abc12345",
            timestamp: "2025-01-01T00:00:02Z",
            message: assistant,
          },
        ]),
      );

      // IDs should be unchanged
      const entries = await manager.getEntries();
      expect(entries[0]?.id).toBe("abc12345");
      expect(entries[1]?.id).toBe("def67890");
      expect(entries[1]?.parentId).toBe("abc12345");
    });
  });
}
