import { describe, expect, it } from "vitest";
import type { EntryInput } from "../../src/core/entries";
import { SessionError } from "../../src/core/errors";
import { newId } from "../../src/core/ids";
import type { AgentMessage } from "../../src/core/messages";
import { parsePi } from "../../src/core/pi-format";
import type { SessionRepo } from "../../src/core/repo";
import type { Session } from "../../src/core/session";
import { assistant, toolResult, user } from "./fixtures";
import { expectCode } from "./storage";

/*
 * pi 1.6's entries as every backend must read them: usage and context edits, system messages,
 * compactions that carry the replayed system message or keep nothing, and the bad input pi 1.6
 * writes none of. Part of `storageConformance`, so every backend runs it.
 */

async function entryCount(session: Session): Promise<number> {
  let n = 0;
  for await (const _ of session.allEntries()) n++;
  return n;
}

const usage = {
  input: 1,
  output: 2,
  cacheRead: 3,
  cacheWrite: 0,
  totalTokens: 6,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

function system(sections: Record<string, string | null>, content = ""): AgentMessage {
  return { role: "system", content, sections, timestamp: 7 };
}

export function pi16Conformance(makeRepo: () => Promise<SessionRepo>) {
  const fresh = async () => (await makeRepo()).create({ id: `p-${newId()}` });

  describe("pi 1.6 entries", () => {
    it("keeps a usage entry as a tree node that adds nothing to the context", async () => {
      const session = await fresh();
      const q = user("q");
      await session.appendMessage(q);
      const id = await session.appendUsage({
        kind: "cache_warm",
        provider: "p",
        model: "m",
        usage,
        note: "warm",
      });
      expect(await session.getLeafId()).toBe(id);
      expect(await session.getEntry(id)).toMatchObject({
        type: "usage",
        kind: "cache_warm",
        usage,
        note: "warm",
      });
      const context = await session.buildContext();
      expect(context.messages).toEqual([q]);
      expect(context.model).toBeNull();
    });

    it("applies the latest context edit of a target on the branch; null leaves it out; the entry stays as it was", async () => {
      const session = await fresh();
      const q = user("secret question");
      const a = assistant("answer");
      const r = toolResult("c1", "read", "long output");
      const qId = await session.appendMessage(q);
      const aId = await session.appendMessage(a);
      const rId = await session.appendMessage(r);
      await session.appendContextEdit(qId, { content: "redacted question" });
      await session.appendContextEdit(aId, { content: "short answer" });
      await session.appendContextEdit(rId, null);
      const second = await session.appendContextEdit(qId, {
        content: [{ type: "text", text: "final question" }],
      });
      const context = await session.buildContext();
      expect(context.messages).toEqual([
        { ...q, content: [{ type: "text", text: "final question" }] },
        // A string for an assistant's content becomes one text block.
        { ...a, content: [{ type: "text", text: "short answer" }] },
      ]);
      expect(await session.getEntry(qId)).toMatchObject({ message: q });
      expect(await session.getLeafId()).toBe(second);
      // Before the edits, the context is as it was.
      expect((await session.buildContext({ leafId: rId })).messages).toEqual([q, a, r]);
    });

    it("applies no edit made on another branch", async () => {
      const session = await fresh();
      const q = user("q");
      const qId = await session.appendMessage(q);
      const a = assistant("a");
      const aId = await session.appendMessage(a);
      await session.appendContextEdit(qId, null);
      const other = assistant("other");
      await session.appendMessage(other, { parentId: qId });
      expect((await session.buildContext()).messages).toEqual([q, other]);
      expect((await session.buildContext({ leafId: aId })).messages).toEqual([q, a]);
    });

    it("keeps system messages in the context; a compaction leads with its system message and drops kept ones", async () => {
      const session = await fresh();
      const s1 = system({ preamble: "You help." });
      const q = user("q");
      await session.appendMessage(s1);
      const qId = await session.appendMessage(q);
      const s2 = system({ skills: "<skills/>" });
      await session.appendMessage(s2);
      const a = assistant("a");
      await session.appendMessage(a);
      expect((await session.buildContext()).messages).toEqual([s1, q, s2, a]);
      const replayed = system({ preamble: "You help.", skills: "<skills/>" });
      const ts = "2026-11-01T00:00:00.000Z";
      await session.appendCompaction(
        { summary: "S", tokensBefore: 10, firstKeptEntryId: qId, systemMessage: replayed } as never,
        { timestamp: ts },
      );
      expect((await session.buildContext()).messages).toEqual([
        replayed,
        { role: "compactionSummary", summary: "S", tokensBefore: 10, timestamp: Date.parse(ts) },
        q,
        a,
      ]);
    });

    it("compacts a branch with system messages into a compaction that carries their replay", async () => {
      const session = await fresh();
      await session.appendMessage(system({ preamble: "P", tools: "T" }, "base"));
      for (let i = 0; i < 6; i++) {
        await session.appendMessage(user(`question ${i} ${"w ".repeat(80)}`));
        await session.appendMessage(assistant(`answer ${i} ${"w ".repeat(80)}`));
      }
      await session.appendMessage(system({ tools: null, extra: "X" }, "more"));
      await session.appendMessage(user("last"));
      const compaction = await session.compact({ summary: "S", keepRecentTokens: 100 });
      expect(compaction.systemMessage).toMatchObject({
        role: "system",
        content: "base\n\nmore",
        sections: { preamble: "P", extra: "X" },
      });
      const context = await session.buildContext();
      expect(context.messages[0]).toEqual(compaction.systemMessage);
      expect(context.messages[1]).toMatchObject({ role: "compactionSummary", summary: "S" });
      expect(context.messages.filter((m) => m.role === "system")).toHaveLength(1);
    });

    it("keeps nothing before a compaction that names itself as its first kept entry", async () => {
      const session = await fresh();
      await session.appendMessage(user("q"));
      await session.appendMessage(assistant("a"));
      const id = `c-${newId()}`;
      const ts = "2026-11-01T00:00:00.000Z";
      await session.appendEntry({
        type: "compaction",
        id,
        timestamp: ts,
        summary: "all of it",
        tokensBefore: 5,
        firstKeptEntryId: id,
      });
      const after = user("next");
      await session.appendMessage(after);
      expect((await session.buildContext()).messages).toEqual([
        { role: "compactionSummary", summary: "all of it", tokensBefore: 5, timestamp: Date.parse(ts) },
        after,
      ]);
    });

    it("refuses an edit whose target is missing, off the branch or not an editable message, writing nothing", async () => {
      const session = await fresh();
      const q = await session.appendMessage(user("q"));
      const a = await session.appendMessage(assistant("a"));
      await session.appendMessage(assistant("other"), { parentId: q });
      const model = await session.appendModelChange("p", "m");
      const before = await entryCount(session);
      for (const target of ["missing", a, model]) {
        const error = await expectCode(session.appendContextEdit(target, null), "invalid_tree");
        expect(error.details).toMatchObject({ targetId: target });
      }
      await expectCode(
        session.appendEntry({ type: "context_edit", targetId: q, replacement: { content: 42 } } as never),
        "invalid_request",
      );
      await expectCode(
        session.appendEntry({ type: "context_edit", targetId: q } as never),
        "invalid_request",
      );
      expect(await entryCount(session)).toBe(before);
    });

    it("refuses a usage entry without its fields, writing nothing", async () => {
      const session = await fresh();
      await session.appendMessage(user("q"));
      const bad: unknown[] = [
        { type: "usage", provider: "p", model: "m", usage },
        { type: "usage", kind: "k", provider: "p", model: "m" },
        { type: "usage", kind: "k", provider: "p", model: "m", usage: { input: 1 } },
      ];
      for (const entry of bad) await expectCode(session.appendEntry(entry as EntryInput), "invalid_request");
      expect(await entryCount(session)).toBe(1);
    });

    it("imports a pi 1.6 file's bad input as pi 1.6 reads it, and refuses what pi's stats cannot read", async () => {
      const repo = await makeRepo();
      const id = `pi-${newId()}`;
      const head = { type: "session", version: 3, id, timestamp: "2026-11-01T00:00:00.000Z", cwd: "/w" };
      const at = (n: number) => new Date(Date.UTC(2026, 10, 1, 0, 0, n)).toISOString();
      const lines = [
        head,
        { type: "message", id: "u1", parentId: null, timestamp: at(1), message: user("q") },
        { type: "message", id: "a1", parentId: "u1", timestamp: at(2), message: assistant("a") },
        { type: "message", id: "x1", parentId: "u1", timestamp: at(3), message: user("elsewhere") },
        // Off its branch, naming nothing, naming a model change: kept, changing nothing.
        {
          type: "context_edit",
          id: "e1",
          parentId: "a1",
          timestamp: at(4),
          targetId: "x1",
          replacement: null,
        },
        {
          type: "context_edit",
          id: "e2",
          parentId: "e1",
          timestamp: at(5),
          targetId: "gone",
          replacement: null,
        },
        { type: "model_change", id: "m1", parentId: "e2", timestamp: at(6), provider: "p", modelId: "m" },
        {
          type: "context_edit",
          id: "e3",
          parentId: "m1",
          timestamp: at(7),
          targetId: "m1",
          replacement: null,
        },
        {
          type: "message",
          id: "s1",
          parentId: "e3",
          timestamp: at(8),
          message: { role: "system", content: "base", sections: { ok: "yes", odd: 42 }, timestamp: 8 },
        },
        {
          type: "message",
          id: "n1",
          parentId: "s1",
          timestamp: at(9),
          message: { role: "user", content: null, timestamp: 9 },
        },
      ];
      const file = parsePi(`${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
      expect(file.warnings.map((w) => w.line)).toEqual([6, 8, 9, 10]);
      const session = await repo.importSession(file);
      const context = await session.buildContext();
      const messageOf = (n: number) => (lines[n] as { message: AgentMessage }).message;
      // The odd section is kept as written (pi renders only string sections); null content reads as none.
      expect(context.messages).toEqual([
        messageOf(1),
        messageOf(2),
        messageOf(8),
        { role: "user", content: [], timestamp: 9 },
      ]);
      const noFields = [head, { type: "usage", id: "g1", parentId: null, timestamp: at(1), kind: "k" }];
      let caught: unknown;
      try {
        parsePi(`${noFields.map((line) => JSON.stringify(line)).join("\n")}\n`);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(SessionError);
      expect((caught as SessionError).code).toBe("invalid_request");
      expect((caught as SessionError).details).toMatchObject({ line: 2 });
    });
  });
}
