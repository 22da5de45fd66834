import {
  abortAllDurableObjects,
  evictDurableObject,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createClient } from "../../src/client";
import { SessionError } from "../../src/core/errors";
import { newId } from "../../src/core/ids";
import type { DurableEnv } from "../../src/durable/internal";
import { sessionObjectName } from "../../src/durable/internal";
import { directoryObjectName, directoryShard, shardCount, shardOf } from "../../src/durable/names";
import { streamObjectName } from "../../src/durable/stream";
import { faults, INJECTED_IO_ERROR } from "./faults";
import type { Fetch } from "./network";
import worker from "./worker";

/*
 * One test for each kind of fault the service meets, each showing the promise holds under it: an
 * acknowledged write is there once, an answer that says nothing was written means nothing was,
 * and a write without an answer is there at most once (once, retried with its keys).
 */

const KEY = "key-a";
const TENANT = "tenant-a";
const BASE = "http://sessions.test";
/** The service, reached as a client's fetch would (its own `this`). */
const service: Fetch = (request) => exports.default.fetch(request);

afterEach(() => faults.clear());

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function api(method: string, path: string, body?: unknown, via: Fetch = service): Promise<Answer> {
  const res = await via(
    new Request(`${BASE}${path}`, {
      method,
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** The service run with some settings changed in the Worker (its summarizer, recovery window). */
function withSettings(settings: Record<string, string>): Fetch {
  const context = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
  return async (request) => worker.fetch(request, { ...(env as object), ...settings } as never, context);
}

const stub = (id: string) => env.SESSIONS.getByName(sessionObjectName(TENANT, id));
const objectOf = (id: string) => env.SESSIONS.idFromName(sessionObjectName(TENANT, id)).toString();

async function newSession(): Promise<string> {
  const id = `f-${newId()}`;
  expect((await api("POST", "/v1/sessions", { id })).status).toBe(201);
  return id;
}

const message = (id: string, text: string) => ({
  id,
  type: "message",
  message: { role: "user", content: text, timestamp: 1_700_000_000_000 },
});

async function entries(id: string): Promise<Array<{ id: string; seq: number; type: string }>> {
  const res = await api("GET", `/v1/sessions/${id}/entries?limit=1000`);
  expect(res.status).toBe(200);
  return res.body.entries;
}

/** Milliseconds until the session's alarm comes, if one is set. */
async function alarmIn(id: string): Promise<number | undefined> {
  const at = await runInDurableObject(stub(id), (_instance, state) => state.storage.getAlarm());
  return at === null ? undefined : at - Date.now();
}

/** Whether the session's object still has its entries' table (0 once it is purged). */
const entriesTables = (id: string) =>
  runInDurableObject(
    stub(id),
    (_instance, state) =>
      state.storage.sql.exec("SELECT count(*) AS n FROM sqlite_master WHERE name = 'entries'").one().n,
  );

/** The id of the directory shard that lists the session `id`. */
const shardObjectOf = (id: string) =>
  env.DIRECTORY.idFromName(
    directoryObjectName(TENANT, shardOf(id, shardCount(env as unknown as DurableEnv))),
  ).toString();

async function listed(): Promise<string[]> {
  const res = await api("GET", "/v1/sessions?limit=200");
  expect(res.status).toBe(200);
  return res.body.sessions.map((info: { id: string }) => info.id);
}

/** A fetch that loses the answers of the first `n` requests matching `lose` (each applied all the same). */
function losingAnswers(n: number, lose: (request: Request) => boolean): Fetch & { lost: number } {
  const fetcher = Object.assign(
    async (request: Request) => {
      const matches = lose(request);
      const response = await service(request);
      if (matches && fetcher.lost < n) {
        await response.arrayBuffer();
        fetcher.lost++;
        throw new TypeError("injected fault: the answer was lost");
      }
      return response;
    },
    { lost: 0 },
  );
  return fetcher;
}

function expectUnavailable(answer: Answer, outcome: "not_applied" | "unknown") {
  expect(answer.status, JSON.stringify(answer.body)).toBe(503);
  expect(answer.body.error).toMatchObject({ code: "unavailable", details: { outcome } });
  expect(answer.headers.get("Retry-After")).toBe("1");
  expect(JSON.stringify(answer.body)).not.toMatch(/SQLITE|\n\s+at /);
}

describe("a storage statement failing inside a transaction", () => {
  it("answers 503 unavailable with Retry-After, writes nothing, and the next write takes the next seq", async () => {
    const id = await newSession();
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("a", "first"))).status).toBe(201);
    const before = await api("GET", `/v1/sessions/${id}`);
    // The third statement of the batch's transaction fails: rows of it were written, then rolled back.
    faults.add({ point: "statement", object: objectOf(id), skip: 2 });
    const failed = await api("POST", `/v1/sessions/${id}/entries`, {
      entries: [message("b", "second"), message("c", "third")],
    });
    expectUnavailable(failed, "not_applied");
    expect(faults.injected.statement).toBeGreaterThan(0);
    expect((await entries(id)).map((entry) => entry.id)).toEqual(["a"]);
    expect((await api("GET", `/v1/sessions/${id}`)).body).toEqual(before.body);
    const next = await api("POST", `/v1/sessions/${id}/entries`, message("d", "fourth"));
    expect(next.body.entries[0]).toMatchObject({ seq: 2, parentId: "a" });
  });

  it("is retried by the client with the same keys: the batch is there once", async () => {
    const id = await newSession();
    faults.add({ point: "statement", object: objectOf(id), times: 2 });
    const client = createClient({ baseUrl: BASE, token: KEY, fetch: service, retryDelayMs: 1 });
    const result = await client
      .storage(id)
      .appendEntries([message("x", "one"), message("y", "two")] as never);
    expect(result.entries.map((entry) => entry.seq)).toEqual([1, 2]);
    expect(faults.injected.statement).toBeGreaterThanOrEqual(2);
    expect((await entries(id)).map((entry) => entry.id)).toEqual(["x", "y"]);
  });

  it("leaves no session when creating it fails: not found, then created whole by the retry", async () => {
    const id = `f-${newId()}`;
    // The session's row is written, then its lifecycle's fails: the transaction rolls back.
    faults.add({ point: "statement", object: objectOf(id), matching: /INTO lifecycle/ });
    expectUnavailable(await api("POST", "/v1/sessions", { id }), "not_applied");
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("a", "none"))).status).toBe(404);
    expect((await api("POST", "/v1/sessions", { id })).status).toBe(201);
    const first = await api("POST", `/v1/sessions/${id}/entries`, message("b", "first"));
    expect(first.body.entries[0]).toMatchObject({ seq: 1, parentId: null });
    await evictDurableObject(stub(id));
    expect((await entries(id)).map((entry) => `${entry.id}@${entry.seq}`)).toEqual(["b@1"]);
  });

  it("leaves a deleted session deleted when restoring it fails, and restores it on the retry", async () => {
    const id = await newSession();
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("a", "kept"))).status).toBe(201);
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    faults.add({ point: "statement", object: objectOf(id), matching: /INTO lifecycle/ });
    expectUnavailable(await api("POST", `/v1/sessions/${id}/restore`), "not_applied");
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
    expect((await api("POST", `/v1/sessions/${id}/restore`)).status).toBe(200);
    expect((await entries(id)).map((entry) => entry.id)).toEqual(["a"]);
  });

  it("opens no generation when the first one's opening fails after making its tables, and opens the next", async () => {
    const id = await newSession();
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("a", "a question"))).status).toBe(201);
    // The generation's tables are made and its row written, then its stream's row fails: all of
    // it rolls back, the tables too.
    faults.add({ point: "statement", object: objectOf(id), matching: /INSERT INTO streams/ });
    expectUnavailable(await api("POST", `/v1/sessions/${id}/generations`, {}), "not_applied");
    expect(faults.injected.statement).toBeGreaterThan(0);
    const none = await api("GET", `/v1/sessions/${id}/generations`);
    expect(none.status, JSON.stringify(none.body)).toBe(200);
    expect(none.body.generations).toEqual([]);
    const opened = await api("POST", `/v1/sessions/${id}/generations`, {});
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const listed = await api("GET", `/v1/sessions/${id}/generations`);
    expect(listed.body.generations.map((g: { id: string }) => g.id)).toEqual([opened.body.id]);
  });

  it("answers an unknown outcome when a rename's header change fails after its name was written", async () => {
    const id = await newSession();
    // The name's session_info entry is written; the header's change that follows fails.
    faults.add({ point: "statement", object: objectOf(id), matching: /SET header/ });
    const failed = await api("PATCH", `/v1/sessions/${id}`, { name: "renamed", metadata: { b: 2 } });
    expectUnavailable(failed, "unknown");
    expect(faults.injected.statement).toBeGreaterThan(0);
    expect((await entries(id)).map((entry) => entry.type)).toEqual(["session_info"]);
    expect((await api("GET", `/v1/sessions/${id}`)).body).toMatchObject({ name: "renamed", metadata: {} });
  });

  it("answers not_applied when a header change alone fails, writing nothing", async () => {
    const id = await newSession();
    faults.add({ point: "statement", object: objectOf(id), matching: /SET header/ });
    expectUnavailable(await api("PATCH", `/v1/sessions/${id}`, { metadata: { b: 2 } }), "not_applied");
    expect(await entries(id)).toEqual([]);
    expect((await api("GET", `/v1/sessions/${id}`)).body).toMatchObject({ metadata: {} });
  });

  it("answers session_full when the storage is full at the platform's limit, writing nothing", async () => {
    const id = await newSession();
    faults.add({ point: "statement", object: objectOf(id), error: "full" });
    const failed = await api("POST", `/v1/sessions/${id}/entries`, message("a", "no room"));
    expect(failed.status).toBe(507);
    expect(failed.body.error).toMatchObject({ code: "session_full", details: { reason: "platform_limit" } });
    expect(await entries(id)).toEqual([]);
  });
});

