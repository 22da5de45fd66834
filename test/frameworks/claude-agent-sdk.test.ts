import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  getSessionMessages,
  InMemorySessionStore,
  importSessionToStore,
  type SessionKey,
  type SessionStore,
  type SessionStoreEntry,
} from "@anthropic-ai/claude-agent-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseClaudeCode } from "../../src/core/claude-code-format";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../../src/core/messages";
import { contextInFormat } from "../../src/core/providers/convert";
import type { SessionRepo } from "../../src/core/repo";
import type { Session } from "../../src/core/session";
import type { CreateSessionOptions } from "../../src/core/session-schemas";
import { CfSessionsStore } from "../../src/frameworks/claude-agent-sdk";
import { adapterRepos } from "../support/adapter-repos";

/*
 * The store side by side with the SDK's own InMemorySessionStore on recorded Claude Code
 * transcripts (test/fixtures/claude-code/): the same appends must get the same answers from both.
 * Then the SDK's importSessionToStore from a config folder of transcript files, and the mirrored
 * transcript read as a session tree.
 */

const fixtures = resolve(import.meta.dirname, "../fixtures/claude-code");
const FILES = ["1.0.98-parallel-tools.jsonl", "1.0.108-sidechains.jsonl", "2.1.152-redacted.jsonl"];

function transcript(file: string): SessionStoreEntry[] {
  return readFileSync(join(fixtures, file), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as SessionStoreEntry);
}

function sessionIdOf(lines: SessionStoreEntry[]): string {
  return lines.map((line) => line.sessionId).findLast((id): id is string => typeof id === "string") as string;
}

/** Appends in batches of `size`, as the SDK mirrors a transcript while it is written. */
async function mirror(store: SessionStore, key: SessionKey, lines: SessionStoreEntry[], size = 7) {
  for (let i = 0; i < lines.length; i += size) await store.append(key, lines.slice(i, i + size));
}

/** What two stores answer for a project, with the times (each store's own clock) left out. */
async function answers(store: SessionStore, projectKey: string, sessionIds: string[]) {
  const listed = (await store.listSessions?.(projectKey)) ?? [];
  const summaries = (await store.listSessionSummaries?.(projectKey)) ?? [];
  return {
    listed: listed.map((s) => s.sessionId).sort(),
    mtimesAreMs: listed.every((s) => Number.isInteger(s.mtime) && s.mtime > 1_600_000_000_000),
    summaries: summaries
      .map(({ sessionId, data }) => ({ sessionId, data }))
      .sort((a, b) => a.sessionId.localeCompare(b.sessionId)),
    loads: await Promise.all(sessionIds.map((sessionId) => store.load({ projectKey, sessionId }))),
    subkeys: await Promise.all(
      sessionIds.map(async (sessionId) => (await store.listSubkeys?.({ projectKey, sessionId }))?.sort()),
    ),
  };
}

/** Claude Code's lines of a transcript: a user's message, and a reply, each under the line given. */
function transcriptLines(sessionId: string) {
  const common = { sessionId, cwd: "/work/project", isSidechain: false, userType: "external" };
  const line = (parentUuid: string | null, type: string, message: Record<string, unknown>) =>
    ({
      ...common,
      type,
      uuid: crypto.randomUUID(),
      parentUuid,
      version: "2.1.38",
      timestamp: new Date().toISOString(),
      message,
    }) as SessionStoreEntry;
  return {
    ask: (parentUuid: string | null, content: string) => line(parentUuid, "user", { role: "user", content }),
    reply: (parentUuid: string, text: string) =>
      line(parentUuid, "assistant", {
        id: `msg_${crypto.randomUUID().replaceAll("-", "")}`,
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [{ type: "text", text }],
        stop_reason: "end_turn",
      }),
  };
}

const configDir = mkdtempSync(join(tmpdir(), "claude-config-"));
afterAll(() => {
  rmSync(configDir, { recursive: true, force: true });
});

// Sessions report to the listing soon after a write (the summaries live in their metadata).
const repos = adapterRepos({ vars: { DIRECTORY_SYNC_MS: "20" } });

