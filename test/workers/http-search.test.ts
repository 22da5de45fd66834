import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import type { TenantSearchResult } from "../../src/core/search";
import { rankOf, searchCursor } from "../../src/durable/directory/directory-search";
import { sessionObjectName } from "../../src/durable/internal";
import { shardCount, shardOf } from "../../src/durable/names";
import { SessionStore } from "../../src/durable/session/session-store";
import langGraphThread from "../fixtures/frameworks/langgraph-0.1.0.ndjson?raw";
import {
  api,
  assistantMessage,
  createSession,
  expectError,
  KEY_A_READ,
  KEY_B,
  runAlarmOnceReportDue,
  sid,
  userMessage,
} from "./helpers";

/*
 * Search over HTTP: the entries of one session (FTS5 in its object, written with the entries) and
 * the sessions of a tenant (FTS5 in the directory shards, fed by the sessions' reports).
 */

interface Hit {
  entryId: string;
  seq: number;
  type: string;
  role?: string;
  onBranch: boolean;
  field: "text" | "thinking";
  snippet: string;
  highlights: [number, number][];
}

interface HeaderMatch {
  field: "name" | "systemPrompt";
  snippet: string;
  highlights: [number, number][];
}

async function search(id: string, query: string, key?: string) {
  return api<{ hits: Hit[]; header?: HeaderMatch[]; nextCursor: string | null }>(
    "GET",
    `/v1/sessions/${id}/search?${query}`,
    key === undefined ? {} : { key },
  );
}

const q = (text: string, extra = "") => `q=${encodeURIComponent(text)}${extra}`;

/** The highlighted parts of a hit, as text. */
const marked = (hit: Hit) => hit.highlights.map(([start, end]) => hit.snippet.slice(start, end));

const toolResult = (text: string) => ({
  type: "message",
  message: {
    role: "toolResult",
    toolCallId: "call-1",
    toolName: "bash",
    content: [{ type: "text", text }],
    isError: false,
    timestamp: 1_700_000_000_000,
  },
});