describe("an object reset after a commit, before it answers", () => {
  it("answers 503 with an unknown outcome; the client resends an append with its keys, and it is there once", async () => {
    const id = await newSession();
    faults.add({ point: "commit", object: objectOf(id) });
    const failed = await api("POST", `/v1/sessions/${id}/entries`, message("a", "maybe"));
    expectUnavailable(failed, "unknown");
    // The reset came before the write was durable: it is there at most once (here: not at all).
    expect((await entries(id)).filter((entry) => entry.id === "a").length).toBeLessThanOrEqual(1);
    faults.add({ point: "commit", object: objectOf(id) });
    const client = createClient({ baseUrl: BASE, token: KEY, fetch: service, retryDelayMs: 1 });
    await client.storage(id).appendEntries([message("a", "maybe")] as never);
    expect((await entries(id)).map((entry) => entry.id)).toEqual(["a"]);
  });

  it("is not resent for a compaction (not safe to repeat): it is there at most once", async () => {
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, { entries: [message("a", "one"), message("b", "two")] });
    faults.add({ point: "commit", object: objectOf(id) });
    const resets = faults.injected.commit ?? 0;
    const client = createClient({ baseUrl: BASE, token: KEY, fetch: service, retryDelayMs: 1 });
    const error = await client
      .storage(id)
      .compact({ summary: "once", keepRecentTokens: 0 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionError);
    expect((error as SessionError).code).toBe("unavailable");
    expect((faults.injected.commit ?? 0) - resets).toBe(1);
    expect((await entries(id)).filter((entry) => entry.type === "compaction").length).toBeLessThanOrEqual(1);
  });
});

describe("an answer lost after the write committed", () => {
  it("makes the client resend the append with the same keys: a replay, the entries there once", async () => {
    const id = await newSession();
    const network = losingAnswers(
      2,
      (request) => request.method === "POST" && request.url.endsWith("/entries"),
    );
    const client = createClient({ baseUrl: BASE, token: KEY, fetch: network, retryDelayMs: 1 });
    const result = await client
      .storage(id)
      .appendEntries([message("a", "one"), message("b", "two")] as never);
    expect(network.lost).toBe(2);
    // The third try was a replay of what the first wrote.
    expect(result.created).toBe(false);
    expect(result.entries.map((entry) => entry.seq)).toEqual([1, 2]);
    expect((await entries(id)).map((entry) => entry.id)).toEqual(["a", "b"]);
  });

  it("leaves a compaction whose answer was lost there once, unrepeated", async () => {
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, { entries: [message("a", "one"), message("b", "two")] });
    const network = losingAnswers(1, (request) => request.url.endsWith("/compact"));
    const client = createClient({ baseUrl: BASE, token: KEY, fetch: network, retryDelayMs: 1 });
    await expect(client.storage(id).compact({ summary: "once", keepRecentTokens: 0 })).rejects.toThrow(
      /cannot reach the service/,
    );
    expect((await entries(id)).filter((entry) => entry.type === "compaction").length).toBe(1);
  });
});

