import { env, exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import mcpDoc from "../../docs/mcp.md?raw";
import { SessionObject, SessionObjectStorage } from "../../src/durable/internal";
import worker from "../../src/worker";
import claudeCode from "../fixtures/claude-code/1.0.98-parallel-tools.jsonl?raw";
import { appendText, endGeneration } from "./generation-helpers";
import {
  api,
  assistantMessage,
  createSession,
  expectError,
  KEY_A,
  KEY_A_READ,
  KEY_B,
  KEY_C,
  sid,
  userMessage,
} from "./helpers";
import { captureLogs, lineOf } from "./log-capture";

/* The tenant's history over MCP, driven by the SDK's own client against the Worker. */

const WRITE_TOOLS = ["append_note", "fork_session", "label_entry"];
const READ_TOOLS = ["list_sessions", "read_entries", "read_session", "search_sessions"];

afterEach(() => {
  vi.restoreAllMocks();
});

/** The request ids of the answers the client got, in order. */
const requestIds: string[] = [];

async function connect(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://sessions.test/mcp"), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
    fetch: async (url, init) => {
      const res = await exports.default.fetch(new Request(url, init));
      requestIds.push(res.headers.get("x-request-id") ?? "");
      return res;
    },
  });
  const client = new Client({ name: "mcp-test", version: "1" });
  await client.connect(transport);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  return { ...result, text };
}

async function importClaudeCode(id: string): Promise<void> {
  const res = await exports.default.fetch(
    `http://sessions.test/v1/sessions/import?format=claude-code&id=${id}`,
    {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/x-ndjson" },
      body: claudeCode,
    },
  );
  expect(res.status, await res.text()).toBe(201);
}

/** What a Worker is handed with a request the tests send it directly (none of it is used). */
const NO_CONTEXT = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;

/**
 * A JSON-RPC message, or a batch of them, POSTed to /mcp as they are, without a client; a string
 * goes as it is (text that may be no JSON). With `bindings`, the Worker serves it with those.
 */