describe("searching a session", () => {
  it("finds what was said, tool output, summaries, custom messages, labels and the name, each hit described", async () => {
    const id = await createSession();
    const appended = await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { id: "u1", ...userMessage("Please deploy the zeppelin service to staging") },
          { id: "a1", ...assistantMessage("The zeppelin deploy failed with a timeout", "secret musing") },
          { id: "t1", ...toolResult("kubectl: zeppelin pods crashlooping") },
          { id: "c1", type: "custom_message", customType: "note", content: "zeppelin note", display: true },
          { id: "l1", type: "label", targetId: "a1", label: "zeppelin failure" },
          { id: "n1", type: "session_info", name: "Zeppelin rollout" },
          { id: "x1", type: "custom", customType: "state", data: { text: "zeppelin hidden in data" } },
        ],
      },
    });
    expect(appended.status).toBe(201);
    const res = await search(id, q("zeppelin"));
    expect(res.status).toBe(200);
    // Newest first; custom entries' data is not text.
    expect(res.body.hits.map((h) => h.entryId)).toEqual(["n1", "l1", "c1", "t1", "a1", "u1"]);
    const byId = new Map(res.body.hits.map((h) => [h.entryId, h]));
    expect(byId.get("u1")).toMatchObject({ type: "message", role: "user", field: "text", onBranch: true });
    expect(byId.get("t1")).toMatchObject({ type: "message", role: "toolResult" });
    expect(byId.get("l1")).toMatchObject({ type: "label", onBranch: true });
    expect(byId.get("l1")).not.toHaveProperty("role");
    for (const hit of res.body.hits) {
      expect(marked(hit).map((m) => m.toLowerCase())).toContain("zeppelin");
      expect(hit.seq).toBeGreaterThan(0);
    }
    expect(byId.get("u1")?.snippet).toBe("Please deploy the zeppelin service to staging");
    expect(byId.get("u1")?.highlights).toEqual([[18, 26]]);
  });

  it("finds the session's name and system prompt however they were set, as the tenant's search finds its name", async () => {
    const word = (stem: string) => `${stem}${crypto.randomUUID().slice(0, 8)}`;
    const narwhal = word("narwhal");
    const cartographer = word("cartographer");
    const octopus = word("octopus");
    const glacier = word("glacier");
    const prompt = `You chart fjords as a ${cartographer}`;
    const id = await createSession({ body: { name: `${narwhal} expedition`, systemPrompt: prompt } });
    const answer = async (text: string, extra = "") => (await search(id, q(text, extra))).body;
    const found = async (text: string) => (await tenantSearch(text)).body.results.map((r) => r.session.id);
    expect(await answer(narwhal)).toEqual({
      hits: [],
      header: [{ field: "name", snippet: `${narwhal} expedition`, highlights: [[0, narwhal.length]] }],
      nextCursor: null,
    });
    expect((await answer(cartographer, "&order=rank")).header).toEqual([
      { field: "systemPrompt", snippet: prompt, highlights: [[22, prompt.length]] },
    ]);
    expect((await answer(`${narwhal} OR ${cartographer}`)).header?.map((m) => m.field)).toEqual([
      "name",
      "systemPrompt",
    ]);
    await eventually(async () => expect(await found(narwhal)).toEqual([id]));
    // Entries are the hits, paged; the header comes with the first page only.
    const entries = [1, 2, 3].map((n) => ({ id: `u${n}`, ...userMessage(`${narwhal} sighted ${n}`) }));
    await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    const first = await answer(narwhal, "&limit=2");
    expect(first.hits.map((h) => h.entryId)).toEqual(["u3", "u2"]);
    expect(first.header?.map((m) => m.field)).toEqual(["name"]);
    const second = await answer(narwhal, `&limit=2&cursor=${first.nextCursor}`);
    expect(second).toEqual({ hits: [expect.objectContaining({ entryId: "u1" })], nextCursor: null });

    // Renamed: the new name is found (its session_info entry), the one given at creation no more.
    expect((await api("PATCH", `/v1/sessions/${id}`, { body: { name: `${octopus} garden` } })).status).toBe(
      200,
    );
    const renamed = await answer(octopus);
    expect(renamed.hits.map((h) => h.type)).toEqual(["session_info"]);
    expect(renamed).not.toHaveProperty("header");
    expect(await answer("expedition")).toEqual({ hits: [], nextCursor: null });
    await eventually(async () => expect(await found(octopus)).toEqual([id]));
    expect(await found("expedition")).not.toContain(id);

    // A new system prompt replaces the old one; none leaves nothing to find.
    const patched = await api("PATCH", `/v1/sessions/${id}`, {
      body: { systemPrompt: `Map the ${glacier}` },
    });
    expect(patched.status).toBe(200);
    expect((await answer(glacier)).header?.map((m) => m.field)).toEqual(["systemPrompt"]);
    expect(await answer(cartographer)).toEqual({ hits: [], nextCursor: null });
    expect((await api("PATCH", `/v1/sessions/${id}`, { body: { systemPrompt: null } })).status).toBe(200);
    expect(await answer(glacier)).toEqual({ hits: [], nextCursor: null });
  });

  it("finds the name and system prompt an import or a fork brings, and those of a session stored before they were text", async () => {
    const id = await createSession({ body: { name: "Aurora survey", systemPrompt: "You count penguins" } });
    await api("POST", `/v1/sessions/${id}/entries`, { body: { id: "u1", ...userMessage("first light") } });
    /** What matches: hits by entry id, then the header's fields. */
    const matched = async (session: string, text: string) => {
      const { body } = await search(session, q(text));
      return [...body.hits.map((h) => h.entryId), ...(body.header ?? []).map((m) => m.field)];
    };
    const fork = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "u1" } });
    expect(fork.status).toBe(201);
    expect(await matched(fork.body.id, "aurora")).toEqual(["name"]);
    expect(await matched(fork.body.id, "penguins")).toEqual(["systemPrompt"]);
    // Named by an entry of its path: that name is the fork's, found as the entry.
    const rename = await api("PATCH", `/v1/sessions/${id}`, { body: { name: "Borealis survey" } });
    expect(rename.status).toBe(200);
    const named = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: rename.body.leafId } });
    expect(named.status).toBe(201);
    expect(await matched(named.body.id, "borealis")).toEqual([rename.body.leafId]);
    expect(await matched(named.body.id, "aurora")).toEqual([]);
    const exported = await api("GET", `/v1/sessions/${id}/export`);
    expect(exported.status).toBe(200);
    const copy = sid("imported");
    const imported = await api("POST", `/v1/sessions/import?id=${copy}`, {
      raw: exported.text,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expect(imported.status).toBe(201);
    expect(await matched(copy, "penguins")).toEqual(["systemPrompt"]);
    expect(await matched(copy, "aurora")).toEqual([]);

    // As objects of the release before stored them: the header's rows missing, the schema then.
    const asBefore = async (session: string) => {
      const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", session));
      await evictDurableObject(stub);
      await runInDurableObject(stub, (_instance, state) => {
        state.storage.sql.exec("DELETE FROM entry_text WHERE rowid <= 0");
        state.storage.sql.exec("DELETE FROM schema_version WHERE version > 9");
      });
      await evictDurableObject(stub);
    };
    await asBefore(fork.body.id);
    expect(await matched(fork.body.id, "aurora")).toEqual(["name"]);
    expect(await matched(fork.body.id, "penguins")).toEqual(["systemPrompt"]);
    await asBefore(id);
    expect(await matched(id, "aurora")).toEqual([]);
    expect(await matched(id, "penguins")).toEqual(["systemPrompt"]);
  });

  it("finds text written without spaces between words by its whole run, or its start with *", async () => {
    const id = await createSession();
    const texts = ["東京都に住んでいます。毎日電車で通勤します", "ฉันชอบกินข้าวผัดมาก", "서울에 살아요"];
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: texts.map((text, i) => ({ id: `m${i}`, ...userMessage(text) })) },
    });
    const ids = async (text: string) => (await search(id, q(text))).body.hits.map((h) => h.entryId);
    // A run of letters up to a space or punctuation is one word (docs/search.md, "The query").
    for (const found of ["東京都に住んでいます", "毎日電車で通勤します", "東京*", "毎日*"]) {
      expect(await ids(found), found).toEqual(["m0"]);
    }
    for (const missed of ["東京", "住んでいます", '"東京都"', "ข้าว", "서울"]) {
      expect(await ids(missed), missed).toEqual([]);
    }
    expect(await ids("ฉัน*")).toEqual(["m1"]);
    expect(await ids("서울*")).toEqual(["m2"]);
    expect(await ids("서울에")).toEqual(["m2"]);
    const marked = (await search(id, q("東京*"))).body.hits[0];
    expect(marked?.highlights).toEqual([[0, "東京都に住んでいます".length]]);
  });

  it("searches the model's thinking only when asked", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { id: "a1", ...assistantMessage("visible answer", "pondering quaternions quietly") },
    });
    expect((await search(id, q("quaternions"))).body.hits).toEqual([]);
    const withThinking = await search(id, q("quaternions", "&thinking=true"));
    expect(withThinking.body.hits).toHaveLength(1);
    expect(withThinking.body.hits[0]).toMatchObject({ entryId: "a1", field: "thinking" });
    expect(marked(withThinking.body.hits[0] as Hit)).toEqual(["quaternions"]);
  });

  it("reads words, phrases, prefixes, OR and exclusions, matched after stemming", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { id: "m1", ...userMessage("deploying the red rocket") },
          { id: "m2", ...userMessage("the rocket is red and deployed") },
          { id: "m3", ...userMessage("a blue balloon was deployed") },
        ],
      },
    });
    const ids = async (text: string) => (await search(id, q(text))).body.hits.map((h) => h.entryId);
    expect(await ids("deploy")).toEqual(["m3", "m2", "m1"]);
    expect(await ids("red rocket")).toEqual(["m2", "m1"]);
    expect(await ids('"red rocket"')).toEqual(["m1"]);
    expect(await ids("ball*")).toEqual(["m3"]);
    expect(await ids("balloon OR rocket")).toEqual(["m3", "m2", "m1"]);
    expect(await ids("deployed -blue")).toEqual(["m2", "m1"]);
    expect(await ids("RED")).toEqual(["m2", "m1"]);
  });

  it("pages newest first and by rank with cursors, never repeating or skipping a hit", async () => {
    const id = await createSession();
    const entries = Array.from({ length: 25 }, (_, i) => ({
      id: `m${i}`,
      ...userMessage(
        i % 5 === 0 ? "walrus walrus walrus walrus" : `walrus number ${i} among many other words here`,
      ),
    }));
    await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    for (const order of ["newest", "rank"]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await search(
          id,
          q("walrus", `&limit=7&order=${order}${cursor ? `&cursor=${cursor}` : ""}`),
        );
        expect(res.status).toBe(200);
        expect(res.body.hits.length).toBeLessThanOrEqual(7);
        seen.push(...res.body.hits.map((h) => h.entryId));
        cursor = res.body.nextCursor;
      } while (cursor);
      expect(new Set(seen).size).toBe(25);
      expect(seen).toHaveLength(25);
      if (order === "newest") expect(seen).toEqual(entries.map((e) => e.id).reverse());
      // The densest entries rank first.
      else expect(seen.slice(0, 5).sort()).toEqual(["m0", "m10", "m15", "m20", "m5"]);
    }
    expectError(await search(id, q("walrus", "&cursor=bm90LWEtY3Vyc29y")), 400, "invalid_request");
  });

  it("pages by rank over the hits there were at the first page, each once, while the session is written", async () => {
    const id = await createSession();
    const filler = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ");
    const entries = Array.from({ length: 10 }, (_, i) => ({
      id: `m${i}`,
      ...userMessage(`walrus ${filler(i * 3)}`),
    }));
    await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    const first = await search(id, q("walrus", "&order=rank&limit=5"));
    expect(first.status).toBe(200);
    // A write between pages: a hit denser than all others, and so more of the statistics bm25 weighs.
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { id: "late", ...userMessage("walrus walrus walrus") },
    });
    const seen = first.body.hits.map((h) => h.entryId);
    let cursor = first.body.nextCursor;
    while (cursor) {
      const page = await search(id, q("walrus", `&order=rank&limit=5&cursor=${cursor}`));
      expect(page.status).toBe(200);
      seen.push(...page.body.hits.map((h) => h.entryId));
      cursor = page.body.nextCursor;
    }
    // Shortest first: the same word weighs more in fewer words.
    expect(seen).toEqual(entries.map((e) => e.id));
    // A new search sees the later write.
    expect((await search(id, q("walrus", "&order=rank&limit=1"))).body.hits[0]?.entryId).toBe("late");
  });

  it("reads a rank cursor of the earlier form (an offset), and refuses a damaged one with 400", async () => {
    const id = await createSession();
    const entries = Array.from({ length: 6 }, (_, i) => ({
      id: `m${i}`,
      ...userMessage(`walrus ${"filler ".repeat(i)}`),
    }));
    await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    const cursorOf = (value: unknown) =>
      btoa(JSON.stringify(value)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const old = await search(id, q("walrus", `&order=rank&limit=2&cursor=${cursorOf({ offset: 2 })}`));
    expect(old.status).toBe(200);
    expect(old.body.hits.map((h) => h.entryId)).toEqual(["m2", "m3"]);
    const rest = await search(id, q("walrus", `&order=rank&limit=5&cursor=${old.body.nextCursor}`));
    expect(rest.body.hits.map((h) => h.entryId)).toEqual(["m4", "m5"]);
    expect(rest.body.nextCursor).toBeNull();
    for (const bad of [
      { offset: -1 },
      { upTo: 5, seq: 2 },
      { upTo: 5, seq: 2, score: "x" },
      { upTo: 5.5, seq: 2, score: -1 },
      { upTo: 5, seq: 2, score: -1, extra: 1 },
      { before: 3 },
    ]) {
      const res = await search(id, q("walrus", `&order=rank&cursor=${cursorOf(bad)}`));
      expectError(res, 400, "invalid_request");
    }
    // A rank cursor is no cursor of newest-first paging.
    const byRank = await search(id, q("walrus", "&order=rank&limit=2"));
    expectError(await search(id, q("walrus", `&cursor=${byRank.body.nextCursor}`)), 400, "invalid_request");
  });

  it("finds every entry of a large batch at once, indexed right after the write rather than in it", async () => {
    const id = await createSession();
    const entries = Array.from({ length: 300 }, (_, i) => userMessage(`bulk ${i} zebra${i}`));
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const pending = () =>
      runInDurableObject(
        stub,
        (_instance, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM search_backfill").one().n,
      );
    // Not in the write's transaction: a search indexes what is pending before it looks.
    const found = await api("GET", `/v1/sessions/${id}/search?q=zebra299`);
    expect(found.body.hits.map((hit: Hit) => hit.seq)).toEqual([300]);
    expect(await pending()).toBe(0);
    // Without a search, the object's alarm indexes it by itself soon after.
    const more = Array.from({ length: 200 }, (_, i) => userMessage(`more ${i} okapi${i}`));
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries: more } })).status).toBe(201);
    await vi.waitFor(async () => expect(await pending()).toBe(0), { timeout: 5000 });
    const indexed = await runInDurableObject(
      stub,
      (_instance, state) =>
        state.storage.sql
          .exec<{ n: number }>("SELECT count(*) AS n FROM entry_text WHERE entry_text MATCH 'okapi199'")
          .one().n,
    );
    expect(indexed).toBe(1);
    // A small append is indexed in its own transaction.
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("quagga") });
    expect(await pending()).toBe(0);
    expect((await api("GET", `/v1/sessions/${id}/search?q=quagga`)).body.hits).toHaveLength(1);
  });

  it("indexes for a bounded time before it looks, and says so when entries still wait to be indexed", async () => {
    const id = await createSession();
    for (const part of [0, 1]) {
      const entries = Array.from({ length: 1000 }, (_, i) => userMessage(`tapir${part * 1000 + i}`));
      expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    }
    const both = q("tapir5 OR tapir1999");
    const found = (body: { hits: Hit[] }) => body.hits.map((hit) => hit.snippet).sort();
    expect(found((await search(id, both)).body)).toEqual(["tapir1999", "tapir5"]);
    // As after a huge import: all 2,000 entries wait to be indexed, and no alarm will index them
    // (the writes' report is made first, and an alarm already under way does nothing).
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    await runAlarmOnceReportDue(stub);
    await runInDurableObject(stub, async (instance, state) => {
      instance.alarm = async () => {};
      await state.storage.deleteAlarm();
      state.storage.sql.exec("DELETE FROM entry_text");
      state.storage.sql.exec(
        "INSERT INTO search_backfill (singleton, next_seq, end_seq) SELECT 1, min(seq), max(seq) + 1 FROM entries",
      );
    });
    // Each step of indexing (1,000 entries) takes a second by this clock: past the budget at once.
    const now = Date.now;
    const wait = scheduler.wait.bind(scheduler);
    let late = 0;
    const clock = vi.spyOn(Date, "now").mockImplementation(() => now() + late);
    const pause = vi.spyOn(scheduler, "wait").mockImplementation((ms) => {
      late += 1000;
      return wait(ms);
    });
    let partial: Awaited<ReturnType<typeof search>>;
    try {
      partial = await search(id, both);
    } finally {
      clock.mockRestore();
      pause.mockRestore();
    }
    expect(partial.status).toBe(200);
    expect(partial.body).toMatchObject({ indexing: true });
    expect(found(partial.body)).toEqual(["tapir5"]);
    // The next search indexes the rest before it looks: everything is found, and nothing waits.
    const whole = await search(id, both);
    expect(found(whole.body)).toEqual(["tapir1999", "tapir5"]);
    expect(whole.body).not.toHaveProperty("indexing");
  });

  it("tells which hits are on the current branch", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { id: "q", ...userMessage("which llama is fastest") },
          { id: "a1", ...assistantMessage("the grey llama") },
          { id: "a2", parentId: "q", ...assistantMessage("the white llama") },
        ],
      },
    });
    const branch = async () =>
      Object.fromEntries((await search(id, q("llama"))).body.hits.map((h) => [h.entryId, h.onBranch]));
    expect(await branch()).toEqual({ q: true, a1: false, a2: true });
    await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "a1" } });
    expect(await branch()).toEqual({ q: true, a1: true, a2: false });
  });

  it("marks a hit near the root of a long branch with the latest edit of it on the current branch", async () => {
    const id = await createSession();
    const append = async (body: unknown) =>
      expect((await api("POST", `/v1/sessions/${id}/entries`, { body })).status).toBe(201);
    const steps = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({ id: `m${from + i}`, ...userMessage(`step ${from + i}`) }));
    const edit = (editId: string, parentId?: string) => ({
      type: "context_edit",
      id: editId,
      ...(parentId === undefined ? {} : { parentId }),
      targetId: "m0",
      replacement: { content: `edited by ${editId}` },
    });
    await append({ entries: [{ id: "m0", ...userMessage("the narwhal plan") }, ...steps(1, 399)] });
    await append(edit("early"));
    await append({ entries: steps(400, 300) });
    await append(edit("late"));
    await append({ entries: steps(700, 100) });
    // Another branch, from the middle of the path, edits it too.
    await append(edit("aside", "m200"));
    const hit = async (leafId: string) => {
      await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: leafId } });
      const hits = (await search(id, q("narwhal"))).body.hits;
      expect(hits.map((h) => h.entryId)).toEqual(["m0"]);
      return hits[0];
    };
    expect(await hit("m799")).toMatchObject({ onBranch: true, editedBy: "late" });
    expect(await hit("m500")).toMatchObject({ onBranch: true, editedBy: "early" });
    expect(await hit("aside")).toMatchObject({ onBranch: true, editedBy: "aside" });
    expect(await hit("m300")).not.toHaveProperty("editedBy");
  });

  it("indexes in the write's transaction: a refused batch leaves nothing to find", async () => {
    const id = await createSession();
    const refused = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage("ephemeral aardvark"), { type: "label", targetId: "nope", label: "x" }] },
    });
    expectError(refused, 422, "invalid_tree");
    expect((await search(id, q("aardvark"))).body.hits).toEqual([]);
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("durable aardvark") });
    // Found at once: no lag between an answered write and search.
    expect((await search(id, q("aardvark"))).body.hits.map((h) => h.snippet)).toEqual(["durable aardvark"]);
  });

  it("finds the messages a LangGraph checkpoint of cf-sessions 0.1 holds, in a session stored before they were text", async () => {
    const id = sid("langgraph-0-1");
    const imported = await api("POST", `/v1/sessions/import?id=${id}`, {
      raw: langGraphThread,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expect(imported.status).toBe(201);
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("ocelot after the thread") });
    const found = (await search(id, q("Paris"))).body.hits.map((hit) => hit.entryId);
    expect(found.length).toBeGreaterThan(1);
    // As an object of the release before stored it: the checkpoints not indexed, its schema then.
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    // The writes' report is made now, so that no alarm comes for it while the schema is changed (a
    // report's reads hold statements open), then a fresh object: no statement of its reads is open
    // to lock the table.
    await runAlarmOnceReportDue(stub);
    await evictDurableObject(stub);
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec(
        "DELETE FROM entry_text WHERE rowid IN (SELECT seq FROM entries WHERE type = 'custom')",
      );
      state.storage.sql.exec("DROP INDEX entries_holding_messages");
      state.storage.sql.exec("DROP INDEX entries_by_edit_target");
      state.storage.sql.exec("ALTER TABLE entries DROP COLUMN messages_held");
      state.storage.sql.exec("ALTER TABLE entries DROP COLUMN edit_target");
      state.storage.sql.exec("DELETE FROM schema_version WHERE version > 6");
    });
    expect((await search(id, q("Paris"))).body.hits).toEqual([]);
    await evictDurableObject(stub);
    // Started again, it indexes them; what was indexed before is there once.
    expect((await search(id, q("Paris"))).body.hits.map((hit) => hit.entryId)).toEqual(found);
    expect((await search(id, q("ocelot"))).body.hits).toHaveLength(1);
  });

  it("finds what forks copied and what imports wrote, and nothing once the session is deleted", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { id: "q", ...userMessage("ocelot question") },
          { id: "a1", ...assistantMessage("ocelot answer one") },
          { id: "a2", parentId: "q", ...assistantMessage("ocelot answer two") },
        ],
      },
    });
    const fork = sid("fork");
    expect((await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "a1", id: fork } })).status).toBe(
      201,
    );
    expect((await search(fork, q("ocelot"))).body.hits.map((h) => h.entryId)).toEqual(["a1", "q"]);

    const exported = await api("GET", `/v1/sessions/${id}/export`);
    const copy = sid("copy");
    const imported = await api("POST", `/v1/sessions/import?id=${copy}`, {
      raw: exported.text,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expect(imported.status).toBe(201);
    expect((await search(copy, q("ocelot"))).body.hits.map((h) => h.entryId)).toEqual(["a2", "a1", "q"]);

    expect((await api("DELETE", `/v1/sessions/${copy}`)).status).toBe(204);
    expectError(await search(copy, q("ocelot")), 404, "not_found");
    expect((await api("DELETE", `/v1/sessions/${copy}?purge=true`)).status).toBe(204);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", copy));
    const tables = await runInDurableObject(stub, (_instance, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name LIKE 'entry_text%'").toArray(),
    );
    // Purged: the index went with the rest.
    expect(tables).toEqual([]);
  });

  it("is for the session's tenant only, and read-only keys may search", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("confidential narwhal") });
    expectError(await search(id, q("narwhal"), KEY_B), 404, "not_found");
    const read = await search(id, q("narwhal"), KEY_A_READ);
    expect(read.status).toBe(200);
    expect(read.body.hits).toHaveLength(1);
  });

  it("answers 400 with a clear message to a query with nothing to find, and to bad parameters", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("anything") });
    for (const text of ["", "   ", "!!!", "-excluded", "* - \" ' ( )"]) {
      const res = await search(id, q(text));
      expectError(res, 400, "invalid_request");
      expect(res.text).toMatch(/"message":"[^"]*query/);
    }
    expectError(await search(id, ""), 400, "invalid_request");
    expectError(await search(id, q("x".repeat(501))), 400, "invalid_request");
    expectError(await search(id, q("a", "&limit=0")), 400, "invalid_request");
    expectError(await search(id, q("a", "&limit=101")), 400, "invalid_request");
    expectError(await search(id, q("a", "&order=oldest")), 400, "invalid_request");
    expectError(await search(id, q("a", "&thinking=yes")), 400, "invalid_request");
  });

  it("never fails on hostile queries: FTS5 syntax, quotes, operators, control characters, any unicode", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          userMessage('He said "hello" AND NOT near(world) -- col:value {text} ^start'),
          userMessage("ñandú 😀 日本語"),
        ],
      },
    });
    const nasty = [
      '"',
      '"""',
      'hello"',
      '"hello',
      "AND",
      "OR",
      "NOT",
      "hello AND",
      "OR hello",
      "hello OR",
      "NEAR(hello world, 2)",
      "near(hello",
      "text:hello",
      "{text}: hello",
      "{text thinking} : hello",
      "^hello",
      "hello*",
      "*hello",
      "h*llo",
      "(hello",
      "hello)",
      "((((",
      "hello + world",
      "-hello world",
      "hello -",
      "- -",
      "hello\u0000world",
      "\u0000",
      "said'",
      "rank",
      "rowid = 1",
      "'; DROP TABLE entries; --",
      "ñandú",
      "日本語",
      "😀 hello",
      "\u202e\u0007hello",
      "a".repeat(500),
      Array.from({ length: 32 }, (_, i) => `w${i}`).join(" "),
    ];
    for (const text of nasty) {
      const res = await search(id, q(text));
      expect([200, 400], `${JSON.stringify(text)} -> ${res.text}`).toContain(res.status);
      if (res.status === 400) expectError(res, 400, "invalid_request");
    }
    expect((await search(id, q('"hello"'))).body.hits).toHaveLength(1);
    expect((await search(id, q("near(world)"))).body.hits).toHaveLength(1);
    expect((await search(id, q("ñandú"))).body.hits).toHaveLength(1);
    expectError(
      await search(id, q(Array.from({ length: 33 }, (_, i) => `w${i}`).join(" "))),
      400,
      "invalid_request",
    );

    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ minLength: 1, maxLength: 40 }),
          fc.string({ unit: "grapheme", minLength: 1, maxLength: 20 }),
          fc
            .array(
              fc.constantFrom(
                '"',
                "*",
                "-",
                "(",
                ")",
                "OR",
                "AND",
                "NOT",
                "NEAR",
                ":",
                "{",
                "}",
                "^",
                "hello",
                " ",
              ),
              {
                minLength: 1,
                maxLength: 12,
              },
            )
            .map((parts) => parts.join("")),
        ),
        async (text) => {
          const res = await search(id, q(text));
          expect([200, 400], `${JSON.stringify(text)} -> ${res.text}`).toContain(res.status);
          expect(res.text).not.toMatch(/\n\s+at /);
        },
      ),
      { seed: 20261201, numRuns: 150 },
    );
  });
});