describe("a fork that fails part way", () => {
  /** A session of three entries to fork. */
  async function forkable(): Promise<string> {
    const source = await newSession();
    const batch = { entries: [message("a", "one"), message("b", "two"), message("c", "three")] };
    expect((await api("POST", `/v1/sessions/${source}/entries`, batch)).status).toBe(201);
    return source;
  }

  /** The forks the session `id` keeps its path for, as it copies (`fork_holds`, see fork-source.ts). */
  const holds = (id: string) =>
    runInDurableObject(stub(id), (_instance, state) =>
      state.storage.sql.exec<{ fork_id: string }>("SELECT fork_id FROM fork_holds").toArray(),
    );

  it("copies on when deleted before its copy is done, then waits for its purge without its alarm coming again and again", async () => {
    const source = await forkable();
    faults.env.FORK_COPY_PAGE_BYTES = "1";
    faults.env.FORK_COPY_PAUSE_MS = "3600000";
    const fork = `f-${newId()}`;
    expect((await api("POST", `/v1/sessions/${source}/fork`, { entryId: "c", id: fork })).status).toBe(201);
    expect((await api("DELETE", `/v1/sessions/${fork}`)).status).toBe(204);
    const copying = () =>
      runInDurableObject(
        stub(fork),
        (_instance, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM fork_copy").one().n,
      );
    for (let runs = 0; runs < 10 && (await copying()) > 0; runs++) await runDurableObjectAlarm(stub(fork));
    expect(await copying()).toBe(0);
    // Copied whole (restorable as any deleted session); the alarm's next work is its purge.
    await runDurableObjectAlarm(stub(fork));
    const at = await runInDurableObject(stub(fork), (_instance, state) => state.storage.getAlarm());
    expect((at ?? 0) - Date.now()).toBeGreaterThan(60_000);
  });

  it("is removed, and answers that nothing was applied, when copying its rows fails", async () => {
    const source = await forkable();
    // A page of the copy carries one entry: the source keeps the rest of the path for the fork.
    faults.env.FORK_COPY_PAGE_BYTES = "1";
    const fork = `f-${newId()}`;
    // The new session was created; writing the rows it copies fails (and rolls back).
    faults.add({ point: "statement", object: objectOf(fork), matching: /INTO entries/ });
    const failed = await api("POST", `/v1/sessions/${source}/fork`, { entryId: "c", id: fork });
    expectUnavailable(failed, "not_applied");
    expect((await api("GET", `/v1/sessions/${fork}`)).status).toBe(404);
    // Removed, the fork copies nothing: its source keeps nothing for it.
    expect(await holds(source)).toEqual([]);
  });

  it("is the answer when it failed after it was listed, and keeps its source's path: it copies whole", async () => {
    const source = await forkable();
    faults.env.FORK_COPY_PAGE_BYTES = "1";
    const fork = `f-${newId()}`;
    // Created (its alarm set for an incomplete session), its first page copied and listed, the
    // fork sets its alarm to report it and to copy the rest: both fail, so the fork's object
    // answers a failure (the report is made all the same).
    faults.add({ point: "setAlarm", object: objectOf(fork), skip: 1, times: 2 });
    const failures = faults.injected.setAlarm ?? 0;
    const made = await api("POST", `/v1/sessions/${source}/fork`, { entryId: "c", id: fork });
    expect((faults.injected.setAlarm ?? 0) - failures).toBe(2);
    // Listed, the fork cannot be removed by the request that made it: it is whole, and the answer.
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({ id: fork, parentSession: { id: source, entryId: "c" } });
    expect(await holds(source)).toEqual([{ fork_id: fork }]);
    // Its copy's alarm is set after all (not left for the day an unlisted session would wait), or
    // has run already (the runtime runs an alarm due by itself) and left nothing to copy.
    // While the alarm runs, none is set: looked at again until one is, or the copy is done.
    await vi.waitFor(
      async () => {
        const { alarm, copying } = await runInDurableObject(stub(fork), async (_instance, state) => ({
          alarm: await state.storage.getAlarm(),
          copying: state.storage.sql.exec("SELECT count(*) AS n FROM fork_copy").one().n as number,
        }));
        if (copying > 0) {
          expect(alarm).not.toBeNull();
          expect(alarm as number).toBeLessThan(Date.now() + 60_000);
        }
      },
      { timeout: 5_000, interval: 50 },
    );
    // A fork like any other, it reads its whole path from the source, which lets go once it is copied.
    const info = await api("GET", `/v1/sessions/${fork}`);
    expect(info.status).toBe(200);
    expect((await entries(fork)).map((entry) => entry.id)).toEqual(["a", "b", "c"]);
    expect(await listed()).toContain(fork);
    await vi.waitFor(async () => expect(await holds(source)).toEqual([]), { timeout: 5_000, interval: 50 });
  });

  it("copies nothing more once removed, while its purge waits for the directory", async () => {
    const source = await forkable();
    faults.env.FORK_COPY_PAGE_BYTES = "1";
    // A label set off the path forked: the fork writes it after its first page.
    const label = { type: "label", targetId: "a", label: "start" };
    expect((await api("POST", `/v1/sessions/${source}/entries`, label)).status).toBe(201);
    const fork = `f-${newId()}`;
    // Its first page is written, the label is not: the request removes the fork, and cannot tell
    // the directory yet.
    faults.add({ point: "statement", object: objectOf(fork), matching: /INTO entries/, skip: 1 });
    faults.directoryDown = true;
    const failed = await api("POST", `/v1/sessions/${source}/fork`, { entryId: "c", id: fork });
    expectUnavailable(failed, "not_applied");
    expect(await holds(source)).toEqual([]);
    // Its purge is due, but waits for the directory: the alarm asks it again after a backoff, not
    // at once and over and over.
    const alarm = await runInDurableObject(stub(fork), (_instance, state) => state.storage.getAlarm());
    expect(alarm as number).toBeGreaterThan(Date.now() + 1000);
    // Deleted, unlisted and owed to its directory, the fork asks its source for no page the source
    // no longer keeps: its alarm is its purge's.
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expect(await runDurableObjectAlarm(stub(fork))).toBe(true);
      const tasks = errors.mock.calls.map(([line]) => (JSON.parse(String(line)) as { task?: string }).task);
      expect(tasks).not.toContain("fork_copy");
    } finally {
      errors.mockRestore();
    }
    faults.directoryDown = false;
    await runDurableObjectAlarm(stub(fork));
    const gone = await runInDurableObject(stub(fork), (_instance, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'session'").toArray(),
    );
    expect(gone).toEqual([]);
    expect(await listed()).not.toContain(fork);
  });

  it("answers 503 unavailable, writing nothing, while the rest of its path cannot be copied", async () => {
    const source = await newSession();
    const path = Array.from({ length: 12 }, (_, n) => message(`m${n}`, `turn ${n}`));
    expect((await api("POST", `/v1/sessions/${source}/entries`, { entries: path })).status).toBe(201);
    // A page of the copy carries one entry, and only what needs the rest of the path copies it.
    faults.env.FORK_COPY_PAGE_BYTES = "1";
    faults.env.FORK_COPY_PAUSE_MS = "3600000";
    const fork = `f-${newId()}`;
    const made = await api("POST", `/v1/sessions/${source}/fork`, { entryId: "m11", id: fork });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    // Writing a page of the copy fails, and rolls back.
    faults.add({
      point: "statement",
      object: objectOf(fork),
      matching: /INTO entries/,
      times: Number.POSITIVE_INFINITY,
    });
    const { copying } = (await api("GET", `/v1/sessions/${fork}`)).body;
    expect(copying.copied).toBeLessThan(12);
    expectUnavailable(await api("GET", `/v1/sessions/${fork}/entries`), "not_applied");
    const under = { ...message("x", "under the root"), parentId: "m0" };
    expectUnavailable(await api("POST", `/v1/sessions/${fork}/entries`, under), "not_applied");
    // The source no longer keeps the path for the fork: it cannot be had either.
    faults.clear();
    await runInDurableObject(stub(source), (_instance, state) => {
      state.storage.sql.exec("DELETE FROM fork_holds");
    });
    expectUnavailable(await api("GET", `/v1/sessions/${fork}/entries`), "not_applied");
    expectUnavailable(await api("POST", `/v1/sessions/${fork}/entries`, under), "not_applied");
    const info = await api("GET", `/v1/sessions/${fork}`);
    expect(info.body).toMatchObject({ entryCount: 12, leafId: "m11" });
    expect(info.body.copying.copied).toBe(copying.copied);
  });

  it("answers that its outcome is unknown when it cannot be removed either", async () => {
    const source = await forkable();
    const fork = `f-${newId()}`;
    faults.add({ point: "statement", object: objectOf(fork), matching: /INTO entries/ });
    // Creating it writes its lifecycle once (let through); deleting it writes it again (fails).
    faults.add({
      point: "statement",
      object: objectOf(fork),
      matching: /INTO lifecycle/,
      skip: 1,
      times: Number.POSITIVE_INFINITY,
    });
    const failed = await api("POST", `/v1/sessions/${source}/fork`, { entryId: "c", id: fork });
    // The fork was left behind, unlisted: a client must not send it again blindly.
    expectUnavailable(failed, "unknown");
    faults.clear();
    expect(await listed()).not.toContain(fork);
    // Half written, it is found by no one: not read, not written, not deleted, not restored.
    expect((await api("GET", `/v1/sessions/${fork}`)).status).toBe(404);
    expect((await api("GET", `/v1/sessions/${fork}/entries`)).status).toBe(404);
    expect((await api("POST", `/v1/sessions/${fork}/entries`, message("x", "stranger"))).status).toBe(404);
    expect((await api("DELETE", `/v1/sessions/${fork}`)).status).toBe(404);
    expect((await api("POST", `/v1/sessions/${fork}/restore`)).status).toBe(404);
    // Sent again with its id, the fork replaces what was left: it is there once, whole.
    const again = await api("POST", `/v1/sessions/${source}/fork`, { entryId: "c", id: fork });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect((await entries(fork)).map((entry) => entry.id)).toEqual(["a", "b", "c"]);
    expect(await listed()).toContain(fork);
  });
});

describe("objects evicted", () => {
  it("between requests and during them, loses nothing acknowledged and rebuilds what it kept in memory", async () => {
    const id = await newSession();
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("a", "one"))).status).toBe(201);
    const context = (await api("GET", `/v1/sessions/${id}/context`)).body;
    await evictDurableObject(stub(id));
    expect((await api("GET", `/v1/sessions/${id}/context`)).body).toEqual(context);
    // During requests: evictions that drain them, and a reset of every object, while 20 writers append.
    const writes = Array.from({ length: 20 }, (_, i) =>
      api("POST", `/v1/sessions/${id}/entries`, message(`w${i}`, `writer ${i}`)),
    );
    await evictDurableObject(stub(id)).catch(() => undefined);
    await abortAllDurableObjects();
    const answers = await Promise.all(writes);
    const stored = new Map((await entries(id)).map((entry) => [entry.id, entry.seq]));
    answers.forEach((answer, i) => {
      if (answer.status === 201) expect(stored.get(`w${i}`)).toBe(answer.body.entries[0].seq);
      else expect(answer.status, JSON.stringify(answer.body)).toBe(503);
    });
    expect(stored.size).toBeGreaterThanOrEqual(1 + answers.filter((answer) => answer.status === 201).length);
  });
});

