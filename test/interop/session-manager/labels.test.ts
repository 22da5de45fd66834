/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/session-manager/labels.test.ts, at
 * commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT), run through the SessionManager adapter on
 * each backend. `createBranchedSession` is a fork here (see the adapter); one deliberate difference
 * is marked where it applies.
 */
import { describe, expect, it } from "vitest";
import type { LabelEntry } from "../../../src/core/entries";
import { expectCode } from "../../conformance/storage";
import { backends } from "../backends";
import { inMemory } from "../pi-adapter";
import { assistantMsg } from "../pi-messages";

for (const backend of backends()) {
  describe(`SessionManager labels (${backend.name})`, () => {
    it("sets and gets labels", async () => {
      const session = await inMemory(backend);

      const msgId = await session.appendMessage({ role: "user", content: "hello", timestamp: 1 });

      // No label initially
      expect(await session.getLabel(msgId)).toBeUndefined();

      // Set a label
      const labelId = await session.appendLabelChange(msgId, "checkpoint");
      expect(await session.getLabel(msgId)).toBe("checkpoint");

      // Label entry should be in entries
      const entries = await session.getEntries();
      const labelEntry = entries.find((e) => e.type === "label") as LabelEntry;
      expect(labelEntry).toBeDefined();
      expect(labelEntry.id).toBe(labelId);
      expect(labelEntry.targetId).toBe(msgId);
      expect(labelEntry.label).toBe("checkpoint");
    });

    it("clears labels with undefined", async () => {
      const session = await inMemory(backend);

      const msgId = await session.appendMessage({ role: "user", content: "hello", timestamp: 1 });

      await session.appendLabelChange(msgId, "checkpoint");
      expect(await session.getLabel(msgId)).toBe("checkpoint");

      // Clear the label
      await session.appendLabelChange(msgId, undefined);
      expect(await session.getLabel(msgId)).toBeUndefined();
    });

    it("last label wins", async () => {
      const session = await inMemory(backend);

      const msgId = await session.appendMessage({ role: "user", content: "hello", timestamp: 1 });

      await session.appendLabelChange(msgId, "first");
      await session.appendLabelChange(msgId, "second");
      await session.appendLabelChange(msgId, "third");

      expect(await session.getLabel(msgId)).toBe("third");
    });

    it("labels are included in tree nodes", async () => {
      const session = await inMemory(backend);

      const msg1Id = await session.appendMessage({ role: "user", content: "hello", timestamp: 1 });
      const msg2Id = await session.appendMessage({ ...assistantMsg("hi"), timestamp: 2 });

      await session.appendLabelChange(msg1Id, "start");
      await session.appendLabelChange(msg2Id, "response");

      const tree = await session.getTree();

      // Find the message nodes (skip label entries)
      const msg1Node = tree.find((n) => n.entry.id === msg1Id);
      expect(msg1Node?.label).toBe("start");

      // msg2 is a child of msg1
      const msg2Node = msg1Node?.children.find((n) => n.entry.id === msg2Id);
      expect(msg2Node?.label).toBe("response");
    });

    it("labels are preserved in createBranchedSession", async () => {
      const session = await inMemory(backend);

      const msg1Id = await session.appendMessage({ role: "user", content: "hello", timestamp: 1 });
      const msg2Id = await session.appendMessage({ ...assistantMsg("hi"), timestamp: 2 });

      await session.appendLabelChange(msg1Id, "important");
      await session.appendLabelChange(msg2Id, "also-important");

      // Branch from msg2: the manager moves to the new session
      await session.createBranchedSession(msg2Id);

      // Labels should be preserved
      expect(await session.getLabel(msg1Id)).toBe("important");
      expect(await session.getLabel(msg2Id)).toBe("also-important");

      // New label entries should exist
      const entries = await session.getEntries();
      const labelEntries = entries.filter((e) => e.type === "label") as LabelEntry[];
      expect(labelEntries).toHaveLength(2);
    });

    it("labels not on path are not preserved in createBranchedSession", async () => {
      const session = await inMemory(backend);

      const msg1Id = await session.appendMessage({ role: "user", content: "hello", timestamp: 1 });
      const msg2Id = await session.appendMessage({ ...assistantMsg("hi"), timestamp: 2 });
      const msg3Id = await session.appendMessage({ role: "user", content: "followup", timestamp: 3 });

      // Label all messages
      await session.appendLabelChange(msg1Id, "first");
      await session.appendLabelChange(msg2Id, "second");
      await session.appendLabelChange(msg3Id, "third");

      // Branch from msg2 (excludes msg3)
      await session.createBranchedSession(msg2Id);

      // Only labels for msg1 and msg2 should be preserved
      expect(await session.getLabel(msg1Id)).toBe("first");
      expect(await session.getLabel(msg2Id)).toBe("second");
      expect(await session.getLabel(msg3Id)).toBeUndefined();
    });

    it("labels are not included in buildSessionContext", async () => {
      const session = await inMemory(backend);

      const msgId = await session.appendMessage({ role: "user", content: "hello", timestamp: 1 });
      await session.appendLabelChange(msgId, "checkpoint");

      const ctx = await session.buildSessionContext();
      expect(ctx.messages).toHaveLength(1);
      expect(ctx.messages[0]?.role).toBe("user");
    });

    it("labeling a non-existent entry is invalid_tree (pi throws 'Entry non-existent not found')", async () => {
      const session = await inMemory(backend);

      await expectCode(session.appendLabelChange("non-existent", "label"), "invalid_tree");
      expect(await session.getEntries()).toEqual([]);
    });
  });
}
