import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Result } from "../../src/core/errors";
import type { SessionInfo } from "../../src/core/session-schemas";
import type { DurableEnv } from "../../src/durable/internal";
import { DEFAULT_OPEN_GENERATIONS, quotasFor } from "../../src/durable/internal";
import { directoryShard, sessionObjectName } from "../../src/durable/names";
import type { WorkerEnv } from "../../src/http/env";
import worker from "../../src/worker";
import { rollBackDirectory } from "./directory-rollback";
import type { ApiResponse } from "./helpers";
import {
  api,
  directoryReplacing,
  expectError,
  heldClaimAnswers,
  runAlarmOnceReportDue,
  sid,
  userMessage,
  withObjectEnv,
} from "./helpers";

/*
 * Each quota on a tenant of its own (vitest.workers.config.ts): tenant-few-sessions may hold 2
 * sessions, tenant-small-sessions 4,000 bytes a session, tenant-small-tenant 6,000 bytes in all.
 */

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

async function create(key: string, entries: unknown[] = []): Promise<SessionInfo> {
  const id = sid();
  const created = await api("POST", "/v1/sessions", { key, body: { id } });
  expect(created.status, created.text).toBe(201);
  if (entries.length > 0) {
    const res = await api("POST", `/v1/sessions/${id}/entries`, { key, body: { entries } });
    expect(res.status, res.text).toBe(201);
  }
  return (await api("GET", `/v1/sessions/${id}`, { key })).body;
}

async function infoOf(key: string, id: string): Promise<SessionInfo> {
  return (await api("GET", `/v1/sessions/${id}`, { key })).body;
}

async function usage(key: string) {
  return (await api("GET", "/v1/usage", { key })).body as {
    sessions: number;
    entries: number;
    bytes: number;
  };
}

/** An entry whose stored JSON is about `bytes` long. */
const sized = (bytes: number) => userMessage("x".repeat(bytes - 90));

function importFile(id: string, bytes: number): string {
  const timestamp = "2026-01-01T00:00:00.000Z";
  return [
    { type: "session", version: 3, id, timestamp, cwd: "/" },
    {
      type: "message",
      id: "a1b2c3d4",
      parentId: null,
      timestamp,
      message: { role: "user", content: "y".repeat(bytes), timestamp: 1 },
    },
  ]
    .map((line) => JSON.stringify(line))
    .join("\n");
}

const importAs = (key: string, id: string, bytes: number) =>
  api("POST", `/v1/sessions/import?format=pi&id=${id}`, {
    key,
    raw: importFile(id, bytes),
    headers: { "Content-Type": "application/x-ndjson" },
  });

const expectQuota = (res: ApiResponse, quota: string, limit: number) => {
  expectError(res, 413, "quota_exceeded");
  expect(res.body.error.details).toEqual({ quota, limit });
};

describe("maxSessions", () => {
  const KEY = "key-few-sessions";

  it("refuses one session too many, created, forked or imported, writing nothing; a deletion makes room", async () => {
    const first = await create(KEY, [userMessage("hello")]);
    await create(KEY);
    const id = sid("third");
    expectQuota(await api("POST", "/v1/sessions", { key: KEY, body: { id } }), "maxSessions", 2);
    expectError(await api("GET", `/v1/sessions/${id}`, { key: KEY }), 404, "not_found");

    const forkId = sid("fork");
    expectQuota(
      await api("POST", `/v1/sessions/${first.id}/fork`, {
        key: KEY,
        body: { entryId: first.leafId, id: forkId },
      }),
      "maxSessions",
      2,
    );
    expectError(await api("GET", `/v1/sessions/${forkId}`, { key: KEY }), 404, "not_found");

    const importId = sid("import");
    expectQuota(await importAs(KEY, importId, 10), "maxSessions", 2);
    expectError(await api("GET", `/v1/sessions/${importId}`, { key: KEY }), 404, "not_found");

    expect((await api("GET", "/v1/sessions", { key: KEY })).body.sessions.length).toBe(2);
    expect((await infoOf(KEY, first.id)).entryCount).toBe(1);

    expect((await api("DELETE", `/v1/sessions/${first.id}`, { key: KEY })).status).toBe(204);
    expect((await api("POST", "/v1/sessions", { key: KEY, body: { id } })).status).toBe(201);
  });
});

describe("maxSessions, against a deleted session's id", () => {
  const KEY = "key-one-session";

  it("refuses a session created, forked or imported in a deleted one's place, which stays restorable", async () => {
    const deleted = await create(KEY, [userMessage("kept for its window")]);
    expect((await api("DELETE", `/v1/sessions/${deleted.id}`, { key: KEY })).status).toBe(204);
    const live = await create(KEY, [userMessage("the one the quota allows")]);

    expectQuota(await api("POST", "/v1/sessions", { key: KEY, body: { id: deleted.id } }), "maxSessions", 1);
    expectQuota(
      await api("POST", `/v1/sessions/${live.id}/fork`, {
        key: KEY,
        body: { entryId: live.leafId, id: deleted.id },
      }),
      "maxSessions",
      1,
    );
    expectQuota(await importAs(KEY, deleted.id, 10), "maxSessions", 1);
    expectError(await api("GET", `/v1/sessions/${deleted.id}`, { key: KEY }), 404, "not_found");

    // With room made, the deleted session comes back whole.
    expect((await api("DELETE", `/v1/sessions/${live.id}`, { key: KEY })).status).toBe(204);
    const back = await api("POST", `/v1/sessions/${deleted.id}/restore`, { key: KEY, body: {} });
    expect(back.status, back.text).toBe(200);
    expect(back.body).toMatchObject({ id: deleted.id, entryCount: 1, bytes: deleted.bytes });
  });
});