describe("an alarm that fails", () => {
  it("is run again by the runtime: the directory hears of the writes all the same", async () => {
    const id = await newSession();
    faults.add({ point: "alarm", object: objectOf(id), times: 1 });
    await api("POST", `/v1/sessions/${id}/entries`, message("a", "reported late"));
    await vi.waitFor(
      async () => {
        const res = await api("GET", "/v1/sessions?limit=200");
        const row = res.body.sessions.find((info: { id: string }) => info.id === id);
        expect(row?.entryCount).toBe(1);
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(faults.injected.alarm).toBeGreaterThanOrEqual(1);
  });

  it("stops an abandoned generation again once its writer stops for good, not over and over while it writes", async () => {
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, message("q", "a question"));
    const opened = await api("POST", `/v1/sessions/${id}/generations`, { abandonAfterSeconds: 2 });
    expect(opened.status).toBe(201);
    const chunk = (text: string) =>
      service(
        new Request(`${BASE}${opened.body.stream}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "text/plain" },
          body: text,
        }),
      );
    expect((await chunk("a")).status).toBe(204);
    // The writer is slow: the alarm's stop of the abandoned generation fails (its answer's write).
    const failures = faults.injected.statement ?? 0;
    faults.add({ point: "statement", object: objectOf(id), matching: /INSERT INTO entries/, times: 1 });
    await vi.waitFor(() => expect((faults.injected.statement ?? 0) - failures).toBe(1), {
      timeout: 10_000,
      interval: 50,
    });
    // It goes on writing, past the time the stop was to be tried again.
    const started = Date.now();
    let last = started;
    let sent = "a";
    while (Date.now() - started < 3_000) {
      expect((await chunk(".")).status).toBe(204);
      sent += ".";
      last = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    // The alarm waits for its next abandon time; a stale retry set it in the past, over and over.
    const alarm = await runInDurableObject(stub(id), (_instance, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThanOrEqual(last + 2_000 - 50);
    // Left for good, it is stopped, with all it wrote.
    const generation = `/v1/sessions/${id}/generations/${opened.body.id}`;
    await vi.waitFor(async () => expect((await api("GET", generation)).body.state).toBe("stopped"), {
      timeout: 10_000,
      interval: 100,
    });
    const answer = await api("GET", `/v1/sessions/${id}/entries/${opened.body.id}`);
    expect(answer.body.message).toMatchObject({
      stopReason: "aborted",
      content: [{ type: "text", text: sent }],
    });
  });

  it("stops an abandoned generation whose opening could not set the alarm, once its object starts again", async () => {
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, message("q", "a question"));
    // Nothing else due (the directory heard of the question): the generation is what sets the alarm.
    await vi.waitFor(
      async () => {
        await runDurableObjectAlarm(stub(id));
        expect(await runInDurableObject(stub(id), (_instance, state) => state.storage.getAlarm())).toBeNull();
      },
      { timeout: 10_000, interval: 100 },
    );
    // The generation's row is written, then setting the alarm for it fails.
    const failures = faults.injected.setAlarm ?? 0;
    faults.add({ point: "setAlarm", object: objectOf(id), times: 1 });
    const opened = await api("POST", `/v1/sessions/${id}/generations`, { abandonAfterSeconds: 1 });
    expect((faults.injected.setAlarm ?? 0) - failures).toBe(1);
    expect(opened.status, JSON.stringify(opened.body)).toBe(503);
    const listed = await api("GET", `/v1/sessions/${id}/generations`);
    const [left] = listed.body.generations;
    expect(left).toMatchObject({ state: "open" });
    // Its writer gave up. The object starts again (a restart, or an eviction), and stops it.
    await abortAllDurableObjects();
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(200);
    await vi.waitFor(
      async () =>
        expect((await api("GET", `/v1/sessions/${id}/generations/${left.id}`)).body).toMatchObject({
          state: "stopped",
          stoppedBy: "abandoned",
        }),
      { timeout: 10_000, interval: 100 },
    );
  });

  it("leaves an abandoned generation open while the quotas' settings do not parse, and stops it with its text after", async () => {
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, message("q", "a question"));
    const opened = await api("POST", `/v1/sessions/${id}/generations`, { abandonAfterSeconds: 1 });
    const text = "the answer, written before the settings broke";
    const appended = await service(
      new Request(`${BASE}${opened.body.stream}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "text/plain" },
        body: text,
      }),
    );
    expect(appended.status).toBe(204);
    faults.env.QUOTAS = "{not json";
    const generation = `/v1/sessions/${id}/generations/${opened.body.id}`;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await runDurableObjectAlarm(stub(id));
    // Its stop is refused (misconfigured) rather than written without the text it has no room for.
    const info = await runInDurableObject(stub(id), (instance) =>
      (
        instance as unknown as {
          getGeneration(id: string): Promise<{ ok: boolean; value?: { state: string } }>;
        }
      ).getGeneration(opened.body.id),
    );
    expect(info).toMatchObject({ ok: true, value: { state: "open" } });
    delete faults.env.QUOTAS;
    await vi.waitFor(async () => expect((await api("GET", generation)).body.state).toBe("stopped"), {
      timeout: 10_000,
      interval: 100,
    });
    const answer = await api("GET", `/v1/sessions/${id}/entries/${opened.body.id}`);
    expect(answer.body.message).toMatchObject({ stopReason: "aborted", content: [{ type: "text", text }] });
  });

  it("a purge whose storage fails under it comes back with its alarm and purges", async () => {
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, message("a", "to purge"));
    faults.add({ point: "deleteAll", object: objectOf(id), times: 1 });
    const failures = faults.injected.deleteAll ?? 0;
    const brief = withSettings({ RECOVERY_WINDOW_SECONDS: "0.2" });
    expect((await api("DELETE", `/v1/sessions/${id}`, undefined, brief)).status).toBe(204);
    const tables = () =>
      runInDurableObject(
        stub(id),
        (_instance, state) =>
          state.storage.sql
            .exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'")
            .one().n,
      );
    await vi.waitFor(async () => expect(await tables()).toBe(0), { timeout: 20_000, interval: 200 });
    expect((faults.injected.deleteAll ?? 0) - failures).toBe(1);
    expect((await api("POST", `/v1/sessions/${id}/restore`, {})).status).toBe(404);
  });
});

