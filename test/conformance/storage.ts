import { describe, expect, it } from "vitest";
import { parseClaudeCode } from "../../src/core/claude-code-format";
import type { EntryInput } from "../../src/core/entries";
import type { ErrorCode } from "../../src/core/errors";
import { SessionError } from "../../src/core/errors";
import { newId } from "../../src/core/ids";
import { headerBytes } from "../../src/core/info";
import { parsePi } from "../../src/core/pi-format";
import { contextForModel } from "../../src/core/providers/convert";
import type { SessionRepo } from "../../src/core/repo";
import type { Session } from "../../src/core/session";
import type { TreeNode } from "../../src/core/tree";
import { treeToJson, walkTree } from "../../src/core/tree";
import { assistant, ClaudeCodeLines, messageEntry, PiFile, user } from "./fixtures";
import { pi16Conformance } from "./pi16";

/*
 * One set of behavioural cases for every backend: memory, JSONL files, the Durable Object's
 * SQLite storage, and the HTTP client. A backend passes by running `storageConformance` with a
 * factory for its repo.
 */

export interface ConformanceOptions {
  /** Run the 100,000-entry chain case (slow backends may lower `deepChain`). */
  deepChain?: number;
}

export async function expectCode(promise: Promise<unknown>, code: ErrorCode): Promise<SessionError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a SessionError with code ${code}`).toBeInstanceOf(SessionError);
  expect((caught as SessionError).code).toBe(code);
  return caught as SessionError;
}

async function count(session: Session): Promise<number> {
  let n = 0;
  for await (const _ of session.allEntries()) n++;
  return n;
}

/** Appends `n` user/assistant messages as a chain in batches; returns their ids. */
async function chain(session: Session, n: number, batch = 1000): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += batch) {
    const entries: EntryInput[] = [];
    for (let j = i; j < Math.min(n, i + batch); j++) {
      entries.push(messageEntry(j % 2 === 0 ? user(`u${j}`) : assistant(`a${j}`)));
    }
    const result = await session.appendEntries(entries);
    ids.push(...result.entries.map((e) => e.id));
  }
  return ids;
}

export function storageConformance(
  name: string,
  makeRepo: () => Promise<SessionRepo>,
  options: ConformanceOptions = {},
) {
  const deepChain = options.deepChain ?? 100_000;

  describe(`${name}: storage conformance`, () => {
    const fresh = async (repo?: SessionRepo) => (repo ?? (await makeRepo())).create({ id: `s-${newId()}` });

    describe("refusing what the service refuses", () => {
      it("refuses bad entry-type filters, session ids, create options, header changes and fork targets alike, writing nothing", async () => {
        const repo = await makeRepo();
        const session = await repo.create({ id: `s-${newId()}`, name: "first" });
        await session.appendMessage(user("hello"));
        await expectCode(session.getEntries({ type: [] }), "invalid_request");
        await expectCode(session.getEntries({ type: "bogus" as "message" }), "invalid_request");
        await expectCode(repo.open("bad id!"), "invalid_request");
        await expectCode(session.fork("bad id!"), "invalid_request");
        const id = `s-${newId()}`;
        await expectCode(repo.create({ id, name: "x".repeat(300_000) }), "invalid_request");
        await expectCode(repo.open(id), "not_found");
        await expectCode(session.updateHeader({ bogus: 1 } as never), "invalid_request");
        expect(await count(session)).toBe(1);
        expect(await session.getHeader()).toMatchObject({ name: "first", metadata: {} });
      });

      it("keeps the header's name as created while a session_info entry names the session", async () => {
        const session = await fresh();
        await session.updateHeader({ metadata: { a: 1 } });
        const repo = await makeRepo();
        const named = await repo.create({ id: `s-${newId()}`, name: "first" });
        await named.appendSessionName("renamed");
        expect((await named.getHeader()).name).toBe("first");
        expect(await named.getName()).toBe("renamed");
        expect((await session.getHeader()).metadata).toEqual({ a: 1 });
      });
    });

    describe("appending", () => {
      it("chains each entry under the leaf and moves the leaf to it", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("hi"));
        const b = await session.appendMessage(assistant("hello"));
        const ea = await session.getEntry(a);
        const eb = await session.getEntry(b);
        expect(ea?.parentId).toBeNull();
        expect(eb?.parentId).toBe(a);
        expect(await session.getLeafId()).toBe(b);
        expect(eb && ea && eb.seq > ea.seq).toBe(true);
        expect(eb?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
        expect((await session.getBranch()).map((e) => e.id)).toEqual([a, b]);
      });

      it("keeps client ids, timestamps and unknown fields exactly", async () => {
        const session = await fresh();
        const message = {
          role: "bashExecution",
          command: "ls",
          output: "a\nb",
          extra: { nested: [1, "two", null] },
        };
        const stored = await session.appendEntry({
          type: "message",
          id: "abc123ef",
          timestamp: "2025-06-01T10:00:00.000Z",
          message,
          annotation: "kept",
        } as EntryInput);
        expect(stored).toMatchObject({
          id: "abc123ef",
          timestamp: "2025-06-01T10:00:00.000Z",
          annotation: "kept",
        });
        const read = await session.getEntry("abc123ef");
        expect(read).toEqual(stored);
        expect(read?.type === "message" && read.message).toEqual(message);
      });

      it("starts a branch under an explicit older parent", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"));
        const b = await session.appendMessage(assistant("first answer"));
        const c = await session.appendMessage(assistant("second answer"), { parentId: a });
        expect(await session.getLeafId()).toBe(c);
        expect((await session.getBranch()).map((e) => e.id)).toEqual([a, c]);
        expect((await session.getBranch(b)).map((e) => e.id)).toEqual([a, b]);
        const [root] = await session.getTree();
        expect(root?.id).toBe(a);
        expect(root?.children.map((n) => n.id)).toEqual([b, c]);
        expect(root?.children[0]?.role).toBe("assistant");
      });

      it("accepts an explicit null parent as a new root", async () => {
        const session = await fresh();
        await session.appendMessage(user("one"));
        const b = await session.appendMessage(user("two"), { parentId: null });
        expect((await session.getBranch()).map((e) => e.id)).toEqual([b]);
        expect((await session.getTree()).length).toBe(2);
      });

      it("refuses a parent that does not exist or is a leaf record, writing nothing", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"));
        await expectCode(session.appendMessage(user("x"), { parentId: "missing" }), "parent_not_found");
        const record = await session.setLeafId(a);
        await expectCode(session.appendMessage(user("x"), { parentId: record.id }), "parent_not_found");
        expect(await count(session)).toBe(2);
        expect(await session.getLeafId()).toBe(a);
      });

      it("refuses invalid entries with invalid_request and writes nothing", async () => {
        const session = await fresh();
        await expectCode(session.appendEntry({ type: "nope" } as unknown as EntryInput), "invalid_request");
        await expectCode(
          session.appendEntry({ type: "leaf", targetId: null } as unknown as EntryInput),
          "invalid_request",
        );
        await expectCode(session.appendMessage(user("x"), { id: "bad id/with slash" }), "invalid_request");
        await expectCode(session.appendMessage(user("x"), { id: "x".repeat(129) }), "invalid_request");
        await expectCode(
          session.appendMessage({ role: "user", content: 42, timestamp: 1 } as never),
          "invalid_request",
        );
        await expectCode(
          session.appendEntry({ type: "thinking_level_change", thinkingLevel: "extreme" } as never),
          "invalid_request",
        );
        await expectCode(session.appendMessage(user("x"), { timestamp: "yesterday" }), "invalid_request");
        expect(await count(session)).toBe(0);
      });

      it("appends a batch atomically, each entry under the previous one", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"));
        const result = await session.appendEntries([
          messageEntry(assistant("one")),
          { type: "model_change", provider: "anthropic", modelId: "claude" },
          messageEntry(user("two")),
        ]);
        expect(result.created).toBe(true);
        const [e1, e2, e3] = result.entries;
        expect(e1?.parentId).toBe(a);
        expect(e2?.parentId).toBe(e1?.id);
        expect(e3?.parentId).toBe(e2?.id);
        expect(result.leafId).toBe(e3?.id);
        expect(await session.getLeafId()).toBe(e3?.id);
      });

      it("writes none of a batch when one entry is bad", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"));
        await expectCode(
          session.appendEntries([
            messageEntry(assistant("one")),
            messageEntry(user("two"), { parentId: "missing" }),
          ]),
          "parent_not_found",
        );
        await expectCode(
          session.appendEntries([
            messageEntry(assistant("one")),
            { type: "label", targetId: "missing", label: "x" },
          ]),
          "invalid_tree",
        );
        await expectCode(
          session.appendEntries([messageEntry(assistant("one")), { type: "bogus" } as unknown as EntryInput]),
          "invalid_request",
        );
        expect(await count(session)).toBe(1);
        expect(await session.getLeafId()).toBe(a);
      });

      it("lets a batch entry name an earlier one of the same batch", async () => {
        const session = await fresh();
        const result = await session.appendEntries([
          messageEntry(user("q"), { id: "q1" }),
          messageEntry(assistant("a"), { id: "a1" }),
          { type: "label", targetId: "q1", label: "start" },
          messageEntry(assistant("alt"), { parentId: "q1" }),
        ]);
        expect(result.entries.map((e) => e.parentId)).toEqual([null, "q1", "a1", "q1"]);
        expect(await session.getLabel("q1")).toBe("start");
      });

      it("refuses batches over 1,000 entries and empty ones", async () => {
        const session = await fresh();
        const many = Array.from({ length: 1001 }, (_, i) => messageEntry(user(`m${i}`)));
        await expectCode(session.appendEntries(many), "payload_too_large");
        await expectCode(session.appendEntries([]), "invalid_request");
        expect(await count(session)).toBe(0);
      });

      it("refuses an entry over 16 MiB serialized with entry_too_large", async () => {
        const session = await fresh();
        const big = "x".repeat(16 * 1024 * 1024);
        await expectCode(session.appendMessage(user(big)), "entry_too_large");
        expect(await count(session)).toBe(0);
      });
    });

    describe("idempotency", () => {
      it("returns the stored entry when the same id and content come again", async () => {
        const session = await fresh();
        const message = user("hello");
        const first = await session.appendEntry(messageEntry(message, { id: "m-1" }));
        await session.appendMessage(assistant("reply"));
        const again = await session.appendEntries([messageEntry(message, { id: "m-1" })]);
        expect(again.created).toBe(false);
        expect(again.entries).toEqual([first]);
        expect(await count(session)).toBe(2);
      });

      it("treats a retry that leaves out parentId and timestamp as a replay", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"));
        const sent = messageEntry(assistant("x"), {
          id: "r-1",
          parentId: a,
          timestamp: "2025-01-01T00:00:00.000Z",
        });
        const first = await session.appendEntry(sent);
        const again = await session.appendEntry(messageEntry(sent.message, { id: "r-1" }));
        expect(again).toEqual(first);
      });

      it("refuses the same id with different content as already_exists", async () => {
        const session = await fresh();
        await session.appendEntry(messageEntry(user("one"), { id: "dup" }));
        await expectCode(session.appendEntry(messageEntry(user("two"), { id: "dup" })), "already_exists");
        await expectCode(
          session.appendEntry(
            messageEntry(user("one"), { id: "dup", timestamp: "2020-01-01T00:00:00.000Z" }),
          ),
          "already_exists",
        );
        expect(await count(session)).toBe(1);
      });

      it("detects a replay before checking the expected leaf", async () => {
        const session = await fresh();
        const q = user("q");
        const first = await session.appendEntry(messageEntry(q, { id: "once" }), { expectedLeafId: null });
        await session.appendMessage(assistant("moved on"));
        const again = await session.appendEntries([messageEntry(q, { id: "once" })], {
          expectedLeafId: null,
        });
        expect(again.entries).toEqual([first]);
        expect(again.created).toBe(false);
      });

      it("returns replays and new entries together from a mixed batch", async () => {
        const session = await fresh();
        const q = user("q");
        await session.appendEntry(messageEntry(q, { id: "q" }));
        const result = await session.appendEntries([
          messageEntry(q, { id: "q" }),
          messageEntry(assistant("a"), { id: "a" }),
        ]);
        expect(result.created).toBe(true);
        expect(result.entries.map((e) => e.id)).toEqual(["q", "a"]);
        expect(result.entries[1]?.parentId).toBe("q");
        expect(await count(session)).toBe(2);
      });
    });

    describe("optimistic concurrency", () => {
      it("writes when the expected leaf matches and refuses with leaf_conflict otherwise", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"), { expectedLeafId: null });
        const b = await session.appendMessage(assistant("a"), { expectedLeafId: a });
        await expectCode(session.appendMessage(user("late"), { expectedLeafId: a }), "leaf_conflict");
        await expectCode(session.setLeafId(a, { expectedLeafId: a }), "leaf_conflict");
        expect(await session.getLeafId()).toBe(b);
        expect(await count(session)).toBe(2);
      });
    });

    describe("leaf", () => {
      it("moves durably and records every move", async () => {
        const repo = await makeRepo();
        const session = await fresh(repo);
        const a = await session.appendMessage(user("q"));
        await session.appendMessage(assistant("a"));
        const record = await session.setLeafId(a);
        expect(record).toMatchObject({ type: "leaf", parentId: null, targetId: a });
        const reopened = await repo.open(session.id);
        expect(await reopened.getLeafId()).toBe(a);
        const leaves = await reopened.getEntries({ type: "leaf" });
        expect(leaves.map((e) => e.id)).toEqual([record.id]);
        const info = await reopened.getInfo();
        expect(info.entryCount).toBe(2);
        expect(info.leafId).toBe(a);
      });

      it("never puts leaf records on a path or in the tree", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"));
        await session.setLeafId(a);
        const b = await session.appendMessage(assistant("a"));
        expect((await session.getBranch()).map((e) => e.id)).toEqual([a, b]);
        const ids = [...walkTree(await session.getTree())].map((n) => n.id);
        expect(ids).toEqual([a, b]);
      });

      it("moves to null and back, and refuses unknown targets", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"));
        await session.setLeafId(null);
        expect(await session.getLeafId()).toBeNull();
        expect((await session.buildContext()).messages).toEqual([]);
        const b = await session.appendMessage(user("new root"));
        expect((await session.getEntry(b))?.parentId).toBeNull();
        await expectCode(session.setLeafId("missing"), "not_found");
        const record = (await session.getEntries({ type: "leaf" }))[0];
        await expectCode(session.setLeafId(record?.id ?? ""), "not_found");
        expect(await session.getLeafId()).toBe(b);
        await session.setLeafId(a);
        expect(await session.getLeafId()).toBe(a);
      });

      it('moves to the parent of a user message with position "before"', async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"));
        const b = await session.appendMessage(assistant("a"));
        const c = await session.appendMessage(user("edit me"));
        await session.setLeafId(c, { position: "before" });
        expect(await session.getLeafId()).toBe(b);
        await expectCode(session.setLeafId(b, { position: "before" }), "invalid_request");
        await session.setLeafId(a, { position: "before" });
        expect(await session.getLeafId()).toBeNull();
      });
    });

    describe("reading", () => {
      it("pages entries by seq cursor and filters by type", async () => {
        const session = await fresh();
        await chain(session, 25);
        await session.appendModelChange("p", "m");
        const seen: string[] = [];
        let after: number | undefined;
        for (;;) {
          const page = await session.getEntries({ after, limit: 10 });
          seen.push(...page.map((e) => e.id));
          if (page.length < 10) break;
          after = page[page.length - 1]?.seq;
        }
        expect(seen.length).toBe(26);
        expect(new Set(seen).size).toBe(26);
        const all = await session.getEntries({ limit: 1000 });
        expect(all.map((e) => e.seq)).toEqual([...all.map((e) => e.seq)].sort((x, y) => x - y));
        const changes = await session.getEntries({ type: "model_change" });
        expect(changes.map((e) => e.type)).toEqual(["model_change"]);
        const mixed = await session.getEntries({ type: ["model_change", "message"], limit: 1000 });
        expect(mixed.length).toBe(26);
        await expectCode(session.getEntries({ limit: 0 }), "invalid_request");
        await expectCode(session.getEntries({ limit: 1001 }), "invalid_request");
      });

      it("answers undefined for an unknown entry and not_found for an unknown branch leaf", async () => {
        const session = await fresh();
        await session.appendMessage(user("q"));
        expect(await session.getEntry("missing")).toBeUndefined();
        await expectCode(session.getBranch("missing"), "not_found");
      });

      it("keeps the latest label and name by append order; blank clears", async () => {
        const repo = await makeRepo();
        const session = await repo.create({ id: `s-${newId()}`, name: "initial" });
        expect(await session.getName()).toBe("initial");
        const a = await session.appendMessage(user("q"));
        await session.appendLabel(a, "first");
        await session.appendLabel(a, "second");
        expect(await session.getLabel(a)).toBe("second");
        const [node] = await session.getTree();
        expect(node?.label).toBe("second");
        await session.appendLabel(a, "  ");
        expect(await session.getLabel(a)).toBeUndefined();
        await session.appendLabel(a, "again");
        await session.appendLabel(a, undefined);
        expect(await session.getLabel(a)).toBeUndefined();
        await expectCode(session.appendLabel("missing", "x"), "invalid_tree");

        await session.appendSessionName("renamed");
        expect(await session.getName()).toBe("renamed");
        expect((await session.getInfo()).name).toBe("renamed");
        await session.appendSessionName("");
        expect(await session.getName()).toBeUndefined();
      });

      it("keeps entries named like inherited properties, and their labels", async () => {
        const session = await fresh();
        const names = ["__proto__", "constructor", "toString", "hasOwnProperty"];
        for (const name of names) {
          await session.appendEntries([messageEntry(user(name), { id: name })]);
          await session.appendLabel(name, `label of ${name}`);
        }
        const labels = await session.storage.getLabels();
        expect(Object.keys(labels).sort()).toEqual([...names].sort());
        for (const name of names) {
          expect(Object.hasOwn(labels, name)).toBe(true);
          expect(await session.getLabel(name)).toBe(`label of ${name}`);
          expect((await session.getEntry(name))?.id).toBe(name);
        }
        expect(await session.getLabel("valueOf")).toBeUndefined();
      });

      it("describes the session in its info", async () => {
        const repo = await makeRepo();
        const session = await repo.create({
          id: `s-${newId()}`,
          systemPrompt: "be brief",
          metadata: { team: "x" },
        });
        const before = await session.getInfo();
        expect(before).toMatchObject({
          id: session.id,
          systemPrompt: "be brief",
          metadata: { team: "x" },
          leafId: null,
        });
        expect(before.entryCount).toBe(0);
        await session.appendModelChange("p", "m");
        await session.appendMessage(user("x".repeat(300)));
        const b = await session.appendMessage(assistant("a"));
        const info = await session.getInfo();
        expect(info.entryCount).toBe(3);
        expect(info.messageCount).toBe(2);
        expect(info.leafId).toBe(b);
        expect(info.preview).toBe("x".repeat(200));
        expect(info.updatedAt >= info.createdAt).toBe(true);
        const header = await session.updateHeader({ systemPrompt: null, metadata: { team: "y" } });
        expect(header.systemPrompt).toBeUndefined();
        expect((await session.getInfo()).metadata).toEqual({ team: "y" });
      });
    });

    describe("stored bytes", () => {
      /**
       * What `bytes` must be: the UTF-8 length of the header's JSON and of every stored entry's JSON,
       * leaf records included.
       */
      const storedBytes = async (session: Session) => {
        let bytes = headerBytes(await session.getHeader());
        for (const { seq: _seq, ...entry } of await session.getEntries({ limit: 1000 })) {
          bytes += new TextEncoder().encode(JSON.stringify(entry)).byteLength;
        }
        return bytes;
      };

      it("counts every entry's JSON as stored, leaf records included, through appends and leaf moves", async () => {
        const repo = await makeRepo();
        const session = await fresh(repo);
        expect((await session.getInfo()).bytes).toBe(headerBytes(await session.getHeader()));
        const a = await session.appendMessage(user("héllo wörld ✓ 🚀"));
        await session.appendEntries([messageEntry(assistant("a")), messageEntry(user("b"))]);
        await session.setLeafId(a);
        await session.appendLabel(a, "first");
        const info = await session.getInfo();
        expect(info.bytes).toBe(await storedBytes(session));
        expect(info.bytes).toBeGreaterThan(0);
        expect((await (await repo.open(session.id)).getInfo()).bytes).toBe(info.bytes);
      });

      it("gives a fork the bytes of what it copied, and leaves the source's unchanged", async () => {
        const repo = await makeRepo();
        const source = await fresh(repo);
        const a = await source.appendMessage(user("q"));
        await source.appendMessage(assistant("a".repeat(500)));
        await source.appendLabel(a, "kept");
        const before = (await source.getInfo()).bytes;
        const fork = await source.fork(a);
        expect((await fork.getInfo()).bytes).toBe(await storedBytes(fork));
        expect((await fork.getInfo()).bytes).toBeLessThan(before);
        expect((await source.getInfo()).bytes).toBe(before);
      });

      it("counts the header as stored: a larger one adds its bytes, a smaller one frees them", async () => {
        const repo = await makeRepo();
        const session = await fresh(repo);
        await session.appendMessage(user("q"));
        const before = (await session.getInfo()).bytes;
        await session.updateHeader({ systemPrompt: "p".repeat(1000), metadata: { note: "ü".repeat(100) } });
        const grown = (await session.getInfo()).bytes;
        expect(grown).toBe(await storedBytes(session));
        expect(grown - before).toBeGreaterThan(1200);
        expect((await (await repo.open(session.id)).getInfo()).bytes).toBe(grown);
        await session.updateHeader({ systemPrompt: null, metadata: {} });
        expect((await session.getInfo()).bytes).toBe(before);
      });
    });

    describe("provider messages", () => {
      it("converts a model API's message on append, against the conversation at its parent", async () => {
        const session = await fresh();
        const result = await session.appendEntries([
          {
            type: "message",
            id: "q",
            format: "openai-chat",
            message: { role: "user", content: "list the files" },
          },
          {
            type: "message",
            id: "r",
            format: "anthropic",
            message: {
              role: "assistant",
              content: [{ type: "tool_use", id: "toolu_1", name: "ls", input: { path: "." } }],
            },
          },
        ]);
        expect(result.entries.map((e) => e.id)).toEqual(["q", "r"]);
        // The result takes its tool's name from the call waiting in the conversation it continues.
        await session.appendEntries([
          {
            type: "message",
            id: "t",
            format: "anthropic",
            message: {
              role: "user",
              content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "a.txt" }],
            },
          },
        ]);
        const { messages } = await session.buildContext();
        expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
        expect(messages[2]).toMatchObject({ toolCallId: "toolu_1", toolName: "ls", isError: false });
        // Sent again, it is a replay; with other content, a conflict; malformed, refused: nothing written.
        const again = await session.appendEntries([
          {
            type: "message",
            id: "q",
            format: "openai-chat",
            message: { role: "user", content: "list the files" },
          },
        ]);
        expect(again.created).toBe(false);
        await expectCode(
          session.appendEntries([
            { type: "message", id: "q", format: "openai-chat", message: { role: "user", content: "other" } },
          ]),
          "already_exists",
        );
        await expectCode(
          session.appendEntries([
            { type: "message", format: "anthropic", message: { role: "user", content: 5 } },
          ]),
          "invalid_request",
        );
        expect((await session.getEntries()).length).toBe(3);
      });

      it("keeps the session's model past replies a framework saved without naming theirs", async () => {
        const session = await fresh();
        await session.appendModelChange("anthropic", "claude-sonnet-4-5");
        // What the AI SDK chat store and the Agents adapter record when no model is named.
        await session.appendMessage(user("hi"));
        await session.appendMessage(assistant("hello", { provider: "ai-sdk", model: "" }));
        await session.appendMessage(user("again"));
        await session.appendMessage(assistant("hello again", { provider: "openai", model: "" }));
        await session.appendMessage(user("read a.txt"));
        expect((await session.buildContext()).model).toEqual({
          provider: "anthropic",
          modelId: "claude-sonnet-4-5",
        });
        const [reply] = await session.appendProviderMessage("anthropic", {
          type: "message",
          id: "msg_1",
          role: "assistant",
          model: "claude-sonnet-4-5-20250929",
          content: [
            { type: "thinking", thinking: "Let me read", signature: "sig-1" },
            { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a.txt" } },
          ],
          stop_reason: "tool_use",
          usage: { input_tokens: 10, output_tokens: 5 },
        });
        expect(reply?.message).toMatchObject({ provider: "anthropic", model: "claude-sonnet-4-5" });
        await session.appendProviderMessage("anthropic", {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hello" }],
        });
        const context = await session.buildContext();
        expect(context.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
        // The reply's signed thinking goes back to Anthropic as thinking, so the tool loop goes on.
        const request = contextForModel(context, "anthropic");
        expect(request.messages.at(-2)?.content).toContainEqual({
          type: "thinking",
          thinking: "Let me read",
          signature: "sig-1",
        });
      });

      it("records a reply under the model it names when the session has none", async () => {
        const session = await fresh();
        await session.appendMessage(user("hi"));
        await session.appendMessage(assistant("hello", { provider: "ai-sdk", model: "" }));
        expect((await session.buildContext()).model).toBeNull();
        await session.appendMessage(user("again"));
        const [reply] = await session.appendProviderMessage("anthropic", {
          type: "message",
          id: "msg_2",
          role: "assistant",
          model: "claude-sonnet-4-5-20250929",
          content: [{ type: "text", text: "hello again" }],
          stop_reason: "end_turn",
          usage: { input_tokens: 10, output_tokens: 5 },
        });
        expect(reply?.message).toMatchObject({ provider: "anthropic", model: "claude-sonnet-4-5-20250929" });
        expect((await session.buildContext()).model).toEqual({
          provider: "anthropic",
          modelId: "claude-sonnet-4-5-20250929",
        });
      });
    });

    describe("buildContext", () => {
      it("returns the path's messages and derived state", async () => {
        const repo = await makeRepo();
        const session = await repo.create({ id: `s-${newId()}`, systemPrompt: "sys" });
        await session.appendThinkingLevelChange("high");
        await session.appendModelChange("anthropic", "claude");
        await session.appendActiveToolsChange(["read", "bash"]);
        const q = user("q");
        const a = assistant("a", { provider: "openai", model: "gpt" });
        await session.appendMessage(q);
        await session.appendMessage(a);
        await session.appendCustomEntry("state", { step: 1 });
        const context = await session.buildContext();
        expect(context).toEqual({
          systemPrompt: "sys",
          messages: [q, a],
          thinkingLevel: "high",
          model: { provider: "openai", modelId: "gpt" },
          activeToolNames: ["read", "bash"],
        });
        expect((await session.buildContext({ systemPrompt: "override" })).systemPrompt).toBe("override");
        await session.appendModelChange("anthropic", "opus");
        expect((await session.buildContext()).model).toEqual({ provider: "anthropic", modelId: "opus" });
      });

      it("defaults when the path sets nothing", async () => {
        const session = await fresh();
        expect(await session.buildContext()).toEqual({
          systemPrompt: "",
          messages: [],
          thinkingLevel: "off",
          model: null,
          activeToolNames: null,
        });
      });

      it("builds for any leaf, not only the current one", async () => {
        const session = await fresh();
        const q = user("q");
        const a1 = assistant("one");
        const a2 = assistant("two");
        const qid = await session.appendMessage(q);
        const first = await session.appendMessage(a1);
        await session.appendMessage(a2, { parentId: qid });
        expect((await session.buildContext({ leafId: first })).messages).toEqual([q, a1]);
        expect((await session.buildContext()).messages).toEqual([q, a2]);
        expect((await session.buildContext({ leafId: null })).messages).toEqual([]);
      });

      it("projects custom messages and branch summaries with millisecond timestamps", async () => {
        const session = await fresh();
        const ts = "2025-03-04T05:06:07.089Z";
        await session.appendCustomMessageEntry(
          { customType: "note", content: "remember", display: true },
          { timestamp: ts },
        );
        await session.appendCustomMessageEntry(
          { customType: "note", content: [{ type: "text", text: "x" }], display: false, details: { k: 1 } },
          { timestamp: ts },
        );
        await session.appendBranchSummary({ summary: "tried X", fromId: "root" }, { timestamp: ts });
        await session.appendBranchSummary({ summary: "", fromId: "root" }, { timestamp: ts });
        const { messages } = await session.buildContext();
        expect(messages).toEqual([
          {
            role: "custom",
            customType: "note",
            content: "remember",
            display: true,
            timestamp: Date.parse(ts),
          },
          {
            role: "custom",
            customType: "note",
            content: [{ type: "text", text: "x" }],
            display: false,
            details: { k: 1 },
            timestamp: Date.parse(ts),
          },
          { role: "branchSummary", summary: "tried X", fromId: "root", timestamp: Date.parse(ts) },
        ]);
        expect("details" in (messages[0] as object)).toBe(false);
      });

      it("projects custom entries only through a projector for their type", async () => {
        const session = await fresh();
        await session.appendCustomEntry("todo", { items: ["a"] });
        await session.appendCustomEntry("other", 1);
        expect((await session.buildContext()).messages).toEqual([]);
        const context = await session.buildContext({
          entryProjectors: {
            todo: (entry) => [{ role: "user", content: JSON.stringify(entry.data), timestamp: 1 }],
          },
        });
        expect(context.messages).toEqual([{ role: "user", content: '{"items":["a"]}', timestamp: 1 }]);
      });

      it("applies a compaction with firstKeptEntryId", async () => {
        const session = await fresh();
        const m = [user("u0"), assistant("a0"), user("u1"), assistant("a1"), user("u2")];
        const ids: string[] = [];
        for (const message of m) ids.push(await session.appendMessage(message));
        const ts = "2025-01-01T00:00:00.000Z";
        await session.appendCompaction(
          { summary: "S", tokensBefore: 500, firstKeptEntryId: ids[2] as string },
          { timestamp: ts },
        );
        const after = assistant("after");
        await session.appendMessage(after);
        expect((await session.buildContext()).messages).toEqual([
          { role: "compactionSummary", summary: "S", tokensBefore: 500, timestamp: Date.parse(ts) },
          m[2],
          m[3],
          m[4],
          after,
        ]);
      });

      it("applies a compaction with a retained tail", async () => {
        const session = await fresh();
        await session.appendMessage(user("u0"));
        await session.appendMessage(assistant("a0"));
        const kept = [user("kept"), assistant("kept too")];
        const ts = "2025-01-01T00:00:00.000Z";
        await session.appendCompaction(
          { summary: "S", tokensBefore: 9, retainedTail: kept },
          { timestamp: ts },
        );
        const after = user("after");
        await session.appendMessage(after);
        expect((await session.buildContext()).messages).toEqual([
          { role: "compactionSummary", summary: "S", tokensBefore: 9, timestamp: Date.parse(ts) },
          ...kept,
          after,
        ]);
      });

      it("uses only the latest of chained compactions", async () => {
        const session = await fresh();
        const ts = "2025-01-01T00:00:00.000Z";
        const m0 = user("u0");
        const m1 = assistant("a0");
        const m2 = user("u1");
        await session.appendMessage(m0);
        const k1 = await session.appendMessage(m1);
        await session.appendCompaction(
          { summary: "first", tokensBefore: 1, firstKeptEntryId: k1 },
          { timestamp: ts },
        );
        const k2 = await session.appendMessage(m2);
        const m3 = assistant("a1");
        await session.appendMessage(m3);
        await session.appendCompaction(
          { summary: "second", tokensBefore: 2, firstKeptEntryId: k2 },
          { timestamp: ts },
        );
        const m4 = user("u2");
        await session.appendMessage(m4);
        expect((await session.buildContext()).messages).toEqual([
          { role: "compactionSummary", summary: "second", tokensBefore: 2, timestamp: Date.parse(ts) },
          m2,
          m3,
          m4,
        ]);
      });

      it("projects nothing for an older compaction inside the kept range", async () => {
        const session = await fresh();
        const ts = "2025-01-01T00:00:00.000Z";
        const m0 = user("u0");
        const k = await session.appendMessage(m0);
        await session.appendCompaction(
          { summary: "old", tokensBefore: 1, firstKeptEntryId: k },
          { timestamp: ts },
        );
        const m1 = assistant("a");
        await session.appendMessage(m1);
        await session.appendCompaction(
          { summary: "new", tokensBefore: 2, firstKeptEntryId: k },
          { timestamp: ts },
        );
        expect((await session.buildContext()).messages).toEqual([
          { role: "compactionSummary", summary: "new", tokensBefore: 2, timestamp: Date.parse(ts) },
          m0,
          m1,
        ]);
      });

      it("derives settings over the whole path, including what a compaction hides", async () => {
        const session = await fresh();
        await session.appendThinkingLevelChange("low");
        await session.appendActiveToolsChange(["read"]);
        await session.appendMessage(user("q"));
        await session.appendMessage(assistant("a", { provider: "x", model: "y" }));
        const kept = await session.appendMessage(user("q2"));
        await session.appendCompaction({ summary: "S", tokensBefore: 1, firstKeptEntryId: kept });
        const context = await session.buildContext();
        expect(context.thinkingLevel).toBe("low");
        expect(context.activeToolNames).toEqual(["read"]);
        expect(context.model).toEqual({ provider: "x", modelId: "y" });
      });

      it("refuses a compaction whose first kept entry is not on its branch", async () => {
        const session = await fresh();
        const a = await session.appendMessage(user("q"));
        const b = await session.appendMessage(assistant("a"));
        await session.appendMessage(assistant("other"), { parentId: a });
        await expectCode(
          session.appendCompaction({ summary: "S", tokensBefore: 1, firstKeptEntryId: b }),
          "invalid_tree",
        );
        await expectCode(
          session.appendCompaction({ summary: "S", tokensBefore: 1, firstKeptEntryId: "missing" }),
          "invalid_tree",
        );
        expect(await count(session)).toBe(3);
      });

      it("checks a kept entry and an edit's target against the branch, stored or in the batch, however deep", async () => {
        const session = await fresh();
        const ids = await chain(session, 300);
        const [root, second] = ids as [string, string];
        const tip = ids.at(-1) as string;
        const side = await session.appendMessage(assistant("side"), { parentId: root });
        const before = await count(session);
        const edit = (targetId: string, extra: Record<string, unknown> = {}) => ({
          type: "context_edit" as const,
          targetId,
          replacement: null,
          ...extra,
        });
        const compaction = (firstKeptEntryId: string, extra: Record<string, unknown> = {}) => ({
          type: "compaction" as const,
          summary: "S",
          tokensBefore: 1,
          firstKeptEntryId,
          ...extra,
        });
        // Stored: below the parent, beside it on another branch, under a branch of the batch's own.
        for (const batch of [
          [edit(second, { parentId: root })],
          [compaction(second, { parentId: side })],
          [edit(side, { parentId: tip })],
          [
            messageEntry(user("p"), { id: "p1", parentId: root }),
            messageEntry(assistant("q"), { parentId: tip }),
            compaction("p1"),
          ],
          [messageEntry(user("p"), { id: "p2", parentId: side }), edit(second)],
        ]) {
          await expectCode(session.appendEntries(batch as EntryInput[]), "invalid_tree");
        }
        expect(await count(session)).toBe(before);
        // On the branch: the root far above, through the batch's own entries, and one of them.
        const written = await session.appendEntries([
          edit(root, { parentId: tip }),
          compaction(root),
          messageEntry(user("r"), { id: "r1" }),
          messageEntry(assistant("s")),
          edit(second),
          edit("r1"),
          compaction("r1"),
        ] as EntryInput[]);
        expect(written.entries).toHaveLength(7);
        expect(await count(session)).toBe(before + 7);
      });
    });

    describe("fork", () => {
      it("copies exactly the path to the target, its labels and name; the source is unchanged", async () => {
        const repo = await makeRepo();
        const source = await repo.create({ id: `s-${newId()}`, name: "src", systemPrompt: "sys" });
        const a = await source.appendMessage(user("q"), { timestamp: "2025-01-01T00:00:00.000Z" });
        const b = await source.appendMessage(assistant("a"));
        await source.appendLabel(a, "on-path");
        const c = await source.appendMessage(user("q2"));
        const d = await source.appendMessage(assistant("other"), { parentId: a });
        await source.appendLabel(b, "set-off-path");
        await source.appendLabel(a, "relabelled-off-path");
        const sourceEntries = await source.getEntries({ limit: 1000 });
        const sourceInfo = await source.getInfo();

        const fork = await source.fork(c);
        expect(fork.id).not.toBe(source.id);
        const path = await fork.getBranch();
        const sourcePath = await source.getBranch(c);
        expect(path.map(({ seq: _s, ...e }) => e)).toEqual(sourcePath.map(({ seq: _s, ...e }) => e));
        expect(await fork.getLeafId()).toBe(c);
        expect(await fork.getEntry(d)).toBeUndefined();
        for (const entry of sourcePath)
          expect(await fork.getLabel(entry.id)).toEqual(await source.getLabel(entry.id));
        expect(await fork.getLabel(b)).toBe("set-off-path");
        expect(await fork.getLabel(a)).toBe("relabelled-off-path");
        const info = await fork.getInfo();
        expect(info).toMatchObject({
          name: "src",
          systemPrompt: "sys",
          parentSession: { id: source.id, entryId: c },
          leafId: c,
        });
        expect((await fork.buildContext()).messages).toEqual(
          (await source.buildContext({ leafId: c })).messages,
        );

        expect(await source.getEntries({ limit: 1000 })).toEqual(sourceEntries);
        expect(await source.getInfo()).toEqual(sourceInfo);
        expect((await repo.open(fork.id)).id).toBe(fork.id);
      });

      it("forks a path that opens with a reply, with the same figures as its source", async () => {
        const repo = await makeRepo();
        const source = await fresh(repo);
        await source.appendMessage(assistant("hello first"));
        await source.appendMessage(user(""));
        const asked = await source.appendMessage(user("the question"));
        await source.appendSessionName("named on the way");
        const answered = await source.appendMessage(assistant("the answer"));
        const fork = await source.fork(answered);
        const [forked, original] = [await fork.getInfo(), await source.getInfo()];
        // The same entries' bytes, beside a header of its own.
        const entryBytes = original.bytes - headerBytes(await source.getHeader());
        expect(forked).toMatchObject({
          entryCount: original.entryCount,
          messageCount: original.messageCount,
          bytes: entryBytes + headerBytes(await fork.getHeader()),
          preview: "the question",
          name: "named on the way",
        });
        expect((await fork.getBranch()).map((e) => e.id)).toContain(asked);
      });

      it("forks with a chosen id and name, and before a user message", async () => {
        const repo = await makeRepo();
        const source = await fresh(repo);
        await source.appendSessionName("old name");
        const a = await source.appendMessage(user("q"));
        const b = await source.appendMessage(assistant("a"));
        const c = await source.appendMessage(user("q2"));
        const id = `f-${newId()}`;
        const fork = await repo.fork(source.id, c, { position: "before", id, name: "new name" });
        expect(fork.id).toBe(id);
        expect(await fork.getLeafId()).toBe(b);
        expect((await fork.getBranch()).map((e) => e.id).slice(-2)).toEqual([a, b]);
        expect(await fork.getName()).toBe("new name");
        expect(await source.getName()).toBe("old name");
        await expectCode(repo.fork(source.id, c, { id }), "already_exists");
        await expectCode(repo.fork(source.id, "missing"), "not_found");
        await expectCode(repo.fork(source.id, b, { position: "before" }), "invalid_request");
      });

      it("forks an empty path before the first user message", async () => {
        const repo = await makeRepo();
        const source = await fresh(repo);
        const a = await source.appendMessage(user("q"));
        const fork = await source.fork(a, { position: "before" });
        expect(await fork.getLeafId()).toBeNull();
        expect((await fork.getInfo()).entryCount).toBe(0);
      });
    });

    describe("repository", () => {
      it("creates, opens, lists and deletes sessions", async () => {
        const repo = await makeRepo();
        const id = `s-${newId()}`;
        const session = await repo.create({ id, name: "n", metadata: { a: 1 } });
        await expectCode(repo.create({ id }), "already_exists");
        await expectCode(repo.create({ id: "no spaces allowed" }), "invalid_request");
        await expectCode(repo.create({ id: ".." }), "invalid_request");
        await session.appendMessage(user("hello"));
        const opened = await repo.open(id);
        expect((await opened.getInfo()).entryCount).toBe(1);
        await repo.delete(id);
        await expectCode(repo.open(id), "not_found");
        await expectCode(repo.delete(id), "not_found");
        const again = await repo.create({ id });
        expect((await again.getInfo()).entryCount).toBe(0);
        await expectCode(repo.open(`s-${newId()}`), "not_found");
      });

      it("lists newest first with cursor paging", async () => {
        const repo = await makeRepo();
        const created: string[] = [];
        for (let i = 0; i < 5; i++) created.push((await repo.create({ id: `l-${newId()}` })).id);
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page = await repo.list({ limit: 2, cursor, order: "created" });
          expect(page.sessions.length).toBeLessThanOrEqual(2);
          seen.push(...page.sessions.map((s) => s.id));
          cursor = page.nextCursor;
        } while (cursor);
        const ours = seen.filter((id) => created.includes(id));
        expect(ours).toEqual([...created].reverse());
        expect(new Set(seen).size).toBe(seen.length);
        await expectCode(repo.list({ cursor: "not a cursor" }), "invalid_request");
      });

      it("refuses a cursor given to a listing in another order or with other filters, and goes on with its own", async () => {
        const repo = await makeRepo();
        const prefix = `k-${newId()}:`;
        const project = `github.com/acme/${newId()}`;
        for (let i = 0; i < 3; i++) await repo.create({ id: `${prefix}${i}`, metadata: { project } });
        const first = await repo.list({ limit: 1, prefix, project });
        const cursor = first.nextCursor as string;
        expect(cursor).toEqual(expect.any(String));
        for (const other of [
          { order: "created" as const, prefix, project },
          { project },
          { prefix },
          { prefix: `${prefix}1`, project },
          { prefix, project: `${project}/api` },
        ]) {
          await expectCode(repo.list({ ...other, limit: 1, cursor }), "invalid_request");
        }
        const next = await repo.list({ order: "updated", prefix, project, limit: 5, cursor });
        expect([...first.sessions, ...next.sessions].map((s) => s.id).sort()).toEqual(
          [0, 1, 2].map((i) => `${prefix}${i}`),
        );
      });

      it("lists only the sessions whose id starts with a prefix, page by page", async () => {
        const repo = await makeRepo();
        const prefix = `p-${newId()}:`;
        const inside: string[] = [];
        for (let i = 0; i < 3; i++) inside.push((await repo.create({ id: `${prefix}${i}` })).id);
        await repo.create({ id: `${prefix.slice(0, -1)}-beside` });
        await repo.create({ id: `x${prefix}` });
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page = await repo.list({ limit: 2, cursor, order: "created", prefix });
          seen.push(...page.sessions.map((s) => s.id));
          cursor = page.nextCursor;
        } while (cursor);
        expect(seen).toEqual([...inside].reverse());
        expect((await repo.list({ prefix: `${prefix}1` })).sessions.map((s) => s.id)).toEqual([`${prefix}1`]);
      });

      it("lists a project's sessions: its own, and those of folders in it", async () => {
        const repo = await makeRepo();
        const project = `github.com/acme/${newId()}`;
        const made = async (recorded: string | undefined) =>
          (await repo.create({ metadata: recorded === undefined ? {} : { project: recorded } })).id;
        const root = await made(project);
        const folder = await made(`${project}/api`);
        await made(`${project}-other`);
        await made(undefined);
        const listed = async (key: string) =>
          (await repo.list({ project: key, order: "created" })).sessions.map((s) => s.id);
        expect(await listed(project)).toEqual([folder, root]);
        expect(await listed(`${project}/api`)).toEqual([folder]);
        expect(await listed(`${project}/web`)).toEqual([]);
      });

      it("lists a project named beyond U+FFFF the same way", async () => {
        const repo = await makeRepo();
        const project = `github.com/acme/${newId()}-\u{1f600}`;
        const root = (await repo.create({ metadata: { project } })).id;
        const folder = (await repo.create({ metadata: { project: `${project}/\u{1f600}` } })).id;
        await repo.create({ metadata: { project: `${project}\u{1f600}` } });
        const listed = async (key: string) =>
          (await repo.list({ project: key, order: "created" })).sessions.map((s) => s.id);
        expect(await listed(project)).toEqual([folder, root]);
        expect(await listed(`${project}/\u{1f600}`)).toEqual([folder]);
      });
    });

    describe("sync", () => {
      it("creates the session of a file's id, appends what the file gained, and writes nothing when it gained nothing", async () => {
        const repo = await makeRepo();
        const file = new PiFile(`pi-${newId()}`).message("e1", user("plan?")).message("e2", assistant("A"));
        const created = await repo.syncSession(parsePi(file.text()));
        expect({ status: created.status, appended: created.appended, id: created.session.id }).toEqual({
          status: "created",
          appended: 2,
          id: file.id,
        });
        file.message("e3", user("and then?")).message("e4", assistant("B"));
        const grown = await repo.syncSession(parsePi(file.text()));
        expect({ status: grown.status, appended: grown.appended }).toEqual({
          status: "appended",
          appended: 2,
        });
        const session = await repo.open(file.id);
        expect((await session.getBranch()).map((e) => e.id)).toEqual(["e1", "e2", "e3", "e4"]);
        expect(await session.getLeafId()).toBe("e4");
        const written = await count(session);
        // pi was writing a line when the file was read: it is left for the next sync.
        const torn = parsePi(file.text('{"type":"message","id":"e5","par'));
        expect(torn.warnings).toHaveLength(1);
        const again = await repo.syncSession(torn);
        expect({ status: again.status, appended: again.appended }).toEqual({
          status: "unchanged",
          appended: 0,
        });
        expect(await count(session)).toBe(written);
        file.message("e5", user("done"));
        expect((await repo.syncSession(parsePi(file.text()))).appended).toBe(1);
        expect((await session.buildContext()).messages.map((m) => m.role)).toEqual([
          "user",
          "assistant",
          "user",
          "assistant",
          "user",
        ]);
      });

      it("refuses a file its session differs from, writing nothing", async () => {
        const repo = await makeRepo();
        const id = `pi-${newId()}`;
        const question = user("plan?");
        const file = new PiFile(id).message("e1", question).message("e2", assistant("A"));
        const session = (await repo.syncSession(parsePi(file.text()))).session;
        const edited = new PiFile(id).message("e1", question).message("e2", assistant("A, edited"));
        const changed = await expectCode(repo.syncSession(parsePi(edited.text())), "already_exists");
        expect(changed.details).toEqual({ id, entryId: "e2" });
        // The session gained an entry of its own: the file no longer holds everything it has.
        await session.appendMessage(user("written here, not in the file"));
        const before = await session.getEntries();
        file.message("e3", user("and then?"));
        await expectCode(repo.syncSession(parsePi(file.text())), "already_exists");
        expect(await session.getEntries()).toEqual(before);
      });

      it("names the session as the file's new lines rename it, and syncs on past a name given here", async () => {
        const repo = await makeRepo();
        const file = new ClaudeCodeLines(newId());
        file.user("plan?").assistant("A").title("first plan");
        const { session } = await repo.syncSession(parseClaudeCode(file.text()));
        expect(await session.getName()).toBe("first plan");
        // Claude Code renamed the session after the first sync.
        file.user("and then?").title("second plan").assistant("B");
        const renamed = parseClaudeCode(file.text());
        expect(await repo.syncSession(renamed)).toMatchObject({ status: "appended", appended: 3 });
        expect(await session.getName()).toBe("second plan");
        expect(await session.getLeafId()).toBe(renamed.leafId);
        expect((await repo.syncSession(renamed)).status).toBe("unchanged");
        const named = (await session.getEntries({ type: "session_info" })).length;
        // A name given here is no line of the file's: the next sync goes on, and keeps it.
        await session.appendSessionName("mine");
        file.user("done?").assistant("C");
        const grown = parseClaudeCode(file.text());
        expect(await repo.syncSession(grown)).toMatchObject({ status: "appended", appended: 2 });
        expect(await session.getName()).toBe("mine");
        expect(await session.getLeafId()).toBe(grown.leafId);
        expect((await session.getEntries({ type: "session_info" })).length).toBe(named + 1);
        expect((await session.buildContext()).messages.map((m) => m.role)).toEqual([
          "user",
          "assistant",
          "user",
          "assistant",
          "user",
          "assistant",
        ]);
      });

      it("syncs into the session named, whatever id the file gives", async () => {
        const repo = await makeRepo();
        const id = `copy-${newId()}`;
        const file = new PiFile(`pi-${newId()}`).message("e1", user("plan?"));
        expect((await repo.syncSession(parsePi(file.text()), { id })).session.id).toBe(id);
        file.message("e2", assistant("A"));
        expect((await repo.syncSession(parsePi(file.text()), { id })).appended).toBe(1);
        await expectCode(repo.open(file.id), "not_found");
      });
    });

    pi16Conformance(makeRepo);

    describe("scale", () => {
      it(`returns a ${deepChain}-entry chain as one path and tree without overflowing`, async () => {
        const session = await fresh();
        const ids = await chain(session, deepChain);
        const path = await session.getBranch();
        expect(path.length).toBe(deepChain);
        expect(path[0]?.id).toBe(ids[0]);
        expect(path[deepChain - 1]?.id).toBe(ids[deepChain - 1]);
        const tree: TreeNode[] = await session.getTree();
        let depth = 0;
        for (const _ of walkTree(tree)) depth++;
        expect(depth).toBe(deepChain);
        expect(treeToJson(tree).length).toBeGreaterThan(deepChain * 50);
        expect((await session.buildContext()).messages.length).toBe(deepChain);
      });
    });
  });
}
