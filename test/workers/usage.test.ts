import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { SessionInfo } from "../../src/core/session-schemas";
import { DEFAULT_OPEN_GENERATIONS, sessionObjectName } from "../../src/durable/internal";
import { rollBackDirectory } from "./directory-rollback";
import { api, expectError, KEY_A, KEY_A_READ, sid, userMessage } from "./helpers";

/** A tenant of its own (vitest.workers.config.ts), so its usage is exactly what this file writes. */
const KEY = "key-usage";

async function usage(key = KEY) {
  const res = await api("GET", "/v1/usage", { key });
  expect(res.status, res.text).toBe(200);
  return res.body as { sessions: number; entries: number; bytes: number; quotas: Record<string, number> };
}

async function infoOf(id: string, key = KEY): Promise<SessionInfo> {
  const res = await api("GET", `/v1/sessions/${id}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** Usage shows writes once their sessions have reported to the directory (DIRECTORY_SYNC_MS). */
async function expectUsage(infos: SessionInfo[]) {
  const expected = {
    sessions: infos.length,
    entries: infos.reduce((n, info) => n + info.entryCount, 0),
    bytes: infos.reduce((n, info) => n + info.bytes, 0),
  };
  await vi.waitFor(async () => expect(await usage()).toMatchObject(expected), {
    timeout: 10_000,
    interval: 25,
  });
}

async function create(entries: unknown[]): Promise<string> {
  const id = sid();
  expect((await api("POST", "/v1/sessions", { key: KEY, body: { id } })).status).toBe(201);
  if (entries.length > 0) {
    const res = await api("POST", `/v1/sessions/${id}/entries`, { key: KEY, body: { entries } });
    expect(res.status, res.text).toBe(201);
  }
  return id;
}

describe("GET /v1/usage", () => {
  it("sums the tenant's sessions, entries and bytes through appends, forks, imports and deletes", async () => {
    expect(await usage()).toEqual({
      sessions: 0,
      entries: 0,
      bytes: 0,
      streams: { streams: 0, bytes: 0 },
      blobs: { blobs: 0, bytes: 0 },
      quotas: { maxOpenGenerations: DEFAULT_OPEN_GENERATIONS },
    });
    const a = await create([userMessage("one"), userMessage("two"), userMessage("three ✓")]);
    const b = await create([userMessage("b".repeat(2000))]);
    await expectUsage([await infoOf(a), await infoOf(b)]);

    await api("POST", `/v1/sessions/${a}/entries`, { key: KEY, body: userMessage("four") });
    await expectUsage([await infoOf(a), await infoOf(b)]);

    const path = (await api("GET", `/v1/sessions/${a}/branch`, { key: KEY })).body.entries;
    const forked = await api("POST", `/v1/sessions/${a}/fork`, { key: KEY, body: { entryId: path[1].id } });
    expect(forked.status).toBe(201);
    expect(forked.body.entryCount).toBe(2);
    await expectUsage([await infoOf(a), await infoOf(b), forked.body]);

    const file = (await api("GET", `/v1/sessions/${a}/export`, { key: KEY })).text;
    const copyId = sid("copy");
    const imported = await api("POST", `/v1/sessions/import?id=${copyId}`, {
      key: KEY,
      raw: file,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expect(imported.status, imported.text).toBe(201);
    // The copy stores what the source stores, leaf records and all; its header differs by its id.
    expect(imported.body.bytes - copyId.length).toBe((await infoOf(a)).bytes - a.length);
    await expectUsage([await infoOf(a), await infoOf(b), forked.body, imported.body]);

    expect((await api("DELETE", `/v1/sessions/${a}`, { key: KEY })).status).toBe(204);
    await expectUsage([await infoOf(b), forked.body, imported.body]);
    for (const id of [b, forked.body.id, imported.body.id])
      await api("DELETE", `/v1/sessions/${id}`, { key: KEY });
    await expectUsage([]);
  });

  it("answers for the caller's tenant only, to read-only credentials too, and never without one", async () => {
    await create([userMessage("another tenant's")]);
    expect(await usage(KEY_A)).toEqual({
      sessions: 0,
      entries: 0,
      bytes: 0,
      streams: { streams: 0, bytes: 0 },
      blobs: { blobs: 0, bytes: 0 },
      quotas: { maxOpenGenerations: DEFAULT_OPEN_GENERATIONS },
    });
    expect((await usage(KEY_A_READ)).sessions).toBe(0);
    expectError(await api("GET", "/v1/usage", { key: null }), 401, "unauthorized");
    expectError(await api("GET", "/v1/usage", { key: "not-a-key" }), 401, "unauthorized");
  });
});

describe("stored bytes", () => {
  it("are counted from the rows for a session stored before they were counted", async () => {
    const id = sid();
    await api("POST", "/v1/sessions", { body: { id } });
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage("small"), userMessage("x".repeat(600 * 1024))] },
    });
    const before = await infoOf(id, KEY_A);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec("UPDATE session SET stats = json_remove(stats, '$.bytes')");
    });
    await evictDurableObject(stub);
    expect((await infoOf(id, KEY_A)).bytes).toBe(before.bytes);
  });
});

describe("the directory's usage", () => {
  const report = (id: string, entryCount: number, bytes: number, incarnation = "i1", version = 1) => ({
    info: {
      id,
      metadata: {},
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: `2026-01-01T00:00:0${version}.000Z`,
      leafId: null,
      entryCount,
      messageCount: entryCount,
      bytes,
    },
    incarnation,
    version,
  });

  it("follows reports, newer versions, new lives of an id and removals", async () => {
    const directory = env.DIRECTORY.getByName(`usage-${sid()}`);
    expect(await directory.usage()).toEqual({ sessions: 0, entries: 0, bytes: 0 });
    await directory.put(report("a", 2, 200));
    await directory.put(report("b", 3, 300));
    await directory.put(report("a", 5, 500, "i1", 2));
    await directory.put(report("a", 1, 100, "i1", 1));
    expect(await directory.usage()).toEqual({ sessions: 2, entries: 8, bytes: 800 });
    expect(await directory.usage("a")).toEqual({ sessions: 1, entries: 3, bytes: 300 });
    expect(await directory.usage("unknown")).toEqual({ sessions: 2, entries: 8, bytes: 800 });
    await directory.put(report("b", 1, 10, "i2", 1));
    expect(await directory.usage()).toEqual({ sessions: 2, entries: 6, bytes: 510 });
    await directory.remove("a", "i1");
    expect(await directory.usage()).toEqual({ sessions: 1, entries: 1, bytes: 10 });
  });

  it("is summed from the listed sessions when a directory from before usage is opened", async () => {
    const directory = env.DIRECTORY.getByName(`usage-${sid()}`);
    await directory.put(report("a", 2, 200));
    await directory.put(report("b", 3, 300));
    await runInDurableObject(directory, (_, state) => {
      rollBackDirectory(state.storage.sql, 2);
    });
    await evictDurableObject(directory);
    expect(await directory.usage()).toEqual({ sessions: 2, entries: 5, bytes: 500 });
    await directory.put(report("c", 1, 50));
    expect(await directory.usage()).toEqual({ sessions: 3, entries: 6, bytes: 550 });
  });
});