describe("a directory shard unreachable for a while", () => {
  it("lets sessions be written, deleted and restored; the listing answers 503 and then converges", async () => {
    const kept = await newSession();
    const gone = await newSession();
    const back = await newSession();
    expect((await api("DELETE", `/v1/sessions/${back}`)).status).toBe(204);
    faults.directoryDown = true;
    const created = `f-${newId()}`;
    expect((await api("POST", "/v1/sessions", { id: created })).status).toBe(201);
    expect((await api("POST", `/v1/sessions/${kept}/entries`, message("a", "written"))).status).toBe(201);
    expectUnavailable(await api("GET", "/v1/sessions"), "unknown");
    // The session changes at once; its directory is owed the news.
    expect((await api("DELETE", `/v1/sessions/${gone}`)).status).toBe(204);
    expect((await api("GET", `/v1/sessions/${gone}`)).status).toBe(404);
    expect((await api("POST", `/v1/sessions/${back}/restore`, {})).status).toBe(200);
    expect(faults.injected.directory).toBeGreaterThan(0);
    faults.directoryDown = false;
    // Each report that failed is tried again once its backoff is due; an object woken anew reports
    // at its first alarm, not knowing what its directory heard.
    for (const id of [kept, gone, back, created]) {
      await evictDurableObject(stub(id));
      await runDurableObjectAlarm(stub(id));
    }
    const now = await listed();
    expect(now).toEqual(expect.arrayContaining([kept, back, created]));
    expect(now).not.toContain(gone);
    const row = (await api("GET", "/v1/sessions?limit=200")).body.sessions.find(
      (info: any) => info.id === kept,
    );
    expect(row.entryCount).toBe(1);
  });

  it("refuses a write that needs room from the tenant's quota ledger there, and writes nothing", async () => {
    faults.env.QUOTAS = JSON.stringify({ maxTenantBytes: 100_000_000 });
    const id = await newSession();
    faults.directoryDown = true;
    const refused = await api("POST", `/v1/sessions/${id}/entries`, message("a", "x".repeat(1000)));
    expectUnavailable(refused, "not_applied");
    expect(refused.body.error.message).toMatch(/quota ledger cannot be reached/);
    faults.directoryDown = false;
    expect(await entries(id)).toEqual([]);
  });

  it("keeps no deleted session listed when an import that fails takes its id before its directory heard of the deletion", async () => {
    const id = await newSession();
    faults.directoryDown = true;
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    // Its id is not taken while its directory cannot hear of the deletion.
    const taken = await api("POST", "/v1/sessions", { id, name: "again" });
    expectUnavailable(taken, "not_applied");
    expect(taken.body.error.message).toMatch(/directory cannot be told/);
    expect((await api("POST", `/v1/sessions/${id}/restore`, {})).status).toBe(200);
    expect((await api("GET", `/v1/sessions/${id}`)).body.name).toBeUndefined();
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    faults.directoryDown = false;
    // The shard is back, but the deleted session's alarm has not told it yet: an import takes the
    // id and fails on its second entry.
    const lines = [
      { type: "export", format: "cf-tenant", version: 1, cursor: null },
      {
        type: "session",
        format: "cf-session",
        version: 1,
        id,
        createdAt: new Date().toISOString(),
        metadata: {},
      },
      { ...message("a", "kept?"), parentId: null, timestamp: new Date().toISOString() },
      { type: "message", id: "b", parentId: "a" },
      { type: "cursor", cursor: "c" },
      { type: "end", sessions: 1 },
    ];
    const imported = await service(
      new Request(`${BASE}/v1/import`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/x-ndjson" },
        body: lines.map((line) => JSON.stringify(line)).join("\n"),
      }),
    );
    expect(imported.status).toBe(200);
    expect((await imported.json<{ sessions: unknown[] }>()).sessions).toMatchObject([
      { id, status: "failed" },
    ]);
    await runDurableObjectAlarm(stub(id));
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
    expect(await listed()).not.toContain(id);
  });
});

describe("a session object that stops after a change is stored, before it tells other objects", () => {
  /**
   * Runs `change` while the call to the directory shard named by `held` waits: by then the change
   * is stored (a call leaves the object only once what it wrote is), and the object is reset
   * before it tells its directory anything more, as when its machine stops.
   */
  async function stopWhile(id: string, held: RegExp, change: () => Promise<Answer>): Promise<void> {
    const hold = { released: false };
    faults.add({ point: "directory", matching: held, hold });
    const asked = faults.injected.directory ?? 0;
    const changing = change();
    await vi.waitFor(() => expect(faults.injected.directory).toBe(asked + 1), {
      timeout: 5_000,
      interval: 20,
    });
    await runInDurableObject(stub(id), (_instance, state) => state.abort("reset")).catch(() => undefined);
    hold.released = true;
    // Cut short by the reset (not a call of another session's that was held).
    expect((await changing).status).toBeGreaterThanOrEqual(500);
  }

  /**
   * Waits until `settled` holds: the session's alarm is run when it comes within seconds (it may
   * also come by itself meanwhile); one that comes only when the recovery window closes, or none,
   * leaves it unsettled.
   */
  async function settlesByAlarm(id: string, settled: () => Promise<void>): Promise<void> {
    const wait = await alarmIn(id);
    if (wait !== undefined && wait <= 10_000) await runDurableObjectAlarm(stub(id));
    await vi.waitFor(settled, { timeout: 10_000, interval: 100 });
  }

  /** While the directory shard is told of the session (`put` waits), its alarm is set to come within seconds. */
  async function alarmSetWhileListing(id: string, listing: () => Promise<Answer>): Promise<void> {
    // Other sessions' reports come a while after their writes (not at once, this pool's setting),
    // so that the call held is this session's.
    faults.env.DIRECTORY_SYNC_MS = "5000";
    const hold = { released: false };
    faults.add({ point: "directory", object: shardObjectOf(id), matching: /^put$/, hold });
    const asked = faults.injected.directory ?? 0;
    const answer = listing();
    await vi.waitFor(() => expect(faults.injected.directory).toBe(asked + 1), {
      timeout: 5_000,
      interval: 20,
    });
    expect(await alarmIn(id)).toBeLessThanOrEqual(10_000);
    hold.released = true;
    expect((await answer).status).toBeLessThan(300);
    expect(await listed()).toContain(id);
  }

  it("has its alarm set before the directory is told of a new session", async () => {
    const id = `s-${newId()}`;
    await alarmSetWhileListing(id, () => api("POST", "/v1/sessions", { id }));
  });

  it("takes a deleted session out of the listing by its alarm", async () => {
    const id = await newSession();
    // A delete gives the session's room back to the tenant's ledger, then tells its directory.
    await stopWhile(id, /^releaseQuota$/, () => api("DELETE", `/v1/sessions/${id}`));
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
    // Its alarm comes within seconds (not when its recovery window closes) and tells the directory.
    await settlesByAlarm(id, async () => expect(await listed()).not.toContain(id));
    // Restorable all the same, and listed again once restored.
    expect((await api("POST", `/v1/sessions/${id}/restore`)).status).toBe(200);
    expect(await listed()).toContain(id);
  });

  it("purges a deleted session by its alarm within seconds, not when its recovery window would have closed", async () => {
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, message("a", "one"));
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    // Its alarm has run since: the next one is set for when its recovery window closes.
    await runDurableObjectAlarm(stub(id));
    expect(await alarmIn(id)).toBeGreaterThan(60_000);
    // A purge closes the recovery window, then gives the session's room back to the tenant's ledger.
    await stopWhile(id, /^releaseQuota$/, () => api("DELETE", `/v1/sessions/${id}?purge=true`));
    await settlesByAlarm(id, async () => expect(await entriesTables(id)).toBe(0));
    expect((await api("POST", `/v1/sessions/${id}/restore`)).status).toBe(404);
  });

  it("tries a purge its tenant's ledger keeps refusing later each time, up to a minute apart", async () => {
    faults.env.QUOTAS = JSON.stringify({ maxSessions: 10_000 });
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, message("a", "one"));
    faults.add({ point: "directory", matching: /^releaseQuota$/, times: Number.POSITIVE_INFINITY });
    await api("DELETE", `/v1/sessions/${id}?purge=true`);
    const waits: number[] = [];
    for (let run = 0; run < 7; run++) {
      await runDurableObjectAlarm(stub(id));
      waits.push((await alarmIn(id)) ?? 0);
    }
    expect(waits.at(-1)).toBeGreaterThan(30_000);
  });

  /**
   * Leaves the session as an object stopped before its alarm was set for the news it owes its
   * directory: the alarm is cleared, the object stopped; `stuck` checks the listing is still wrong.
   */
  async function withoutAlarm(id: string, stuck: () => Promise<void>): Promise<void> {
    await runInDurableObject(stub(id), (_instance, state) => state.storage.deleteAlarm());
    await runInDurableObject(stub(id), (_instance, state) => state.abort("reset")).catch(() => undefined);
    await stuck();
  }

  it("takes a deleted session out of the listing once it wakes, though no alarm was set for it", async () => {
    const id = await newSession();
    await stopWhile(id, /^releaseQuota$/, () => api("DELETE", `/v1/sessions/${id}`));
    await withoutAlarm(id, async () => expect(await listed()).toContain(id));
    // Asked for, it wakes: its alarm comes within seconds and tells the directory.
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
    await settlesByAlarm(id, async () => expect(await listed()).not.toContain(id));
  });

  it("lists a restored session again once it wakes, though no alarm was set for it", async () => {
    const id = await newSession();
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    await stopWhile(id, /^unbury$/, () => api("POST", `/v1/sessions/${id}/restore`));
    await withoutAlarm(id, async () => expect(await listed()).not.toContain(id));
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(200);
    await settlesByAlarm(id, async () => expect(await listed()).toContain(id));
  });

  it("lists a restored session again by its alarm", async () => {
    const id = await newSession();
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    // A restore lets the directory list the session again, then lists it.
    await stopWhile(id, /^unbury$/, () => api("POST", `/v1/sessions/${id}/restore`));
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(200);
    await settlesByAlarm(id, async () => expect(await listed()).toContain(id));
  });
});

