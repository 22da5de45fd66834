/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/session-manager/tree-traversal.test.ts,
 * at commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT), run through the SessionManager adapter
 * on each backend. pi's `createBranchedSession` replaces its session with the path; here it is a
 * fork (a new session, the source unchanged), and pi's checks of the file it writes become checks
 * of the JSONL backend's entry log. Unknown ids fail with our error codes where pi throws. The
 * `usage` a compaction and a branch summary carry, and the left leaf as a summary's `fromId`, come
 * from the same file in earendil-works/pi as stored at commit
 * 1c78a971511cdb21ed142aa8aacbd249089c60d1 (pi 1.6's SessionManager takes them).
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { CustomEntry } from "../../../src/core/entries";
import { expectCode } from "../../conformance/storage";
import { backends } from "../backends";
import { inMemory } from "../pi-adapter";
import { assistantMsg, userMsg } from "../pi-messages";

const text = (message: unknown) => (message as { content: Array<{ text: string }> }).content[0]?.text;

/** What a summarizer's call cost, as pi 1.6 keeps it on a compaction and a branch summary. */
const usage = {
  input: 10,
  output: 20,
  cacheRead: 30,
  cacheWrite: 40,
  totalTokens: 100,
  cost: { input: 0.1, output: 0.2, cacheRead: 0.3, cacheWrite: 0.4, total: 1 },
};

for (const backend of backends()) {
  describe(`SessionManager append and tree traversal (${backend.name})`, () => {
    describe("append operations", () => {
      it("appendMessage creates entry with correct parentId chain", async () => {
        const session = await inMemory(backend);

        const id1 = await session.appendMessage(userMsg("first"));
        const id2 = await session.appendMessage(assistantMsg("second"));
        const id3 = await session.appendMessage(userMsg("third"));

        const entries = await session.getEntries();
        expect(entries).toHaveLength(3);

        expect(entries[0]?.id).toBe(id1);
        expect(entries[0]?.parentId).toBeNull();
        expect(entries[0]?.type).toBe("message");

        expect(entries[1]?.id).toBe(id2);
        expect(entries[1]?.parentId).toBe(id1);

        expect(entries[2]?.id).toBe(id3);
        expect(entries[2]?.parentId).toBe(id2);
      });

      it("appendThinkingLevelChange integrates into tree", async () => {
        const session = await inMemory(backend);

        const msgId = await session.appendMessage(userMsg("hello"));
        const thinkingId = await session.appendThinkingLevelChange("high");
        await session.appendMessage(assistantMsg("response"));

        const entries = await session.getEntries();
        expect(entries).toHaveLength(3);

        const thinkingEntry = entries.find((e) => e.type === "thinking_level_change");
        expect(thinkingEntry).toBeDefined();
        expect(thinkingEntry?.id).toBe(thinkingId);
        expect(thinkingEntry?.parentId).toBe(msgId);

        expect(entries[2]?.parentId).toBe(thinkingId);
      });

      it("appendModelChange integrates into tree", async () => {
        const session = await inMemory(backend);

        const msgId = await session.appendMessage(userMsg("hello"));
        const modelId = await session.appendModelChange("openai", "gpt-4");
        await session.appendMessage(assistantMsg("response"));

        const entries = await session.getEntries();
        const modelEntry = entries.find((e) => e.type === "model_change");
        expect(modelEntry).toBeDefined();
        expect(modelEntry?.id).toBe(modelId);
        expect(modelEntry?.parentId).toBe(msgId);
        if (modelEntry?.type === "model_change") {
          expect(modelEntry.provider).toBe("openai");
          expect(modelEntry.modelId).toBe("gpt-4");
        }

        expect(entries[2]?.parentId).toBe(modelId);
      });

      it("appendCompaction integrates into tree", async () => {
        const session = await inMemory(backend);

        const id1 = await session.appendMessage(userMsg("1"));
        const id2 = await session.appendMessage(assistantMsg("2"));
        const compactionId = await session.appendCompaction("summary", id1, 1000, undefined, false, usage);
        await session.appendMessage(userMsg("3"));

        const entries = await session.getEntries();
        const compactionEntry = entries.find((e) => e.type === "compaction");
        expect(compactionEntry).toBeDefined();
        expect(compactionEntry?.id).toBe(compactionId);
        expect(compactionEntry?.parentId).toBe(id2);
        if (compactionEntry?.type === "compaction") {
          expect(compactionEntry.summary).toBe("summary");
          expect(compactionEntry.firstKeptEntryId).toBe(id1);
          expect(compactionEntry.tokensBefore).toBe(1000);
          expect(compactionEntry.usage).toEqual(usage);
        }

        expect(entries[3]?.parentId).toBe(compactionId);
      });

      it("appendCustomEntry integrates into tree", async () => {
        const session = await inMemory(backend);

        const msgId = await session.appendMessage(userMsg("hello"));
        const customId = await session.appendCustomEntry("my_data", { key: "value" });
        await session.appendMessage(assistantMsg("response"));

        const entries = await session.getEntries();
        const customEntry = entries.find((e) => e.type === "custom") as CustomEntry;
        expect(customEntry).toBeDefined();
        expect(customEntry.id).toBe(customId);
        expect(customEntry.parentId).toBe(msgId);
        expect(customEntry.customType).toBe("my_data");
        expect(customEntry.data).toEqual({ key: "value" });

        expect(entries[2]?.parentId).toBe(customId);
      });

      it("leaf pointer advances after each append", async () => {
        const session = await inMemory(backend);

        expect(await session.getLeafId()).toBeNull();

        const id1 = await session.appendMessage(userMsg("1"));
        expect(await session.getLeafId()).toBe(id1);

        const id2 = await session.appendMessage(assistantMsg("2"));
        expect(await session.getLeafId()).toBe(id2);

        const id3 = await session.appendThinkingLevelChange("high");
        expect(await session.getLeafId()).toBe(id3);
      });
    });

    describe("getPath", () => {
      it("returns empty array for empty session", async () => {
        const session = await inMemory(backend);
        expect(await session.getBranch()).toEqual([]);
      });

      it("returns single entry path", async () => {
        const session = await inMemory(backend);
        const id = await session.appendMessage(userMsg("hello"));

        const path = await session.getBranch();
        expect(path).toHaveLength(1);
        expect(path[0]?.id).toBe(id);
      });

      it("returns full path from root to leaf", async () => {
        const session = await inMemory(backend);

        const id1 = await session.appendMessage(userMsg("1"));
        const id2 = await session.appendMessage(assistantMsg("2"));
        const id3 = await session.appendThinkingLevelChange("high");
        const id4 = await session.appendMessage(userMsg("3"));

        const path = await session.getBranch();
        expect(path).toHaveLength(4);
        expect(path.map((e) => e.id)).toEqual([id1, id2, id3, id4]);
      });

      it("returns path from specified entry to root", async () => {
        const session = await inMemory(backend);

        const id1 = await session.appendMessage(userMsg("1"));
        const id2 = await session.appendMessage(assistantMsg("2"));
        await session.appendMessage(userMsg("3"));
        await session.appendMessage(assistantMsg("4"));

        const path = await session.getBranch(id2);
        expect(path).toHaveLength(2);
        expect(path.map((e) => e.id)).toEqual([id1, id2]);
      });
    });

    describe("getTree", () => {
      it("returns empty array for empty session", async () => {
        const session = await inMemory(backend);
        expect(await session.getTree()).toEqual([]);
      });

      it("returns single root for linear session", async () => {
        const session = await inMemory(backend);

        const id1 = await session.appendMessage(userMsg("1"));
        const id2 = await session.appendMessage(assistantMsg("2"));
        const id3 = await session.appendMessage(userMsg("3"));

        const tree = await session.getTree();
        expect(tree).toHaveLength(1);

        const root = tree[0];
        expect(root?.entry.id).toBe(id1);
        expect(root?.children).toHaveLength(1);
        expect(root?.children[0]?.entry.id).toBe(id2);
        expect(root?.children[0]?.children).toHaveLength(1);
        expect(root?.children[0]?.children[0]?.entry.id).toBe(id3);
        expect(root?.children[0]?.children[0]?.children).toHaveLength(0);
      });

      it("returns tree with branches after branch", async () => {
        const session = await inMemory(backend);

        // Build: 1 -> 2 -> 3
        const id1 = await session.appendMessage(userMsg("1"));
        const id2 = await session.appendMessage(assistantMsg("2"));
        const id3 = await session.appendMessage(userMsg("3"));

        // Branch from id2, add new path: 2 -> 4
        await session.branch(id2);
        const id4 = await session.appendMessage(userMsg("4-branch"));

        const tree = await session.getTree();
        expect(tree).toHaveLength(1);

        const root = tree[0];
        expect(root?.entry.id).toBe(id1);
        expect(root?.children).toHaveLength(1);

        const node2 = root?.children[0];
        expect(node2?.entry.id).toBe(id2);
        expect(node2?.children).toHaveLength(2); // id3 and id4 are siblings

        const childIds = node2?.children.map((c) => c.entry.id).sort();
        expect(childIds).toEqual([id3, id4].sort());
      });

      it("handles multiple branches at same point", async () => {
        const session = await inMemory(backend);

        await session.appendMessage(userMsg("root"));
        const id2 = await session.appendMessage(assistantMsg("response"));

        // Branch A
        await session.branch(id2);
        const idA = await session.appendMessage(userMsg("branch-A"));

        // Branch B
        await session.branch(id2);
        const idB = await session.appendMessage(userMsg("branch-B"));

        // Branch C
        await session.branch(id2);
        const idC = await session.appendMessage(userMsg("branch-C"));

        const tree = await session.getTree();
        const node2 = tree[0]?.children[0];
        expect(node2?.entry.id).toBe(id2);
        expect(node2?.children).toHaveLength(3);

        const branchIds = node2?.children.map((c) => c.entry.id).sort();
        expect(branchIds).toEqual([idA, idB, idC].sort());
      });

      it("handles deep branching", async () => {
        const session = await inMemory(backend);

        // Main path: 1 -> 2 -> 3 -> 4
        await session.appendMessage(userMsg("1"));
        const id2 = await session.appendMessage(assistantMsg("2"));
        const id3 = await session.appendMessage(userMsg("3"));
        await session.appendMessage(assistantMsg("4"));

        // Branch from 2: 2 -> 5 -> 6
        await session.branch(id2);
        const id5 = await session.appendMessage(userMsg("5"));
        await session.appendMessage(assistantMsg("6"));

        // Branch from 5: 5 -> 7
        await session.branch(id5);
        await session.appendMessage(userMsg("7"));

        const tree = await session.getTree();

        // Verify structure
        const node2 = tree[0]?.children[0];
        expect(node2?.children).toHaveLength(2); // id3 and id5

        const node5 = node2?.children.find((c) => c.entry.id === id5);
        expect(node5?.children).toHaveLength(2); // id6 and id7

        const node3 = node2?.children.find((c) => c.entry.id === id3);
        expect(node3?.children).toHaveLength(1); // id4
      });
    });

    describe("branch", () => {
      it("moves leaf pointer to specified entry", async () => {
        const session = await inMemory(backend);

        const id1 = await session.appendMessage(userMsg("1"));
        await session.appendMessage(assistantMsg("2"));
        const id3 = await session.appendMessage(userMsg("3"));

        expect(await session.getLeafId()).toBe(id3);

        await session.branch(id1);
        expect(await session.getLeafId()).toBe(id1);
      });

      it("is not_found for a non-existent entry (pi throws 'Entry nonexistent not found')", async () => {
        const session = await inMemory(backend);
        const id = await session.appendMessage(userMsg("hello"));

        await expectCode(session.branch("nonexistent"), "not_found");
        expect(await session.getLeafId()).toBe(id);
      });

      it("new appends become children of branch point", async () => {
        const session = await inMemory(backend);

        const id1 = await session.appendMessage(userMsg("1"));
        await session.appendMessage(assistantMsg("2"));

        await session.branch(id1);
        const id3 = await session.appendMessage(userMsg("branched"));

        const entries = await session.getEntries();
        const branchedEntry = entries.find((e) => e.id === id3);
        expect(branchedEntry?.parentId).toBe(id1); // sibling of id2
      });
    });

    describe("branchWithSummary", () => {
      it("inserts branch summary and advances leaf", async () => {
        const session = await inMemory(backend);

        const id1 = await session.appendMessage(userMsg("1"));
        await session.appendMessage(assistantMsg("2"));
        const id3 = await session.appendMessage(userMsg("3"));

        const summaryId = await session.branchWithSummary(
          id1,
          "Summary of abandoned work",
          undefined,
          false,
          usage,
        );

        expect(await session.getLeafId()).toBe(summaryId);

        const entries = await session.getEntries();
        const summaryEntry = entries.find((e) => e.type === "branch_summary");
        expect(summaryEntry).toBeDefined();
        expect(summaryEntry?.parentId).toBe(id1);
        if (summaryEntry?.type === "branch_summary") {
          expect(summaryEntry.summary).toBe("Summary of abandoned work");
          expect(summaryEntry.usage).toEqual(usage);
          expect(summaryEntry.fromId).toBe(id3);
        }
      });

      it("is parent_not_found for a non-existent entry (pi throws 'Entry nonexistent not found')", async () => {
        const session = await inMemory(backend);
        await session.appendMessage(userMsg("hello"));

        await expectCode(session.branchWithSummary("nonexistent", "summary"), "parent_not_found");
        expect(await session.getEntries()).toHaveLength(1);
      });
    });

    describe("getLeafEntry", () => {
      it("returns undefined for empty session", async () => {
        const session = await inMemory(backend);
        expect(await session.getLeafEntry()).toBeUndefined();
      });

      it("returns current leaf entry", async () => {
        const session = await inMemory(backend);

        await session.appendMessage(userMsg("1"));
        const id2 = await session.appendMessage(assistantMsg("2"));

        const leaf = await session.getLeafEntry();
        expect(leaf).toBeDefined();
        expect(leaf?.id).toBe(id2);
      });
    });

    describe("getEntry", () => {
      it("returns undefined for non-existent id", async () => {
        const session = await inMemory(backend);
        expect(await session.getEntry("nonexistent")).toBeUndefined();
      });

      it("returns entry by id", async () => {
        const session = await inMemory(backend);

        const id1 = await session.appendMessage(userMsg("first"));
        const id2 = await session.appendMessage(assistantMsg("second"));

        const entry1 = await session.getEntry(id1);
        expect(entry1).toBeDefined();
        expect(entry1?.type).toBe("message");
        if (entry1?.type === "message" && entry1.message.role === "user") {
          expect(entry1.message.content).toBe("first");
        }

        const entry2 = await session.getEntry(id2);
        expect(entry2).toBeDefined();
        if (entry2?.type === "message" && entry2.message.role === "assistant") {
          expect(text(entry2.message)).toBe("second");
        }
      });
    });

    describe("buildSessionContext with branches", () => {
      it("returns messages from current branch only", async () => {
        const session = await inMemory(backend);

        // Main: 1 -> 2 -> 3
        await session.appendMessage(userMsg("msg1"));
        const id2 = await session.appendMessage(assistantMsg("msg2"));
        await session.appendMessage(userMsg("msg3"));

        // Branch from 2: 2 -> 4
        await session.branch(id2);
        await session.appendMessage(assistantMsg("msg4-branch"));

        const ctx = await session.buildSessionContext();
        expect(ctx.messages).toHaveLength(3); // msg1, msg2, msg4-branch (not msg3)

        expect((ctx.messages[0] as { content: string }).content).toBe("msg1");
        expect(text(ctx.messages[1])).toBe("msg2");
        expect(text(ctx.messages[2])).toBe("msg4-branch");
      });
    });
  });

  describe(`createBranchedSession (${backend.name})`, () => {
    it("is not_found for a non-existent entry (pi throws 'Entry nonexistent not found')", async () => {
      const session = await inMemory(backend);
      await session.appendMessage(userMsg("hello"));

      await expectCode(session.createBranchedSession("nonexistent"), "not_found");
      expect((await session.repo.list()).sessions).toHaveLength(1);
    });

    it("creates new session with path to specified leaf", async () => {
      const session = await inMemory(backend);
      const source = session.getSessionId();

      // Build: 1 -> 2 -> 3 -> 4
      const id1 = await session.appendMessage(userMsg("1"));
      const id2 = await session.appendMessage(assistantMsg("2"));
      const id3 = await session.appendMessage(userMsg("3"));
      await session.appendMessage(assistantMsg("4"));

      // Branch from 3: 3 -> 5
      await session.branch(id3);
      await session.appendMessage(userMsg("5"));

      // Create branched session from id2 (should only have 1 -> 2); pi (in memory) returns
      // undefined and replaces its session, a fork is a new session beside the source.
      const result = await session.createBranchedSession(id2);
      expect(result).not.toBe(source);

      // Session should now only have entries 1 and 2
      const entries = await session.getEntries();
      expect(entries).toHaveLength(2);
      expect(entries[0]?.id).toBe(id1);
      expect(entries[1]?.id).toBe(id2);
      expect((await (await session.repo.open(source)).getInfo()).entryCount).toBe(5);
    });

    it("extracts correct path from branched tree", async () => {
      const session = await inMemory(backend);

      // Build: 1 -> 2 -> 3
      const id1 = await session.appendMessage(userMsg("1"));
      const id2 = await session.appendMessage(assistantMsg("2"));
      await session.appendMessage(userMsg("3"));

      // Branch from 2: 2 -> 4 -> 5
      await session.branch(id2);
      const id4 = await session.appendMessage(userMsg("4"));
      const id5 = await session.appendMessage(assistantMsg("5"));

      // Create branched session from id5 (should have 1 -> 2 -> 4 -> 5)
      await session.createBranchedSession(id5);

      const entries = await session.getEntries();
      expect(entries).toHaveLength(4);
      expect(entries.map((e) => e.id)).toEqual([id1, id2, id4, id5]);
    });

    it("does not duplicate entries when forking from first user message", async () => {
      // Create a session with a couple of turns
      const session = await inMemory(backend);
      const id1 = await session.appendMessage(userMsg("first question"));
      await session.appendMessage(assistantMsg("first answer"));
      await session.appendMessage(userMsg("second question"));
      await session.appendMessage(assistantMsg("second answer"));

      // Fork from the very first user message: nothing before it, an empty session
      session.session = await session.session.fork(id1, { position: "before" });
      expect(await session.getEntries()).toEqual([]);

      // Simulate extension adding entry before assistant (like preset on turn_start)
      await session.appendCustomEntry("preset-state", { name: "plan" });

      // Now the assistant responds
      await session.appendMessage(assistantMsg("new answer"));

      // Every entry once; on files, the log holds each once and no second header.
      const entryIds = (await session.getEntries()).map((e) => e.id);
      expect(entryIds).toHaveLength(2);
      expect(new Set(entryIds).size).toBe(entryIds.length);
      const file = backend.entriesFile?.(session.repo, session.getSessionId());
      if (file) {
        const records = readFileSync(file, "utf-8")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line));
        expect(records.filter((r) => r.type === "session")).toHaveLength(0);
        const ids = records.filter((r) => r.type !== "leaf").map((r) => r.id);
        expect(ids).toEqual(entryIds);
      }
    });

    it("writes file immediately when forking from a point with assistant messages", async () => {
      const session = await inMemory(backend);
      await session.appendMessage(userMsg("first question"));
      const id2 = await session.appendMessage(assistantMsg("first answer"));
      await session.appendMessage(userMsg("second question"));
      await session.appendMessage(assistantMsg("second answer"));

      // Fork including the assistant message
      const newSession = await session.createBranchedSession(id2);
      expect(newSession).toBeDefined();

      // Written at once: on files, the log holds the path
      expect(await session.getEntries()).toHaveLength(2);
      const file = backend.entriesFile?.(session.repo, newSession);
      if (file) {
        expect(existsSync(file)).toBe(true);
        const records = readFileSync(file, "utf-8")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line));
        expect(records.filter((r) => r.type === "session")).toHaveLength(0);
        expect(records.filter((r) => r.type === "message")).toHaveLength(2);
      }
    });
  });
}
