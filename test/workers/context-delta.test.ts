import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { EntryInput } from "../../src/core/entries";
import { newId } from "../../src/core/ids";
import { MemoryRepo } from "../../src/core/memory";
import type { DurableEnv } from "../../src/durable/internal";
import { DurableRepo, sessionObjectName } from "../../src/durable/internal";
import { EntryRows } from "../../src/durable/session/entry-rows";
import { PathReads } from "../../src/durable/session/path-reads";
import type { Sql } from "../../src/durable/sql";
import { JSON_PARAM_CHARS, jsonLists, sqlOf } from "../../src/durable/sql";
import { api, createSession, expectError, runAlarmOnceReportDue, userMessage } from "./helpers";

const assistantMessage = (text: string) => ({
  type: "message",
  message: {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "openai-completions",
    provider: "openai",
    model: "gpt-test",
    usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 },
    stopReason: "stop",
    timestamp: 1_700_000_000_000,
  },
});

/** A small deterministic generator, so a failing sequence can be replayed. */
function random(seed: number) {
  let state = seed >>> 0;
  return (n: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % n;
  };
}

interface Known {
  version: string;
  context: {
    systemPrompt: string;
    messages: unknown[];
    thinkingLevel: string;
    model: unknown;
    activeToolNames: unknown;
  };
}

/** What a client keeping the last context does with an answer to `?since=`. */
function apply(known: Known | undefined, answer: any): Known {
  const { version, since, append, reset, messages, ...settings } = answer;
  if (since !== undefined) {
    expect(known?.version).toBe(since);
    return { version, context: { ...settings, messages: [...(known?.context.messages ?? []), ...append] } };
  }
  return { version, context: { ...settings, messages } };
}

describe("contexts that grow by deltas", () => {
  it("answers only the new messages after an append, and the whole context when the branch moved", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: { ...userMessage("q1"), id: "u1" } });
    const first = await api("GET", `/v1/sessions/${id}/context`);
    expect(first.body.version).toEqual(expect.any(String));
    expect(first.headers.get("ETag")).toBe(`"${first.body.version}"`);
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [assistantMessage("a1"), userMessage("q2")] },
    });
    const grown = await api("GET", `/v1/sessions/${id}/context?since=${first.body.version}`);
    expect(grown.body).toMatchObject({
      since: first.body.version,
      model: { provider: "openai", modelId: "gpt-test" },
    });
    expect(grown.body.append.map((m: { role: string }) => m.role)).toEqual(["assistant", "user"]);
    expect(grown.body.messages).toBeUndefined();
    await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "u1" } });
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("q1 again") });
    const moved = await api("GET", `/v1/sessions/${id}/context?since=${grown.body.version}`);
    expect(moved.body.reset).toBe(true);
    expect(moved.body.messages.map((m: { content: string }) => m.content)).toEqual(["q1", "q1 again"]);
  });

  it("never answers a delta or a 304 across a deleted and re-created session of the same id", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage("old 1"), userMessage("old 2")] },
    });
    const old = await api("GET", `/v1/sessions/${id}/context`);
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expect((await api("POST", "/v1/sessions", { body: { id } })).status).toBe(201);
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage("new 1"), userMessage("new 2"), userMessage("new 3")] },
    });
    const again = await api("GET", `/v1/sessions/${id}/context?since=${old.body.version}`);
    expect(again.body.reset).toBe(true);
    expect(again.body.messages.map((m: { content: string }) => m.content)).toEqual([
      "new 1",
      "new 2",
      "new 3",
    ]);
    const etag = old.headers.get("ETag") as string;
    expect(
      (await api("GET", `/v1/sessions/${id}/context`, { headers: { "If-None-Match": etag } })).status,
    ).toBe(200);
  });

  it("is 304 for If-None-Match with the current version, and a full context for a version it cannot read", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("q") });
    const { headers } = await api("GET", `/v1/sessions/${id}/context`);
    const etag = headers.get("ETag") as string;
    const same = await api("GET", `/v1/sessions/${id}/context`, { headers: { "If-None-Match": etag } });
    expect(same.status).toBe(304);
    expect(same.text).toBe("");
    // Compared weakly, as If-None-Match is: a weak tag of the version, or one in a list, is 304 too.
    for (const tag of [`W/${etag}`, `"other", W/${etag}`]) {
      const weak = await api("GET", `/v1/sessions/${id}/context`, { headers: { "If-None-Match": tag } });
      expect(weak.status, tag).toBe(304);
    }
    const odd = await api("GET", `/v1/sessions/${id}/context?since=not-a-version`);
    expect(odd.body).toMatchObject({ reset: true, messages: [{ content: "q" }] });
    expectError(
      await api("GET", `/v1/sessions/${id}/context?since=${"9".repeat(80)}`),
      400,
      "invalid_request",
    );
  });

  it("equals the full context at every step of a random agent loop with moves, compactions and prompt changes", async () => {
    const id = await createSession();
    const next = random(20261130);
    const ids: string[] = [];
    let known: Known | undefined;
    const kinds = { delta: 0, reset: 0 };
    for (let step = 0; step < 80; step++) {
      const choice = next(10);
      if (choice < 5 || ids.length < 3) {
        const body = next(2) === 0 ? userMessage(`u${step}`) : assistantMessage(`a${step}`);
        const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { ...body, id: `e${step}` } });
        expect(res.status, res.text).toBe(201);
        ids.push(`e${step}`);
      } else if (choice === 5) {
        const target = ids[next(ids.length)] as string;
        await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: target } });
      } else if (choice === 6) {
        const res = await api("POST", `/v1/sessions/${id}/compact`, {
          body: { summary: `summary ${step}`, keepRecentTokens: 1 },
        });
        expect([201, 409]).toContain(res.status);
      } else if (choice === 7) {
        await api("PATCH", `/v1/sessions/${id}`, { body: { systemPrompt: `prompt ${next(3)}` } });
      } else if (choice === 8) {
        await api("POST", `/v1/sessions/${id}/entries`, {
          body: { type: "thinking_level_change", thinkingLevel: next(2) === 0 ? "high" : "low" },
        });
      } else {
        const parent = ids[next(ids.length)] as string;
        const res = await api("POST", `/v1/sessions/${id}/entries`, {
          body: { ...userMessage(`branch ${step}`), id: `e${step}`, parentId: parent },
        });
        expect(res.status, res.text).toBe(201);
        ids.push(`e${step}`);
      }
      const answer = await api("GET", `/v1/sessions/${id}/context${known ? `?since=${known.version}` : ""}`);
      expect(answer.status, answer.text).toBe(200);
      if (answer.body.since !== undefined) kinds.delta++;
      if (answer.body.reset) kinds.reset++;
      known = apply(known, answer.body);
      const full = await api("GET", `/v1/sessions/${id}/context`);
      expect(known.version, `step ${step}`).toBe(full.body.version);
      const { version: _version, ...context } = full.body;
      expect(known.context, `step ${step}`).toEqual(context);
    }
    // Both kinds of answer were exercised.
    expect(kinds.delta).toBeGreaterThan(20);
    expect(kinds.reset).toBeGreaterThan(5);
  });
});