describe("a session's lifecycle news, told to its directory in the order it happened", () => {
  /** Holds the next call `method` to the session's own directory shard; `reached` once it waits. */
  function holdShard(id: string, method: RegExp) {
    const hold = { released: false };
    faults.add({ point: "directory", object: shardObjectOf(id), matching: method, hold });
    const asked = faults.injected.directory ?? 0;
    const reached = () =>
      vi.waitFor(() => expect(faults.injected.directory).toBe(asked + 1), { timeout: 5_000, interval: 10 });
    return { hold, reached };
  }

  /**
   * Lets a change made while another's news is out go as far as it goes before that news arrives:
   * to its answer, or to where it waits for the news before it (a second at most).
   */
  const asFarAsItGoes = (change: Promise<Answer>) =>
    Promise.race([change, new Promise((resolve) => setTimeout(resolve, 1_000))]);

  it("answers a delete done though its alarm could not be set after, and purges it when its window closes", async () => {
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, message("a", "one"));
    await vi.waitFor(async () => expect(await alarmIn(id)).toBeUndefined(), { timeout: 5_000, interval: 50 });
    // The delete sets its alarm before its change, then for the purge once the directory is told.
    faults.add({ point: "setAlarm", object: objectOf(id), skip: 1 });
    const deleted = await api(
      "DELETE",
      `/v1/sessions/${id}`,
      undefined,
      withSettings({ RECOVERY_WINDOW_SECONDS: "1" }),
    );
    expect(faults.injected.setAlarm).toBeGreaterThan(0);
    expect(deleted.status).toBe(204);
    expect(await listed()).not.toContain(id);
    // The alarm set first stands: it comes, and the purge's follows once the window closes.
    await vi.waitFor(
      async () => {
        const wait = await alarmIn(id);
        if (wait !== undefined && wait <= 5_000) await runDurableObjectAlarm(stub(id));
        expect(await entriesTables(id)).toBe(0);
      },
      { timeout: 10_000, interval: 200 },
    );
  });

  it("keeps a session deleted while its restore's news was out of the listing, and purges it", async () => {
    const id = await newSession();
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    const { hold, reached } = holdShard(id, /^unbury$/);
    const restoring = api("POST", `/v1/sessions/${id}/restore`);
    await reached();
    const deleting = api("DELETE", `/v1/sessions/${id}`);
    await asFarAsItGoes(deleting);
    hold.released = true;
    expect((await restoring).status).toBe(200);
    expect((await deleting).status).toBe(204);
    expect(await listed()).not.toContain(id);
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
    expect(await listed()).not.toContain(id);
  });

  it("lists a session restored while its delete's news was out", async () => {
    const id = await newSession();
    const { hold, reached } = holdShard(id, /^remove$/);
    const deleting = api("DELETE", `/v1/sessions/${id}`);
    await reached();
    const restoring = api("POST", `/v1/sessions/${id}/restore`);
    await asFarAsItGoes(restoring);
    hold.released = true;
    expect((await deleting).status).toBe(204);
    expect((await restoring).status).toBe(200);
    expect(await listed()).toContain(id);
    // Its reports are taken after, as any session's.
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("a", "after"))).status).toBe(201);
    await runDurableObjectAlarm(stub(id));
    expect(await listed()).toContain(id);
  });

  it("leaves no alarm coming again and again for a session purged while its restore's news was out", async () => {
    const id = await newSession();
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    const { hold, reached } = holdShard(id, /^unbury$/);
    const restoring = api("POST", `/v1/sessions/${id}/restore`);
    await reached();
    const purging = api("DELETE", `/v1/sessions/${id}?purge=true`);
    await asFarAsItGoes(purging);
    hold.released = true;
    expect((await purging).status).toBe(204);
    expect([200, 404]).toContain((await restoring).status);
    await vi.waitFor(async () => expect(await entriesTables(id)).toBe(0), { timeout: 5_000, interval: 50 });
    // Gone, the object has nothing for its alarm: none stays set (it would come and find nothing).
    await vi.waitFor(async () => expect(await alarmIn(id)).toBeUndefined(), { timeout: 5_000, interval: 50 });
    const runs = await runInDurableObject(stub(id), async (instance) => {
      let count = 0;
      const object = instance as unknown as { alarm: () => Promise<void> };
      const alarm = object.alarm.bind(object);
      object.alarm = () => {
        count++;
        return alarm();
      };
      await new Promise((resolve) => setTimeout(resolve, 500));
      return count;
    });
    expect(runs).toBe(0);
    expect(await listed()).not.toContain(id);
  });

  it("keeps a fork's path at its source while whether the fork is listed cannot be known", async () => {
    const source = await newSession();
    const batch = { entries: [message("a", "one"), message("b", "two"), message("c", "three")] };
    expect((await api("POST", `/v1/sessions/${source}/entries`, batch)).status).toBe(201);
    faults.env.FORK_COPY_PAGE_BYTES = "1";
    faults.env.FORK_COPY_PAUSE_MS = "3600000";
    const fork = `f-${newId()}`;
    // The fork's alarm after it lists itself fails, and so does the call asking whether it is listed.
    faults.add({ point: "setAlarm", object: objectOf(fork), skip: 1, times: 3 });
    const made = await api("POST", `/v1/sessions/${source}/fork`, { entryId: "c", id: fork });
    expect(made.status).toBe(503);
    expect(made.body.error.details.outcome).toBe("unknown");
    // Listed and copying, it reads its whole path: the source kept it.
    expect(await listed()).toContain(fork);
    const read = await api("GET", `/v1/sessions/${fork}/entries`);
    expect(read.status).toBe(200);
    expect(read.body.entries.map((entry: { id: string }) => entry.id)).toEqual(["a", "b", "c"]);
  });
});