async function postMcp(
  body: unknown,
  options: { key?: string; requestId?: string; version?: string; bindings?: typeof env } = {},
): Promise<Response> {
  const request = new Request("http://sessions.test/mcp", {
    method: "POST",
    headers: {
      Authorization: `Bearer ${options.key ?? KEY_A}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...(options.requestId ? { "x-request-id": options.requestId } : {}),
      ...(options.version ? { "Mcp-Protocol-Version": options.version } : {}),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  if (options.bindings) return worker.fetch(request, options.bindings, NO_CONTEXT);
  return exports.default.fetch(request);
}

/** The entry id a line of read_session or read_entries is led by. */
function lineEntryId(line: string): string {
  const match = /^[> ]*\[([^\]]+)\]/.exec(line);
  if (!match) throw new Error(`no entry id in ${line}`);
  return match[1] as string;
}

/**
 * Characters of JSON the session objects answer the Worker with while `run` runs: what a read
 * brings into the Worker's memory.
 */
async function objectAnswerChars(run: () => Promise<void>): Promise<number> {
  let chars = 0;
  const proto = SessionObject.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of Object.getOwnPropertyNames(proto)) {
    const original = Object.getOwnPropertyDescriptor(proto, name)?.value;
    if (name === "constructor" || typeof original !== "function") continue;
    vi.spyOn(proto, name).mockImplementation(async function (this: unknown, ...args: unknown[]) {
      const result = await original.apply(this, args);
      chars += JSON.stringify(result ?? null)?.length ?? 0;
      return result;
    });
  }
  try {
    await run();
  } finally {
    vi.restoreAllMocks();
  }
  return chars;
}

/** Writes `count` user messages of about `chars` characters of words each, as many a request as fit in one. */
async function writeLarge(id: string, count: number, chars: number, text = (n: number) => `message ${n}`) {
  const perRequest = Math.max(1, Math.floor(900_000 / chars));
  for (let n = 0; n < count; n += perRequest) {
    const entries = Array.from({ length: Math.min(perRequest, count - n) }, (_, i) =>
      userMessage(`${text(n + i)} ${"lorem ".repeat(chars / 6)}`),
    );
    const written = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    expect(written.status, written.text).toBe(201);
  }
}

/** Waits for the directory to hear of what sessions wrote (DIRECTORY_SYNC_MS is 20 ms in the tests). */
const eventually = (check: () => Promise<void>) => vi.waitFor(check, { timeout: 10_000, interval: 50 });

describe("MCP server", () => {
  it("searches an imported Claude Code session, reads its context, forks it; the fork is listed over HTTP", async () => {
    const id = sid("cc");
    await importClaudeCode(id);
    const client = await connect(KEY_A);
    expect(client.getServerVersion()?.name).toBe("cf-sessions");

    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name).sort()).toEqual([...WRITE_TOOLS, ...READ_TOOLS].sort());
    for (const t of tools) expect(t.description?.length).toBeGreaterThan(40);

    await eventually(async () => {
      const found = await call(client, "search_sessions", { query: "codebase" });
      expect(found.isError).toBeFalsy();
      expect(found.text).toContain(id);
    });

    const context = await api("GET", `/v1/sessions/${id}/context`);
    const read = await call(client, "read_session", { sessionId: id, limit: 5 });
    expect(read.isError, read.text).toBeFalsy();
    const first = read.structuredContent as { lines: string[]; nextCursor: string | null };
    expect(first.lines).toHaveLength(5);
    // The next page's cursor names the path this page read: from the entry in position 5 to the head.
    expect(first.nextCursor).toBe(`5@${(await api("GET", `/v1/sessions/${id}`)).body.leafId}`);
    expect(first.lines[0]).toMatch(/^\[[^\]]+\] user: <command-message>init is analyzing your codebase/);
    expect(read.text).toContain("CLAUDE.md");
    const rest = (await call(client, "read_session", { sessionId: id, cursor: first.nextCursor, limit: 200 }))
      .structuredContent as { lines: string[]; nextCursor: string | null };
    expect(rest.nextCursor).toBeNull();
    // One line for each message of the context the HTTP API gives.
    expect(first.lines.length + rest.lines.length).toBe(context.body.messages.length);

    const at = lineEntryId(first.lines[4] as string);
    const forkId = sid("fork");
    const forked = await call(client, "fork_session", { sessionId: id, entryId: at, newId: forkId });
    expect(forked.isError, forked.text).toBeFalsy();
    expect(forked.text).toContain(forkId);
    // The listing is the directory's, which hears of a new session within DIRECTORY_SYNC_MS.
    await eventually(async () => {
      const listed = await api("GET", "/v1/sessions?limit=100");
      const fork = listed.body.sessions.find((s: { id: string }) => s.id === forkId);
      expect(fork?.parentSession).toEqual({ id, entryId: at });
    });
    const forkRead = await call(client, "read_session", { sessionId: forkId, limit: 200 });
    expect((forkRead.structuredContent as { lines: string[] }).lines).toEqual(first.lines);
    await client.close();
  });

  it("documents every argument of every tool in docs/mcp.md", async () => {
    const client = await connect(KEY_A);
    for (const tool of (await client.listTools()).tools) {
      const row = mcpDoc.split("\n").find((line) => line.startsWith(`| \`${tool.name}\` |`));
      expect(row, tool.name).toBeDefined();
      for (const argument of Object.keys(tool.inputSchema.properties ?? {}))
        expect(row, `${tool.name} ${argument}`).toContain(`\`${argument}\``);
    }
    await client.close();
  });

  it("says when a search shows only its best matches, never cutting the list silently", async () => {
    for (let i = 0; i < 3; i++) {
      const id = await createSession();
      await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage(`a quokka number ${i}`) });
    }
    const client = await connect(KEY_A);
    await eventually(async () => {
      const all = await call(client, "search_sessions", { query: "quokka" });
      expect((all.structuredContent as { results: unknown[] }).results).toHaveLength(3);
      expect(all.text).not.toContain("more may match");
    });
    const best = await call(client, "search_sessions", { query: "quokka", limit: 2 });
    expect((best.structuredContent as { results: unknown[] }).results).toHaveLength(2);
    expect(best.text).toContain("the best 2 shown; more may match");
    await client.close();
  });

  it("reads the entries around each match of a query, and around an entry", async () => {
    const id = await createSession();
    const words = ["alpha", "bravo", "charlie", "delta quokka", "echo", "foxtrot", "golf quokka", "hotel"];
    const written = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: words.map((word) => userMessage(word)) },
    });
    const ids = written.body.entries.map((e: { id: string }) => e.id) as string[];
    const client = await connect(KEY_A);

    const matched = await call(client, "read_entries", { sessionId: id, query: "quokka", around: 1 });
    expect(matched.isError, matched.text).toBeFalsy();
    const { matches } = matched.structuredContent as {
      matches: { hit: { entryId: string }; entries: { id: string }[] }[];
    };
    expect(matches.map((m) => m.hit.entryId).sort()).toEqual([ids[3], ids[6]].sort());
    for (const { hit, entries } of matches) {
      const at = ids.indexOf(hit.entryId);
      expect(entries.map((e) => e.id)).toEqual(ids.slice(at - 1, at + 2));
    }
    expect(matched.text).toContain(`> [${ids[3]}] user: delta quokka`);
    expect(matched.text).toContain(`  [${ids[2]}] user: charlie`);

    const paged = await call(client, "read_entries", { sessionId: id, query: "quokka", limit: 1 });
    const next = (paged.structuredContent as { nextCursor: string | null }).nextCursor;
    expect(next).not.toBeNull();
    const second = await call(client, "read_entries", {
      sessionId: id,
      query: "quokka",
      limit: 1,
      cursor: next,
    });
    const both = [paged, second].map(
      (page) =>
        (page.structuredContent as { matches: { hit: { entryId: string } }[] }).matches[0]?.hit.entryId,
    );
    expect(both.sort()).toEqual([ids[3], ids[6]].sort());

    const around = await call(client, "read_entries", { sessionId: id, entryId: ids[0], around: 2 });
    expect((around.structuredContent as { entries: { id: string }[] }).entries.map((e) => e.id)).toEqual(
      ids.slice(0, 3),
    );
    const neither = await call(client, "read_entries", { sessionId: id });
    expect(neither.isError).toBe(true);
    expect(neither.text).toMatch(/query.*entryId/);
    await client.close();
  });

  it("reads `around` entries on each side of an entry however its seqs run: a head move's record and a fork's gaps take none of them", async () => {
    const shown = (read: Awaited<ReturnType<typeof call>>) => {
      expect(read.isError, read.text).toBeFalsy();
      expect(read.text).not.toContain("more: read_entries");
      return (read.structuredContent as { entries: { id: string }[] }).entries.map((entry) => entry.id);
    };
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { ...userMessage("q1"), id: "q1" },
          { ...assistantMessage("a1"), id: "a1" },
          { ...userMessage("q2"), id: "q2" },
          { ...assistantMessage("a2"), id: "a2" },
        ],
      },
    });
    // Each head move is recorded under a seq of its own.
    expect((await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "a1" } })).status).toBe(200);
    expect((await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "a2" } })).status).toBe(200);
    await api("POST", `/v1/sessions/${id}/entries`, { body: { ...userMessage("q3 wombat"), id: "q3" } });
    const client = await connect(KEY_A);
    expect(shown(await call(client, "read_entries", { sessionId: id, entryId: "q3", around: 3 }))).toEqual([
      "a1",
      "q2",
      "a2",
      "q3",
    ]);
    expect(shown(await call(client, "read_entries", { sessionId: id, entryId: "a2", around: 1 }))).toEqual([
      "q2",
      "a2",
      "q3",
    ]);
    await eventually(async () => {
      const matched = await call(client, "read_entries", { sessionId: id, query: "wombat", around: 3 });
      const { matches } = matched.structuredContent as { matches: { entries: { id: string }[] }[] };
      expect(matches.map((match) => match.entries.map((entry) => entry.id))).toEqual([
        ["a1", "q2", "a2", "q3"],
      ]);
    });

    // A fork keeps the seqs its path had in the source, with the branch it leaves out as gaps; this
    // one is still copying its path when read.
    const source = await createSession();
    const turn = (n: number, prefix = "m") => ({
      ...(n % 2
        ? assistantMessage(`${prefix}${n} ${"lorem ipsum ".repeat(25)}`)
        : userMessage(`${prefix}${n}`)),
      id: `${prefix}${n}`,
    });
    await api("POST", `/v1/sessions/${source}/entries`, {
      body: {
        entries: [
          ...Array.from({ length: 20 }, (_, n) => turn(n)),
          { ...turn(0, "b"), parentId: "m18" },
          turn(1, "b"),
          turn(2, "b"),
          { ...turn(20), parentId: "m19" },
          ...Array.from({ length: 9 }, (_, n) => turn(21 + n)),
        ],
      },
    });
    const forkId = sid("fork");
    const forked = await api("POST", `/v1/sessions/${source}/fork`, { body: { entryId: "m29", id: forkId } });
    expect(forked.status, forked.text).toBe(201);
    expect(forked.body.copying).toBeDefined();
    const read = await call(client, "read_entries", { sessionId: forkId, entryId: "m21", around: 3 });
    expect(shown(read)).toEqual(["m18", "m19", "m20", "m21", "m22", "m23", "m24"]);
    await client.close();
  });

  it("shows a LangGraph checkpoint holding its messages as a value by its messages around a match, as read_session does", async () => {
    const human = (text: string) => ({
      lc: 1,
      type: "constructor",
      id: ["langchain_core", "messages", "HumanMessage"],
      kwargs: { content: text, additional_kwargs: {}, response_metadata: {} },
    });
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { ...userMessage("q"), id: "q" },
          {
            type: "custom",
            id: "cp",
            customType: "langgraph:checkpoint",
            data: {
              values: { messages: { type: "json", json: [human("the wombat burrow"), human("dig")] } },
            },
          },
          { ...userMessage("after"), id: "u" },
        ],
      },
    });
    const client = await connect(KEY_A);
    const read = await call(client, "read_session", { sessionId: id });
    expect(read.text).toContain("[cp] user: the wombat burrow");
    const hit = await call(client, "read_entries", { sessionId: id, query: "wombat" });
    expect(hit.text).toMatch(/match in \[cp\]/);
    expect(hit.text).toContain("> [cp] user: the wombat burrow\n> [cp] user: dig\n  [u] user: after");
    // Another custom entry stands for no message: its type is its line.
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "custom", id: "other", customType: "other", data: { values: { messages: [] } } },
    });
    const around = await call(client, "read_entries", { sessionId: id, entryId: "other", around: 0 });
    expect(around.text).toBe("> [other] custom");
    await client.close();
  });

  it("cuts a LangGraph checkpoint holding a long thread to what one read_entries answer holds, saying how many messages it leaves out and how to read it whole", async () => {
    const human = (text: string) => ({
      lc: 1,
      type: "constructor",
      id: ["langchain_core", "messages", "HumanMessage"],
      kwargs: { content: text, additional_kwargs: {}, response_metadata: {} },
    });
    const checkpoint = (id: string, texts: string[]) => ({
      type: "custom",
      id,
      customType: "langgraph:checkpoint",
      data: { values: { messages: { type: "json", json: texts.map(human) } } },
    });
    const id = await createSession();
    const thread = Array.from(
      { length: 30 },
      (_, n) => `${n ? "turn" : "quokka"} ${n} ${"word ".repeat(600)}`,
    );
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { ...userMessage("q"), id: "q" },
          checkpoint("cp", thread),
          checkpoint("short", ["first of two", "second of two"]),
        ],
      },
    });
    const client = await connect(KEY_A);
    const cutShort = (read: Awaited<ReturnType<typeof call>>) => {
      expect(read.isError, read.text).toBeFalsy();
      expect(read.text.length).toBeLessThanOrEqual(40_000);
      expect(JSON.stringify(read.structuredContent).length).toBeLessThanOrEqual(40_000);
      const shown = read.text.split("\n").filter((line) => /^> \[cp\] user: /.test(line)).length;
      expect(shown).toBeGreaterThan(0);
      expect(shown).toBeLessThan(30);
      expect(read.text).toContain(
        `> [cp] … ${30 - shown} more of its 30 lines left out, as many as one answer holds: GET /v1/sessions/<sessionId>/entries/cp reads the entry whole`,
      );
    };
    cutShort(await call(client, "read_entries", { sessionId: id, entryId: "cp", around: 0 }));
    await eventually(async () => {
      const matched = await call(client, "read_entries", { sessionId: id, query: "quokka" });
      expect(matched.text).toMatch(/match in \[cp\]/);
      cutShort(matched);
    });
    // A checkpoint that fits shows every message.
    const short = await call(client, "read_entries", { sessionId: id, entryId: "short", around: 0 });
    expect(short.text).toBe("> [short] user: first of two\n> [short] user: second of two");
    await client.close();
  });

  it("leads the matches of a query with the session's name or system prompt when they match", async () => {
    const id = await createSession({
      body: { name: "Lighthouse log", systemPrompt: "You keep the lighthouse lamp" },
    });
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("the lighthouse went dark") });
    const client = await connect(KEY_A);
    const matched = await call(client, "read_entries", { sessionId: id, query: "lighthouse" });
    expect(matched.isError, matched.text).toBeFalsy();
    const parts = matched.text.split("\n\n");
    expect(parts.slice(0, 2)).toEqual([
      "match in the session's name: Lighthouse log",
      "match in the session's system prompt: You keep the lighthouse lamp",
    ]);
    expect(matched.text).toContain("user: the lighthouse went dark");
    const { header, matches } = matched.structuredContent as {
      header: { field: string }[];
      matches: unknown[];
    };
    expect(header.map((m) => m.field)).toEqual(["name", "systemPrompt"]);
    expect(matches).toHaveLength(1);
    await client.close();
  });

  it("cuts a long name or label in an entry's line as it cuts a message, naming what is left out", async () => {
    const id = await createSession();
    const long = "n".repeat(10_000);
    const written = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage("hello"), { type: "session_info", name: long }] },
    });
    const [message, named] = written.body.entries.map((e: { id: string }) => e.id) as string[];
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "label", targetId: message, label: long },
    });
    const client = await connect(KEY_A);
    const read = await call(client, "read_entries", { sessionId: id, entryId: named, around: 2 });
    expect(read.isError, read.text).toBeFalsy();
    const lines = read.text.split("\n").filter((line) => line.includes("n".repeat(100)));
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.length).toBeLessThan(4300);
      expect(line).toContain(
        "[…6000 more characters: read_entries with its entryId and around 0 gives the entry whole",
      );
    }
    // The structured answer keeps them whole.
    expect(JSON.stringify(read.structuredContent)).toContain(long);
    await client.close();
  });

  it("tells how to read a cut message whole, and each way it names gives it whole", async () => {
    const id = await createSession();
    const [medium, large] = [`medium ${"m".repeat(10_000)}`, `large ${"l".repeat(20_000)}`];
    const written = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage(medium), userMessage(large)] },
    });
    const [mediumId, largeId] = written.body.entries.map((e: { id: string }) => e.id) as string[];
    const client = await connect(KEY_A);
    const read = await call(client, "read_entries", { sessionId: id, entryId: largeId, around: 1 });
    expect(read.isError, read.text).toBeFalsy();
    const cut = read.text.split("\n").filter((line) => line.includes("more characters"));
    expect(cut).toHaveLength(2);
    for (const line of cut)
      expect(line).toContain(
        "read_entries with its entryId and around 0 gives the entry whole in structuredContent up to 16000 characters of JSON, else GET /v1/sessions/<sessionId>/entries/<entryId>]",
      );
    const alone = async (entryId: string) =>
      (
        (await call(client, "read_entries", { sessionId: id, entryId, around: 0 })).structuredContent as {
          entries: { message?: { content?: unknown }; omitted?: unknown }[];
        }
      ).entries;
    const [mediumEntry] = await alone(mediumId as string);
    expect(mediumEntry?.message?.content).toBe(medium);
    const [largeEntry] = await alone(largeId as string);
    expect(largeEntry?.omitted).toBeDefined();
    const whole = await api("GET", `/v1/sessions/${id}/entries/${largeId}`);
    expect(whole.body.message.content).toBe(large);
    await client.close();
  });

  it("shows a session's tree, branches included", async () => {
    const id = await createSession();
    const written = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage("root"), userMessage("first answer")] },
    });
    const root = written.body.entries[0].id as string;
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { ...userMessage("second try"), parentId: root },
    });
    const client = await connect(KEY_A);
    const tree = await call(client, "read_session", { sessionId: id, view: "tree" });
    const lines = (tree.structuredContent as { lines: string[] }).lines;
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe(`user ${root}`);
    expect(lines[1]).toMatch(/^├─ user /);
    expect(lines[2]).toMatch(/^└─ user .*← leaf$/);
    await client.close();
  });

  it("reads each next page of the path the first page read, however the head moves meanwhile", async () => {
    const client = await connect(KEY_A);
    const linesOf = (read: { structuredContent?: unknown }) =>
      (read.structuredContent as { lines: string[] }).lines.map(lineEntryId);
    const cursorOf = (read: { structuredContent?: unknown }) =>
      (read.structuredContent as { nextCursor: string | null }).nextCursor;
    const path = ["m0", "m1", "m2", "m3", "m4", "m5"];
    const moves: [string, (id: string) => Promise<unknown>][] = [
      // Another writer regenerating from m0: the head goes to a new branch.
      [
        "a branch",
        (id) =>
          api("POST", `/v1/sessions/${id}/entries`, {
            body: {
              entries: [
                { ...assistantMessage("b1"), id: "b1", parentId: "m0" },
                { ...userMessage("b2"), id: "b2" },
                { ...assistantMessage("b3"), id: "b3" },
              ],
            },
          }),
      ],
      ["the head moved back", (id) => api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "m1" } })],
      [
        "a compaction",
        (id) =>
          api("POST", `/v1/sessions/${id}/entries`, {
            body: {
              type: "compaction",
              id: "c",
              summary: "SUMMARY",
              firstKeptEntryId: "m5",
              tokensBefore: 10,
            },
          }),
      ],
    ];
    const now: Record<string, string[]> = {
      "a branch": ["m0", "b1", "b2", "b3"],
      "the head moved back": ["m0", "m1"],
      "a compaction": ["c", "m5"],
    };
    for (const [what, move] of moves) {
      const id = await createSession();
      await api("POST", `/v1/sessions/${id}/entries`, {
        body: {
          entries: path.map((m, n) => ({ ...(n % 2 ? assistantMessage(m) : userMessage(m)), id: m })),
        },
      });
      const first = await call(client, "read_session", { sessionId: id, limit: 2 });
      expect(linesOf(first), what).toEqual(["m0", "m1"]);
      expect(cursorOf(first), what).toBe("2@m5");
      const moved = (await move(id)) as { status: number; text: string };
      expect(moved.status, moved.text).toBeLessThan(300);
      const second = await call(client, "read_session", { sessionId: id, limit: 2, cursor: cursorOf(first) });
      expect(second.isError, second.text).toBeFalsy();
      expect(second.text, what).toContain("entries 3-4 of 6");
      const third = await call(client, "read_session", { sessionId: id, limit: 2, cursor: cursorOf(second) });
      expect([...linesOf(first), ...linesOf(second), ...linesOf(third)], what).toEqual(path);
      expect(cursorOf(third), what).toBeNull();
      // Without a cursor, a read starts again from the head as it is now.
      const again = await call(client, "read_session", { sessionId: id, limit: 10 });
      expect(linesOf(again), what).toEqual(now[what]);
    }
    await client.close();
  });

  it("reads each next page of the tree the first page drew, a branch written meanwhile left out", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { ...userMessage("root"), id: "r" },
          { ...assistantMessage("a1"), id: "a1" },
          { ...userMessage("a2"), id: "a2" },
        ],
      },
    });
    const client = await connect(KEY_A);
    const idsOf = (read: { structuredContent?: unknown }) =>
      (read.structuredContent as { lines: string[] }).lines.map(
        (line) => /(?:user|assistant) (\S+)/.exec(line)?.[1],
      );
    const first = await call(client, "read_session", { sessionId: id, view: "tree", limit: 2 });
    expect(idsOf(first)).toEqual(["r", "a1"]);
    const { nextCursor } = first.structuredContent as { nextCursor: string };
    // A branch from the root draws its line between the first page's and the rest of the tree.
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { ...assistantMessage("b1"), id: "b1", parentId: "r" },
    });
    const second = await call(client, "read_session", { sessionId: id, view: "tree", cursor: nextCursor });
    expect(second.isError, second.text).toBeFalsy();
    expect(idsOf(second)).toEqual(["a2"]);
    expect((second.structuredContent as { nextCursor: string | null }).nextCursor).toBeNull();
    const now = await call(client, "read_session", { sessionId: id, view: "tree" });
    expect(idsOf(now).sort()).toEqual(["a1", "a2", "b1", "r"]);
    await client.close();
  });

  it("refuses a read_session cursor that names no page of the session, by invalid_request", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: ["m0", "m1", "m2"].map((m) => ({ ...userMessage(m), id: m })) },
    });
    const client = await connect(KEY_A);
    const cases: [Record<string, unknown>, string][] = [
      [{ cursor: "1@nope" }, "no entry nope"],
      [{ cursor: "3@m2" }, "has 3 entries"],
      [{ cursor: "1@m2", entryId: "m1" }, "not to entryId m1"],
      [{ cursor: "1@m2", view: "tree" }, "without view"],
      [{ cursor: "tree:1:3" }, 'view "tree"'],
      [{ cursor: "tree:1:99999", view: "tree" }, "no such entry"],
      [{ cursor: "tree:3:3", view: "tree" }, "has 3 lines"],
      // A cursor of an earlier release, in either view.
      ...["2", "2.3", "0"].flatMap((cursor): [Record<string, unknown>, string][] =>
        [{ cursor }, { cursor, view: "tree" }, { cursor, view: "context", entryId: "m1" }].map((args) => [
          args,
          "it is from an earlier release: read again without a cursor",
        ]),
      ),
    ];
    for (const [args, why] of cases) {
      const read = await call(client, "read_session", { sessionId: id, ...args });
      expect(read.isError, JSON.stringify(args)).toBe(true);
      expect(read.text).toMatch(/^invalid_request: the cursor names no page to read/);
      expect(read.text, JSON.stringify(args)).toContain(why);
      expect(read.text).toContain(`"cursor":"${args.cursor}"`);
    }
    // The same entryId as the cursor's path reads on.
    const same = await call(client, "read_session", { sessionId: id, entryId: "m2", cursor: "1@m2" });
    expect((same.structuredContent as { lines: string[] }).lines.map(lineEntryId)).toEqual(["m1", "m2"]);
    await client.close();
  });

  it("refuses an entryId in read_session's tree view, which shows every entry, as it refuses one the session lacks in the context's", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: ["m0", "m1"].map((m) => ({ ...userMessage(m), id: m })) },
    });
    const client = await connect(KEY_A);
    const missing = await call(client, "read_session", { sessionId: id, entryId: "nope" });
    expect(missing.isError, missing.text).toBe(true);
    expect(missing.text).toMatch(/^not_found/);
    for (const entryId of ["nope", "m0"]) {
      const tree = await call(client, "read_session", { sessionId: id, view: "tree", entryId });
      expect(tree.isError, tree.text).toBe(true);
      expect(tree.text).toMatch(/^invalid_request: .*entryId/);
      expect(tree.text).toContain(`"entryId":"${entryId}"`);
    }
    expect(
      (await api("GET", `/v1/sessions/${id}/entries`)).body.entries.map((e: { id: string }) => e.id),
    ).toEqual(["m0", "m1"]);
    await client.close();
  });

  it("labels an entry and appends a note, both read back over HTTP", async () => {
    const id = await createSession();
    const client = await connect(KEY_A);
    const noted = await call(client, "append_note", { sessionId: id, text: "decided: keep SQLite" });
    expect(noted.isError, noted.text).toBeFalsy();
    const noteId = (noted.structuredContent as { noteId: string }).noteId;
    const labelled = await call(client, "label_entry", { sessionId: id, entryId: noteId, label: "decision" });
    expect(labelled.isError, labelled.text).toBeFalsy();

    const entries = await api("GET", `/v1/sessions/${id}/entries`);
    expect(entries.body.entries.map((e: { type: string }) => e.type)).toEqual(["custom_message", "label"]);
    expect(entries.body.entries[1]).toMatchObject({ targetId: noteId, label: "decision" });
    const read = await call(client, "read_session", { sessionId: id });
    expect((read.structuredContent as { lines: string[] }).lines).toEqual([
      `[${noteId}] note: decided: keep SQLite`,
    ]);
    await client.close();
  });

  it("clears a label given blank or whitespace only, and says so", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: { ...userMessage("q1"), id: "q1" } });
    const client = await connect(KEY_A);
    expect(
      (await call(client, "label_entry", { sessionId: id, entryId: "q1", label: "start" })).isError,
    ).toBeFalsy();
    for (const label of ["   ", ""]) {
      const cleared = await call(client, "label_entry", { sessionId: id, entryId: "q1", label });
      expect(cleared.isError, cleared.text).toBeFalsy();
      expect(cleared.text).toBe(`labelled q1 in ${id}: (cleared)`);
      expect((await api("GET", `/v1/sessions/${id}/tree`)).body.roots[0].label).toBeUndefined();
      expect((await call(client, "label_entry", { sessionId: id, entryId: "q1", label: "again" })).text).toBe(
        `labelled q1 in ${id}: again`,
      );
    }
    await client.close();
  });

  it("keeps a session synced from its file syncing after a label and a note, both kept where they were written", async () => {
    const id = sid("pi");
    const header = { type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/w" };
    const line = (entryId: string, parentId: string | null, text: string) =>
      JSON.stringify({
        type: "message",
        id: entryId,
        parentId,
        timestamp: "2026-01-01T00:00:01.000Z",
        message: { role: "user", content: text, timestamp: 1_767_225_601_000 },
      });
    const sync = async (lines: string[]) => {
      const res = await exports.default.fetch(`http://sessions.test/v1/sessions/import?format=pi&mode=sync`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/x-ndjson" },
        body: [JSON.stringify(header), ...lines].join("\n"),
      });
      const body = (await res.json()) as { sync?: unknown; error?: { code: string } };
      return { status: res.status, sync: body.sync ?? body.error?.code };
    };
    const file = [line("e1", null, "one"), line("e2", "e1", "two")];
    expect(await sync(file)).toEqual({ status: 201, sync: { status: "created", appended: 2 } });

    const client = await connect(KEY_A);
    const labelled = await call(client, "label_entry", { sessionId: id, entryId: "e1", label: "start" });
    expect(labelled.isError, labelled.text).toBeFalsy();
    const noted = await call(client, "append_note", { sessionId: id, text: "decided: keep SQLite" });
    expect(noted.isError, noted.text).toBeFalsy();
    const noteId = (noted.structuredContent as { noteId: string }).noteId;

    expect(await sync(file)).toEqual({ status: 200, sync: { status: "unchanged", appended: 0 } });
    expect((await api("GET", `/v1/sessions/${id}/context`)).body.messages.at(-1).content).toContain(
      "decided: keep SQLite",
    );
    const grown = [...file, line("e3", "e2", "three")];
    expect(await sync(grown)).toEqual({ status: 200, sync: { status: "appended", appended: 1 } });
    expect(await sync(grown)).toEqual({ status: 200, sync: { status: "unchanged", appended: 0 } });

    // The file goes on from its own entry: the note stays on a branch of its own, the label on e1.
    expect(
      (await api("GET", `/v1/sessions/${id}/branch`)).body.entries.map((e: { id: string }) => e.id),
    ).toEqual(["e1", "e2", "e3"]);
    const tree = (await call(client, "read_session", { sessionId: id, view: "tree" })).structuredContent as {
      lines: string[];
    };
    expect(tree.lines.join("\n")).toContain(noteId);
    expect(tree.lines[0]).toContain("start");

    // A message written here is still a difference from the file: refused, nothing written.
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("typed here") });
    const before = (await api("GET", `/v1/sessions/${id}/entries`)).body;
    const refused = await sync([...grown, line("e4", "e3", "four")]);
    expect(refused).toEqual({ status: 409, sync: "already_exists" });
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body).toEqual(before);
    await client.close();
  });

  it("refuses a note while the head's turn waits for tool results or a generation is open, writing nothing", async () => {
    const id = await createSession();
    const calls = {
      ...assistantMessage("listing"),
      message: {
        ...assistantMessage("listing").message,
        content: [
          { type: "toolCall", id: "c1", name: "ls", arguments: {} },
          { type: "toolCall", id: "c2", name: "pwd", arguments: {} },
        ],
        stopReason: "toolUse",
      },
    };
    const result = (toolCallId: string, text: string) => ({
      type: "message",
      message: {
        role: "toolResult",
        toolCallId,
        toolName: toolCallId === "c1" ? "ls" : "pwd",
        content: [{ type: "text", text }],
        isError: false,
        timestamp: 1_700_000_000_000,
      },
    });
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [userMessage("what is here?"), { ...calls, id: "calls" }, result("c1", "a.txt b.txt")],
      },
    });
    const client = await connect(KEY_A);
    const entries = async () => (await api("GET", `/v1/sessions/${id}/entries`)).body.entries;
    const held = await entries();
    const waiting = await call(client, "append_note", { sessionId: id, text: "look at b.txt" });
    expect(waiting.isError).toBe(true);
    expect(waiting.text).toMatch(/^leaf_conflict: .*c2/);
    // A label at the head is no answer: the turn still waits.
    const labelled = await call(client, "label_entry", { sessionId: id, entryId: "calls", label: "x" });
    expect(labelled.isError, labelled.text).toBeFalsy();
    const stillWaiting = await call(client, "append_note", { sessionId: id, text: "look at b.txt" });
    expect(stillWaiting.text).toMatch(/^leaf_conflict/);
    expect((await entries()).length).toBe(held.length + 1);

    await api("POST", `/v1/sessions/${id}/entries`, { body: result("c2", "/work") });
    const opened = await api("POST", `/v1/sessions/${id}/generations`, { body: {} });
    expect(opened.status).toBe(201);
    const before = await entries();
    const generating = await call(client, "append_note", { sessionId: id, text: "look at b.txt" });
    expect(generating.isError).toBe(true);
    expect(generating.text).toMatch(/^leaf_conflict: .*generation/);
    expect(await entries()).toEqual(before);
    await api("POST", `/v1/sessions/${id}/generations/${opened.body.id}/stop`, { body: {} });

    // Once every call is answered and no answer is being written, the note follows the results.
    const noted = await call(client, "append_note", { sessionId: id, text: "look at b.txt" });
    expect(noted.isError, noted.text).toBeFalsy();
    const context = (
      await api("GET", `/v1/sessions/${id}/context?format=anthropic&model=anthropic/claude-sonnet-4-5`)
    ).body;
    const text = JSON.stringify(context.messages);
    expect(text).toContain("a.txt b.txt");
    expect(text).toContain("/work");
    expect(text).not.toContain("No result provided");
    expect(text.indexOf("look at b.txt")).toBeGreaterThan(text.indexOf("/work"));
    await client.close();
  });

  it("refuses a note when a generation opens after the tool's checks and before its append, writing nothing", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("what now?") });
    const entries = async () => (await api("GET", `/v1/sessions/${id}/entries`)).body.entries;
    const before = await entries();
    const client = await connect(KEY_A);
    // The generation opens in the object just as the note's append reaches it: after every check the
    // tool made before it.
    const proto = SessionObject.prototype as unknown as Record<
      string,
      (...args: unknown[]) => Promise<unknown>
    >;
    const append = proto.appendEntries as (...args: unknown[]) => Promise<unknown>;
    let opened: { ok: boolean; value?: unknown } | undefined;
    vi.spyOn(proto, "appendEntries").mockImplementationOnce(async function (this: SessionObject, ...args) {
      opened = (await this.openGeneration({})) as typeof opened;
      return append.apply(this, args);
    });
    const noted = await call(client, "append_note", { sessionId: id, text: "look at b.txt" });
    vi.restoreAllMocks();
    expect(opened?.ok).toBe(true);
    expect(noted.isError, noted.text).toBe(true);
    expect(noted.text).toMatch(/^leaf_conflict: .*generation/);
    expect(await entries()).toEqual(before);

    // The generation's answer goes under the head it opened at; the note after it, on the same branch.
    const generation = opened?.value as { id: string; stream: string };
    expect((await appendText(generation.stream, "an answer")).status).toBeLessThan(300);
    const completed = await endGeneration(id, generation.id, "complete");
    expect(completed.status, completed.text).toBeLessThan(300);
    const after = await call(client, "append_note", { sessionId: id, text: "look at b.txt" });
    expect(after.isError, after.text).toBeFalsy();
    const context = (await api("GET", `/v1/sessions/${id}/context`)).body;
    expect(JSON.stringify(context)).toMatch(/what now\?.*an answer.*look at b\.txt/);
    await client.close();
  });

  it("writes a note or a label once when a call is sent again with its idempotencyKey, and a fork once with its newId", async () => {
    const id = await createSession();
    const client = await connect(KEY_A);
    const note = { sessionId: id, text: "decided: keep SQLite", idempotencyKey: "note-1" };
    const first = await call(client, "append_note", note);
    expect(first.isError, first.text).toBeFalsy();
    const again = await call(client, "append_note", note);
    expect(again.isError, again.text).toBeFalsy();
    expect((again.structuredContent as { entries: { id: string }[] }).entries.map((e) => e.id)).toEqual([
      "note-1",
    ]);
    const other = await call(client, "append_note", { ...note, text: "another note" });
    expect(other.isError).toBe(true);
    expect(other.text).toMatch(/^already_exists/);

    const label = { sessionId: id, entryId: "note-1", label: "decision", idempotencyKey: "label-1" };
    expect((await call(client, "label_entry", label)).isError).toBeFalsy();
    expect((await call(client, "label_entry", label)).isError).toBeFalsy();

    const entries = await api("GET", `/v1/sessions/${id}/entries`);
    expect(entries.body.entries.map((e: { id: string; type: string }) => [e.id, e.type])).toEqual([
      ["note-1", "custom_message"],
      ["label-1", "label"],
    ]);

    const forkId = sid("fork");
    expect((await call(client, "fork_session", { sessionId: id, newId: forkId })).isError).toBeFalsy();
    const forkedAgain = await call(client, "fork_session", { sessionId: id, newId: forkId });
    expect(forkedAgain.isError).toBe(true);
    expect(forkedAgain.text).toMatch(/^already_exists/);
    expect((await api("GET", `/v1/sessions/${forkId}/entries`)).body.entries).toHaveLength(2);
    await client.close();
  });

  it("answers a note sent again after the head moved with the note's own id, the head named apart", async () => {
    const id = await createSession();
    const client = await connect(KEY_A);
    const note = { sessionId: id, text: "decided: keep SQLite", idempotencyKey: "note-moved" };
    const first = await call(client, "append_note", note);
    expect(first.text).toBe(`appended note note-moved to ${id}`);
    expect(first.structuredContent).toMatchObject({ noteId: "note-moved", headId: "note-moved" });
    const moved = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("and then") });
    const head = moved.body.entries[0].id as string;

    const again = await call(client, "append_note", note);
    expect(again.isError, again.text).toBeFalsy();
    expect(again.text).toMatch(/^note note-moved was appended to .* before/);
    expect(again.text).not.toContain(`note ${head}`);
    const structured = again.structuredContent as {
      noteId: string;
      headId: string;
      leafId: string;
      entries: { id: string }[];
    };
    // leafId, kept for earlier clients, is the head as headId is.
    expect(structured).toMatchObject({ noteId: "note-moved", headId: head, leafId: head });
    expect(structured.entries.map((entry) => entry.id)).toEqual(["note-moved"]);
    const entries = (await api("GET", `/v1/sessions/${id}/entries`)).body.entries as { id: string }[];
    expect(entries.map((entry) => entry.id)).toEqual(["note-moved", head]);
    await client.close();
  });

  it("answers a label sent again after the head moved with the label's own id and entry as first answered, the head named apart", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { id: "asked", ...userMessage("which database?") },
    });
    const client = await connect(KEY_A);
    const label = { sessionId: id, entryId: "asked", label: "decision", idempotencyKey: "label-moved" };
    const first = await call(client, "label_entry", label);
    expect(first.isError, first.text).toBeFalsy();
    expect(first.text).toBe(`labelled asked in ${id}: decision`);
    type Labelled = { labelId: string; headId: string; leafId: string; entries: { id: string }[] };
    const answered = first.structuredContent as Labelled;
    // leafId, the head as headId names it, is kept for the clients that read it.
    expect(answered).toMatchObject({ labelId: "label-moved", headId: "label-moved", leafId: "label-moved" });
    expect(answered.entries.map((entry) => entry.id)).toEqual(["label-moved"]);
    const moved = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("and then") });
    const head = moved.body.entries[0].id as string;

    const again = await call(client, "label_entry", label);
    expect(again.isError, again.text).toBeFalsy();
    expect(again.text).toBe(
      `label label-moved on asked was written to ${id} before (sent again: nothing written): decision; the head is now ${head}`,
    );
    const replayed = again.structuredContent as Labelled;
    expect(replayed).toEqual({ ...answered, headId: head, leafId: head });
    const entries = (await api("GET", `/v1/sessions/${id}/entries`)).body.entries as { id: string }[];
    expect(entries.map((entry) => entry.id)).toEqual(["asked", "label-moved", head]);
    await client.close();
  });

  it("serves each session as a resource: listed a page at a time, read as its context, named by a template", async () => {
    const id = await createSession({ body: { name: "resource test" } });
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("a numbat in the garden") });
    const client = await connect(KEY_A);
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toEqual(["session://{id}"]);

    await eventually(async () => {
      const listed: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listResources(cursor === undefined ? {} : { cursor });
        listed.push(...page.resources.map((r) => r.uri));
        cursor = page.nextCursor;
      } while (cursor);
      expect(listed).toContain(`session://${id}`);
      expect(new Set(listed).size).toBe(listed.length);
    });

    const read = await client.readResource({ uri: `session://${id}` });
    const content = read.contents[0] as { uri: string; mimeType: string; text: string };
    expect(content.uri).toBe(`session://${id}`);
    expect(content.mimeType).toBe("text/plain");
    expect(content.text).toContain('"resource test"');
    expect(content.text).toMatch(/\] user: a numbat in the garden$/);

    for (const uri of ["session://missing-one", "session://../x", "file:///etc/passwd"]) {
      await expect(client.readResource({ uri })).rejects.toMatchObject({ code: -32002 });
    }
    await client.close();
  });

  it("names a session whose id holds colons by a valid URI, and answers a malformed URI as no such resource", async () => {
    const id = `${sid("colon")}:a:b`;
    const created = await api("POST", "/v1/sessions", { body: { id } });
    expect(created.status, created.text).toBe(201);
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("a colon in the name") });
    const client = await connect(KEY_A);
    const uri = `session://${encodeURIComponent(id)}`;
    await eventually(async () => {
      const listed: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listResources(cursor === undefined ? {} : { cursor });
        listed.push(...page.resources.map((r) => r.uri));
        cursor = page.nextCursor;
      } while (cursor);
      expect(listed).toContain(uri);
      for (const listedUri of listed) expect(() => new URL(listedUri)).not.toThrow();
    });
    const read = await client.readResource({ uri });
    expect((read.contents[0] as { text: string }).text).toMatch(/\] user: a colon in the name$/);

    for (const malformed of ["session://%E0", "session://%", "session://a%2"]) {
      await expect(client.readResource({ uri: malformed })).rejects.toMatchObject({ code: -32002 });
    }
    await client.close();
  });

  it("offers a read-only key no write tool and refuses its write call, writing nothing", async () => {
    const id = await createSession();
    const client = await connect(KEY_A_READ);
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(READ_TOOLS);
    // A tool not offered is unknown: a protocol error, not an error of the tool.
    await expect(call(client, "append_note", { sessionId: id, text: "x" })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining("Unknown tool: append_note"),
    });
    const listed = await call(client, "list_sessions", {});
    expect(listed.text).toContain(id);
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
    await client.close();
  });

  it("finds no session of another tenant, and writes none there", async () => {
    const id = await createSession({ key: KEY_A, body: { name: "tenant a's wallaby" } });
    const entry = (await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("wallaby") })).body
      .entries[0].id;
    const client = await connect(KEY_B);
    for (const [name, args] of [
      ["read_session", { sessionId: id }],
      ["read_session", { sessionId: id, view: "tree" }],
      ["read_entries", { sessionId: id, entryId: entry }],
      ["read_entries", { sessionId: id, query: "wallaby" }],
      ["fork_session", { sessionId: id }],
      ["append_note", { sessionId: id, text: "x" }],
      ["label_entry", { sessionId: id, entryId: entry, label: "x" }],
    ] as const) {
      const result = await call(client, name, args);
      expect(result.isError, name).toBe(true);
      expect(result.text, name).toMatch(/^not_found/);
    }
    await eventually(async () => {
      expect((await call(await connect(KEY_A), "search_sessions", { query: "wallaby" })).text).toContain(id);
    });
    expect((await call(client, "search_sessions", { query: "wallaby" })).text).toBe("no session matches");
    expect((await call(client, "list_sessions", {})).text).not.toContain(id);
    expect((await client.listResources()).resources.map((r) => r.uri)).not.toContain(`session://${id}`);
    await expect(client.readResource({ uri: `session://${id}` })).rejects.toMatchObject({ code: -32002 });
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toHaveLength(1);
    expect((await api("GET", "/v1/sessions?limit=100", { key: KEY_B })).body.sessions).toEqual([]);
    await client.close();
  });

  it("answers bad arguments with a tool error naming the argument, never a failure of the server", async () => {
    const id = await createSession();
    const source = await createSession();
    await api("POST", `/v1/sessions/${source}/entries`, { body: userMessage("hi") });
    const client = await connect(KEY_A);
    const deep: Record<string, unknown> = {};
    let at = deep;
    for (let i = 0; i < 200; i++) at = at.next = {} as Record<string, unknown>;
    const cases: [string, Record<string, unknown>, string][] = [
      ["read_session", { sessionId: "../x" }, "sessionId"],
      ["read_session", { sessionId: "__proto__", cursor: "nope" }, "cursor"],
      ["read_session", { sessionId: id, cursor: "999" }, "cursor"],
      ["read_session", { sessionId: id, limit: 10_000 }, "limit"],
      ["read_session", { sessionId: id, view: "everything" }, "view"],
      ["search_sessions", { query: "x".repeat(100_000) }, "query"],
      ["search_sessions", { query: { deep: { deeper: [1] } } }, "query"],
      ["search_sessions", { query: "ok", constructor: { prototype: { polluted: true } } }, "constructor"],
      ["search_sessions", { query: "ok", limit: deep }, "arguments contain more than"],
      ["list_sessions", { prefix: "__proto__/" }, "prefix"],
      ["read_entries", { sessionId: id, query: "x", around: 21 }, "around"],
      ["append_note", { sessionId: id, text: "" }, "text"],
      ["label_entry", { sessionId: id, entryId: "missing", label: "x" }, "missing"],
      [
        "fork_session",
        { sessionId: source, newId: `${source}-fork`, name: "n".repeat(64 * 1024 + 1) },
        "name",
      ],
    ];
    for (const [name, args, named] of cases) {
      const result = await call(client, name, args);
      expect(result.isError, `${name} ${JSON.stringify(args).slice(0, 80)}`).toBe(true);
      expect(result.text).toContain(named);
      expect(result.text).not.toMatch(/at .*\.ts:\d+|stack/i);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
    expectError(await api("GET", `/v1/sessions/${source}-fork`), 404, "not_found");
    await client.close();
  });

  it("answers a tool call without params with Invalid params, never failing the batch it came in", async () => {
    const id = await createSession();
    const logs = captureLogs();
    const note = {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "append_note", arguments: { sessionId: id, text: "written once" } },
    };
    const res = await postMcp([note, { jsonrpc: "2.0", id: 2, method: "tools/call" }], {
      requestId: "mcp-no-params",
    });
    expect(res.status).toBe(200);
    const answers = (await res.json()) as {
      id: number;
      result?: unknown;
      error?: { code: number; message: string };
    }[];
    expect(answers.map((answer) => [answer.id, answer.error?.code ?? null])).toEqual([
      [1, null],
      [2, -32602],
    ]);
    expect(answers[1]?.error?.message).toMatch(/^Invalid params/);
    expect((lineOf(logs, "mcp-no-params") as unknown as Record<string, unknown>).toolCalls).toEqual([
      { id: 1, tool: "append_note", sessionId: id, errorCode: null },
      { id: 2, tool: "(not a tool name)", sessionId: null, errorCode: "invalid_request" },
    ]);
    // Alone, the same; the note of the batch is written once, and nothing more.
    const alone = await postMcp({ jsonrpc: "2.0", id: 3, method: "tools/call" }, { requestId: "mcp-alone" });
    expect(alone.status).toBe(200);
    expect(((await alone.json()) as { error: { code: number } }).error.code).toBe(-32602);
    expect(lineOf(logs, "mcp-alone")).toMatchObject({ status: 200, errorCode: "invalid_request" });
    const entries = (await api("GET", `/v1/sessions/${id}/entries`)).body.entries as { content: string }[];
    expect(entries.map((entry) => entry.content)).toEqual(["written once"]);
  });

  it("answers malformed params with Invalid params naming what is wrong, running and writing nothing", async () => {
    const id = await createSession();
    const logs = captureLogs();
    const request = (method: string, params: unknown) => ({ jsonrpc: "2.0", id: 1, method, params });
    const note = { sessionId: id, text: "never written" };
    const cases: [unknown, RegExp][] = [
      [request("tools/call", { name: "append_note", arguments: null }), /arguments/],
      [request("tools/call", { name: "append_note", arguments: [1] }), /arguments/],
      [request("tools/call", { name: 5, arguments: note }), /name/],
      [request("resources/read", { uri: 5 }), /uri/],
      [request("resources/read", {}), /uri/],
    ];
    for (const [n, [message, named]] of cases.entries()) {
      const res = await postMcp(message, { requestId: `mcp-malformed-${n}` });
      expect(res.status, JSON.stringify(message)).toBe(200);
      const { error } = (await res.json()) as { error: { code: number; message: string } };
      expect(error.code, JSON.stringify(message)).toBe(-32602);
      expect(error.message).toMatch(/^Invalid params: /);
      expect(error.message).toMatch(named);
      // A sentence, not the validator's dump of its issues.
      expect(error.message).not.toMatch(/[[{]\s*"|\n/);
      expect(lineOf(logs, `mcp-malformed-${n}`)).toMatchObject({ status: 200, errorCode: "invalid_request" });
    }
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
  });

  it("refuses a tool call whose arguments hold a key named __proto__, as HTTP refuses such a body, writing nothing", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: { ...userMessage("q"), id: "q1" } });
    const logs = captureLogs();
    const label = (n: number, extra: string) =>
      JSON.parse(
        `{"jsonrpc":"2.0","id":${n},"method":"tools/call","params":{"name":"label_entry","arguments":{"sessionId":"${id}","entryId":"q1","label":"y"${extra}}}}`,
      );
    const httpBody = await api("POST", `/v1/sessions/${id}/entries`, {
      raw: '{"type":"label","targetId":"q1","label":"z","__proto__":{"x":1}}',
      headers: { "Content-Type": "application/json" },
    });
    expectError(httpBody, 400, "invalid_request");
    for (const [n, extra] of [',"__proto__":{"idempotencyKey":"zzz"}', ',"\\u005f_proto__":1'].entries()) {
      const res = await postMcp(label(1, extra), { requestId: `mcp-proto-key-${n}` });
      const { error } = (await res.json()) as { error: { code: number; message: string } };
      expect(error.code, extra).toBe(-32602);
      expect(error.message).toMatch(/^Invalid params: params\.arguments has a key named __proto__/);
      expect(lineOf(logs, `mcp-proto-key-${n}`)).toMatchObject({ status: 200, errorCode: "invalid_request" });
    }
    // In a batch, the call is refused and the others are answered.
    const batch = await postMcp([label(2, ',"__proto__":1'), label(3, "")]);
    const answers = (await batch.json()) as {
      id: number;
      error?: { code: number };
      result?: CallToolResult;
    }[];
    expect(answers.find((a) => a.id === 2)?.error?.code).toBe(-32602);
    expect(answers.find((a) => a.id === 3)?.result?.isError).toBeFalsy();
    const labels = (await api("GET", `/v1/sessions/${id}/entries`)).body.entries.filter(
      (e: { type: string }) => e.type === "label",
    );
    expect(labels.map((e: { label: string }) => e.label)).toEqual(["y"]);
    // The words in a value are its text.
    const client = await connect(KEY_A);
    const noted = await call(client, "append_note", { sessionId: id, text: '{"__proto__": 1}' });
    expect(noted.isError, noted.text).toBeFalsy();
    await client.close();
  });

  it("answers a call of a tool it does not offer with Invalid params, a protocol error, running and writing nothing", async () => {
    const id = await createSession();
    const logs = captureLogs();
    const cases: [string, string, string][] = [
      [KEY_A, "nope", "Unknown tool: nope"],
      // A write tool is not offered to a read-only key.
      [KEY_A_READ, "append_note", "Unknown tool: append_note"],
    ];
    for (const [n, [key, name, message]] of cases.entries()) {
      const res = await postMcp(
        {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name, arguments: { sessionId: id, text: "never written" } },
        },
        { key, requestId: `mcp-unknown-tool-${n}` },
      );
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
      expect(answer.result).toBeUndefined();
      expect(answer.error).toEqual({ code: -32602, message });
      expect(lineOf(logs, `mcp-unknown-tool-${n}`)).toMatchObject({
        status: 200,
        tool: name,
        sessionId: id,
        errorCode: "invalid_request",
      });
    }
    const client = await connect(KEY_A_READ);
    const fork = { sessionId: id, newId: `${id}-fork` };
    await expect(client.callTool({ name: "fork_session", arguments: fork })).rejects.toMatchObject({
      code: -32602,
    });
    await client.close();
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
    expectError(await api("GET", `/v1/sessions/${id}-fork`), 404, "not_found");
  });

  it("writes one request log line a call, naming the tool, the tenant's hash and the session", async () => {
    const id = await createSession();
    const client = await connect(KEY_A);
    const logs = captureLogs();
    await call(client, "read_session", { sessionId: id });
    const read = lineOf(logs, requestIds.at(-1) ?? null);
    expect(read).toMatchObject({
      method: "POST",
      route: "/mcp",
      status: 200,
      sessionId: id,
      errorCode: null,
    });
    expect((read as unknown as { tool: string }).tool).toBe("read_session");
    expect(read.tenant).toMatch(/^[0-9a-f]+$/);
    await call(client, "read_session", { sessionId: sid("missing") });
    const missing = lineOf(logs, requestIds.at(-1) ?? null);
    expect(missing).toMatchObject({ route: "/mcp", status: 200, errorCode: "not_found" });
    await client.listTools();
    expect((lineOf(logs, requestIds.at(-1) ?? null) as unknown as { tool?: string }).tool).toBeUndefined();
    await client.close();
  });

  it("logs a call refused for its arguments, or for a tool the key is not offered, by its tool and invalid_request", async () => {
    const id = await createSession();
    const logs = captureLogs();
    const refused = async (key: string, name: string, args: Record<string, unknown>) => {
      const client = await connect(key);
      // Refused as an error of the tool (its arguments, the store), or as Invalid params for a tool not offered.
      const refusal = await call(client, name, args).then(
        (result) => (result.isError ? "tool error" : "answered"),
        (error: { code?: number }) => (error.code === -32602 ? "invalid params" : "failed"),
      );
      expect(refusal).toBe(key === KEY_A_READ ? "invalid params" : "tool error");
      const requestId = requestIds.at(-1) ?? null;
      await client.close();
      return lineOf(logs, requestId) as unknown as Record<string, unknown>;
    };
    expect(await refused(KEY_A, "read_session", { sessionId: "a b" })).toMatchObject({
      route: "/mcp",
      status: 200,
      tool: "read_session",
      errorCode: "invalid_request",
      sessionId: null,
    });
    expect(await refused(KEY_A, "read_session", { sessionId: id, everything: true })).toMatchObject({
      tool: "read_session",
      errorCode: "invalid_request",
      sessionId: id,
    });
    expect(await refused(KEY_A_READ, "fork_session", { sessionId: id })).toMatchObject({
      tool: "fork_session",
      errorCode: "invalid_request",
      sessionId: id,
    });
    // Arguments that pass and a refusal of the store: its own code, as before.
    expect(await refused(KEY_A, "read_session", { sessionId: sid("missing") })).toMatchObject({
      tool: "read_session",
      errorCode: "not_found",
    });
    // In a batch, each call with its own code; a name that is no plain id is not logged as given.
    const res = await postMcp(
      [
        {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "read_session", arguments: { sessionId: id } },
        },
        {
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "read_session", arguments: { limit: 0 } },
        },
        { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "no such\ntool", arguments: {} } },
      ],
      { requestId: "mcp-batch-refused" },
    );
    expect(res.status).toBe(200);
    await res.text();
    expect((lineOf(logs, "mcp-batch-refused") as unknown as Record<string, unknown>).toolCalls).toEqual([
      { id: 1, tool: "read_session", sessionId: id, errorCode: null },
      { id: 2, tool: "read_session", sessionId: null, errorCode: "invalid_request" },
      { id: 3, tool: "(not a tool name)", sessionId: null, errorCode: "invalid_request" },
    ]);
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
  });

  it("logs each tool call of a batch with its own session and error code", async () => {
    const id = await createSession();
    const missing = sid("missing");
    const logs = captureLogs();
    const read = (rpcId: number, sessionId: string) => ({
      jsonrpc: "2.0",
      id: rpcId,
      method: "tools/call",
      params: { name: "read_session", arguments: { sessionId } },
    });
    const res = await postMcp(
      [read(1, id), read(2, missing), { jsonrpc: "2.0", id: 3, method: "tools/list" }],
      { requestId: "mcp-batch-log" },
    );
    expect(res.status).toBe(200);
    const answers = (await res.json()) as { id: number; result: { isError?: boolean } }[];
    expect(answers.map((answer) => [answer.id, answer.result.isError ?? false])).toEqual([
      [1, false],
      [2, true],
      [3, false],
    ]);
    const line = lineOf(logs, "mcp-batch-log") as unknown as Record<string, unknown>;
    expect(line).toMatchObject({ route: "/mcp", status: 200, errorCode: "not_found", sessionId: null });
    expect(line).not.toHaveProperty("tool");
    expect(line.toolCalls).toEqual([
      { id: 1, tool: "read_session", sessionId: id, errorCode: null },
      { id: 2, tool: "read_session", sessionId: missing, errorCode: "not_found" },
    ]);
  });

  it("logs a failure inside a tool or a resource read as the HTTP API does: its quoted parts cut, cut short", async () => {
    const secret = `secret-${crypto.randomUUID()}`;
    const failing = {
      ...env,
      SESSIONS: {
        getByName() {
          throw new Error(`no object for "${secret}" ${"x".repeat(5_000)}`);
        },
      },
    } as unknown as typeof env;
    const logs = captureLogs();
    const id = sid("failing");
    const tool = await postMcp(
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "read_session", arguments: { sessionId: id } },
      },
      { requestId: "mcp-tool-failure", bindings: failing },
    );
    expect(((await tool.json()) as { result: { isError: boolean } }).result.isError).toBe(true);
    const read = await postMcp(
      { jsonrpc: "2.0", id: 2, method: "resources/read", params: { uri: `session://${id}` } },
      { requestId: "mcp-read-failure", bindings: failing },
    );
    expect(((await read.json()) as { error: { code: number } }).error.code).toBe(-32603);
    for (const requestId of ["mcp-tool-failure", "mcp-read-failure"]) {
      const line = lineOf(logs, requestId);
      expect(line).toMatchObject({ status: 200, errorCode: "internal" });
      expect(line.failure).toMatch(/^Error: no object for … x+$/);
      expect(line.failure?.length).toBe(300);
    }
    expect(logs.lines.join("\n")).not.toContain(secret);
  });

  it("answers a transient failure of a session's object as HTTP does: unavailable, saying whether the call may have been applied", async () => {
    const client = await connect(KEY_A);
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("q") });
    // The object resets after the note is written, before it answers.
    const real = SessionObjectStorage.prototype.appendEntries;
    const resetAfterWrite = async function (this: SessionObjectStorage, ...args: Parameters<typeof real>) {
      await real.apply(this, args);
      throw Object.assign(new Error("Durable Object reset because its code was updated."), {
        durableObjectReset: true,
      });
    };
    vi.spyOn(SessionObjectStorage.prototype, "appendEntries").mockImplementationOnce(resetAfterWrite);
    const http = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("over http") });
    expectError(http, 503, "unavailable");
    expect(http.body.error.details).toMatchObject({ outcome: "unknown", retryAfterSeconds: 1 });
    vi.spyOn(SessionObjectStorage.prototype, "appendEntries").mockImplementationOnce(resetAfterWrite);
    const noted = await call(client, "append_note", { sessionId: id, text: "a note" });
    expect(noted.isError).toBe(true);
    expect(noted.text).toMatch(/^unavailable: .*"outcome":"unknown"/);
    expect(noted.text).toContain('"retryAfterSeconds":1');
    // It was applied: an answer saying it may have been is the true one.
    const notes = (await api("GET", `/v1/sessions/${id}/entries`)).body.entries.filter(
      (e: { customType?: string }) => e.customType === "note",
    );
    expect(notes).toHaveLength(1);

    // An object too busy to take a call, or reset under a read: a tool and a resource read say so.
    const logs = captureLogs();
    const stubFailing = (flags: Record<string, boolean>) =>
      ({
        ...env,
        SESSIONS: {
          getByName: () =>
            new Proxy(
              {},
              {
                get: () => () => {
                  throw Object.assign(new Error("the object failed"), flags);
                },
              },
            ),
        },
      }) as unknown as typeof env;
    const tool = await postMcp(
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "read_session", arguments: { sessionId: id } },
      },
      { requestId: "mcp-overloaded", bindings: stubFailing({ overloaded: true }) },
    );
    const toolAnswer = (await tool.json()) as { result: CallToolResult };
    expect(toolAnswer.result.isError).toBe(true);
    expect((toolAnswer.result.content[0] as { text: string }).text).toMatch(
      /^unavailable: the session is overloaded; try again .*"outcome":"not_applied"/,
    );
    const read = await postMcp(
      { jsonrpc: "2.0", id: 2, method: "resources/read", params: { uri: `session://${id}` } },
      { requestId: "mcp-reset-read", bindings: stubFailing({ durableObjectReset: true }) },
    );
    const readAnswer = (await read.json()) as { error: { code: number; message: string; data: unknown } };
    expect(readAnswer.error.code).toBe(-32603);
    expect(readAnswer.error.message).toMatch(/unavailable: the session restarted while it answered/);
    expect(readAnswer.error.data).toMatchObject({ outcome: "unknown", retryAfterSeconds: 1 });
    for (const requestId of ["mcp-overloaded", "mcp-reset-read"]) {
      const line = lineOf(logs, requestId);
      expect(line).toMatchObject({ status: 200, errorCode: "unavailable" });
      expect(line.failure).toMatch(/the object failed/);
    }
    await client.close();
  });

  it("logs a batch call's JSON-RPC id only when it is a number or short and plain, else by its hash", async () => {
    const id = await createSession();
    const logs = captureLogs();
    const long = `"${crypto.randomUUID()}" ${"y".repeat(10_000)}`;
    const read = (rpcId: string | number) => ({
      jsonrpc: "2.0",
      id: rpcId,
      method: "tools/call",
      params: { name: "read_session", arguments: { sessionId: id } },
    });
    const res = await postMcp([read(7), read("call-8"), read(long)], { requestId: "mcp-batch-ids" });
    const answers = (await res.json()) as { id: string | number }[];
    expect(answers.map((answer) => answer.id)).toEqual([7, "call-8", long]);
    const line = lineOf(logs, "mcp-batch-ids") as unknown as { toolCalls: { id: unknown }[] };
    const [number, plain, hashed] = line.toolCalls.map((call) => call.id);
    expect([number, plain]).toEqual([7, "call-8"]);
    expect(hashed).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(logs.lines.join("\n")).not.toContain("y".repeat(100));
  });

  it("refuses a request without a credential, one from another site, and GET or DELETE", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
    const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
    const anonymous = await exports.default.fetch("http://sessions.test/mcp", {
      method: "POST",
      headers,
      body,
    });
    expect(anonymous.status).toBe(401);
    const forged = await exports.default.fetch("http://sessions.test/mcp", {
      method: "POST",
      headers: { ...headers, Authorization: `Bearer ${KEY_A}`, Origin: "https://evil.example" },
      body,
    });
    expect(forged.status).toBe(403);
    for (const method of ["GET", "DELETE"]) {
      const res = await exports.default.fetch("http://sessions.test/mcp", {
        method,
        headers: { Authorization: `Bearer ${KEY_A}`, Accept: "text/event-stream" },
      });
      expect(res.status).toBe(405);
      expect(res.headers.get("Allow")).toBe("POST");
    }
    const huge = await exports.default.fetch("http://sessions.test/mcp", {
      method: "POST",
      headers: { ...headers, Authorization: `Bearer ${KEY_A}`, "Content-Length": String(2 * 1024 * 1024) },
      body: "x".repeat(2 * 1024 * 1024),
    });
    expect(huge.status).toBe(413);
  });

  it("keeps a tool's answer to what a client gives a model: large entries by their place, long reads in pages", async () => {
    const id = await createSession();
    const big = "b".repeat(20_000);
    const written = await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          userMessage("a small question"),
          userMessage(`needle ${big}`),
          ...Array.from({ length: 20 }, (_, n) => userMessage(`line ${n} ${"x".repeat(3_000)}`)),
        ],
      },
    });
    const ids = written.body.entries.map((e: { id: string; seq: number }) => e) as {
      id: string;
      seq: number;
    }[];
    const client = await connect(KEY_A);
    const around = await call(client, "read_entries", { sessionId: id, entryId: ids[0]?.id, around: 1 });
    const entries = (around.structuredContent as { entries: Record<string, unknown>[] }).entries;
    // The small one whole; the large one as its place and size, readable over HTTP.
    expect(entries[0]).toMatchObject({ id: ids[0]?.id, message: { content: "a small question" } });
    expect(entries[1]).toEqual({
      id: ids[1]?.id,
      seq: ids[1]?.seq,
      type: "message",
      parentId: ids[0]?.id,
      timestamp: expect.any(String),
      omitted: { chars: expect.any(Number) },
    });
    expect((entries[1] as { omitted: { chars: number } }).omitted.chars).toBeGreaterThan(20_000);
    const whole = await api("GET", `/v1/sessions/${id}/entries/${ids[1]?.id}`);
    expect(whole.body.message.content).toBe(`needle ${big}`);

    // 22 messages, two of 3,000 characters and more: a page holds what fits in 40,000.
    const first = await call(client, "read_session", { sessionId: id, limit: 200 });
    const page = first.structuredContent as { lines: string[]; nextCursor: string | null };
    expect(page.lines.join("").length).toBeLessThanOrEqual(40_000);
    expect(page.nextCursor).not.toBeNull();
    const rest = await call(client, "read_session", { sessionId: id, limit: 200, cursor: page.nextCursor });
    const shown = [...page.lines, ...(rest.structuredContent as { lines: string[] }).lines];
    expect(shown.map(lineEntryId)).toEqual(ids.map((entry) => entry.id));
  });

  it("reads a page of a long session's context, tree or resource from a window of it: what the object answers is the page, not the session", async () => {
    const id = await createSession();
    // 6 MB of messages, then 1,000 short ones, one of them labelled at length.
    await writeLarge(id, 60, 100_000);
    const small = Array.from({ length: 1000 }, (_, n) => userMessage(`short ${n}`));
    const written = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries: small } });
    const ids = written.body.entries.map((e: { id: string }) => e.id) as string[];
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "label", targetId: ids[500], label: `l${"a".repeat(10_000)}` },
    });
    const client = await connect(KEY_A);

    let first: { lines: string[]; nextCursor: string | null } | undefined;
    const firstChars = await objectAnswerChars(async () => {
      first = (await call(client, "read_session", { sessionId: id, limit: 5 }))
        .structuredContent as typeof first;
    });
    expect(first?.lines).toHaveLength(5);
    expect(first?.lines[0]).toMatch(/\] user: message 0 lorem [lorem ]+\[…96\d\d\d more characters/);
    const head = (await api("GET", `/v1/sessions/${id}`)).body.leafId;
    expect(first?.nextCursor).toBe(`5@${head}`);
    // Five lines of 4,000 characters, not the 6 MB the context holds.
    expect(firstChars).toBeLessThan(40_000);

    let last: { lines: string[]; nextCursor: string | null } | undefined;
    const lastChars = await objectAnswerChars(async () => {
      last = (await call(client, "read_session", { sessionId: id, limit: 5, cursor: `1055@${head}` }))
        .structuredContent as typeof last;
    });
    expect(last?.lines.map(lineEntryId)).toEqual(ids.slice(995));
    expect(last?.nextCursor).toBeNull();
    expect(lastChars).toBeLessThan(20_000);

    // A tree's cursor names its line and the last entry of the tree the first page drew.
    const treeStart = await call(client, "read_session", { sessionId: id, view: "tree", limit: 5 });
    const treeCursor = (treeStart.structuredContent as { nextCursor: string }).nextCursor;
    expect(treeCursor).toMatch(/^tree:5:\d+$/);
    let tree: { text: string; lines: string[] } | undefined;
    const treeChars = await objectAnswerChars(async () => {
      const read = await call(client, "read_session", {
        sessionId: id,
        view: "tree",
        limit: 5,
        cursor: treeCursor.replace(/^tree:5:/, "tree:558:"),
      });
      tree = { text: read.text, lines: (read.structuredContent as { lines: string[] }).lines };
    });
    expect(tree?.text).toContain("lines 559-563 of 1061");
    // The label is cut in its line.
    expect(tree?.lines[2]).toBe(`user ${ids[500]} [l${"a".repeat(199)}… (10001 characters)]`);
    expect(treeChars).toBeLessThan(5_000);

    let text = "";
    const resourceChars = await objectAnswerChars(async () => {
      const read = await client.readResource({ uri: `session://${id}` });
      text = (read.contents[0] as { text: string }).text;
    });
    expect(text.length).toBeLessThanOrEqual(256 * 1024 + 1_000);
    expect(text).toMatch(/\(earlier lines left out, of the context's first \d+ entries: read_session/);
    expect(text).toMatch(/\] user: short 999$/);
    expect(resourceChars).toBeLessThan(2 * 256 * 1024);
    await client.close();
  });

  it("reads the entries around matches in a session of large entries as lines and places, never the entries whole", async () => {
    const id = await createSession();
    // 48 entries of 100,000 characters, every other one a match.
    await writeLarge(id, 48, 100_000, (n) => (n % 2 ? `plain ${n}` : `kestrel ${n}`));
    const client = await connect(KEY_A);
    let read = {} as Awaited<ReturnType<typeof call>>;
    const chars = await objectAnswerChars(async () => {
      read = await call(client, "read_entries", { sessionId: id, query: "kestrel", limit: 20, around: 20 });
    });
    expect(read.isError, read.text).toBeFalsy();
    const { matches } = read.structuredContent as {
      matches: { entries: { omitted?: { chars: number } }[] }[];
    };
    expect(matches).toHaveLength(20);
    // The entries of the matches shown, by their places; a match past the page by its line only.
    expect(matches[0]?.entries.length).toBeGreaterThan(1);
    for (const match of matches)
      for (const entry of match.entries) expect(entry.omitted?.chars).toBeGreaterThan(100_000);
    expect(matches.at(-1)?.entries).toEqual([]);
    expect(read.text).toMatch(/> \[[^\]]+\] user: kestrel \d+ lorem [lorem ]+\[…96\d\d\d more characters/);
    expect(read.text).toContain("more than a page holds");
    // The lines a page shows and the places of the rest: not 800 entries of 100,000 characters.
    expect(chars).toBeLessThan(600_000);
    await client.close();
  });

  it("keeps read_entries within one answer's budget on large entries, naming the entries it leaves out by a read that gives them", async () => {
    const id = await createSession();
    // 61 messages of 5,000 characters, every third a match.
    await writeLarge(id, 61, 5_000, (n) => (n % 3 ? `plain ${n}` : `pangolin ${n}`));
    const ids = (
      (await api("GET", `/v1/sessions/${id}/entries?limit=100`)).body.entries as { id: string }[]
    ).map((entry) => entry.id);
    const client = await connect(KEY_A);
    // The whole answer, its text and its structured content together, as a client gives it a model.
    const withinBudget = (read: Awaited<ReturnType<typeof call>>) => {
      expect(read.isError, read.text).toBeFalsy();
      expect(read.text.length).toBeLessThanOrEqual(40_000);
      expect(JSON.stringify(read.structuredContent).length).toBeLessThanOrEqual(40_000);
    };
    const shownIds = (text: string) =>
      text
        .split("\n")
        .filter((line) => /^[> ] \[/.test(line))
        .map(lineEntryId);
    const continuations = (text: string) =>
      [...text.matchAll(/more: read_entries with entryId "([^"]+)" and around (\d+)/g)].map(
        ([, entryId, around]) => ({ entryId: entryId as string, around: Number(around) }),
      );

    // Around an entry: the entry itself and those nearest it; the rest by the reads the answer names.
    const centre = ids[30] as string;
    const first = await call(client, "read_entries", { sessionId: id, entryId: centre, around: 20 });
    withinBudget(first);
    expect(first.text).toContain(`> [${centre}] user: pangolin 30`);
    expect(continuations(first.text)).toHaveLength(2);
    const structured = first.structuredContent as { entries: { id: string }[] };
    expect(structured.entries.map((entry) => entry.id)).toEqual(shownIds(first.text));
    const seen = new Set(shownIds(first.text));
    const queue = continuations(first.text);
    for (let reads = 0; queue.length > 0; reads++) {
      expect(reads).toBeLessThan(20);
      const next = await call(client, "read_entries", { sessionId: id, ...queue.shift() });
      withinBudget(next);
      for (const shown of shownIds(next.text)) seen.add(shown);
      queue.push(...continuations(next.text));
    }
    for (const entryId of ids.slice(10, 51)) expect(seen.has(entryId), entryId).toBe(true);

    // Around each match: the first counts against the budget too, the later ones past it by their line.
    await eventually(async () => {
      const matched = await call(client, "read_entries", {
        sessionId: id,
        query: "pangolin",
        around: 20,
        limit: 20,
      });
      withinBudget(matched);
      expect(matched.text).toContain("more than a page holds");
      expect(continuations(matched.text).length).toBeGreaterThan(0);
      const { matches } = matched.structuredContent as { matches: { entries: unknown[] }[] };
      expect(matches).toHaveLength(20);
      expect(matches.at(-1)?.entries).toEqual([]);
    });

    // Many small entries, whole in the structured content: the answer stops there at its budget too.
    const small = await createSession();
    const many = Array.from({ length: 400 }, (_, n) => userMessage(`armadillo ${n} ${"word ".repeat(40)}`));
    await api("POST", `/v1/sessions/${small}/entries`, { body: { entries: many } });
    await eventually(async () => {
      const matched = await call(client, "read_entries", {
        sessionId: small,
        query: "armadillo",
        around: 20,
        limit: 20,
      });
      withinBudget(matched);
      const { matches } = matched.structuredContent as { matches: { entries: { message?: unknown }[] }[] };
      expect(matches).toHaveLength(20);
      expect(matches[0]?.entries[0]?.message).toBeDefined();
    });
    await client.close();
  });

  it("keeps listings, searches, reads and writes within a page each, however large the sessions' prompts, metadata and names", async () => {
    const prefix = `size-${sid("p").slice(2, 14)}-`;
    const count = 80;
    const ids: string[] = [];
    const bigMetadata = { notes: "m".repeat(8_000) };
    for (let n = 0; n < count; n++) {
      const id = `${prefix}${String(n).padStart(3, "0")}`;
      const created = await api("POST", "/v1/sessions", {
        body: {
          id,
          name: `${"n".repeat(1_000)} ${n}`,
          systemPrompt: "s".repeat(20_000),
          metadata: bigMetadata,
        },
      });
      expect(created.status, created.text).toBe(201);
      await api("POST", `/v1/sessions/${id}/entries`, {
        body: userMessage(`wombat ${"w".repeat(400)} ${n}`),
      });
      ids.push(id);
    }
    const client = await connect(KEY_A);
    /** Characters of an answer as a client hands it to a model: its text and its structured content. */
    const size = (result: CallToolResult) =>
      JSON.stringify(result.content).length + JSON.stringify(result.structuredContent ?? {}).length;
    const budget = 2 * 40_000 + 2_000;

    const listed: string[] = [];
    let pages = 0;
    await eventually(async () => {
      listed.length = 0;
      pages = 0;
      let cursor: string | undefined;
      do {
        pages++;
        const page = await call(client, "list_sessions", {
          prefix,
          limit: 100,
          ...(cursor ? { cursor } : {}),
        });
        expect(page.isError, page.text).toBeFalsy();
        expect(size(page)).toBeLessThanOrEqual(budget);
        const content = page.structuredContent as {
          sessions: Record<string, unknown>[];
          nextCursor: string | null;
        };
        for (const session of content.sessions) {
          expect(session).not.toHaveProperty("systemPrompt");
          expect(session).not.toHaveProperty("metadata");
          expect(session).toMatchObject({
            systemPromptChars: 20_000,
            metadataChars: JSON.stringify(bigMetadata).length,
          });
          expect((session.name as string).length).toBeLessThan(300);
          expect(session.nameChars).toBeGreaterThan(1_000);
        }
        listed.push(...content.sessions.map((session) => session.id as string));
        cursor = content.nextCursor ?? undefined;
      } while (cursor);
      expect([...listed].sort()).toEqual(ids);
      // A hundred such sessions do not fit one answer: the page ends early, its cursor going on.
      expect(pages).toBeGreaterThan(1);
    });

    await eventually(async () => {
      const found = await call(client, "search_sessions", { query: "wombat", prefix, limit: 100 });
      expect(found.isError, found.text).toBeFalsy();
      expect(size(found)).toBeLessThanOrEqual(budget);
      const { results } = found.structuredContent as { results: { session: Record<string, unknown> }[] };
      expect(results.length).toBeGreaterThan(10);
      expect(results.length).toBeLessThan(count);
      expect(results[0]?.session).not.toHaveProperty("systemPrompt");
      expect(found.text).toContain("more may match");
    });

    const read = await call(client, "read_session", { sessionId: ids[0] });
    expect(read.isError, read.text).toBeFalsy();
    expect(size(read)).toBeLessThan(5_000);
    expect((read.structuredContent as { session: object }).session).not.toHaveProperty("systemPrompt");
    const forked = await call(client, "fork_session", { sessionId: ids[0], newId: sid("fork") });
    expect(forked.isError, forked.text).toBeFalsy();
    expect(size(forked)).toBeLessThan(5_000);
    const noted = await call(client, "append_note", { sessionId: ids[0], text: "x".repeat(100_000) });
    expect(noted.isError, noted.text).toBeFalsy();
    expect(size(noted)).toBeLessThan(5_000);
    await client.close();
  });

  it("refuses a list_sessions limit over 100", async () => {
    const client = await connect(KEY_A);
    const refused = await call(client, "list_sessions", { limit: 101 });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain("limit");
    await client.close();
  });

  it("counts each message of a batch against the tenant's request rate", async () => {
    const tight = { ...env, RATE_LIMITER: env.TIGHT_RATE_LIMITER };
    const post = (key: string, messages: unknown) => postMcp(messages, { key, bindings: tight });
    const list = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/list" });
    // The limiter's windows are 10 s on the clock: the requests go in one with most of it ahead.
    const left = 10_000 - (Date.now() % 10_000);
    if (left < 6_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
    // Five messages: the tenant's whole budget of five (a tight limiter), in one request.
    const batch = await post(KEY_B, [1, 2, 3, 4, 5].map(list));
    expect(batch.status, await batch.text()).toBe(200);
    const next = await post(KEY_B, list(6));
    expect(next.status).toBe(429);
    expect(((await next.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
  });

  it("answers JSON that is no JSON-RPC message as an invalid request, alone as in a batch, and text that is no JSON as a parse error", async () => {
    const logs = captureLogs();
    const raw = (body: string, requestId: string) => postMcp(body, { requestId });
    const notRpc = [{ jsonrpc: "2.0", id: null, method: "tools/list" }, { id: 1 }, {}, 3, null, "x"];
    for (const [n, message] of notRpc.entries()) {
      for (const [form, body] of [
        ["alone", JSON.stringify(message)],
        ["batch", JSON.stringify([message])],
      ]) {
        const res = await raw(body as string, `mcp-not-rpc-${n}-${form}`);
        expect(res.status, `${body} ${form}`).toBe(400);
        const answer = (await res.json()) as { error: { code: number; message: string }; id: null };
        expect(answer.error.code, `${body} ${form}`).toBe(-32600);
        expect(answer.error.message).toMatch(/^Invalid Request: /);
        expect(lineOf(logs, `mcp-not-rpc-${n}-${form}`)).toMatchObject({ errorCode: "invalid_request" });
      }
    }
    const notJson = await raw("{not json", "mcp-not-json");
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: { code: number } }).error.code).toBe(-32700);
    // A message alone is answered as ever: a request with its answer, a notification with 202.
    const listed = await raw(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/list" }), "mcp-alone");
    expect(((await listed.json()) as { id: number; result: { tools: unknown[] } }).result.tools.length).toBe(
      7,
    );
    const noted = await raw(
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      "mcp-note",
    );
    expect(noted.status).toBe(202);
  });

  it("refuses a batch sent under a protocol version without batches (2025-06-18 on), running none of it", async () => {
    const id = await createSession();
    const note = (n: number) => ({
      jsonrpc: "2.0",
      id: n,
      method: "tools/call",
      params: { name: "append_note", arguments: { sessionId: id, text: `note ${n}` } },
    });
    const post = (body: unknown, version?: string) => postMcp(body, { version });
    for (const version of ["2025-06-18", "2025-11-25"]) {
      const refused = await post([note(1), note(2)], version);
      expect(refused.status, version).toBe(400);
      const { error } = (await refused.json()) as { error: { code: number; message: string } };
      expect(error.code).toBe(-32600);
      expect(error.message).toContain(`protocol version ${version} has no batches`);
      // The same message alone is answered.
      const alone = await post(note(3), version);
      expect(((await alone.json()) as { result: CallToolResult }).result.isError).toBeFalsy();
    }
    // Versions before it, and a request naming none (2025-03-26), keep batches.
    for (const version of ["2025-03-26", "2024-11-05", undefined]) {
      const answered = await post([note(4)], version);
      expect(answered.status, version).toBe(200);
      expect(((await answered.json()) as { id: number }[]).map((m) => m.id)).toEqual([4]);
    }
    const notes = (await api("GET", `/v1/sessions/${id}/entries`)).body.entries.map(
      (e: { content: string }) => e.content,
    );
    expect(notes).toEqual(["note 3", "note 3", "note 4", "note 4", "note 4"]);
  });

  it("answers a batch of one with an array, and refuses a batch it cannot answer whole before counting or running any of it", async () => {
    const tight = { ...env, RATE_LIMITER: env.TIGHT_RATE_LIMITER };
    const post = (body: unknown, bindings: typeof env = env) => postMcp(body, { key: KEY_C, bindings });
    const list = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/list" });
    const note = (id: number, sessionId: string) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "append_note", arguments: { sessionId, text: `note ${id}` } },
    });

    const one = await post([list(1)]);
    expect(one.status).toBe(200);
    const answered = (await one.json()) as { id: number; result: unknown }[];
    expect(Array.isArray(answered)).toBe(true);
    expect(answered.map((message) => message.id)).toEqual([1]);
    const single = await post(list(2));
    expect(((await single.json()) as { id: number }).id).toBe(2);

    const id = await createSession({ key: KEY_C });
    for (const batch of [
      [note(7, id), note(7, id)],
      [note(8, id), 3],
      [note(9, id), null],
      [note(10, id), [note(11, id)]],
      [],
    ]) {
      const refused = await post(batch);
      expect(refused.status, JSON.stringify(batch)).toBe(400);
      expect(((await refused.json()) as { error: { code: number } }).error.code).toBe(-32600);
    }
    expect((await api("GET", `/v1/sessions/${id}/entries`, { key: KEY_C })).body.entries).toEqual([]);

    // The limiter's windows are 10 s on the clock: the requests go in one with most of it ahead.
    const left = 10_000 - (Date.now() % 10_000);
    if (left < 6_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
    const huge = await post(
      Array.from({ length: 2_000 }, (_, n) => list(n)),
      tight,
    );
    expect(huge.status).toBe(400);
    expect(((await huge.json()) as { error: { code: number } }).error.code).toBe(-32600);
    // Refused before it was counted: the tenant's budget of five is still whole.
    const within = await post(
      [1, 2, 3, 4].map((n) => list(n)),
      tight,
    );
    expect(within.status, await within.text()).toBe(200);
  });
});