describe.each(repos)("CfSessionsStore on %s", (_name, makeRepo) => {
  let repo: SessionRepo;
  beforeAll(async () => {
    repo = await makeRepo();
  });

  it("answers as InMemorySessionStore does on recorded transcripts, subagents and deletes included", async () => {
    const projectKey = `-path-to-Demo-${crypto.randomUUID()}`;
    const ours = new CfSessionsStore({ repo });
    const theirs = new InMemorySessionStore();
    const ids: string[] = [];
    for (const file of FILES) {
      const lines = transcript(file);
      const sessionId = sessionIdOf(lines);
      ids.push(sessionId);
      for (const store of [ours, theirs]) {
        await mirror(store, { projectKey, sessionId }, lines);
        // A subagent's transcript of its own: the sidechain lines, under a subpath.
        const side = lines.filter((line) => line.isSidechain === true);
        if (side.length > 0)
          await mirror(store, { projectKey, sessionId, subpath: "subagents/agent-a1" }, side, 5);
      }
    }
    const expected = await answers(theirs, projectKey, ids);
    expect(expected.loads.every((load) => load !== null && load.length > 0)).toBe(true);
    expect(expected.subkeys.flat()).toContain("subagents/agent-a1");
    await expect.poll(() => answers(ours, projectKey, ids), { timeout: 10_000 }).toEqual(expected);
    expect(
      await ours.load({ projectKey, sessionId: ids[1] as string, subpath: "subagents/agent-a1" }),
    ).toEqual(await theirs.load({ projectKey, sessionId: ids[1] as string, subpath: "subagents/agent-a1" }));
    expect(await ours.load({ projectKey, sessionId: crypto.randomUUID() })).toBeNull();

    for (const store of [ours, theirs]) await store.delete({ projectKey, sessionId: ids[1] as string });
    const afterDelete = await answers(theirs, projectKey, ids);
    expect(afterDelete.listed).toEqual([ids[0], ids[2]].sort());
    await expect.poll(() => answers(ours, projectKey, ids), { timeout: 10_000 }).toEqual(afterDelete);
    expect(
      await ours.load({ projectKey, sessionId: ids[1] as string, subpath: "subagents/agent-a1" }),
    ).toBeNull();
  });

  it("is idempotent on uuid: a retried batch or an import run again writes nothing twice", async () => {
    const key = { projectKey: `p-${crypto.randomUUID()}`, sessionId: crypto.randomUUID() };
    const ours = new CfSessionsStore({ repo });
    const lines = transcript("1.0.98-parallel-tools.jsonl");
    await mirror(ours, key, lines);
    await mirror(ours, key, lines, 11);
    // Another process (a store of its own) replays too.
    await mirror(new CfSessionsStore({ repo }), key, lines.slice(0, 9));
    expect(await ours.load(key)).toEqual(lines);
    // Lines without a uuid are appended again, as the SDK asks.
    const title = { type: "custom-title", customTitle: "renamed", sessionId: key.sessionId };
    await ours.append(key, [title]);
    await ours.append(key, [title]);
    expect(await ours.load(key)).toEqual([...lines, title, title]);
  });

  it("keeps a transcript whole when stores on two hosts take turns writing it", async () => {
    const projectKey = `p-${crypto.randomUUID()}`;
    const lines = transcript("1.0.98-parallel-tools.jsonl");
    const key = { projectKey, sessionId: sessionIdOf(lines) };
    const [hostA, hostB] = [new CfSessionsStore({ repo }), new CfSessionsStore({ repo })];
    const theirs = new InMemorySessionStore();
    // A writes, B resumes the session, then A again (what it knew of the transcript is out of
    // date), then B.
    const turns = [hostA, hostB, hostA, hostB, hostA];
    const size = Math.ceil(lines.length / turns.length);
    for (const [i, store] of turns.entries()) {
      // Before its second turn, A retries its first batch: nothing in it is new to A.
      if (i === 2) await store.append(key, lines.slice(0, size));
      for (const writer of [store, theirs]) await writer.append(key, lines.slice(i * size, (i + 1) * size));
    }
    expect(await hostB.load(key)).toEqual(lines);
    // The same tree as one store writing it all.
    const alone = { projectKey: `p-${crypto.randomUUID()}`, sessionId: key.sessionId };
    const single = new CfSessionsStore({ repo });
    await mirror(single, alone, lines, size);
    const shape = async (store: CfSessionsStore, at: typeof key) => {
      const session = await repo.open(await store.sessionIdFor(at));
      const tree: Array<[string, string | null]> = [];
      for await (const entry of session.allEntries()) tree.push([entry.id, entry.parentId]);
      return tree;
    };
    expect(await shape(hostA, key)).toEqual(await shape(single, alone));
    // The summary folds every line, whichever host wrote it.
    const summary = async (store: SessionStore) =>
      ((await store.listSessionSummaries?.(projectKey)) ?? []).map(({ sessionId, data }) => ({
        sessionId,
        data,
      }));
    const expected = await summary(theirs);
    expect(expected).toHaveLength(1);
    await expect.poll(() => summary(hostA), { timeout: 10_000 }).toEqual(expected);
  });

  it("mirrors a transcript as a readable session tree: the Claude Code import's messages", async () => {
    const key = { projectKey: `p-${crypto.randomUUID()}`, sessionId: crypto.randomUUID() };
    const store = new CfSessionsStore({ repo });
    const text = readFileSync(join(fixtures, "1.0.98-parallel-tools.jsonl"), "utf8");
    await mirror(store, key, transcript("1.0.98-parallel-tools.jsonl"), 4);
    const session = await repo.open(await store.sessionIdFor(key));
    const context = await session.buildContext();
    const imported = await new MemoryRepo().importSession(parseClaudeCode(text));
    const reference = await imported.buildContext();
    const userTexts = (messages: typeof context.messages) =>
      messages
        .filter((m) => m.role === "user")
        .map((m) => JSON.stringify((m as { content: unknown }).content));
    const toolCalls = (messages: typeof context.messages) =>
      messages.flatMap((m) =>
        m.role === "assistant"
          ? (m as { content: Array<{ type: string; id?: string }> }).content
              .filter((part) => part.type === "toolCall")
              .map((part) => part.id)
          : [],
      );
    const toolResults = (messages: typeof context.messages) =>
      messages.filter((m) => m.role === "toolResult").map((m) => (m as { toolCallId: string }).toolCallId);
    expect(userTexts(context.messages)).toEqual(userTexts(reference.messages));
    expect(toolCalls(context.messages)).toEqual(toolCalls(reference.messages));
    expect(toolResults(context.messages)).toEqual(toolResults(reference.messages));
    expect(toolCalls(context.messages).length).toBeGreaterThan(4);
    // Each line's first entry is named by its uuid, under its parent's.
    const first = transcript("1.0.98-parallel-tools.jsonl")[1] as SessionStoreEntry;
    expect((await session.getEntry(first.uuid as string))?.parentId).toBeTypeOf("string");
  });

  it("keeps every parallel tool result on the path, as the import does, when lines come a few at a time", async () => {
    // Claude Code 2.x hangs each parallel result from the line of its own call.
    const file = "2.1.38-task-plan-mode.jsonl";
    const lines = transcript(file);
    const key = { projectKey: `p-${crypto.randomUUID()}`, sessionId: crypto.randomUUID() };
    const half = Math.floor(lines.length / 2);
    const store = new CfSessionsStore({ repo });
    await mirror(store, key, lines.slice(0, half), 3);
    // A store that never wrote here reads where the lines hang back from the session.
    await mirror(new CfSessionsStore({ repo }), key, lines.slice(half), 3);
    const callsAndResults = (messages: AgentMessage[]) => ({
      calls: messages.flatMap((m) =>
        m.role === "assistant"
          ? (m as AssistantMessage).content.flatMap((part) => (part.type === "toolCall" ? [part.id] : []))
          : [],
      ),
      results: messages.flatMap((m) =>
        m.role === "toolResult" ? [(m as ToolResultMessage).toolCallId] : [],
      ),
    });
    const session = await repo.open(await store.sessionIdFor(key));
    const ours = callsAndResults((await session.buildContext()).messages);
    const imported = await new MemoryRepo().importSession(
      parseClaudeCode(readFileSync(join(fixtures, file), "utf8")),
    );
    const reference = callsAndResults((await imported.buildContext()).messages);
    expect(ours).toEqual(reference);
    expect([...ours.results].sort()).toEqual([...ours.calls].sort());
    expect(ours.calls.length).toBeGreaterThan(10);
    expect(await store.load(key)).toEqual(lines);
  });

  it("keeps the metadata others set on a transcript's session when it appends again", async () => {
    const lines = transcript("1.0.98-parallel-tools.jsonl");
    const key = { projectKey: `p-${crypto.randomUUID()}`, sessionId: crypto.randomUUID() };
    const store = new CfSessionsStore({ repo });
    await store.append(key, lines.slice(0, 3));
    const session = await repo.open(await store.sessionIdFor(key));
    // Another door records the session's project (PATCH /v1/sessions/:sid, the CLI).
    const project = `github.com/acme/app-${crypto.randomUUID()}`;
    await session.updateHeader({ metadata: { ...(await session.getMetadata()), project } });
    await store.append(key, lines.slice(3, 6));
    const metadata = await session.getMetadata();
    expect(metadata.project).toBe(project);
    expect(metadata.claudeAgentSdk).toMatchObject({ ...key, mtime: expect.any(Number) });
    await expect
      .poll(async () => (await repo.list({ project })).sessions.map((info) => info.id), { timeout: 10_000 })
      .toEqual([session.id]);
    expect(await store.load(key)).toEqual(lines.slice(0, 6));
  });

  it("round-trips importSessionToStore from a folder of transcripts, as InMemorySessionStore does", async () => {
    const lines = transcript("1.0.108-sidechains.jsonl");
    const sessionId = sessionIdOf(lines);
    const project = join(configDir, "projects", "-path-to-Demo");
    mkdirSync(join(project, sessionId, "subagents"), { recursive: true });
    writeFileSync(join(project, `${sessionId}.jsonl`), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
    const side = lines.filter((line) => line.isSidechain === true);
    writeFileSync(
      join(project, sessionId, "subagents", "agent-a1.jsonl"),
      `${side.map((l) => JSON.stringify(l)).join("\n")}\n`,
    );
    const previous = process.env.CLAUDE_CONFIG_DIR;
    process.env.CLAUDE_CONFIG_DIR = configDir;
    const ours = new CfSessionsStore({ repo, sessionPrefix: `imported-${crypto.randomUUID().slice(0, 8)}:` });
    const theirs = new InMemorySessionStore();
    try {
      const options = { dir: "/path/to/Demo", batchSize: 10 };
      await importSessionToStore(sessionId, ours, options);
      await importSessionToStore(sessionId, theirs, options);
      // Run again: nothing changes in ours.
      await importSessionToStore(sessionId, ours, options);
    } finally {
      if (previous === undefined) delete process.env.CLAUDE_CONFIG_DIR;
      else process.env.CLAUDE_CONFIG_DIR = previous;
    }
    // The project key the SDK derives from the folder: the path with its separators as dashes.
    const projectKey = "-path-to-Demo";
    const expected = await answers(theirs, projectKey, [sessionId]);
    expect(expected.loads[0]).toEqual(lines);
    expect(expected.subkeys[0]).toEqual(["subagents/agent-a1"]);
    await expect.poll(() => answers(ours, projectKey, [sessionId]), { timeout: 10_000 }).toEqual(expected);
  });

  it("reads a session written elsewhere as a transcript the SDK's own reader takes, and goes on with it", async () => {
    const store = new CfSessionsStore({ repo, keyIsSessionId: true });
    const id = crypto.randomUUID();
    const session = await repo.create({ id });
    const usage = {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    };
    const reply = (content: unknown[], stopReason: string) =>
      ({
        role: "assistant",
        content,
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        usage,
        stopReason,
        timestamp: 2,
      }) as never;
    await session.appendMessage({ role: "user", content: "Read a.txt", timestamp: 1 });
    await session.appendMessage(
      reply([{ type: "toolCall", id: "toolu_1", name: "Read", arguments: { path: "a.txt" } }], "toolUse"),
    );
    await session.appendMessage({
      role: "toolResult",
      toolCallId: "toolu_1",
      toolName: "Read",
      content: [{ type: "text", text: "hello from a.txt" }],
      isError: false,
      timestamp: 3,
    });
    await session.appendMessage(reply([{ type: "text", text: "It says hello." }], "stop"));

    const dir = "/work/project";
    const read = await getSessionMessages(id, { sessionStore: store, dir });
    expect(read.map((message) => message.type)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(JSON.stringify(read[1]?.message)).toContain('"name":"Read"');
    expect(JSON.stringify(read[2]?.message)).toContain("hello from a.txt");
    expect(JSON.stringify(read[3]?.message)).toContain("It says hello.");

    // The SDK goes on from the last line it read: the session grows under its head.
    const projectKey = "-work-project";
    const lines = (await store.load({ projectKey, sessionId: id })) as Array<Record<string, unknown>>;
    const next = {
      type: "user",
      uuid: crypto.randomUUID(),
      parentUuid: lines.at(-1)?.uuid,
      sessionId: id,
      isSidechain: false,
      userType: "external",
      cwd: dir,
      version: "2.1.38",
      timestamp: new Date().toISOString(),
      message: { role: "user", content: "And then?" },
    };
    const head = await session.getLeafId();
    await store.append({ projectKey, sessionId: id }, [next] as SessionStoreEntry[]);
    const branch = await session.getBranch();
    expect(branch.at(-1)?.parentId).toBe(head);
    expect(branch.filter((entry) => entry.type === "message")).toHaveLength(5);
    const after = await getSessionMessages(id, { sessionStore: store, dir });
    expect(after).toHaveLength(5);
    expect(JSON.stringify(after[4]?.message)).toContain("And then?");
    await expect(store.load({ projectKey, sessionId: "not a session id" })).rejects.toMatchObject({
      code: "invalid_request",
    });
  });

  it("goes on under what another door appended after its lines, keeping it on the branch", async () => {
    const sessionId = crypto.randomUUID();
    const key = { projectKey: "-work-project", sessionId };
    const store = new CfSessionsStore({ repo });
    const transcript = transcriptLines(sessionId);
    const { reply } = transcript;
    const ask = transcript.ask(null, "Hello");
    const answer = reply(ask.uuid as string, "Hi.");
    await store.append(key, [ask, answer]);

    // Another door (HTTP, MCP) appends a user message and a note after the store's lines.
    const session = await repo.open(await store.sessionIdFor(key));
    await session.appendMessage({ role: "user", content: "What is 2 + 2?", timestamp: Date.now() });
    await session.appendCustomMessageEntry({ customType: "note", content: "Answer briefly.", display: true });
    const loaded = (await store.load(key)) as SessionStoreEntry[];
    expect(loaded).toHaveLength(4);

    // The SDK goes on from the last line it loaded.
    const next = reply(loaded.at(-1)?.uuid as string, "4.");
    await store.append(key, [next]);
    const contextTexts = async () =>
      (await session.buildContext()).messages.map((message) => {
        const content = (message as { content: string | Array<{ text?: string }> }).content;
        return typeof content === "string" ? content : content.map((part) => part.text ?? "").join("");
      });
    expect(await contextTexts()).toEqual(["Hello", "Hi.", "What is 2 + 2?", "Answer briefly.", "4."]);
    const dir = "/work/project";
    const sdkTexts = async () =>
      (await getSessionMessages(sessionId, { sessionStore: store, dir })).map((read) =>
        JSON.stringify(read.message),
      );
    expect(await sdkTexts()).toEqual([
      JSON.stringify(ask.message),
      JSON.stringify(answer.message),
      JSON.stringify({ role: "user", content: "What is 2 + 2?" }),
      JSON.stringify(next.message),
    ]);

    // Another door again, then a store that never wrote here goes on from the loaded transcript.
    await session.appendMessage({ role: "user", content: "And 3 + 3?", timestamp: Date.now() });
    const last = ((await store.load(key)) as SessionStoreEntry[]).at(-1);
    const six = reply(last?.uuid as string, "6.");
    await new CfSessionsStore({ repo }).append(key, [six]);
    expect(await contextTexts()).toEqual([
      "Hello",
      "Hi.",
      "What is 2 + 2?",
      "Answer briefly.",
      "4.",
      "And 3 + 3?",
      "6.",
    ]);
    expect((await sdkTexts()).slice(4)).toEqual([
      JSON.stringify({ role: "user", content: "And 3 + 3?" }),
      JSON.stringify(six.message),
    ]);
  });

  it("goes on at the head another door moved back, under the note the transcript ends with", async () => {
    const sessionId = crypto.randomUUID();
    const key = { projectKey: "-work-project", sessionId };
    const store = new CfSessionsStore({ repo });
    const { ask, reply } = transcriptLines(sessionId);
    const hello = ask(null, "Hello");
    const hi = reply(hello.uuid as string, "Hi.");
    const more = ask(hi.uuid as string, "Tell me more.");
    const told = reply(more.uuid as string, "More.");
    await store.append(key, [hello, hi, more, told]);

    // Another door moves the head back to the first answer.
    const session = await repo.open(await store.sessionIdFor(key));
    await session.setLeafId(hi.uuid as string);
    const loaded = (await store.load(key)) as SessionStoreEntry[];
    const note = loaded.at(-1) as SessionStoreEntry;
    expect(note).toMatchObject({ type: "system", subtype: "informational", parentUuid: hi.uuid });

    // Claude Code resumes at the note and goes on under it.
    const instead = ask(note.uuid as string, "Something else.");
    const sure = reply(instead.uuid as string, "Sure.");
    await new CfSessionsStore({ repo }).append(key, [instead, sure]);
    expect((await session.getEntry(instead.uuid as string))?.parentId).toBe(hi.uuid);
    expect(await session.getLeafId()).toBe(sure.uuid);
    const texts = (await session.buildContext()).messages.map((message) => {
      const content = (message as { content: string | Array<{ text?: string }> }).content;
      return typeof content === "string" ? content : content.map((part) => part.text ?? "").join("");
    });
    expect(texts).toEqual(["Hello", "Hi.", "Something else.", "Sure."]);
    // The branch left behind is kept.
    expect((await session.getEntry(told.uuid as string))?.parentId).toBe(more.uuid);
  });

  it.each([
    ["this store", false],
    ["a store reading the transcript afresh", true],
  ])("goes on under an earlier line of entries whose ids are no UUIDs, written by %s", async (_, fresh) => {
    // Entries whose ids other doors chose (pi's, an HTTP client's): their lines get uuids made from them.
    const sessionId = crypto.randomUUID();
    const session = await repo.create({ id: sessionId });
    const model = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" };
    const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 };
    const said = (text: string) =>
      ({
        role: "assistant",
        content: [{ type: "text", text }],
        ...model,
        usage: { ...usage, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
        stopReason: "stop",
        timestamp: 2,
      }) as AgentMessage;
    await session.appendMessage(
      { role: "user", content: "Weather in Paris?", timestamp: 1 },
      { id: "a1b2c3d4" },
    );
    await session.appendMessage(said("Sunny."), { id: "b2c3d4e5" });
    await session.appendMessage({ role: "user", content: "And tomorrow?", timestamp: 3 }, { id: "c3d4e5f6" });
    await session.appendMessage(said("Rain."), { id: "d4e5f6a7" });
    const store = new CfSessionsStore({ repo, keyIsSessionId: true });
    const key = { projectKey: "-work-project", sessionId };
    const loaded = (await store.load(key)) as SessionStoreEntry[];
    const { ask, reply } = transcriptLines(sessionId);
    if (fresh) {
      const sunday = ask(loaded.at(-1)?.uuid as string, "And Sunday?");
      await store.append(key, [sunday, reply(sunday.uuid as string, "Snow.")]);
    }
    // Claude Code goes back to the first answer and asks again (an edit, or `resumeSessionAt`).
    const first = loaded.find((line) => line.type === "assistant") as SessionStoreEntry;
    const writer = fresh ? new CfSessionsStore({ repo, keyIsSessionId: true }) : store;
    await writer.append(key, [ask(first.uuid as string, "And next week?")]);
    const textOf = (message: unknown) => {
      const content = (message as { content: string | Array<{ text?: string }> }).content;
      return typeof content === "string" ? content : content.map((part) => part.text ?? "").join("");
    };
    const context = (await session.buildContext()).messages.map(textOf);
    const dir = "/work/project";
    const sdk = (await getSessionMessages(sessionId, { sessionStore: store, dir })).map((read) =>
      textOf(read.message),
    );
    const expected = ["Weather in Paris?", "Sunny.", "And next week?"];
    expect({ context, sdk }).toEqual({ context: expected, sdk: expected });
  });

  it("names each tool result by its call, in the same append, a later one, or another store's", async () => {
    const sessionId = crypto.randomUUID();
    const common = {
      sessionId,
      cwd: "/srv/app",
      isSidechain: false,
      userType: "external",
      version: "2.1.38",
    };
    const at = (second: number) => new Date(Date.UTC(2026, 2, 1, 9, 0, second)).toISOString();
    const uuids = Array.from({ length: 7 }, () => crypto.randomUUID());
    const line = (i: number, type: string, message: Record<string, unknown>) =>
      ({
        ...common,
        type,
        uuid: uuids[i],
        parentUuid: i === 0 ? null : uuids[i - 1],
        timestamp: at(i),
        message,
      }) as SessionStoreEntry;
    const call = (i: number, id: string, name: string) =>
      line(i, "assistant", {
        id: `msg_${i}`,
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [{ type: "tool_use", id, name, input: { file_path: "a.txt" } }],
        stop_reason: "tool_use",
      });
    const result = (i: number, id: string) =>
      line(i, "user", {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: id, content: "hello" }],
      });
    const lines = [
      line(0, "user", { role: "user", content: "Read a.txt, then b.txt, then c.txt" }),
      call(1, "toolu_a", "Read"),
      result(2, "toolu_a"),
      call(3, "toolu_b", "Grep"),
      result(4, "toolu_b"),
      call(5, "toolu_c", "Glob"),
      result(6, "toolu_c"),
    ];
    const key = { projectKey: `p-${crypto.randomUUID()}`, sessionId };
    const store = new CfSessionsStore({ repo });
    // A call and its result in one append; a result appended after its call; then by another store.
    await store.append(key, lines.slice(0, 3));
    await store.append(key, lines.slice(3, 4));
    await store.append(key, lines.slice(4, 6));
    await new CfSessionsStore({ repo }).append(key, lines.slice(6));
    // Appended again: nothing changes.
    await store.append(key, lines);
    const session = await repo.open(await store.sessionIdFor(key));
    const results = (await session.getBranch()).flatMap((entry) =>
      entry.type === "message" && entry.message.role === "toolResult" ? [entry.message] : [],
    );
    expect(
      results.map((m) => [(m as { toolCallId: string }).toolCallId, (m as { toolName: string }).toolName]),
    ).toEqual([
      ["toolu_a", "Read"],
      ["toolu_b", "Grep"],
      ["toolu_c", "Glob"],
    ]);
    expect(await store.load(key)).toEqual(lines);
  });

  it.each([
    ["entries before it", false, false],
    ["a retained tail", true, false],
    ["a retained tail after a system message", true, true],
  ])(
    "goes on from a line a compaction kept (%s) under its summary, keeping what lies up to that line",
    async (_shape, tail, system) => {
      const store = new CfSessionsStore({ repo, keyIsSessionId: true });
      const id = crypto.randomUUID();
      const session = await repo.create({ id });
      const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 };
      const counted = ["One", "Two", "Three"].flatMap((word, index) => [
        { role: "user", content: `${word}?`, timestamp: 2 * index + 1 },
        {
          role: "assistant",
          content: [{ type: "text", text: `${word}.` }],
          api: "anthropic-messages",
          provider: "anthropic",
          model: "claude-sonnet-4-5",
          usage,
          stopReason: "stop",
          timestamp: 2 * index + 2,
        },
      ]) as AgentMessage[];
      const ids: string[] = [];
      for (const message of tail ? counted.slice(0, 2) : counted)
        ids.push(await session.appendMessage(message));
      await session.appendCompaction({
        summary: "They counted to one.",
        tokensBefore: 10,
        ...(tail ? { retainedTail: counted.slice(2) } : { firstKeptEntryId: ids[2] as string }),
        ...(system ? { systemMessage: { role: "system", content: "Be brief." } } : {}),
      });
      const key = { projectKey: "-work-project", sessionId: id };
      const loaded = (await store.load(key)) as Array<Record<string, unknown>>;
      const texts = (content: unknown) =>
        typeof content === "string"
          ? content
          : (content as Array<{ text?: string }>).map((b) => b.text).join("");
      // The user goes back to "Two." as Claude Code shows it after the summary.
      const summary = loaded.findIndex((line) => line.isCompactSummary === true);
      const two = loaded
        .slice(summary)
        .find((line) => texts((line.message as { content?: unknown } | undefined)?.content) === "Two.");
      expect(two).toBeDefined();
      await store.append(key, [
        {
          type: "user",
          uuid: crypto.randomUUID(),
          parentUuid: two?.uuid,
          sessionId: id,
          isSidechain: false,
          timestamp: new Date().toISOString(),
          message: { role: "user", content: "Again?" },
        },
      ] as SessionStoreEntry[]);
      const context = (await session.buildContext()).messages.map((message) =>
        message.role === "compactionSummary"
          ? `summary: ${message.summary}`
          : texts((message as { content: unknown }).content),
      );
      expect(context).toEqual([
        ...(system ? ["Be brief."] : []),
        "summary: They counted to one.",
        "Two?",
        "Two.",
        "Again?",
      ]);
    },
  );

  it("names a tool result by a call the session holds from elsewhere", async () => {
    const store = new CfSessionsStore({ repo, keyIsSessionId: true });
    const id = crypto.randomUUID();
    const session = await repo.create({ id });
    await session.appendMessage({ role: "user", content: "Read a.txt", timestamp: 1 });
    await session.appendMessage({
      role: "assistant",
      content: [{ type: "toolCall", id: "toolu_1", name: "Read", arguments: { path: "a.txt" } }],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 },
      stopReason: "toolUse",
      timestamp: 2,
    } as never);
    const key = { projectKey: "-work-project", sessionId: id };
    const loaded = (await store.load(key)) as Array<Record<string, unknown>>;
    await store.append(key, [
      {
        type: "user",
        uuid: crypto.randomUUID(),
        parentUuid: loaded.at(-1)?.uuid,
        sessionId: id,
        isSidechain: false,
        timestamp: new Date().toISOString(),
        message: {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hello" }],
        },
      },
    ] as SessionStoreEntry[]);
    const last = (await session.getBranch()).at(-1);
    expect(last?.type === "message" && last.message).toMatchObject({ role: "toolResult", toolName: "Read" });
  });

  it("stores a result the SDK answers by a call's shown id under the stored call, with its name", async () => {
    const store = new CfSessionsStore({ repo, keyIsSessionId: true });
    const id = crypto.randomUUID();
    const session = await repo.create({ id });
    const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 };
    const reply = (callId: string, name: string, provider: string, timestamp: number) =>
      session.appendMessage({
        role: "assistant",
        content: [{ type: "toolCall", id: callId, name, arguments: { path: "a.txt" } }],
        api: provider === "openai" ? "openai-responses" : "openai-completions",
        provider,
        model: provider === "openai" ? "gpt-5" : "kimi-k2",
        usage,
        stopReason: "toolUse",
        timestamp,
      } as never);
    const key = { projectKey: "-work-project", sessionId: id };
    // The SDK answers the last call of the transcript it loaded by the id that call was shown with.
    const answer = async (text: string) => {
      const loaded = (await store.load(key)) as Array<Record<string, unknown>>;
      const last = loaded.at(-1) as { uuid: string; message: { content: Array<{ id: string }> } };
      const shown = last.message.content.at(-1)?.id as string;
      await store.append(key, [
        {
          type: "user",
          uuid: crypto.randomUUID(),
          parentUuid: last.uuid,
          sessionId: id,
          isSidechain: false,
          timestamp: new Date().toISOString(),
          message: { role: "user", content: [{ type: "tool_result", tool_use_id: shown, content: text }] },
        },
      ] as SessionStoreEntry[]);
      return shown;
    };
    await session.appendMessage({
      role: "user",
      content: "Read a.txt, grep it, read it again",
      timestamp: 1,
    });
    // Kimi's ids are no Anthropic ids, and it gives the same one again on its next turn; pi-ai's
    // Responses ids carry the item id after a bar.
    const shown: string[] = [];
    await reply("functions.read_file:0", "read_file", "moonshot", 2);
    shown.push(await answer("first read"));
    await reply("call_1|fc_1", "grep", "openai", 3);
    shown.push(await answer("grep hit"));
    await reply("functions.read_file:0", "read_file", "moonshot", 4);
    shown.push(await answer("second read"));
    expect(shown).toEqual(["functions_read_file_0", "call_1", "functions_read_file_0_2"]);

    // Every other door reads each call answered by its real result, stored under the call's id.
    const chat = contextInFormat(await session.buildContext(), "openai-chat", {
      provider: "openai",
      modelId: "gpt-4o",
    });
    const tools = chat.messages.filter((message) => message.role === "tool");
    expect(tools.map((tool) => tool.content)).toEqual(["first read", "grep hit", "second read"]);
    const calls = chat.messages.flatMap((message) =>
      message.role === "assistant" ? (message.tool_calls ?? []).map((call) => call.id) : [],
    );
    expect(tools.map((tool) => tool.tool_call_id)).toEqual(calls);
    const results = (await session.getBranch()).flatMap((entry) =>
      entry.type === "message" && entry.message.role === "toolResult" ? [entry.message] : [],
    );
    expect(results.map(({ toolCallId, toolName }) => [toolCallId, toolName])).toEqual([
      ["functions.read_file:0", "read_file"],
      ["call_1|fc_1", "grep"],
      ["functions.read_file:0", "read_file"],
    ]);

    // Loaded again, each result names the call shown before it.
    const again = (await store.load(key)) as Array<{ message?: { content?: unknown } }>;
    const blocks = again.flatMap(({ message }) =>
      Array.isArray(message?.content) ? (message.content as Array<Record<string, unknown>>) : [],
    );
    const pairs = blocks.flatMap((block) =>
      block.type === "tool_use"
        ? [`call ${block.id}`]
        : block.type === "tool_result"
          ? [`result ${block.tool_use_id}`]
          : [],
    );
    expect(pairs).toEqual(shown.flatMap((wire) => [`call ${wire}`, `result ${wire}`]));
    const read = await getSessionMessages(id, { sessionStore: store, dir: "/work/project" });
    expect(JSON.stringify(read)).toContain("second read");
  });

  it("keeps the results of parallel calls made elsewhere on the path, each on a line of its own", async () => {
    const store = new CfSessionsStore({ repo, keyIsSessionId: true });
    const id = crypto.randomUUID();
    const session = await repo.create({ id });
    await session.appendMessage({ role: "user", content: "Read a.txt and grep b.txt", timestamp: 1 });
    await session.appendMessage({
      role: "assistant",
      content: [
        { type: "toolCall", id: "functions.read_file:0", name: "read_file", arguments: { path: "a.txt" } },
        { type: "toolCall", id: "toolu_b", name: "grep", arguments: { path: "b.txt" } },
      ],
      api: "openai-completions",
      provider: "moonshot",
      model: "kimi-k2",
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 },
      stopReason: "toolUse",
      timestamp: 2,
    } as never);
    const key = { projectKey: "-work-project", sessionId: id };
    const loaded = (await store.load(key)) as Array<Record<string, unknown>>;
    const calls = loaded.at(-1) as { uuid: string; message: { content: Array<{ id: string }> } };
    // Claude Code hangs each result from the line of its call: here, both from the one line.
    const result = (block: { id: string }, text: string) => ({
      type: "user",
      uuid: crypto.randomUUID(),
      parentUuid: calls.uuid,
      sessionId: id,
      isSidechain: false,
      timestamp: new Date().toISOString(),
      message: { role: "user", content: [{ type: "tool_result", tool_use_id: block.id, content: text }] },
    });
    const [read, grep] = calls.message.content as [{ id: string }, { id: string }];
    await store.append(key, [result(read, "a says hi")] as SessionStoreEntry[]);
    await store.append(key, [result(grep, "b matches")] as SessionStoreEntry[]);

    const chat = contextInFormat(await session.buildContext(), "openai-chat", {
      provider: "openai",
      modelId: "gpt-4o",
    });
    const tools = chat.messages.filter((message) => message.role === "tool");
    expect(tools.map((tool) => tool.content)).toEqual(["a says hi", "b matches"]);
    const results = (await session.getBranch()).flatMap((entry) =>
      entry.type === "message" && entry.message.role === "toolResult" ? [entry.message] : [],
    );
    expect(results.map(({ toolCallId, toolName }) => [toolCallId, toolName])).toEqual([
      ["functions.read_file:0", "read_file"],
      ["toolu_b", "grep"],
    ]);
  });

  it("refuses a malformed key or entries with invalid_request, writing nothing", async () => {
    const store = new CfSessionsStore({ repo });
    const key = { projectKey: `p-${crypto.randomUUID()}`, sessionId: crypto.randomUUID() };
    const bad: Array<[unknown, unknown]> = [
      [{ ...key, projectKey: "" }, [{ type: "user", uuid: "u1" }]],
      [{ ...key, subpath: "" }, [{ type: "user", uuid: "u1" }]],
      [{ sessionId: key.sessionId }, [{ type: "user", uuid: "u1" }]],
      [key, "lines"],
      [key, [{ uuid: "no-type" }]],
      [key, [{ type: "user", uuid: 7 }]],
      [key, [null]],
    ];
    for (const [k, entries] of bad) {
      await expect(store.append(k as SessionKey, entries as SessionStoreEntry[])).rejects.toMatchObject({
        code: "invalid_request",
      });
    }
    await expect(store.listSessions("")).rejects.toMatchObject({ code: "invalid_request" });
    expect(await store.load(key)).toBeNull();
    expect(await store.listSessions(key.projectKey)).toEqual([]);
  });
});