describe("a directory shard that cannot ask for the tenant's retention", () => {
  it("asks again from its alarm, even once restarted, and then sweeps with it", async () => {
    const tenant = `retention-${newId()}`;
    const shard = (index: number) => directoryShard(env as unknown as DurableEnv, tenant, index);
    await shard(0).setRetention({ idleDays: 5 }, tenant, 0);
    // Shard 2 first hears of the tenant (a session idle for long) while shard 0 cannot answer.
    faults.add({ point: "directory", object: shard(0).id.toString(), matching: /^retention$/ });
    const id = `r-${newId()}`;
    const long = "2020-01-01T00:00:00.000Z";
    await shard(2).put({
      info: {
        id,
        metadata: {},
        createdAt: long,
        updatedAt: long,
        leafId: null,
        entryCount: 0,
        messageCount: 0,
        bytes: 0,
      },
      incarnation: "i",
      version: 1,
      tenant,
      shard: 2,
    });
    expect(faults.injected.directory).toBeGreaterThan(0);
    await evictDurableObject(shard(2));
    expect(await runDurableObjectAlarm(shard(2))).toBe(true);
    expect(await shard(2).retention()).toEqual({ idleDays: 5 });
    // Swept at once with it: the session (which its shard alone knows of) is no longer listed.
    expect(
      ((await shard(2).list({})) as { ok: true; value: { sessions: unknown[] } }).value.sessions,
    ).toEqual([]);
    expect(await runInDurableObject(shard(2), (_instance, state) => state.storage.getAlarm())).not.toBeNull();
  });
});