interface Result {
  session: { id: string; name?: string; copying?: unknown };
  score: number;
  matches: { field: string; snippet: string; highlights: [number, number][] }[];
}

async function tenantSearch(text: string, key?: string) {
  return api<{ results: Result[] }>("GET", `/v1/search?${q(text)}`, key === undefined ? {} : { key });
}

/** Waits for the directory to hear of what sessions wrote (DIRECTORY_SYNC_MS is 20 ms in the tests). */
async function eventually(check: () => Promise<void>) {
  await vi.waitFor(check, { timeout: 10_000, interval: 30 });
}

/** A session's info as its report gives it to a directory shard, updated `second`s into 2026. */
function directoryInfo(id: string, second: number, name?: string) {
  return {
    id,
    metadata: {},
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
    leafId: null,
    entryCount: 1,
    messageCount: 1,
    bytes: 100,
    ...(name === undefined ? {} : { name }),
  };
}

describe("searching the tenant", () => {
  it("holds in an answer no more of its sessions' infos than the Worker may hold at once, and pages the rest", async () => {
    // 20 sessions of 1 MiB system prompts: more than an answer holds (16 Mi characters of JSON).
    const word = `bulky${crypto.randomUUID().replaceAll("-", "")}`;
    const prompt = "p".repeat(1024 * 1024 - 2);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(await createSession({ key: KEY_B, body: { name: `${word} ${i}`, systemPrompt: prompt } }));
    }
    const scope = `${q(word)}&limit=20`;
    await eventually(async () => {
      const res = await api("GET", `/v1/search?${q(word)}&limit=1`, { key: KEY_B });
      expect(res.body.results).toHaveLength(1);
      const all = await api("GET", `/v1/search?${q(`${word} 19`)}`, { key: KEY_B });
      expect(all.body.results.map((r: Result) => r.session.id)).toContain(ids[19]);
    });
    const found: Result[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { status: number; text: string; body: { results: Result[]; nextCursor: string | null } } =
        await api("GET", `/v1/search?${scope}${cursor ? `&cursor=${cursor}` : ""}`, { key: KEY_B });
      expect(res.status).toBe(200);
      expect(res.text.length).toBeLessThan(17 * 1024 * 1024);
      expect(res.body.results.length).toBeGreaterThan(0);
      found.push(...res.body.results);
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor && pages < 40);
    expect(pages).toBeGreaterThan(1);
    expect(found.map((r) => r.session.id).sort()).toEqual([...ids].sort());
    for (const result of found) expect(result.session).toMatchObject({ systemPrompt: prompt });
    // A cursor goes on only with the query, prefix and limit it came with.
    const first = await api("GET", `/v1/search?${scope}`, { key: KEY_B });
    for (const other of [q(`${word} 1`), `${q(word)}&limit=19`, `${scope}&prefix=x`]) {
      const refused = await api("GET", `/v1/search?${other}&cursor=${first.body.nextCursor}`, { key: KEY_B });
      expectError(refused, 400, "invalid_request");
    }
  });

  it("ranks sessions by name, labels, preview and message text, with the best snippet of each field", async () => {
    const named = await createSession({ body: { name: "Capybara migration plan" } });
    const labelled = await createSession();
    await api("POST", `/v1/sessions/${labelled}/entries`, {
      body: {
        entries: [
          { id: "m", ...userMessage("unrelated words") },
          { type: "label", targetId: "m", label: "capybara" },
        ],
      },
    });
    const talked = await createSession();
    await api("POST", `/v1/sessions/${talked}/entries`, {
      body: {
        entries: [
          userMessage("hello there"),
          assistantMessage("we discussed the capybara at length, because a capybara is large"),
        ],
      },
    });
    await eventually(async () => {
      const res = await tenantSearch("capybara");
      expect(res.status).toBe(200);
      const ids = res.body.results.map((r) => r.session.id);
      expect(ids).toEqual([named, labelled, talked]);
    });
    const res = await tenantSearch("capybara");
    const [first, second, third] = res.body.results as [Result, Result, Result];
    expect(first.score).toBeGreaterThan(second.score);
    expect(first.session.name).toBe("Capybara migration plan");
    expect(first.matches).toEqual([
      { field: "name", snippet: "Capybara migration plan", highlights: [[0, 8]] },
    ]);
    expect(second.matches.map((m) => m.field)).toEqual(["labels"]);
    expect(third.matches.map((m) => m.field)).toEqual(["text"]);
    expect(third.matches[0]?.highlights).toHaveLength(2);
    // The preview (the first user message) is searched too.
    const previewed = await createSession();
    await api("POST", `/v1/sessions/${previewed}/entries`, { body: userMessage("a tapir question") });
    await eventually(async () => {
      const found = (await tenantSearch("tapir")).body.results;
      expect(found.map((r) => r.session.id)).toEqual([previewed]);
      expect(found[0]?.matches.map((m) => m.field)).toEqual(["preview", "text"]);
    });
  });

  it("gives a session matching in its name first, however many sessions repeat the word in their text", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    const info = directoryInfo;
    // Its name says it, its long text does not: by bm25 alone, the text of others fits better.
    const named = sid();
    const talk = "what we check before shipping the billing service to production each week ".repeat(3);
    await directory.put({
      info: info(named, 0, "deploy checklist"),
      incarnation: "i",
      version: 1,
      search: { labels: "", text: talk },
    });
    for (let i = 1; i <= 100; i++) {
      const text = Array.from({ length: 12 }, () => "deploy").join(" ");
      await directory.put({
        info: info(sid(), i),
        incarnation: "i",
        version: 1,
        search: { labels: "", text },
      });
    }
    const options = { q: "deploy", limit: 20 };
    const answer = (await directory.search(options)) as { ok: true; value: { results: Result[] } };
    const results = answer.value.results;
    expect(results).toHaveLength(20);
    expect(results[0]?.session.id).toBe(named);
    expect(results[0]?.score).toBe(1000);
    expect(results.slice(1).map((r) => r.score)).toEqual(Array(19).fill(9));
    // One info an answer: each next answer goes on where the last stopped, to the same 20.
    const paged: Result[] = [];
    let cursor: string | undefined;
    while (paged.length < 20) {
      const next = (await directory.search({ ...options, cursor }, 1)) as {
        ok: true;
        value: { results: (Result & { session: { updatedAt: string } })[] };
      };
      const [result] = next.value.results;
      if (!result) break;
      paged.push(result);
      cursor = searchCursor(options, { ...rankOf(result as TenantSearchResult), given: paged.length });
    }
    expect(paged.map((r) => r.session.id)).toEqual(results.map((r) => r.session.id));
    // A query whose words are found in different fields still finds the session.
    const across = sid();
    await directory.put({
      info: info(across, 101, "rollback plan"),
      incarnation: "i",
      version: 1,
      search: { labels: "", text: "keep the runbook close" },
    });
    const found = (await directory.search({ q: "rollback runbook" })) as {
      ok: true;
      value: { results: Result[] };
    };
    expect(found.value.results.map((r) => r.session.id)).toEqual([across]);
  });

  it("gives the most recently updated of sessions that match alike, whatever their length or the limit", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    // Newer sessions hold longer texts, which bm25 ranks lower: 30 match alike, 5 are asked.
    const ids: string[] = [];
    for (let i = 1; i <= 30; i++) {
      const id = sid();
      ids.push(id);
      await directory.put({
        info: directoryInfo(id, i),
        incarnation: "i",
        version: 1,
        search: { labels: "", text: `deploy ${"filler words here ".repeat(i * 5)}` },
      });
    }
    const newest = [...ids].reverse();
    for (const limit of [5, 20, 100]) {
      const answer = (await directory.search({ q: "deploy", limit })) as {
        ok: true;
        value: { results: Result[] };
      };
      expect(answer.value.results.map((r) => r.session.id)).toEqual(newest.slice(0, limit));
    }
    const prefixed = (await directory.search({ q: "deploy", limit: 5, prefix: "s" })) as {
      ok: true;
      value: { results: Result[] };
    };
    expect(prefixed.value.results.map((r) => r.session.id)).toEqual(newest.slice(0, 5));
  });

  it("counts a field's matches in the whole field, not only in its snippet", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    const filler = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron ";
    // Five matches far apart (no snippet holds two of them), against two side by side, more recent.
    const spread = sid();
    const close = sid();
    await directory.put({
      info: directoryInfo(spread, 1),
      incarnation: "i",
      version: 1,
      search: {
        labels: "",
        text: Array(5)
          .fill("kiwi")
          .join(` ${filler.repeat(2)}`),
      },
    });
    await directory.put({
      info: directoryInfo(close, 2),
      incarnation: "i",
      version: 1,
      search: { labels: "", text: "kiwi kiwi" },
    });
    const answer = (await directory.search({ q: "kiwi" })) as { ok: true; value: { results: Result[] } };
    expect(answer.value.results.map((r) => [r.session.id, r.score])).toEqual([
      [spread, 5],
      [close, 2],
    ]);
    expect(answer.value.results[0]?.matches[0]?.highlights).toHaveLength(1);
  });

  it("scores and highlights only the words matched, whatever characters a name, labels or preview hold", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    const id = sid();
    const marks = "\u0001a\u0002 \u0001b\u0002 \u0001c\u0002";
    const at = "2026-01-01T00:00:00.000Z";
    await directory.put({
      info: {
        id,
        metadata: {},
        createdAt: at,
        updatedAt: at,
        leafId: null,
        entryCount: 1,
        messageCount: 1,
        bytes: 100,
        name: `deploy ${marks}`,
        preview: `deploy ${marks}`,
      },
      incarnation: "i",
      version: 1,
      search: { labels: `deploy ${marks}`, text: "" },
    });
    const answer = (await directory.search({ q: "deploy" })) as { ok: true; value: { results: Result[] } };
    const [result] = answer.value.results;
    expect(result?.score).toBe(1110);
    expect(result?.matches).toEqual(
      ["name", "labels", "preview"].map((field) => ({
        field,
        snippet: "deploy  a   b   c ",
        highlights: [[0, 6]],
      })),
    );
  });

  it("finds what a session wrote once its report reaches the directory, and forgets deleted sessions", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("first words") });
    await api("POST", `/v1/sessions/${id}/entries`, { body: assistantMessage("then the quokka appeared") });
    await eventually(async () => {
      expect((await tenantSearch("quokka")).body.results.map((r) => r.session.id)).toEqual([id]);
    });
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expect((await tenantSearch("quokka")).body.results).toEqual([]);
    expect((await api("POST", `/v1/sessions/${id}/restore`, { body: {} })).status).toBe(200);
    await eventually(async () => {
      expect((await tenantSearch("quokka")).body.results.map((r) => r.session.id)).toEqual([id]);
    });
  });

  it("finds a fork by its text once its copy is done, whether its alarm or a search of it copied the rest", async () => {
    const id = await createSession();
    // Longer than a page of the copy: a fork holds its head at first, the rest once copied.
    const turns = Array.from({ length: 12 }, (_, n) => {
      const text = `${n === 1 ? "a quoll answer" : "filler"} ${"lorem ipsum ".repeat(40)}`;
      return { id: `m${n}`, ...(n % 2 ? assistantMessage(text) : userMessage(text)) };
    });
    const entries = [...turns, { id: "a", ...assistantMessage("the pangolin rolled into a ball") }];
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    const fork = async () => {
      const forkId = sid("fork");
      const res = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "a", id: forkId } });
      expect(res.status, res.text).toBe(201);
      expect(res.body.copying).toBeDefined();
      return forkId;
    };
    const copying = async (forkId: string) => (await api("GET", `/v1/sessions/${forkId}`)).body.copying;

    // Copied by its alarm, then indexed by it.
    const copied = await fork();
    for (let step = 0; (await copying(copied)) !== undefined; step++) {
      expect(step).toBeLessThan(100);
      await runDurableObjectAlarm(env.SESSIONS.getByName(sessionObjectName("tenant-a", copied)));
    }
    await eventually(async () => {
      const found = (await tenantSearch("pangolin")).body.results;
      expect(found.map((r) => r.session.id).sort()).toEqual([id, copied].sort());
      // Listed as it is now: its copy done.
      expect(found.find((r) => r.session.id === copied)?.session.copying).toBeUndefined();
    });

    // Searched while copying: the search waits for the rest of the path and indexes it all.
    const searched = await fork();
    expect((await search(searched, q("quoll"))).body.hits.map((h) => h.entryId)).toEqual(["m1"]);
    expect((await search(searched, q("pangolin"))).body.hits.map((h) => h.entryId)).toEqual(["a"]);
    expect(await copying(searched)).toBeUndefined();
    await eventually(async () => {
      const found = (await tenantSearch("quoll")).body.results;
      expect(found.map((r) => r.session.id).sort()).toEqual([id, copied, searched].sort());
    });
  });

  it("finds a fork whose whole path came with its answer, though nothing touches it after", async () => {
    const id = await createSession();
    const entries = [
      userMessage("where does it live"),
      assistantMessage("a gharial lives in the river"),
      userMessage("thanks"),
    ];
    const appended = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    expect(appended.status).toBe(201);
    const forkId = sid("fork");
    const leafId = appended.body.entries[2].id;
    const res = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: leafId, id: forkId } });
    expect(res.status, res.text).toBe(201);
    expect(res.body.copying).toBeUndefined();
    // Found by its text (not its preview, the first user message, listed with the fork).
    await eventually(async () => {
      const found = (await tenantSearch("gharial")).body.results;
      expect(found.map((r) => r.session.id).sort()).toEqual([id, forkId].sort());
    });
  });

  it("finds an imported session by the words of its last entries, indexed after the import", async () => {
    const id = sid("import");
    const at = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();
    const lines: unknown[] = [{ type: "session", format: "cf-session", version: 1, id, createdAt: at(0) }];
    // More entries than a write indexes in its own transaction (64): they are indexed after the import.
    for (let n = 0; n < 300; n++) {
      const text = n >= 297 ? `at last the quetzal ${n}` : `turn ${n}`;
      lines.push({
        id: `e${n}`,
        parentId: n === 0 ? null : `e${n - 1}`,
        timestamp: at(n + 1),
        ...(n % 2 ? assistantMessage(text) : userMessage(text)),
      });
    }
    const imported = await api("POST", `/v1/sessions/import?id=${id}`, {
      raw: `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expect(imported.status).toBe(201);
    await eventually(async () => {
      expect((await tenantSearch("quetzal")).body.results.map((r) => r.session.id)).toEqual([id]);
    });
  });

  it("is told of a session's first and last texts and its labels, read whole: the schema may change right after", async () => {
    // Texts far longer than the digest holds, of characters of one, two and three UTF-8 bytes and
    // of two UTF-16 units, with U+0000 (where SQLite's substr stops counting) and a BOM.
    const first = `\uFEFF${"quokka \u0000 🦘 ".repeat(300)}`;
    const before = "🦘中 pangolin\u0000".repeat(400);
    const last = "numbat ".repeat(600);
    const label = "amber\u0000 中 🦘 ".repeat(500);
    const entries = [
      { id: "first", ...userMessage(first) },
      { id: "middle", ...assistantMessage("filler") },
      { id: "before", ...userMessage(before) },
      { id: "last", ...assistantMessage(last) },
      { type: "label", targetId: "first", label: "copper" },
      { type: "label", targetId: "before", label },
      { type: "label", targetId: "last", label: "bronze" },
    ];
    const id = await createSession();
    const written = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    expect(written.status, written.text).toBe(201);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    await runInDurableObject(stub, (_instance, state) => {
      const store = state.storage.transactionSync(() => new SessionStore(state.storage));
      // Labels to 2,000 characters; the newest texts to 6,000, then the first to 2,000, a line each.
      expect(store.reads.searchDigest()).toEqual({
        labels: ["copper", label.slice(0, 2000 - 7)].join("\n"),
        text: [first.slice(0, 2000), before.slice(-(6000 - 4201)), last].join("\n"),
      });
      // Each read was read to its end: no statement is left open to lock the tables.
      state.storage.sql.exec("CREATE TABLE digest_probe (value)");
      state.storage.sql.exec("DROP TABLE digest_probe");
    });
  });

  it("never returns another tenant's sessions; read-only keys may search", async () => {
    const id = await createSession({ body: { name: "wombat secrets" } });
    const theirs = await createSession({ key: KEY_B, body: { name: "wombat of tenant b" } });
    await eventually(async () => {
      expect((await tenantSearch("wombat", KEY_B)).body.results.map((r) => r.session.id)).toEqual([theirs]);
    });
    await eventually(async () => {
      const read = await tenantSearch("wombat", KEY_A_READ);
      expect(read.status).toBe(200);
      expect(read.body.results.map((r) => r.session.id)).toEqual([id]);
    });
  });

  it("searches only among the sessions whose id starts with a prefix, however many others match better", async () => {
    const prefix = `okapi-${crypto.randomUUID()}:`;
    const inside = `${prefix}1`;
    // Named matches outrank a match in the text: unfiltered, those in its shard take every place
    // the shard offers a search of one result.
    const shard = shardOf(inside, shardCount(env));
    let named = 0;
    while (named < 4) {
      const id = `okapi-named-${crypto.randomUUID()}`;
      if (shardOf(id, shardCount(env)) !== shard) continue;
      await createSession({ body: { id, name: `okapi notes ${named++}` } });
    }
    await createSession({ body: { id: inside } });
    await api("POST", `/v1/sessions/${inside}/entries`, { body: userMessage("we saw an okapi today") });
    await createSession({ body: { id: `${prefix.slice(0, -1)}-beside`, name: "okapi beside" } });
    await eventually(async () => {
      expect((await tenantSearch("okapi")).body.results).toHaveLength(6);
    });
    const all = await api<{ results: Result[] }>("GET", `/v1/search?q=okapi&limit=1`);
    expect(all.body.results.map((r) => r.session.id)).not.toEqual([inside]);
    const filtered = await api<{ results: Result[] }>(
      "GET",
      `/v1/search?q=okapi&limit=1&prefix=${encodeURIComponent(prefix)}`,
    );
    expect(filtered.status).toBe(200);
    expect(filtered.body.results.map((r) => r.session.id)).toEqual([inside]);
    for (const bad of ["", "has%20space", "a/b", "x".repeat(129)]) {
      const refused = await api("GET", `/v1/search?q=okapi&prefix=${bad}`);
      expectError(refused, 400, "invalid_request");
      expect(JSON.stringify(refused.body.error.details)).toContain("prefix");
    }
  });

  it("answers hostile queries with 200 or a 400, never a 500", async () => {
    await createSession({ body: { name: "hello world" } });
    for (const text of ['"', "NEAR(", "name:hello", "{name}: x", "-x", "AND OR NOT", "\u0000", "hello*"]) {
      const res = await tenantSearch(text);
      expect([200, 400], `${JSON.stringify(text)} -> ${res.text}`).toContain(res.status);
    }
    expectError(await api("GET", "/v1/search"), 400, "invalid_request");
    expectError(await api("GET", "/v1/search?q=a&limit=500"), 400, "invalid_request");
  });
});