describe("the seq lists reads of a long path bind", () => {
  it("are split into lists within the bound of one parameter, in order", () => {
    const seqs = Array.from({ length: 200_000 }, (_, i) => 1_000_000 + i);
    const lists = jsonLists(seqs);
    expect(lists.length).toBeGreaterThan(1);
    for (const list of lists) expect(list.length).toBeLessThanOrEqual(JSON_PARAM_CHARS);
    expect(lists.flatMap((list) => JSON.parse(list) as number[])).toEqual(seqs);
    expect(jsonLists([])).toEqual([]);
  });

  it("find a context edit naming an entry of a list longer than one parameter takes", async () => {
    const id = await createSession();
    const entries = [
      { ...userMessage("q"), id: "q" },
      { ...assistantMessage("a"), id: "a" },
      { type: "context_edit", id: "e", targetId: "a", replacement: { content: "edited" } },
    ];
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    await runInDurableObject(stub, (_instance, state) => {
      const bound: number[] = [];
      const exec = sqlOf(state.storage.sql);
      const sql: Sql = (strings, ...values) => {
        for (const value of values) if (typeof value === "string") bound.push(value.length);
        return exec(strings, ...values);
      };
      const paths = new PathReads(new EntryRows(state.storage.sql, sql), sql);
      const target = paths.treeNode("a").seq;
      const others = Array.from({ length: 200_000 }, (_, i) => 1_000_000 + i);
      expect(paths.editsReach([...others, target])).toBe(true);
      expect(paths.editsReach(others)).toBe(false);
      expect(Math.max(...bound)).toBeLessThanOrEqual(JSON_PARAM_CHARS);
    });
  });
});