it("lists only a session's own ids to find its subagents' transcripts, when keys are session ids", async () => {
  const repo = new MemoryRepo();
  const list = repo.list.bind(repo);
  const prefixes: Array<string | undefined> = [];
  repo.list = (query) => {
    prefixes.push(query?.prefix);
    return list(query);
  };
  const store = new CfSessionsStore({ repo, keyIsSessionId: true });
  const projectKey = "-work-project";
  const line = (sessionId: string) => ({
    type: "user",
    uuid: crypto.randomUUID(),
    parentUuid: null,
    sessionId,
    isSidechain: false,
    timestamp: "2026-01-01T00:00:00.000Z",
    message: { role: "user", content: "hello" },
  });
  const [main, other] = [crypto.randomUUID(), crypto.randomUUID()];
  for (const sessionId of [main, other]) {
    await store.append({ projectKey, sessionId }, [line(sessionId)] as SessionStoreEntry[]);
    await store.append({ projectKey, sessionId, subpath: "subagents/agent-a1" }, [
      line(sessionId),
    ] as SessionStoreEntry[]);
  }
  prefixes.length = 0;
  expect(await store.listSubkeys({ projectKey, sessionId: main })).toEqual(["subagents/agent-a1"]);
  await store.delete({ projectKey, sessionId: main });
  expect(prefixes).toEqual([`${main}:`, `${main}:`]);
  expect(await store.listSubkeys({ projectKey, sessionId: main })).toEqual([]);
  expect(await store.load({ projectKey, sessionId: main, subpath: "subagents/agent-a1" })).toBeNull();
  expect(await store.listSubkeys({ projectKey, sessionId: other })).toEqual(["subagents/agent-a1"]);
  expect(await store.listSubkeys({ projectKey, sessionId: "not an id" })).toEqual([]);
});