describe("maxSessions, against the id of a deleted session a fork still copies from", () => {
  const KEY = "key-held-quota";

  it("refuses the id for now (503 not_applied) and gives back the room it was admitted to", async () => {
    const source = await create(
      KEY,
      Array.from({ length: 10 }, () => sized(1000)),
    );
    const fork = await api("POST", `/v1/sessions/${source.id}/fork`, {
      key: KEY,
      body: { entryId: source.leafId, id: sid("fork") },
    });
    expect(fork.status, fork.text).toBe(201);
    expect((await api("DELETE", `/v1/sessions/${source.id}`, { key: KEY })).status).toBe(204);

    const again = await api("POST", "/v1/sessions", { key: KEY, body: { id: source.id } });
    expectError(again, 503, "unavailable");
    expect(again.body.error.details.outcome).toBe("not_applied");
    // Only the fork counts: there is room for one more session, and the deleted one stays restorable.
    const other = await create(KEY);
    expect((await api("DELETE", `/v1/sessions/${other.id}`, { key: KEY })).status).toBe(204);
    const back = await api("POST", `/v1/sessions/${source.id}/restore`, { key: KEY, body: {} });
    expect(back.status, back.text).toBe(200);
    expect(back.body.entryCount).toBe(10);
  });
});

describe("maxSessions, lifted for a while", () => {
  const KEY = "key-lifted-quota";
  const setting = env.QUOTAS;
  const quotas = JSON.parse(setting ?? "{}");
  const lifted = JSON.stringify({
    ...quotas,
    tenants: { ...quotas.tenants, "tenant-lifted-quota": { maxSessions: null } },
  });
  const purge = (id: string) => api("DELETE", `/v1/sessions/${id}?purge=true`, { key: KEY });
  const createAs = (id: string) => api("POST", "/v1/sessions", { key: KEY, body: { id } });

  it("counts, once set again, the sessions there are: none purged meanwhile, every one created", async () => {
    const first = await create(KEY);
    const second = await create(KEY);
    const during = sid("during");
    try {
      env.QUOTAS = lifted;
      expect((await purge(first.id)).status).toBe(204);
      expect((await purge(second.id)).status).toBe(204);
      expect((await createAs(during)).status).toBe(201);
      // A claim whose release never reached the ledger: the directory lists no such session.
      const ledger = directoryShard(env as unknown as DurableEnv, "tenant-lifted-quota", 0);
      await runInDurableObject(ledger, (_instance, state) => {
        state.storage.sql.exec("INSERT INTO quota_claims (session_id, bytes, seq) VALUES ('gone', 0, 0)");
      });
    } finally {
      env.QUOTAS = setting;
    }
    const after = await createAs(sid("after"));
    expect(after.status, after.text).toBe(201);
    expectQuota(await createAs(sid("over")), "maxSessions", 2);
  });
});

describe("maxSessionBytes", () => {
  const KEY = "key-small-sessions";

  it("refuses an append, a batch or a leaf move past the session's bytes, writing nothing", async () => {
    const session = await create(KEY, [sized(1000)]);
    // Its header's JSON counts beside its entry's.
    const header = JSON.stringify({ id: session.id, createdAt: session.createdAt, metadata: {} }).length;
    expect(session.bytes - header).toBeGreaterThan(900);
    expect(session.bytes - header).toBeLessThan(1100);

    expectQuota(
      await api("POST", `/v1/sessions/${session.id}/entries`, { key: KEY, body: sized(3500) }),
      "maxSessionBytes",
      4000,
    );
    expectQuota(
      await api("POST", `/v1/sessions/${session.id}/entries`, {
        key: KEY,
        body: { entries: [sized(1000), sized(1000), sized(1000), sized(1000)] },
      }),
      "maxSessionBytes",
      4000,
    );
    expect(await infoOf(KEY, session.id)).toEqual(session);

    // Filled to within 30 bytes of the quota: the next entry's JSON is the first one's, plus the
    // parent's id where the first had null (34 more characters), plus its own text.
    const overhead = session.bytes - header - (1000 - 90) + 34;
    const filler = userMessage("x".repeat(4000 - session.bytes - overhead - 30));
    const filled = await api("POST", `/v1/sessions/${session.id}/entries`, { key: KEY, body: filler });
    expect(filled.status, filled.text).toBe(201);
    const full = await infoOf(KEY, session.id);
    expect(full.bytes).toBe(4000 - 30);
    // Even a leaf move writes a record: past the quota, it is refused too.
    expectQuota(
      await api("PUT", `/v1/sessions/${session.id}/leaf`, { key: KEY, body: { targetId: null } }),
      "maxSessionBytes",
      4000,
    );
    expect(await infoOf(KEY, session.id)).toEqual(full);
    // Reading and deleting go on.
    expect((await api("GET", `/v1/sessions/${session.id}/context`, { key: KEY })).status).toBe(200);
  });

  it("refuses a file larger than a session may hold before writing any of it", async () => {
    const id = sid("import");
    expectQuota(await importAs(KEY, id, 5000), "maxSessionBytes", 4000);
    expectError(await api("GET", `/v1/sessions/${id}`, { key: KEY }), 404, "not_found");
    const fits = await importAs(KEY, sid("import"), 1000);
    expect(fits.status, fits.text).toBe(201);
  });

  it("refuses a file too large for the id of a deleted session, which stays restorable", async () => {
    const deleted = await create(KEY, [userMessage("kept for its window")]);
    expect((await api("DELETE", `/v1/sessions/${deleted.id}`, { key: KEY })).status).toBe(204);
    expectQuota(await importAs(KEY, deleted.id, 5000), "maxSessionBytes", 4000);
    const back = await api("POST", `/v1/sessions/${deleted.id}/restore`, { key: KEY, body: {} });
    expect(back.status, back.text).toBe(200);
    expect(back.body).toMatchObject({ id: deleted.id, entryCount: 1, bytes: deleted.bytes });
  });

  it("refuses a sync that would take the session past its bytes, new or grown, writing nothing", async () => {
    const syncAs = (id: string, text: string) =>
      api("POST", `/v1/sessions/import?format=pi&id=${id}&mode=sync`, {
        key: KEY,
        raw: text,
        headers: { "Content-Type": "application/x-ndjson" },
      });
    const fresh = sid("sync");
    expectQuota(await syncAs(fresh, importFile(fresh, 5000)), "maxSessionBytes", 4000);
    expectError(await api("GET", `/v1/sessions/${fresh}`, { key: KEY }), 404, "not_found");

    const id = sid("sync");
    const first = importFile(id, 1000);
    expect((await syncAs(id, first)).status).toBe(201);
    const before = await infoOf(KEY, id);
    const grown = `${first}\n${JSON.stringify({
      type: "message",
      id: "e5f6a7b8",
      parentId: "a1b2c3d4",
      timestamp: "2026-01-01T00:00:01.000Z",
      message: { role: "user", content: "z".repeat(3500), timestamp: 2 },
    })}`;
    expectQuota(await syncAs(id, grown), "maxSessionBytes", 4000);
    const after = await infoOf(KEY, id);
    expect([after.entryCount, after.leafId, after.bytes]).toEqual([
      before.entryCount,
      before.leafId,
      before.bytes,
    ]);
  });
});