describe("a session stored before its checkpoints and edits were indexed", () => {
  it("indexes them when opened again, payloads stored in chunks too, and answers the same contexts", async () => {
    const id = await createSession();
    const human = (text: string) => ({
      lc: 1,
      type: "constructor",
      id: ["langchain_core", "messages", "HumanMessage"],
      kwargs: { content: text, additional_kwargs: {}, response_metadata: {} },
    });
    const checkpoint = (cpId: string, data: unknown, parentId?: string) => ({
      type: "custom",
      id: cpId,
      customType: "langgraph:checkpoint",
      data,
      ...(parentId ? { parentId } : {}),
    });
    const held = (text: string) => ({ values: { messages: { type: "json", json: [human(text)] } } });
    // Past a row's inline limit (512 KiB): stored in chunks.
    const large = "x".repeat(600 * 1024);
    const entries = [
      { ...userMessage("q"), id: "q" },
      { ...assistantMessage("a"), id: "a" },
      checkpoint("cp1", held("held")),
      { type: "context_edit", id: "e1", targetId: "a", replacement: { content: "edited" } },
      { type: "context_edit", id: "e2", targetId: "q", replacement: { content: large } },
      { type: "custom", id: "state", customType: "app:state", data: { large } },
      checkpoint("cp2", { ...held("held again"), note: large }),
      { ...userMessage("after"), id: "u" },
      checkpoint("cp3", { messages: [] }, "a"),
      { ...userMessage("beside"), id: "b" },
    ];
    const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    expect(res.status, res.text).toBe(201);
    expect((await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "u" } })).status).toBe(200);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const indexed = () =>
      runInDurableObject(stub, (_instance, state) =>
        state.storage.sql
          .exec("SELECT id, chunks > 0 AS chunked, messages_held, edit_target FROM entries ORDER BY seq")
          .toArray(),
      );
    const written = await indexed();
    expect(written.filter((row) => row.messages_held !== null || row.edit_target !== null)).toEqual([
      { id: "cp1", chunked: 0, messages_held: "value", edit_target: null },
      { id: "e1", chunked: 0, messages_held: null, edit_target: "a" },
      { id: "e2", chunked: 1, messages_held: null, edit_target: "q" },
      { id: "cp2", chunked: 1, messages_held: "value", edit_target: null },
      { id: "cp3", chunked: 0, messages_held: "changes", edit_target: null },
    ]);
    const contexts = async () =>
      Promise.all(
        ["u", "b", "a"].map(
          async (leafId) => (await api("GET", `/v1/sessions/${id}/context?leafId=${leafId}`)).body,
        ),
      );
    const before = await contexts();
    // As the release before stored it: no such columns, no such indexes, its schema then. The
    // writes' report is made now, so that no alarm comes for it while the schema is changed (a
    // report's reads hold statements open), then a fresh object: no statement of its reads is open
    // to lock the table.
    await runAlarmOnceReportDue(stub);
    await evictDurableObject(stub);
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("DROP INDEX entries_holding_messages");
      state.storage.sql.exec("DROP INDEX entries_by_edit_target");
      state.storage.sql.exec("ALTER TABLE entries DROP COLUMN messages_held");
      state.storage.sql.exec("ALTER TABLE entries DROP COLUMN edit_target");
      state.storage.sql.exec("DELETE FROM schema_version WHERE version > 7");
    });
    await evictDurableObject(stub);
    expect(await contexts()).toEqual(before);
    expect(await indexed()).toEqual(written);
  });
});

/**
 * Session `id` as the release before schema version `version` + 1 stored it: each reply named in
 * `owners` taken for the latest model of its path and of the rows listed with it, its schema then.
 * The writes' report is made first, then a fresh object opens the session again.
 */
async function asStoredBefore(id: string, version: number, owners: Record<string, string[]>): Promise<void> {
  const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
  await runDurableObjectAlarm(stub);
  await evictDurableObject(stub);
  await runInDurableObject(stub, (_instance, state) => {
    const sql = state.storage.sql;
    for (const [entryId, below] of Object.entries(owners)) {
      const { seq } = sql.exec<{ seq: number }>("SELECT seq FROM entries WHERE id = ?", entryId).one();
      const ids = [entryId, ...below];
      sql.exec(
        `UPDATE entries SET last_model = ? WHERE id IN (${ids.map(() => "?").join(", ")})`,
        seq,
        ...ids,
      );
    }
    sql.exec("DELETE FROM schema_version WHERE version > ?", version);
  });
  await evictDurableObject(stub);
}