/** A MemoryRepo that counts the times each session's entries are read whole (`reads`, by id). */
function countingRepo() {
  const reads = new Map<string, number>();
  const counted = (session: Session) => {
    const allEntries = session.allEntries.bind(session);
    session.allEntries = (query) => {
      reads.set(session.id, (reads.get(session.id) ?? 0) + 1);
      return allEntries(query);
    };
    return session;
  };
  const repo = new (class extends MemoryRepo {
    override async create(options?: CreateSessionOptions) {
      return counted(await super.create(options));
    }
    override async open(id: string) {
      return counted(await super.open(id));
    }
  })();
  return { repo, reads };
}

it("keeps what it knows of at most 1000 transcripts, reading one it let go again", async () => {
  const { repo, reads } = countingRepo();
  const store = new CfSessionsStore({ repo });
  const lines = transcript("1.0.98-parallel-tools.jsonl");
  const keys = Array.from({ length: 1001 }, (_, i) => ({ projectKey: "p", sessionId: `s-${i}` }));
  for (const key of keys) await store.append(key, lines.slice(0, 1));
  const first = await store.sessionIdFor(keys[0] as SessionKey);
  const last = await store.sessionIdFor(keys[1000] as SessionKey);
  await store.append(keys[1000] as SessionKey, lines.slice(1, 2));
  expect(reads.get(last)).toBe(1);
  await store.append(keys[0] as SessionKey, lines.slice(1, 2));
  expect(reads.get(first)).toBe(2);
  expect(await store.load(keys[0] as SessionKey)).toEqual(lines.slice(0, 2));
});