describe("maxSessionBytes, on a sync of several batches", () => {
  const KEY = "key-mid-sessions";

  it("refuses a sync whose batches would pass the session's bytes only together, writing none of them", async () => {
    const id = sid("sync");
    const timestamp = "2026-01-01T00:00:00.000Z";
    const line = (i: number) =>
      JSON.stringify({
        type: "message",
        id: `m${i}`,
        parentId: i === 0 ? null : `m${i - 1}`,
        timestamp,
        message: { role: "user", content: `${i} ${"w".repeat(150)}`, timestamp: 1 },
      });
    const file = (count: number) =>
      [JSON.stringify({ type: "session", version: 3, id, timestamp, cwd: "/" })]
        .concat(Array.from({ length: count }, (_, i) => line(i)))
        .join("\n");
    const sync = (count: number) =>
      api("POST", `/v1/sessions/import?format=pi&id=${id}&mode=sync`, {
        key: KEY,
        raw: file(count),
        headers: { "Content-Type": "application/x-ndjson" },
      });
    expect((await sync(10)).status).toBe(201);
    const before = await infoOf(KEY, id);
    // 1,200 more entries of ~250 bytes: each batch of 500 fits under 200,000 bytes, not all three.
    expectQuota(await sync(1210), "maxSessionBytes", 200_000);
    const after = await infoOf(KEY, id);
    expect([after.entryCount, after.leafId, after.bytes]).toEqual([
      before.entryCount,
      before.leafId,
      before.bytes,
    ]);
    // What fits still syncs.
    expect((await sync(400)).status).toBe(200);
    expect((await infoOf(KEY, id)).entryCount).toBe(400);
  });
});

describe("maxTenantBytes", () => {
  const KEY = "key-small-tenant";

  it("refuses appends, forks and imports past the tenant's bytes, writing nothing", async () => {
    const big = await create(KEY, [sized(1800), sized(1800)]);
    const other = await create(KEY, [sized(500)]);
    await vi.waitFor(async () => expect((await usage(KEY)).bytes).toBe(big.bytes + other.bytes), {
      timeout: 10_000,
      interval: 25,
    });

    expectQuota(
      await api("POST", `/v1/sessions/${other.id}/entries`, { key: KEY, body: sized(2500) }),
      "maxTenantBytes",
      6000,
    );
    expect(await infoOf(KEY, other.id)).toEqual(other);

    const forkId = sid("fork");
    expectQuota(
      await api("POST", `/v1/sessions/${big.id}/fork`, {
        key: KEY,
        body: { entryId: big.leafId, id: forkId },
      }),
      "maxTenantBytes",
      6000,
    );
    expectError(await api("GET", `/v1/sessions/${forkId}`, { key: KEY }), 404, "not_found");

    const importId = sid("import");
    expectQuota(await importAs(KEY, importId, 2500), "maxTenantBytes", 6000);
    expectError(await api("GET", `/v1/sessions/${importId}`, { key: KEY }), 404, "not_found");

    expect((await api("GET", "/v1/sessions", { key: KEY })).body.sessions.length).toBe(2);
    expect((await usage(KEY)).bytes).toBe(big.bytes + other.bytes);
    // What still fits is written.
    expect(
      (await api("POST", `/v1/sessions/${other.id}/entries`, { key: KEY, body: sized(500) })).status,
    ).toBe(201);
  });
});