describe("a session stored before a reply naming no model was told from one naming it", () => {
  it("takes its model from the setter above such replies when opened again, on every branch", async () => {
    const id = await createSession();
    // A reply as a framework's store records it: no model of its own.
    const unnamed = (text: string, provider: string) => {
      const reply = assistantMessage(text);
      return { ...reply, message: { ...reply.message, provider, model: "" } };
    };
    const entries = [
      { ...unnamed("first", "ai-sdk"), id: "r0", parentId: null },
      { ...userMessage("q"), id: "q" },
      { ...assistantMessage("named"), id: "named" },
      { ...unnamed("saved", "ai-sdk"), id: "r1" },
      { ...unnamed("saved again", "openai"), id: "r2" },
      { ...userMessage("after"), id: "u" },
      { ...userMessage("beside"), id: "b", parentId: "r0" },
      { type: "model_change", id: "m", provider: "anthropic", modelId: "claude-sonnet-4-5", parentId: "r2" },
    ];
    const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    expect(res.status, res.text).toBe(201);
    const models = async () =>
      Promise.all(
        ["u", "b", "r0", "r2", "m"].map(
          async (leafId) => (await api("GET", `/v1/sessions/${id}/context?leafId=${leafId}`)).body.model,
        ),
      );
    const named = { provider: "openai", modelId: "gpt-test" };
    const answered = [named, null, null, named, { provider: "anthropic", modelId: "claude-sonnet-4-5" }];
    expect(await models()).toEqual(answered);
    // As the release before stored it: each reply naming no model the latest model of its path and
    // of every row below it, its schema then.
    await asStoredBefore(id, 8, { r0: ["b"], r1: [], r2: ["u"] });
    expect(await models()).toEqual(answered);
  });
});

describe("a session stored before a LangGraph message naming no model was told from one naming it", () => {
  it("takes its model from the model change above such messages, as written and when opened again", async () => {
    const id = await createSession();
    // A LangGraph message naming no model as it was stored before; an import's reply of a model its
    // file did not name, which sets that model as pi reads it.
    const reply = (text: string, provider: string) => {
      const written = assistantMessage(text);
      return { ...written, message: { ...written.message, provider, model: "unknown" } };
    };
    const entries = [
      { ...userMessage("q"), id: "q", parentId: null },
      { type: "model_change", id: "m", provider: "anthropic", modelId: "claude-sonnet-4-5" },
      { ...reply("a graph's", "unknown"), id: "r1" },
      { ...reply("another graph's", "unknown"), id: "r2" },
      { ...userMessage("after"), id: "u" },
      { ...reply("first", "unknown"), id: "r0", parentId: "q" },
      { ...reply("imported", "openai"), id: "i", parentId: "q" },
    ];
    const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    expect(res.status, res.text).toBe(201);
    const models = async () =>
      Promise.all(
        ["u", "r1", "r0", "i"].map(
          async (leafId) => (await api("GET", `/v1/sessions/${id}/context?leafId=${leafId}`)).body.model,
        ),
      );
    const changed = { provider: "anthropic", modelId: "claude-sonnet-4-5" };
    const answered = [changed, changed, null, { provider: "openai", modelId: "unknown" }];
    expect(await models()).toEqual(answered);
    // As the release before stored it: each such message the latest model of its path and of
    // every row below it, its schema then.
    await asStoredBefore(id, 10, { r0: [], r1: [], r2: ["u"] });
    expect(await models()).toEqual(answered);
  });
});

describe("a context holding a LangGraph checkpoint's messages", () => {
  it("is read from the last checkpoint on its path, past many of other branches, as the memory backend reads it", async () => {
    const human = (text: string) => ({
      lc: 1,
      type: "constructor",
      id: ["langchain_core", "messages", "HumanMessage"],
      kwargs: { content: text, additional_kwargs: {}, response_metadata: {} },
    });
    // Both backends write the same entries, at one time.
    const timestamp = "2026-01-01T00:00:00.000Z";
    const checkpoint = (id: string, parentId: string, data: unknown) =>
      ({ type: "custom", id, parentId, timestamp, customType: "langgraph:checkpoint", data }) as EntryInput;
    const held = (text: string) => ({ values: { messages: { type: "json", json: [human(text)] } } });
    const entries: EntryInput[] = [
      { ...userMessage("q"), id: "q" } as EntryInput,
      checkpoint("cp", "q", held("on the path")),
      // Beside the path, between its checkpoint and its end: more than one read of the index holds.
      ...Array.from({ length: 40 }, (_, i) => checkpoint(`side${i}`, "cp", held(`beside ${i}`))),
      checkpoint("changed", "side0", { messages: [] }),
      { ...userMessage("after"), id: "u", parentId: "cp" } as EntryInput,
    ];
    const id = `s-${newId()}`;
    const durable = await new DurableRepo(env as unknown as DurableEnv, "tenant-a").create({ id });
    const memory = await new MemoryRepo().create({ id });
    for (const session of [durable, memory]) await session.appendEntries(entries);
    for (const leafId of ["u", "side39", "changed", "side0"]) {
      const context = (await api("GET", `/v1/sessions/${id}/context?leafId=${leafId}`)).body;
      const { version: _, ...answered } = context;
      expect(answered).toEqual(await memory.buildContext({ leafId }));
    }
    const context = (await api("GET", `/v1/sessions/${id}/context?leafId=u`)).body;
    expect(context.messages).toMatchObject([{ content: [{ text: "on the path" }] }, { content: "after" }]);
  });
});