it("reads the session again for a tool result only when it answers a call made elsewhere", async () => {
  const { repo, reads } = countingRepo();
  const store = new CfSessionsStore({ repo, keyIsSessionId: true });
  const id = crypto.randomUUID();
  const session = await repo.create({ id });
  await session.appendMessage({ role: "user", content: "Read a.txt", timestamp: 1 });
  const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 };
  await session.appendMessage({
    role: "assistant",
    content: [{ type: "toolCall", id: "functions.read_file:0", name: "read_file", arguments: {} }],
    api: "openai-completions",
    provider: "moonshot",
    model: "kimi-k2",
    usage,
    stopReason: "toolUse",
    timestamp: 2,
  } as never);
  const key = { projectKey: "-work-project", sessionId: id };
  const loaded = (await store.load(key)) as Array<Record<string, unknown>>;
  let parentUuid = (loaded.at(-1) as { uuid: string }).uuid;
  const line = (type: string, message: Record<string, unknown>) => {
    const uuid = crypto.randomUUID();
    const written = { type, uuid, parentUuid, sessionId: id, timestamp: new Date().toISOString(), message };
    parentUuid = uuid;
    return written as unknown as SessionStoreEntry;
  };
  const result = (callId: string) =>
    line("user", { role: "user", content: [{ type: "tool_result", tool_use_id: callId, content: "ok" }] });
  // The call made elsewhere, answered by the id the transcript showed it under: a read to map it.
  await store.append(key, [result("functions_read_file_0")]);
  const before = reads.get(id) ?? 0;
  // The SDK's own calls and their results, in one append and apart: nothing more is read.
  for (let turn = 0; turn < 5; turn++) {
    const call = line("assistant", {
      id: `msg_${turn}`,
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [{ type: "tool_use", id: `toolu_${turn}`, name: "Read", input: {} }],
      stop_reason: "tool_use",
    });
    if (turn % 2 === 0) await store.append(key, [call, result(`toolu_${turn}`)]);
    else {
      await store.append(key, [call]);
      await store.append(key, [result(`toolu_${turn}`)]);
    }
  }
  expect(reads.get(id)).toBe(before);
  const results = (await session.getBranch()).flatMap((entry) =>
    entry.type === "message" && entry.message.role === "toolResult" ? [entry.message.toolCallId] : [],
  );
  expect(results).toEqual(["functions.read_file:0", "toolu_0", "toolu_1", "toolu_2", "toolu_3", "toolu_4"]);
});