describe("a tenant's ledgers unreachable when a session is purged", () => {
  const ledger = () => directoryShard(env as unknown as DurableEnv, TENANT, 0);
  /** What the tenant's ledgers hold for the session: its quota claim, its blob claims. */
  /**
   * The session's claims in the ledger, read again when the read meets the shard reset by an
   * injected fault (the session's alarm may try its release at the same moment).
   */
  const claims = async (id: string): Promise<{ quota: number; blobs: number }> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await runInDurableObject(ledger(), (_instance, state) => ({
          quota: state.storage.sql
            .exec<{ n: number }>("SELECT count(*) AS n FROM quota_claims WHERE session_id = ?", id)
            .one().n,
          blobs: state.storage.sql
            .exec<{ n: number }>("SELECT count(*) AS n FROM blob_owners WHERE owner LIKE ?", `${id}\n%`)
            .one().n,
        }));
      } catch (error) {
        if (attempt >= 5 || !String(error).includes("injected fault")) throw error;
      }
    }
  };
  const tables = (id: string) =>
    runInDurableObject(
      stub(id),
      (_instance, state) =>
        state.storage.sql
          .exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'")
          .one().n,
    );

  it("keeps the session's storage until its quota claim is given up, then purges it", async () => {
    const quotas = JSON.stringify({ maxTenantBytes: 100_000_000 });
    faults.env.QUOTAS = quotas;
    const id = await newSession();
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("a", "to purge"))).status).toBe(201);
    expect(await claims(id)).toEqual({ quota: 1, blobs: 0 });
    faults.add({ point: "directory", matching: /^releaseQuota$/, times: Number.POSITIVE_INFINITY });
    const failures = faults.injected.directory ?? 0;
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
    expect((faults.injected.directory ?? 0) - failures).toBeGreaterThanOrEqual(1);
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
    expect(await tables(id)).toBeGreaterThan(0);
    expect(await claims(id)).toEqual({ quota: 1, blobs: 0 });
    // The ledger answers again; the alarm comes back: the claim is given up, then the storage goes.
    faults.clear();
    faults.env.QUOTAS = quotas;
    await runDurableObjectAlarm(stub(id));
    await vi.waitFor(async () => expect(await tables(id)).toBe(0), { timeout: 20_000, interval: 200 });
    expect(await claims(id)).toEqual({ quota: 0, blobs: 0 });
    expect((await api("POST", `/v1/sessions/${id}/restore`, {})).status).toBe(404);
  });

  it("keeps the session's storage until its blob claims are given up, with no bucket bound, then purges it", async () => {
    const id = await newSession();
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("a", "to purge"))).status).toBe(201);
    // As a session holds a blob it stored while a bucket was bound (this service has none now).
    const key = `v1/tenant-key/b64/${"ab".repeat(32)}`;
    const owner = await runInDurableObject(stub(id), (_instance, state) => {
      state.storage.sql.exec(
        "INSERT INTO session_blobs (ref, json_bytes) VALUES (?, 100)",
        `\u0000blob:b64:${"ab".repeat(32)}`,
      );
      const { incarnation } = state.storage.sql
        .exec<{ incarnation: string }>("SELECT incarnation FROM session")
        .one();
      return `${id}\n${incarnation}`;
    });
    await runInDurableObject(ledger(), (_instance, state) => {
      state.storage.sql.exec("INSERT INTO blobs (key, json_bytes, state) VALUES (?, 100, 'stored')", key);
      state.storage.sql.exec("INSERT INTO blob_owners (key, owner) VALUES (?, ?)", key, owner);
    });
    await evictDurableObject(stub(id));
    faults.add({ point: "directory", matching: /^releaseBlobs$/, times: Number.POSITIVE_INFINITY });
    const failures = faults.injected.directory ?? 0;
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`)).status).toBe(204);
    expect((faults.injected.directory ?? 0) - failures).toBeGreaterThanOrEqual(1);
    expect(await tables(id)).toBeGreaterThan(0);
    expect(await claims(id)).toEqual({ quota: 0, blobs: 1 });
    faults.clear();
    await runDurableObjectAlarm(stub(id));
    await vi.waitFor(async () => expect(await tables(id)).toBe(0), { timeout: 20_000, interval: 200 });
    expect(await claims(id)).toEqual({ quota: 0, blobs: 0 });
    // No session holds the blob: marked to be deleted once a bucket is bound again.
    const state = await runInDurableObject(ledger(), (_instance, ledgerState) =>
      ledgerState.storage.sql.exec<{ state: string }>("SELECT state FROM blobs WHERE key = ?", key).one(),
    );
    expect(state).toEqual({ state: "deleting" });
  });
});

describe("a report to the directory answered late", () => {
  it("hands back to the tenant's ledger no room a write took while it was out", async () => {
    faults.env.QUOTAS = JSON.stringify({ maxTenantBytes: 100_000_000 });
    // Reports come only when a test runs the alarm.
    faults.env.DIRECTORY_SYNC_MS = "3600000";
    const id = await newSession();
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("a", "x".repeat(1000)))).status).toBe(
      201,
    );
    const hold = { released: false };
    faults.add({ point: "directory", matching: /^put$/, hold });
    const held = faults.injected.directory ?? 0;
    // Woken anew, the object reports at its first alarm (it does not know what its directory heard).
    await evictDurableObject(stub(id));
    const report = runDurableObjectAlarm(stub(id));
    await vi.waitFor(() => expect(faults.injected.directory ?? 0).toBe(held + 1), { timeout: 5000 });
    // Written while the report is out.
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("b", "y".repeat(5000)))).status).toBe(
      201,
    );
    hold.released = true;
    expect(await report).toBe(true);
    const holds = await runInDurableObject(stub(id), (_instance, state) => {
      const { stats } = state.storage.sql.exec<{ stats: string }>("SELECT stats FROM session").one();
      return (JSON.parse(stats) as { bytes: number }).bytes;
    });
    const claimed = await runInDurableObject(
      directoryShard(env as unknown as DurableEnv, TENANT, 0),
      (_instance, state) =>
        state.storage.sql
          .exec<{ bytes: number }>("SELECT bytes FROM quota_claims WHERE session_id = ?", id)
          .one().bytes,
    );
    expect(holds).toBeGreaterThan(6000);
    expect(claimed).toBe(holds);
  });
});

describe("a summarizer that times out in the middle of a compaction", () => {
  const held = (key: string) => ({
    SUMMARIZER_BASE_URL: `${env.FAKE_LLM_URL}/v1`,
    SUMMARIZER_MODEL: `hold:${key}`,
    SUMMARIZER_TIMEOUT_MS: "300",
  });

  it("answers 502 summarizer_failed and writes nothing, while writes go on meanwhile", async () => {
    const id = await newSession();
    await api("POST", `/v1/sessions/${id}/entries`, { entries: [message("a", "one"), message("b", "two")] });
    const compacting = api(
      "POST",
      `/v1/sessions/${id}/compact`,
      { keepRecentTokens: 0 },
      withSettings(held(id)),
    );
    expect((await api("POST", `/v1/sessions/${id}/entries`, message("c", "meanwhile"))).status).toBe(201);
    const failed = await compacting;
    expect(failed.status).toBe(502);
    expect(failed.body.error.code).toBe("summarizer_failed");
    expect((await entries(id)).map((entry) => entry.type)).toEqual(["message", "message", "message"]);
  });

  it("fails an automatic compaction, which runs again after the next write and writes once", async () => {
    const id = await newSession();
    Object.assign(faults.env, held(`auto-${id}`));
    const settings = { contextWindow: 2000, reserveTokens: 500, keepRecentTokens: 100 };
    expect((await api("PATCH", `/v1/sessions/${id}`, { autoCompact: settings })).status).toBe(200);
    const long = Array.from({ length: 12 }, (_, i) =>
      message(`m${i}`, `message ${i} ${"word ".repeat(150)}`),
    );
    await api("POST", `/v1/sessions/${id}/entries`, { entries: long });
    await vi.waitFor(
      async () =>
        expect((await api("GET", `/v1/sessions/${id}`)).body.autoCompact.status.state).toBe("failed"),
      { timeout: 10_000, interval: 100 },
    );
    expect((await entries(id)).some((entry) => entry.type === "compaction")).toBe(false);
    faults.env.SUMMARIZER_MODEL = "ok";
    await api("POST", `/v1/sessions/${id}/entries`, message("n", "next"));
    await vi.waitFor(
      async () => expect((await api("GET", `/v1/sessions/${id}`)).body.autoCompact.status.state).toBe("idle"),
      { timeout: 10_000, interval: 100 },
    );
    expect((await entries(id)).filter((entry) => entry.type === "compaction").length).toBe(1);
  });
});

describe("a stream fork whose create fails part way", () => {
  const streams = () => env.STREAMS as NonNullable<DurableEnv["STREAMS"]>;
  const streamStub = (key: string) => streams().getByName(streamObjectName(TENANT, key));
  const streamObject = (key: string) => streams().idFromName(streamObjectName(TENANT, key)).toString();

  /** A request for tenant A's stream `key`; the body of an error answer read as JSON. */
  async function streamCall(
    method: string,
    key: string,
    headers: Record<string, string> = {},
    body?: string,
  ): Promise<Answer> {
    const res = await service(
      new Request(`${BASE}/v1/stream/${key}`, {
        method,
        headers: { Authorization: `Bearer ${KEY}`, ...headers },
        body,
      }),
    );
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: res.ok || !text ? text : JSON.parse(text) };
  }

  async function forkable(): Promise<string> {
    const source = `fs-${newId()}`;
    expect((await streamCall("PUT", source, { "Content-Type": "text/plain" }, "shared")).status).toBe(201);
    return source;
  }

  const forkOf = (source: string) => ({ "Stream-Forked-From": `/v1/stream/${source}` });

  /** The source, deleted, counts no fork: it is removed, its object keeping no stream. */
  async function removed(source: string): Promise<void> {
    expect((await streamCall("HEAD", source)).status).toBe(404);
    const kept = await runInDurableObject(streamStub(source), (_instance, state) =>
      Number(state.storage.sql.exec("SELECT count(*) AS n FROM streams").one().n),
    );
    expect(kept).toBe(0);
  }

  it("gives its count back to a source whose answer was lost after it counted the fork", async () => {
    const source = await forkable();
    const fork = `ff-${newId()}`;
    faults.add({ point: "answer", object: streamObject(source) });
    expectUnavailable(await streamCall("PUT", fork, forkOf(source)), "unknown");
    expect((await streamCall("HEAD", fork)).status).toBe(404);
    expect((await streamCall("DELETE", source)).status).toBe(204);
    await removed(source);
  });

  it("answers its create's own error when its source cannot hear at once, and its alarm tells it after", async () => {
    const source = await forkable();
    const fork = `ff-${newId()}`;
    // Writing the fork fails (its storage is full); counting it off fails once on the source.
    faults.add({
      point: "statement",
      object: streamObject(fork),
      matching: /INSERT INTO streams /,
      error: "full",
    });
    faults.add({ point: "statement", object: streamObject(source), matching: /SET forks = max/ });
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const failed = await streamCall("PUT", fork, forkOf(source));
      expect(failed.body.error.code, JSON.stringify(failed.body)).toBe("session_full");
      const tasks = errors.mock.calls.map(([line]) => (JSON.parse(String(line)) as { task?: string }).task);
      expect(tasks).toContain("stream_fork_release");
    } finally {
      errors.mockRestore();
    }
    expect((await streamCall("HEAD", fork)).status).toBe(404);
    // Still counted, the source is kept for the fork once deleted, until the fork's alarm tells it.
    expect((await streamCall("DELETE", source)).status).toBe(204);
    expect((await streamCall("HEAD", source)).status).toBe(410);
    expect(await runDurableObjectAlarm(streamStub(fork))).toBe(true);
    await removed(source);
  });

  it("asks its source nothing, and answers not_applied, when the alarm that would give its count back cannot be set", async () => {
    const source = await forkable();
    const fork = `ff-${newId()}`;
    faults.add({ point: "setAlarm", object: streamObject(fork), times: Number.POSITIVE_INFINITY });
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expectUnavailable(await streamCall("PUT", fork, forkOf(source)), "not_applied");
    } finally {
      errors.mockRestore();
    }
    faults.clear();
    expect((await streamCall("HEAD", fork)).status).toBe(404);
    const releases = await runInDurableObject(streamStub(fork), (_instance, state) =>
      state.storage.sql.exec("SELECT * FROM stream_releases").toArray(),
    );
    expect(releases).toEqual([]);
    // Counted by no fork, the source goes with its delete.
    expect((await streamCall("DELETE", source)).status).toBe(204);
    await removed(source);
  });

  it("gives its count back by its alarm when its object is reset while it waits for room", async () => {
    // The fork's object asks the tenant's quota ledger to admit it, after its source counted it.
    faults.env.QUOTAS = JSON.stringify({ maxStreams: 100 });
    const source = await forkable();
    const fork = `ff-${newId()}`;
    const hold = { released: false };
    faults.add({ point: "directory", matching: /^claimQuota$/, hold });
    const asked = faults.injected.directory ?? 0;
    const creating = streamCall("PUT", fork, forkOf(source));
    await vi.waitFor(() => expect(faults.injected.directory).toBe(asked + 1), {
      timeout: 5_000,
      interval: 20,
    });
    await runInDurableObject(streamStub(fork), (_instance, state) => state.abort("reset")).catch(
      () => undefined,
    );
    hold.released = true;
    expect((await creating).status).not.toBe(201);
    expect((await streamCall("HEAD", fork)).status).toBe(404);
    expect((await streamCall("DELETE", source)).status).toBe(204);
    await runDurableObjectAlarm(streamStub(fork));
    await removed(source);
  });
});

it("injects nothing unless a test asks: the plan is empty between tests", () => {
  expect(INJECTED_IO_ERROR).toMatch(/SQLITE_IOERR/);
  expect(faults.strikes("statement", "any")).toBe(false);
});