describe("bringing data back", () => {
  const KEY = "key-restore-quota";
  const restore = (id: string) => api("POST", `/v1/sessions/${id}/restore`, { key: KEY, body: {} });

  it("checks the quotas on restore, tenant import and sync; a refused restore leaves the session deleted", async () => {
    // Two sessions (the quota), one of them deleted, then another in its place.
    const kept = await create(KEY, [sized(3000)]);
    const deleted = await create(KEY, [sized(3000)]);
    expect((await api("DELETE", `/v1/sessions/${deleted.id}`, { key: KEY })).status).toBe(204);
    const third = await create(KEY, [sized(1000)]);
    expectQuota(await restore(deleted.id), "maxSessions", 2);
    expectError(await api("GET", `/v1/sessions/${deleted.id}`, { key: KEY }), 404, "not_found");

    // Room for a session, but not for its bytes: 3,000 + 1,000 + 3,000 + the growth below > 8,000.
    expect((await api("DELETE", `/v1/sessions/${third.id}`, { key: KEY })).status).toBe(204);
    const grown = await api("POST", `/v1/sessions/${kept.id}/entries`, { key: KEY, body: sized(2500) });
    expect(grown.status, grown.text).toBe(201);
    expectQuota(await restore(deleted.id), "maxTenantBytes", 8000);
    expectError(await api("GET", `/v1/sessions/${deleted.id}`, { key: KEY }), 404, "not_found");

    // A tenant import of a copy of what was deleted: refused the same way, session by session.
    const stream = await api("GET", "/v1/export", { key: KEY });
    const copy = stream.text.replaceAll(kept.id, sid("copy"));
    const imported = await api("POST", "/v1/import", {
      key: KEY,
      raw: copy,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expect(imported.status).toBe(200);
    expect(imported.body.imported).toBe(0);
    expect(imported.body.sessions[0].error).toMatchObject({ code: "quota_exceeded" });
    const sync = await api("POST", `/v1/sessions/import?format=pi&mode=sync&id=${sid("sync")}`, {
      key: KEY,
      raw: importFile("synced", 3000),
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expectError(sync, 413, "quota_exceeded");
    expect(
      (await api("GET", "/v1/sessions", { key: KEY })).body.sessions.map((s: SessionInfo) => s.id),
    ).toEqual([kept.id]);

    // With room made, the deleted session comes back whole.
    expect((await api("DELETE", `/v1/sessions/${kept.id}`, { key: KEY })).status).toBe(204);
    const back = await restore(deleted.id);
    expect(back.status, back.text).toBe(200);
    expect(back.body.bytes).toBe(deleted.bytes);
  });
});

describe("writes at once", () => {
  const KEY = "key-parallel-quota";

  it("never take the tenant past its bytes, however many sessions write at the same time", async () => {
    const sessions = await Promise.all(Array.from({ length: 8 }, () => create(KEY)));
    // Eight writes of 4,000 bytes at once against 20,000: four fit, whichever they are.
    const answers = await Promise.all(
      sessions.map((session) =>
        api("POST", `/v1/sessions/${session.id}/entries`, { key: KEY, body: sized(4000) }),
      ),
    );
    const written = answers.filter((res) => res.status === 201).length;
    for (const res of answers.filter((answer) => answer.status !== 201)) {
      expectQuota(res, "maxTenantBytes", 20_000);
    }
    expect(written).toBeGreaterThanOrEqual(3);
    expect(written).toBeLessThanOrEqual(5);
    const held = (await Promise.all(sessions.map((session) => infoOf(KEY, session.id)))).reduce(
      (sum, info) => sum + info.bytes,
      0,
    );
    expect(held).toBeLessThanOrEqual(20_000);
    // Once idle, what a session was granted beyond what it holds goes back: the rest fits.
    await vi.waitFor(
      async () => {
        const res = await api("POST", `/v1/sessions/${(sessions[0] as SessionInfo).id}/entries`, {
          key: KEY,
          body: sized(20_000 - held - 200),
        });
        expect(res.status, res.text).toBe(201);
      },
      { timeout: 10_000, interval: 200 },
    );
  });
});

/*
 * A session's claim in the ledger against its writes: the idle settle (its alarm's, after it
 * reports), its deletion, and the calls they make.
 */
describe("a session's claim, against its writes", () => {
  const KEY = "key-settled-quota";
  const TENANT = "tenant-settled-quota";
  const durableEnv = env as unknown as DurableEnv;
  /** The directory's binding, as the objects reach it outside `withObjectEnv`. */
  const directories = { DIRECTORY: durableEnv.DIRECTORY };
  const sessionOf = (id: string) => durableEnv.SESSIONS.getByName(sessionObjectName(TENANT, id));

  /** The bytes the tenant's quota ledger counts for the session (its claim). */
  async function ledgerClaim(id: string): Promise<number | undefined> {
    return runInDurableObject(directoryShard(directories, TENANT, 0), (_instance, state) => {
      const rows = state.storage.sql
        .exec<{ bytes: number }>("SELECT bytes FROM quota_claims WHERE session_id = ?", id)
        .toArray();
      return rows[0]?.bytes;
    });
  }

  /** Waits until the ledger counts what the session holds (it reported, and settled). */
  const settled = (session: SessionInfo) =>
    vi.waitFor(async () => expect(await ledgerClaim(session.id)).toBe(session.bytes), {
      timeout: 5000,
      interval: 20,
    });

  it("leaves the room a write asked for while the ledger answered, and gives back the rest once idle", async () => {
    const session = await create(KEY, [sized(1000)]);
    await settled(session);
    const stub = sessionOf(session.id);
    // Woken again, the object knows no claim: the append asks the ledger for room.
    await evictDurableObject(stub);
    const claims = heldClaimAnswers();
    await withObjectEnv(stub, { DIRECTORY: claims.directory }, async () => {
      const appended = api("POST", `/v1/sessions/${session.id}/entries`, { key: KEY, body: sized(2000) });
      await claims.answered();
      // The ledger granted the claim; the alarm comes before the write has its answer.
      await runAlarmOnceReportDue(stub);
      claims.letGo();
      const answer = await appended;
      expect(answer.status, answer.text).toBe(201);
    });
    // The ledger counts what the session holds (with room for more).
    const grown = await infoOf(KEY, session.id);
    expect(grown.bytes).toBeGreaterThan(session.bytes + 1900);
    expect(await ledgerClaim(session.id)).toBeGreaterThanOrEqual(grown.bytes);
    // Once idle (its report due), what it was granted beyond them goes back.
    await runAlarmOnceReportDue(stub);
    expect(await ledgerClaim(session.id)).toBe(grown.bytes);
  });
  it("is not left in the ledger by a write that asked for room while its session was deleted", async () => {
    const session = await create(KEY, [sized(1000)]);
    await settled(session);
    const stub = sessionOf(session.id);
    // Woken again, the object knows no claim: the append asks the ledger for room.
    await evictDurableObject(stub);
    let asked = false;
    let letGo = () => {};
    const arrives = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    // The write's claim reaches the ledger only after the session's deletion released it.
    const directory = directoryReplacing("claimQuota", async (real, args) => {
      asked = true;
      await arrives;
      return real(...args);
    });
    await withObjectEnv(stub, { DIRECTORY: directory }, async () => {
      const appended = api("POST", `/v1/sessions/${session.id}/entries`, { key: KEY, body: sized(2000) });
      await vi.waitFor(() => expect(asked).toBe(true), { timeout: 5000, interval: 5 });
      const deleted = await api("DELETE", `/v1/sessions/${session.id}`, { key: KEY });
      expect(deleted.status, deleted.text).toBe(204);
      letGo();
      expectError(await appended, 404, "not_found");
    });
    expect(await ledgerClaim(session.id)).toBeUndefined();
    // Restored, the session holds what it held, and counts again.
    const back = await api("POST", `/v1/sessions/${session.id}/restore`, { key: KEY, body: {} });
    expect(back.status, back.text).toBe(200);
    expect((await infoOf(KEY, session.id)).entryCount).toBe(session.entryCount);
    expect(await ledgerClaim(session.id)).toBeGreaterThanOrEqual(session.bytes);
  });

  it("is not left in the ledger by a write that claimed room while its session's deletion gave it back", async () => {
    const session = await create(KEY, [sized(1000)]);
    await settled(session);
    const stub = sessionOf(session.id);
    let released = false;
    let held = true;
    // The ledger applies the deletion's release at once; its answer is slow to come back.
    const directory = directoryReplacing("releaseQuota", async (real, args) => {
      const answer = await real(...args);
      released = true;
      await vi.waitFor(() => expect(held).toBe(false), { timeout: 5000, interval: 5 });
      return answer;
    });
    await withObjectEnv(stub, { DIRECTORY: directory }, async () => {
      const deleting = api("DELETE", `/v1/sessions/${session.id}`, { key: KEY });
      await vi.waitFor(() => expect(released).toBe(true), { timeout: 5000, interval: 5 });
      // Not deleted yet: the write is taken, and claims room after the release.
      const written = await api("POST", `/v1/sessions/${session.id}/entries`, {
        key: KEY,
        body: sized(2000),
      });
      expect(written.status, written.text).toBe(201);
      held = false;
      expect((await deleting).status).toBe(204);
    });
    expect(await ledgerClaim(session.id)).toBeUndefined();
  });
});

/*
 * The tenant's ledger itself (its directory shard 0), asked as holders ask it, under quotas set for
 * a tenant of the test's own.
 */
describe("the quota ledger", () => {
  const setting = env.QUOTAS;
  let seq = Date.now() * 1000;

  function ledgerOf(quotas: Record<string, unknown>) {
    const tenant = `tenant-${sid("ledger")}`;
    const ledger = directoryShard(env as unknown as DurableEnv, tenant, 0);
    const parsed = JSON.parse(setting ?? "{}");
    /** Sets the tenant's quotas (the ledger is seeded again before its next claim). */
    const setQuotas = (next: Record<string, unknown>) => {
      env.QUOTAS = JSON.stringify({ ...parsed, tenants: { ...parsed.tenants, [tenant]: next } });
    };
    setQuotas(quotas);
    const claim = async (sessionId: string, wants: number, newSession = false, holds = 0) =>
      (await ledger.claimQuota(tenant, {
        sessionId,
        holds,
        wants,
        newSession,
        seq: ++seq,
      })) as Result<number>;
    /** Lists `id` in shard 0, as a session's report would (a seed counts it). */
    const list = async (id: string) => {
      const at = "2026-01-01T00:00:00.000Z";
      const info = { id, metadata: {}, createdAt: at, updatedAt: at, leafId: null, entryCount: 0 };
      await ledger.put({
        info: { ...info, messageCount: 0, bytes: 0 },
        incarnation: "i",
        version: 1,
        tenant,
        shard: 0,
      });
    };
    return { tenant, ledger, setQuotas, claim, list };
  }

  /** The ledger's totals, and what its claims add up to. */
  async function totalsOf(ledger: ReturnType<typeof ledgerOf>["ledger"]) {
    return runInDurableObject(ledger, (_instance, state) => ({
      kept: state.storage.sql.exec("SELECT claims, streams, bytes FROM quota_totals").one(),
      summed: state.storage.sql
        .exec(
          `SELECT count(*) AS claims, count(CASE WHEN substr(session_id, 1, 1) = '/' THEN 1 END) AS streams,
            coalesce(sum(bytes), 0) AS bytes FROM quota_claims`,
        )
        .one(),
    }));
  }

  it("keeps its totals as claims come, grow, settle and go, and grants a claim without summing them", async () => {
    try {
      const { tenant, ledger, claim } = ledgerOf({ maxSessions: 3, maxTenantBytes: 100_000 });
      expect(await claim("a", 100, true)).toEqual({ ok: true, value: expect.any(Number) });
      expect((await claim("b", 200, true)).ok).toBe(true);
      expect((await claim("/stream", 50, true)).ok).toBe(true);
      expect((await claim("a", 20_000, false, 100)).ok).toBe(true);
      await ledger.settleQuota("b", 150, ++seq);
      await ledger.releaseQuota(tenant, "a");
      const { kept, summed } = await totalsOf(ledger);
      expect(kept).toEqual(summed);
      expect(kept).toEqual({ claims: 2, streams: 1, bytes: summed.bytes });
      // What a claim runs reads the totals, not every claim.
      const plans = await runInDurableObject(ledger, async (instance, state) => {
        const sql = state.storage.sql;
        const exec = sql.exec;
        const plans: string[] = [];
        sql.exec = ((query: string, ...bindings: unknown[]) => {
          if (!query.startsWith("EXPLAIN")) {
            const plan = exec.call(sql, `EXPLAIN QUERY PLAN ${query}`, ...bindings).toArray();
            plans.push(...plan.map((row) => String(row.detail)));
          }
          return exec.call(sql, query, ...bindings);
        }) as typeof exec;
        try {
          const claimed = await instance.claimQuota(tenant, {
            sessionId: "c",
            holds: 0,
            wants: 10,
            newSession: true,
            seq: ++seq,
          });
          expect(claimed.ok).toBe(true);
        } finally {
          sql.exec = exec;
        }
        return plans;
      });
      expect(plans.length).toBeGreaterThan(0);
      expect(plans.filter((plan) => plan.includes("SCAN quota_claims"))).toEqual([]);
    } finally {
      env.QUOTAS = setting;
    }
  });

  it("keeps, seeded again, the claim of a session not listed yet, until a seed after finds it gone", async () => {
    try {
      const { claim, setQuotas } = ledgerOf({ maxSessions: 2 });
      // Created, but not listed yet (no shard heard of it): the quotas change before it reports.
      expect((await claim("a", 100, true)).ok).toBe(true);
      setQuotas({ maxSessions: 2, maxTenantBytes: 1_000_000 });
      expect((await claim("b", 100, true)).ok).toBe(true);
      const over = await claim("c", 100, true);
      expect(!over.ok && over.error.code).toBe("quota_exceeded");
      // Seeded once more, "a" has neither been listed nor asked for anything since: it is gone.
      setQuotas({ maxSessions: 2 });
      expect((await claim("c", 100, true)).ok).toBe(true);
      const full = await claim("d", 100, true);
      expect(!full.ok && full.error.code).toBe("quota_exceeded");
    } finally {
      env.QUOTAS = setting;
    }
  });

  it("never counts again a session released while the ledger reads the shards to seed itself", async () => {
    try {
      const { tenant, ledger, claim, list } = ledgerOf({ maxSessions: 2 });
      await list("r");
      // The first claim seeds the ledger from every shard; the release of "r", which shard 0 still
      // lists, lands while the others are asked.
      const [first] = await Promise.all([claim("x", 10, true), ledger.releaseQuota(tenant, "r")]);
      expect(first.ok).toBe(true);
      expect((await claim("y", 10, true)).ok).toBe(true);
      const over = await claim("z", 10, true);
      expect(!over.ok && over.error.code).toBe("quota_exceeded");
    } finally {
      env.QUOTAS = setting;
    }
  });

  it("refuses a claim its holder sent before its release that arrives after it, and takes the next", async () => {
    try {
      const { tenant, ledger, setQuotas, list } = ledgerOf({ maxSessions: 2, maxTenantBytes: 100_000 });
      const claimAt = (sessionId: string, at: number, newSession = false) =>
        ledger.claimQuota(tenant, { sessionId, holds: 0, wants: 100, newSession, seq: at }) as Promise<
          Result<number>
        >;
      expect((await claimAt("a", ++seq, true)).ok).toBe(true);
      // "a" is listed (its shard has not heard of its deletion yet).
      await list("a");
      // A write of "a" asks for room (sent at `late`), then "a" is deleted: the release comes first.
      const late = ++seq;
      await ledger.releaseQuota(tenant, "a", ++seq);
      const refused = await claimAt("a", late);
      expect(!refused.ok && refused.error.code).toBe("not_found");
      const { kept } = await totalsOf(ledger);
      expect(kept).toEqual({ claims: 0, streams: 0, bytes: 0 });
      // Seeded again from the shards, which still list "a": the late claim is refused all the same.
      setQuotas({ maxSessions: 2, maxTenantBytes: 200_000 });
      const reseeded = await claimAt("a", late);
      expect(!reseeded.ok && reseeded.error.code).toBe("not_found");
      // Restored, or created again under its id, "a" asks after its release: it counts again.
      expect((await claimAt("a", ++seq, true)).ok).toBe(true);
      expect((await claimAt("b", ++seq, true)).ok).toBe(true);
      const over = await claimAt("c", ++seq, true);
      expect(!over.ok && over.error.code).toBe("quota_exceeded");
    } finally {
      env.QUOTAS = setting;
    }
  });

  it("sums its totals from the claims of a ledger kept before them", async () => {
    try {
      const { ledger, claim } = ledgerOf({ maxSessions: 2, maxTenantBytes: 100_000 });
      expect((await claim("a", 100, true)).ok).toBe(true);
      expect((await claim("b", 200, true)).ok).toBe(true);
      await runInDurableObject(ledger, (_instance, state) => {
        rollBackDirectory(state.storage.sql, 7);
      });
      await evictDurableObject(ledger);
      const refused = await claim("c", 10, true);
      expect(refused.ok).toBe(false);
      expect(!refused.ok && refused.error.code).toBe("quota_exceeded");
      const { kept, summed } = await totalsOf(ledger);
      expect(kept).toEqual(summed);
      expect(kept.claims).toBe(2);
    } finally {
      env.QUOTAS = setting;
    }
  });
});

describe("the QUOTAS setting", () => {
  it("gives every tenant the defaults, and a tenant's own limits field by field; null lifts one", () => {
    const setting = JSON.stringify({
      maxSessions: 10,
      maxTenantBytes: 1000,
      tenants: {
        big: { maxSessions: 100, maxTenantBytes: null, maxOpenGenerations: 500 },
        capped: { maxSessionBytes: 50 },
      },
    });
    // Open generations are always capped: 64 unless the setting says otherwise.
    const open = { maxOpenGenerations: DEFAULT_OPEN_GENERATIONS };
    expect(quotasFor(setting, "anyone")).toEqual({ maxSessions: 10, maxTenantBytes: 1000, ...open });
    expect(quotasFor(setting, "big")).toEqual({ maxSessions: 100, maxOpenGenerations: 500 });
    expect(quotasFor(setting, "capped")).toEqual({
      maxSessions: 10,
      maxSessionBytes: 50,
      maxTenantBytes: 1000,
      ...open,
    });
    expect(quotasFor(undefined, "anyone")).toEqual(open);
    expect(quotasFor(" ", "anyone")).toEqual(open);
  });

  it("refuses to serve with an invalid setting (503 misconfigured), and GET /v1/usage shows the quotas", async () => {
    for (const QUOTAS of [
      "not json",
      '{"maxSessions": -1}',
      '{"maxSesions": 1}',
      '{"tenants": {"a": {"x": 1}}}',
    ]) {
      expect(() => quotasFor(QUOTAS, "tenant")).toThrow(/QUOTAS/);
      const res = await worker.fetch(
        new Request("http://sessions.test/v1/usage", { headers: { Authorization: "Bearer key-a" } }),
        { ...env, QUOTAS } as WorkerEnv,
        ctx(),
      );
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("misconfigured");
    }
    expect((await api("GET", "/v1/usage", { key: "key-small-tenant" })).body.quotas).toEqual({
      maxTenantBytes: 6000,
      maxOpenGenerations: DEFAULT_OPEN_GENERATIONS,
    });
  });
});

describe("a session's header, in maxSessionBytes", () => {
  const KEY = "key-small-sessions";

  it("counts on a create, a fork and an import: refused past the quota, nothing written", async () => {
    for (const body of [{ systemPrompt: "p".repeat(5000) }, { metadata: { note: "m".repeat(5000) } }]) {
      const id = sid("header");
      expectQuota(
        await api("POST", "/v1/sessions", { key: KEY, body: { id, ...body } }),
        "maxSessionBytes",
        4000,
      );
      expectError(await api("GET", `/v1/sessions/${id}`, { key: KEY }), 404, "not_found");
    }

    const source = sid("source");
    const prompt = "p".repeat(2000);
    const made = await api("POST", "/v1/sessions", { key: KEY, body: { id: source, systemPrompt: prompt } });
    expect(made.status, made.text).toBe(201);
    expect(made.body.bytes).toBeGreaterThan(2000);
    const appended = await api("POST", `/v1/sessions/${source}/entries`, { key: KEY, body: sized(1000) });
    expect(appended.status, appended.text).toBe(201);
    const held = await infoOf(KEY, source);
    expect(held.bytes).toBeGreaterThan(3000);
    // Its fork holds the same header, and a name of its own that takes it past the quota.
    const forkId = sid("fork");
    expectQuota(
      await api("POST", `/v1/sessions/${source}/fork`, {
        key: KEY,
        body: { entryId: held.leafId, id: forkId, name: "n".repeat(1500) },
      }),
      "maxSessionBytes",
      4000,
    );
    expectError(await api("GET", `/v1/sessions/${forkId}`, { key: KEY }), 404, "not_found");
    expect(await infoOf(KEY, source)).toEqual(held);

    // A file whose header alone is past the quota.
    const large = sid("large");
    expect(
      (await api("POST", "/v1/sessions", { body: { id: large, systemPrompt: "p".repeat(5000) } })).status,
    ).toBe(201);
    expect((await api("POST", `/v1/sessions/${large}/entries`, { body: userMessage("hi") })).status).toBe(
      201,
    );
    const file = (await api("GET", `/v1/sessions/${large}/export`)).text;
    const importId = sid("import");
    expectQuota(
      await api("POST", `/v1/sessions/import?id=${importId}`, {
        key: KEY,
        raw: file,
        headers: { "Content-Type": "application/x-ndjson" },
      }),
      "maxSessionBytes",
      4000,
    );
    expectError(await api("GET", `/v1/sessions/${importId}`, { key: KEY }), 404, "not_found");
  });

  it("counts on a PATCH: one past the quota is refused, header unchanged; a smaller header frees room", async () => {
    const id = sid("patched");
    const made = await api("POST", "/v1/sessions", {
      key: KEY,
      body: { id, systemPrompt: "p".repeat(1000) },
    });
    expect(made.status, made.text).toBe(201);
    const before = await infoOf(KEY, id);
    expect(before.bytes).toBeGreaterThan(1000);

    expectQuota(
      await api("PATCH", `/v1/sessions/${id}`, { key: KEY, body: { systemPrompt: "q".repeat(4000) } }),
      "maxSessionBytes",
      4000,
    );
    expectQuota(
      await api("PATCH", `/v1/sessions/${id}`, { key: KEY, body: { metadata: { note: "m".repeat(3500) } } }),
      "maxSessionBytes",
      4000,
    );
    expect(await infoOf(KEY, id)).toEqual(before);

    const grown = await api("PATCH", `/v1/sessions/${id}`, {
      key: KEY,
      body: { systemPrompt: "q".repeat(2500) },
    });
    expect(grown.status, grown.text).toBe(200);
    expect((await infoOf(KEY, id)).bytes).toBe(before.bytes + 1500);
    // Past the quota with the larger prompt; room again once it is dropped.
    expectQuota(
      await api("POST", `/v1/sessions/${id}/entries`, { key: KEY, body: sized(1500) }),
      "maxSessionBytes",
      4000,
    );
    const dropped = await api("PATCH", `/v1/sessions/${id}`, { key: KEY, body: { systemPrompt: null } });
    expect(dropped.status, dropped.text).toBe(200);
    expect((await infoOf(KEY, id)).bytes).toBeLessThan(before.bytes - 1000);
    const appended = await api("POST", `/v1/sessions/${id}/entries`, { key: KEY, body: sized(1500) });
    expect(appended.status, appended.text).toBe(201);
  });
  it("counts the header of a session stored before it counted, from the time it is next read", async () => {
    const id = sid("older");
    const made = await api("POST", "/v1/sessions", {
      key: KEY,
      body: { id, systemPrompt: "p".repeat(2000) },
    });
    expect(made.status, made.text).toBe(201);
    expect((await api("POST", `/v1/sessions/${id}/entries`, { key: KEY, body: sized(1000) })).status).toBe(
      201,
    );
    const counted = await infoOf(KEY, id);
    // Stored as a session was before its header counted: its bytes its entries' alone.
    const stub = (env as unknown as DurableEnv).SESSIONS.getByName(
      sessionObjectName("tenant-small-sessions", id),
    );
    await runInDurableObject(stub, (_instance, state) => {
      const row = state.storage.sql.exec("SELECT stats FROM session").one() as { stats: string };
      const { headerBytes, ...stats } = JSON.parse(row.stats);
      stats.bytes -= headerBytes;
      state.storage.sql.exec("UPDATE session SET stats = ?", JSON.stringify(stats));
    });
    await evictDurableObject(stub);
    expect((await infoOf(KEY, id)).bytes).toBe(counted.bytes);
    expectQuota(
      await api("POST", `/v1/sessions/${id}/entries`, { key: KEY, body: sized(1200) }),
      "maxSessionBytes",
      4000,
    );
  });
});

describe("a session's header, in maxTenantBytes", () => {
  const KEY = "key-small-tenant";

  it("counts in the tenant's bytes and its usage: a create or a PATCH past them is refused, nothing written", async () => {
    const id = sid("header");
    const body = { id, systemPrompt: "p".repeat(1_000_000), metadata: { note: "m".repeat(200_000) } };
    expectQuota(await api("POST", "/v1/sessions", { key: KEY, body }), "maxTenantBytes", 6000);
    expectError(await api("GET", `/v1/sessions/${id}`, { key: KEY }), 404, "not_found");

    const small = sid("small");
    const made = await api("POST", "/v1/sessions", {
      key: KEY,
      body: { id: small, systemPrompt: "p".repeat(300) },
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body.bytes).toBeGreaterThan(300);
    await vi.waitFor(
      async () => {
        const listed = (await api("GET", "/v1/sessions", { key: KEY })).body.sessions as SessionInfo[];
        expect(listed.map((session) => session.id)).toContain(small);
        expect((await usage(KEY)).bytes).toBe(listed.reduce((sum, session) => sum + session.bytes, 0));
      },
      { timeout: 10_000, interval: 25 },
    );

    expectQuota(
      await api("PATCH", `/v1/sessions/${small}`, { key: KEY, body: { systemPrompt: "q".repeat(7000) } }),
      "maxTenantBytes",
      6000,
    );
    expect(await infoOf(KEY, small)).toEqual(made.body);
  });
});
