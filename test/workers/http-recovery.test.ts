import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { newSessionHeader } from "../../src/core/header";
import type { DurableEnv } from "../../src/durable/internal";
import { DurableRepo, sessionObjectName } from "../../src/durable/internal";
import { directoryShard, shardCount, shardOf } from "../../src/durable/names";
import { watchEvents } from "./events-helpers";
import {
  api,
  apiWith,
  assistantMessage,
  createSession,
  directoryReplacing,
  expectError,
  info,
  KEY_A_READ,
  KEY_B,
  sid,
  userMessage,
  withObjectEnv,
} from "./helpers";

/*
 * Deleting is recoverable: a deleted session is gone from every route and the listing, restore
 * brings it back whole within the recovery window, and an alarm purges it after. Sessions also
 * expire: at their own `expiresAt`, or when idle longer than the tenant's retention.
 */

const durableEnv = env as unknown as DurableEnv;
const sessionStub = (id: string, tenant = "tenant-a") =>
  env.SESSIONS.getByName(sessionObjectName(tenant, id));

async function fill(id: string) {
  const res = await api("POST", `/v1/sessions/${id}/entries`, {
    body: {
      entries: [
        { id: "q", ...userMessage("where is the mongoose") },
        { id: "a1", ...assistantMessage("under the porch") },
        { id: "a2", parentId: "q", ...assistantMessage("in the garden") },
        { type: "label", targetId: "a1", label: "first" },
        { type: "session_info", name: "Mongoose hunt" },
      ],
    },
  });
  expect(res.status).toBe(201);
}

/** Everything a reader can see of a session, as the bytes the service sends. */
async function snapshot(id: string) {
  const [exported, context, tree, entries] = await Promise.all([
    api("GET", `/v1/sessions/${id}/export`),
    api("GET", `/v1/sessions/${id}/context`),
    api("GET", `/v1/sessions/${id}/tree`),
    api("GET", `/v1/sessions/${id}/entries?limit=1000`),
  ]);
  for (const res of [exported, context, tree, entries]) expect(res.status).toBe(200);
  return { exported: exported.text, context: context.text, tree: tree.text, entries: entries.text };
}

async function listedIds(key?: string) {
  const res = await api("GET", "/v1/sessions?limit=200", key === undefined ? {} : { key });
  return res.body.sessions.map((s: { id: string }) => s.id) as string[];
}

/** Rows the session's object still holds (0 once purged). */
async function storedRows(id: string, tenant?: string) {
  return runInDurableObject(
    sessionStub(id, tenant),
    (_instance, state) =>
      state.storage.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'")
        .one().n,
  );
}

/**
 * The directory as the session objects reach it (`withObjectEnv`), holding their calls of `method`
 * until `letGo`: a purge giving up the session's room in its tenant's quota ledger
 * (`releaseQuota`), or a restore asking for it (`claimQuota`), stays open for as long as a test
 * needs. The directory is the real one (or `directory`, holding calls of another method): the call
 * goes on once let go. The objects share their environment: with `holds`, only the calls it picks
 * are held.
 */
function heldDirectoryCalls(
  method: "releaseQuota" | "claimQuota" | "releaseBlobs",
  directory?: DurableEnv["DIRECTORY"],
  holds: (args: unknown[]) => boolean = () => true,
) {
  let held = true;
  let reached = 0;
  let answered = 0;
  const holding = directoryReplacing(
    method,
    async (real, args) => {
      if (!holds(args)) return real(...args);
      reached++;
      while (held) await new Promise((resolve) => setTimeout(resolve, 5));
      try {
        return await real(...args);
      } finally {
        answered++;
      }
    },
    directory,
  );
  const waitFor = (count: () => number, calls: number) =>
    vi.waitFor(() => expect(count()).toBeGreaterThanOrEqual(calls), { timeout: 5000, interval: 10 });
  return {
    directory: holding,
    /** Waits until `calls` calls have come (the last is held, unless let go). */
    reached: (calls = 1) => waitFor(() => reached, calls),
    /** Waits until `calls` calls let go have been answered by the directory. */
    answered: (calls = 1) => waitFor(() => answered, calls),
    letGo: () => {
      held = false;
    },
    /** Calls that come from now on are held again. */
    hold: () => {
      held = true;
    },
  };
}

/** `promise` given `ms` to settle: what a request answers while something else holds it up. */
const within = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise, new Promise((resolve) => setTimeout(resolve, ms))]);

describe("deleting and restoring", () => {
  it("hides a deleted session from every route and the listing, then restores it whole", async () => {
    const id = await createSession();
    await fill(id);
    const before = await snapshot(id);
    await vi.waitFor(async () => expect(await listedIds()).toContain(id), { timeout: 5000, interval: 30 });

    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expect(await listedIds()).not.toContain(id);
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}/context`), 404, "not_found");
    expectError(
      await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("x") }),
      404,
      "not_found",
    );
    expectError(await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "q" } }), 404, "not_found");
    expectError(await api("DELETE", `/v1/sessions/${id}`), 404, "not_found");
    // Its data is still there, waiting for the window to close.
    expect(await storedRows(id)).toBeGreaterThan(0);

    const restored = await api("POST", `/v1/sessions/${id}/restore`, { body: {} });
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({ id, name: "Mongoose hunt", entryCount: 5 });
    expect(restored.headers.get("ETag")).toBe(`"${restored.body.leafId}"`);
    expect(await snapshot(id)).toEqual(before);
    await vi.waitFor(async () => expect(await listedIds()).toContain(id), { timeout: 5000, interval: 30 });
    // Writable again, and the alarm no longer purges it.
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("found it") })).status).toBe(
      201,
    );
    await runDurableObjectAlarm(sessionStub(id));
    expect((await api("GET", `/v1/sessions/${id}`)).body.entryCount).toBe(6);
  });

  it("ends its watchers' streams, refuses new ones while deleted, and is watched again once restored", async () => {
    const id = await createSession();
    await fill(id);
    const watch = await watchEvents(id);
    await watch.until((e) => e.event === "leaf");
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expect(await watch.next()).toEqual({ event: "deleted", data: { id } });
    expect(await watch.next()).toBeUndefined();
    expect((await watchEvents(id)).status).toBe(404);
    expectError(await api("POST", `/v1/sessions/${id}/tickets`, { body: {} }), 404, "not_found");
    expect((await api("POST", `/v1/sessions/${id}/restore`, { body: {} })).status).toBe(200);
    const again = await watchEvents(id);
    expect(again.status).toBe(200);
    await again.until((e) => e.event === "leaf");
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("back again") });
    expect((await again.until((e) => e.event === "entry")).at(-1)?.data.message.content).toBe("back again");
    await again.close();
  });

  it("answers 409 to restoring a session that is not deleted, and 404 to one never created", async () => {
    const id = await createSession();
    expectError(await api("POST", `/v1/sessions/${id}/restore`, { body: {} }), 409, "already_exists");
    expectError(await api("POST", `/v1/sessions/${sid("never")}/restore`, { body: {} }), 404, "not_found");
  });

  it("purges after the recovery window: restore is then 404 and the object holds nothing", async () => {
    const tiny = apiWith({ RECOVERY_WINDOW_SECONDS: "0.05" });
    const id = await createSession();
    await fill(id);
    expect((await tiny("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 80));
    // The alarm purges it (it may have fired by itself already; else it runs now). Nothing else
    // reached the object since the delete.
    await runDurableObjectAlarm(sessionStub(id));
    expect(await storedRows(id)).toBe(0);
    expectError(await api("POST", `/v1/sessions/${id}/restore`, { body: {} }), 404, "not_found");
  });

  it("refuses to delete while the recovery window is set to something other than a time (503 misconfigured), deleting nothing", async () => {
    // Read as the default week, such a setting would purge sooner than the service was told to.
    for (const RECOVERY_WINDOW_SECONDS of ["30 days", "-1"]) {
      const id = await createSession();
      await fill(id);
      const misread = apiWith({ RECOVERY_WINDOW_SECONDS });
      expectError(await misread("DELETE", `/v1/sessions/${id}`), 503, "misconfigured");
      expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(200);
    }
  });

  it("refuses a restore after the window even before the alarm has run", async () => {
    // A window long enough that its alarm cannot fire before the test takes it away.
    const short = apiWith({ RECOVERY_WINDOW_SECONDS: "2" });
    const id = await createSession();
    await fill(id);
    expect((await short("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    // As if the alarm were late: the window is the rule, not the alarm.
    await runInDurableObject(sessionStub(id), (_instance, state) => state.storage.deleteAlarm());
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    expect(await storedRows(id)).toBeGreaterThan(0);
    expectError(await api("POST", `/v1/sessions/${id}/restore`, { body: {} }), 404, "not_found");
    expect(await storedRows(id)).toBe(0);
  });

  it("deletes for good at once with purge=true, a deleted session too", async () => {
    const live = await createSession();
    await fill(live);
    expect((await api("DELETE", `/v1/sessions/${live}?purge=true`)).status).toBe(204);
    expect(await storedRows(live)).toBe(0);
    expectError(await api("POST", `/v1/sessions/${live}/restore`, { body: {} }), 404, "not_found");

    const deleted = await createSession();
    await fill(deleted);
    expect((await api("DELETE", `/v1/sessions/${deleted}`)).status).toBe(204);
    expect((await api("DELETE", `/v1/sessions/${deleted}?purge=true`)).status).toBe(204);
    expect(await storedRows(deleted)).toBe(0);
    expectError(await api("DELETE", `/v1/sessions/${deleted}?purge=true`), 404, "not_found");
    expectError(await api("DELETE", `/v1/sessions/${sid()}?purge=false`), 404, "not_found");
    expectError(await api("DELETE", `/v1/sessions/${deleted}?purge=now`), 400, "invalid_request");
  });

  it("refuses a restore while the session's purge is under way, and lists nothing of it once purged", async () => {
    const id = await createSession();
    await fill(id);
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    const ledger = heldDirectoryCalls("releaseQuota");
    await withObjectEnv(sessionStub(id), { DIRECTORY: ledger.directory }, async () => {
      const purge = api("DELETE", `/v1/sessions/${id}?purge=true`);
      await ledger.reached();
      const restore = api("POST", `/v1/sessions/${id}/restore`, { body: {} });
      await within(restore, 300);
      ledger.letGo();
      expect((await purge).status).toBe(204);
      expectError(await restore, 404, "not_found");
    });
    expect(await storedRows(id)).toBe(0);
    expect(await listedIds()).not.toContain(id);
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
  });

  it("refuses a restore that a purge overtook while the restore asked for room, restoring nothing", async () => {
    // Under tenant-wide quotas, a restore asks the tenant's ledger for room before it restores.
    const key = "key-restore-quota";
    const id = await createSession({ key });
    const written = await api("POST", `/v1/sessions/${id}/entries`, { key, body: userMessage("keep me") });
    expect(written.status).toBe(201);
    expect((await api("DELETE", `/v1/sessions/${id}`, { key })).status).toBe(204);
    const ledger = heldDirectoryCalls("claimQuota");
    await withObjectEnv(sessionStub(id), { DIRECTORY: ledger.directory }, async () => {
      const restore = api("POST", `/v1/sessions/${id}/restore`, { key, body: {} });
      await ledger.reached();
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`, { key })).status).toBe(204);
      ledger.letGo();
      expectError(await restore, 404, "not_found");
    });
    expect(await storedRows(id, "tenant-restore-quota")).toBe(0);
    expect(await listedIds(key)).not.toContain(id);
    expectError(await api("GET", `/v1/sessions/${id}`, { key }), 404, "not_found");
    // Its room went back: the tenant holds two sessions again.
    const others = [await createSession({ key }), await createSession({ key })];
    for (const other of others) {
      expect((await api("DELETE", `/v1/sessions/${other}?purge=true`, { key })).status).toBe(204);
    }
  });

  it("keeps a session created under the id of a deleted one while the alarm purges that one", async () => {
    const id = await createSession();
    await fill(id);
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    // Its recovery window has closed: its alarm purges it.
    const stub = sessionStub(id);
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE lifecycle SET purge_at = 0");
    });
    await evictDurableObject(stub);
    const ledger = heldDirectoryCalls("releaseQuota");
    await withObjectEnv(stub, { DIRECTORY: ledger.directory }, async () => {
      const alarm = runDurableObjectAlarm(stub);
      await ledger.reached();
      const created = api("POST", "/v1/sessions", { body: { id } });
      await within(created, 300);
      ledger.letGo();
      await alarm;
      expect((await created).status).toBe(201);
    });
    expect(await info(id)).toMatchObject({ id, entryCount: 0 });
    await vi.waitFor(async () => expect(await listedIds()).toContain(id), { timeout: 5000, interval: 30 });
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("new") })).status).toBe(201);
  });

  /** Under tenant-wide quotas of one session, a create taking a deleted session's id asks for room. */
  const TAKEOVER_KEY = "key-takeover-quota";
  const TAKEOVER_TENANT = "tenant-takeover-quota";

  /** The tenant's one session, deleted, its purge due at its object's next alarm. */
  async function deletedDueForPurge() {
    const id = await createSession({ key: TAKEOVER_KEY });
    expect((await api("DELETE", `/v1/sessions/${id}`, { key: TAKEOVER_KEY })).status).toBe(204);
    const stub = sessionStub(id, TAKEOVER_TENANT);
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE lifecycle SET purge_at = 0");
    });
    await evictDurableObject(stub);
    return { id, stub };
  }

  it("keeps the room of a session created under a deleted one's id when the alarm's purge of that one begins just after", async () => {
    // Under tenant-wide quotas, a create taking a deleted session's id asks for room before the
    // deleted one is purged.
    const key = TAKEOVER_KEY;
    const { id, stub } = await deletedDueForPurge();
    // The create is admitted; the alarm's purge, begun while it was, gives its room up after that.
    const claims = heldDirectoryCalls("claimQuota");
    const releases = heldDirectoryCalls("releaseQuota", claims.directory);
    await withObjectEnv(stub, { DIRECTORY: releases.directory }, async () => {
      const created = api("POST", "/v1/sessions", { key, body: { id } });
      await claims.reached();
      const alarm = runDurableObjectAlarm(stub);
      await releases.reached();
      claims.letGo();
      await claims.answered();
      releases.letGo();
      await alarm;
      const answer = await created;
      expect(answer.status, answer.text).toBe(201);
    });
    expect(await info(id, key)).toMatchObject({ id, entryCount: 0 });
    await vi.waitFor(async () => expect((await api("GET", "/v1/usage", { key })).body.sessions).toBe(1), {
      timeout: 5000,
      interval: 30,
    });
    // The new session holds the tenant's one session: another is refused, and nothing is listed for it.
    const other = sid();
    const refused = await api("POST", "/v1/sessions", { key, body: { id: other } });
    expectError(refused, 413, "quota_exceeded");
    expect(refused.body.error.details).toEqual({ quota: "maxSessions", limit: 1 });
    expectError(await api("GET", `/v1/sessions/${other}`, { key }), 404, "not_found");
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`, { key })).status).toBe(204);
  });

  it("refuses a create under a deleted one's id whose room another session took while the alarm's purge gave it up", async () => {
    const key = TAKEOVER_KEY;
    const { id, stub } = await deletedDueForPurge();
    // Only the calls for this id are held: another session's go straight to the ledger.
    const claims = heldDirectoryCalls(
      "claimQuota",
      undefined,
      (args) => (args[1] as { sessionId: string }).sessionId === id,
    );
    const releases = heldDirectoryCalls("releaseQuota", claims.directory);
    const other = sid();
    await withObjectEnv(stub, { DIRECTORY: releases.directory }, async () => {
      const created = api("POST", "/v1/sessions", { key, body: { id } });
      await claims.reached();
      const alarm = runDurableObjectAlarm(stub);
      await releases.reached();
      claims.letGo();
      await claims.answered();
      // The create asks for room again once the purge has given it up; another session takes it first.
      claims.hold();
      releases.letGo();
      await alarm;
      await claims.reached(2);
      expect((await api("POST", "/v1/sessions", { key, body: { id: other } })).status).toBe(201);
      claims.letGo();
      const refused = await created;
      expectError(refused, 413, "quota_exceeded");
      expect(refused.body.error.details).toEqual({ quota: "maxSessions", limit: 1 });
    });
    // Nothing of it was written: the deleted session is gone, and the tenant holds the other one.
    expectError(await api("GET", `/v1/sessions/${id}`, { key }), 404, "not_found");
    expect(await storedRows(id, TAKEOVER_TENANT)).toBe(0);
    await vi.waitFor(async () => expect(await listedIds(key)).toEqual([other]), {
      timeout: 5000,
      interval: 30,
    });
    expect((await api("DELETE", `/v1/sessions/${other}?purge=true`, { key })).status).toBe(204);
  });

  it("keeps a session created over an incomplete import whose builder publishes it while it is purged", async () => {
    const id = sid("taken-over");
    const repo = new DurableRepo(env as unknown as DurableEnv, "tenant-a");
    // An import still writing the session: found by its builder alone until it publishes it.
    const building = await repo.initialize(newSessionHeader({ id }), false);
    await building.appendEntries([
      { type: "message", message: { role: "user", content: "partial", timestamp: 1 } },
    ]);
    const stub = sessionStub(id);
    const ledger = heldDirectoryCalls("releaseBlobs");
    await withObjectEnv(stub, { DIRECTORY: ledger.directory }, async () => {
      // Another import (or a create) takes the id over: the incomplete session is purged first.
      const created = api("POST", "/v1/sessions", { body: { id } });
      await ledger.reached();
      // The first import completes while the purge waits: it is not listed, as its session is going.
      const published = building.publish().then(
        () => undefined,
        (error: unknown) => error,
      );
      await within(published, 300);
      ledger.letGo();
      expect((await created).status).toBe(201);
      expect(await published).toMatchObject({ code: "not_found" });
    });
    expect(await info(id)).toMatchObject({ id, entryCount: 0 });
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("new") })).status).toBe(201);
  });

  it("gives a deleted session's id to a new session created, forked or imported with it", async () => {
    const source = await createSession();
    await fill(source);
    const exported = (await api("GET", `/v1/sessions/${source}/export`)).text;
    for (const how of ["create", "fork", "import"] as const) {
      const id = await createSession();
      await fill(id);
      expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
      const res =
        how === "create"
          ? await api("POST", "/v1/sessions", { body: { id } })
          : how === "fork"
            ? await api("POST", `/v1/sessions/${source}/fork`, { body: { entryId: "a1", id } })
            : await api("POST", `/v1/sessions/import?id=${id}`, {
                raw: exported,
                headers: { "Content-Type": "application/x-ndjson" },
              });
      expect(res.status, how).toBe(201);
      expect(res.body.id).toBe(id);
      expect(res.body.entryCount, how).toBe(how === "create" ? 0 : how === "fork" ? 3 : 5);
      // The deleted session is gone for good: nothing to restore, the new one stays.
      expectError(await api("POST", `/v1/sessions/${id}/restore`, { body: {} }), 409, "already_exists");
    }
  });

  it("refuses restores to read-only keys and to other tenants, changing nothing", async () => {
    const id = await createSession();
    await fill(id);
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expectError(
      await api("POST", `/v1/sessions/${id}/restore`, { key: KEY_A_READ, body: {} }),
      403,
      "forbidden",
    );
    expectError(await api("POST", `/v1/sessions/${id}/restore`, { key: KEY_B, body: {} }), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
    expect((await api("POST", `/v1/sessions/${id}/restore`, { body: {} })).status).toBe(200);
  });
});

describe("expiry", () => {
  it("lists expiresAt, refuses one in the past, and deletes the session (recoverably) when it comes", async () => {
    const past = new Date(Date.now() - 1000).toISOString();
    for (const expiresAt of [past, "soon"]) {
      const refused = sid();
      const res = await api("POST", "/v1/sessions", { body: { id: refused, expiresAt } });
      expectError(res, 400, "invalid_request");
      expectError(await api("GET", `/v1/sessions/${refused}`), 404, "not_found");
    }

    const later = new Date(Date.now() + 3600_000).toISOString();
    const id = await createSession({ body: { expiresAt: later } });
    expect((await api("GET", `/v1/sessions/${id}`)).body.expiresAt).toBe(later);
    await fill(id);
    expectError(
      await api("PATCH", `/v1/sessions/${id}`, { body: { expiresAt: past } }),
      400,
      "invalid_request",
    );
    expect((await api("GET", `/v1/sessions/${id}`)).body.expiresAt).toBe(later);

    const soon = new Date(Date.now() + 3_000).toISOString();
    const patched = await api("PATCH", `/v1/sessions/${id}`, { body: { expiresAt: soon } });
    expect(patched.body.expiresAt).toBe(soon);
    // The object wakes by then (a directory report may run first; it arms the expiry after it).
    await vi.waitFor(
      async () => {
        const alarm = await runInDurableObject(sessionStub(id), (_instance, state) =>
          state.storage.getAlarm(),
        );
        expect(alarm).not.toBeNull();
        expect(alarm as number).toBeLessThanOrEqual(Date.parse(soon));
      },
      { timeout: 2_500, interval: 20 },
    );
    await new Promise((resolve) => setTimeout(resolve, Date.parse(soon) - Date.now() + 100));
    await runDurableObjectAlarm(sessionStub(id));
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
    expect(await listedIds()).not.toContain(id);

    // Restored, it loses the expiry that has passed (else it would go again at once).
    const restored = await api("POST", `/v1/sessions/${id}/restore`, { body: {} });
    expect(restored.status).toBe(200);
    expect(restored.body).not.toHaveProperty("expiresAt");
    expect(restored.body.entryCount).toBe(5);
    await runDurableObjectAlarm(sessionStub(id));
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(200);
  });

  it("refuses an expiresAt past the latest allowed on every path, writing nothing", async () => {
    const far = ["2100-01-01T00:00:00.000Z", "2190-06-01T00:00:00.000Z", "9999-12-31T23:59:59.000Z"];
    for (const expiresAt of far) {
      const refused = sid();
      const res = await api("POST", "/v1/sessions", { body: { id: refused, expiresAt } });
      expectError(res, 400, "invalid_request");
      expect(res.text).toContain("2100-01-01T00:00:00.000Z");
      expectError(await api("GET", `/v1/sessions/${refused}`), 404, "not_found");

      const id = await createSession();
      expectError(await api("PATCH", `/v1/sessions/${id}`, { body: { expiresAt } }), 400, "invalid_request");
      expect((await api("GET", `/v1/sessions/${id}`)).body).not.toHaveProperty("expiresAt");

      const header = {
        type: "session",
        format: "cf-session",
        version: 1,
        id: sid(),
        createdAt: new Date().toISOString(),
        metadata: {},
        expiresAt,
      };
      const imported = await api("POST", "/v1/sessions/import", {
        raw: `${JSON.stringify(header)}\n`,
        headers: { "Content-Type": "application/x-ndjson" },
      });
      expectError(imported, 400, "invalid_request");
      expect(imported.body.error.message).toMatch(/^line 1:/);
      expectError(await api("GET", `/v1/sessions/${header.id}`), 404, "not_found");
    }
    const latest = "2099-12-31T23:59:59.000Z";
    const id = await createSession({ body: { expiresAt: latest } });
    expect((await api("GET", `/v1/sessions/${id}`)).body.expiresAt).toBe(latest);
  });

  it("restores and schedules a session whose stored expiry lies past what an alarm can be set to", async () => {
    const id = await createSession();
    await fill(id);
    // As a session stored before expiries were bounded holds it.
    await runInDurableObject(sessionStub(id), (_instance, state) => {
      const row = state.storage.sql.exec<{ header: string }>("SELECT header FROM session").one();
      const header = { ...JSON.parse(row.header), expiresAt: "9999-01-01T00:00:00.000Z" };
      state.storage.sql.exec("UPDATE session SET header = ?", JSON.stringify(header));
    });
    await evictDurableObject(sessionStub(id));
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    const restored = await api("POST", `/v1/sessions/${id}/restore`, { body: {} });
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body.entryCount).toBe(5);
    const update = await api("PATCH", `/v1/sessions/${id}`, { body: { name: "still here" } });
    expect(update.status, update.text).toBe(200);
  });

  it("clears expiresAt with null, and the session stays", async () => {
    // Far enough ahead that a busy machine clears it before it comes.
    const expiresAt = Date.now() + 2000;
    const id = await createSession({ body: { expiresAt: new Date(expiresAt).toISOString() } });
    const cleared = await api("PATCH", `/v1/sessions/${id}`, { body: { expiresAt: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body).not.toHaveProperty("expiresAt");
    await new Promise((resolve) => setTimeout(resolve, expiresAt + 50 - Date.now()));
    await runDurableObjectAlarm(sessionStub(id));
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(200);
  });
});

describe("tenant retention", () => {
  it("is read by any key and set by write keys only, on every shard", async () => {
    expect((await api("GET", "/v1/retention", { key: KEY_B })).body).toEqual({ idleDays: null });
    expectError(
      await api("PUT", "/v1/retention", { key: KEY_A_READ, body: { idleDays: 3 } }),
      403,
      "forbidden",
    );
    for (const idleDays of [0, -1, 1.5, "3", 40_000]) {
      expectError(
        await api("PUT", "/v1/retention", { key: KEY_B, body: { idleDays } }),
        400,
        "invalid_request",
      );
    }
    expect((await api("GET", "/v1/retention", { key: KEY_B })).body).toEqual({ idleDays: null });
    const set = await api("PUT", "/v1/retention", { key: KEY_B, body: { idleDays: 30 } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ idleDays: 30 });
    expect((await api("GET", "/v1/retention", { key: KEY_A_READ })).body).toEqual({ idleDays: null });
    expect((await api("GET", "/v1/retention", { key: KEY_B })).body).toEqual({ idleDays: 30 });
    for (let shard = 0; shard < shardCount(durableEnv); shard++) {
      expect(await directoryShard(durableEnv, "tenant-b", shard).retention()).toEqual({ idleDays: 30 });
    }
    expect((await api("PUT", "/v1/retention", { key: KEY_B, body: { idleDays: null } })).body).toEqual({
      idleDays: null,
    });
  });

  it("deletes sessions idle longer than the retention (recoverably), and keeps the others", async () => {
    const tenant = "tenant-a";
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const idle = await createSession();
    await fill(idle);
    await sleep(30);
    const midpoint = Date.now();
    await sleep(30);
    const busy = await createSession();
    await api("POST", `/v1/sessions/${busy}/entries`, { body: userMessage("still here") });
    const lagging = await createSession();
    await api("POST", `/v1/sessions/${lagging}/entries`, { body: userMessage("also here") });
    const listedCount = async (id: string) => {
      const res = await api("GET", "/v1/sessions?limit=200");
      return res.body.sessions.find((s: { id: string }) => s.id === id)?.entryCount;
    };
    await vi.waitFor(
      async () => {
        expect(await listedCount(idle)).toBe(5);
        expect(await listedCount(busy)).toBe(1);
        expect(await listedCount(lagging)).toBe(1);
      },
      { timeout: 5000, interval: 30 },
    );
    expect((await api("PUT", "/v1/retention", { body: { idleDays: 7 } })).status).toBe(200);
    // This shard has not heard of the lagging session's last write yet: its row looks idle.
    const lagShard = directoryShard(durableEnv, tenant, shardOf(lagging, shardCount(durableEnv)));
    await runInDurableObject(lagShard, (_instance, state) => {
      state.storage.sql.exec(
        "UPDATE sessions SET updated_at = '2000-01-01T00:00:00.000Z', version = version - 1 WHERE id = ?",
        lagging,
      );
    });
    const sweepAll = async (at: number) => {
      let expired = 0;
      for (let shard = 0; shard < shardCount(durableEnv); shard++) {
        expired += await runInDurableObject(directoryShard(durableEnv, tenant, shard), (directory) =>
          directory.sweep(at),
        );
      }
      return expired;
    };
    // Nothing has been idle for seven days yet.
    expect(await sweepAll(Date.now())).toBe(0);
    // Seven days after the midpoint: `idle` wrote before it, `busy` and `lagging` after.
    expect(await sweepAll(midpoint + 7 * 24 * 3600_000)).toBeGreaterThanOrEqual(1);
    expectError(await api("GET", `/v1/sessions/${idle}`), 404, "not_found");
    expect(await listedIds()).not.toContain(idle);
    expect((await api("GET", `/v1/sessions/${busy}`)).status).toBe(200);
    expect((await api("GET", `/v1/sessions/${lagging}`)).status).toBe(200);
    // The lagging session, asked, reported again: the shard caught up.
    await vi.waitFor(
      async () => {
        const row = await runInDurableObject(lagShard, (_instance, state) =>
          state.storage.sql
            .exec<{ updated_at: string }>("SELECT updated_at FROM sessions WHERE id = ?", lagging)
            .one(),
        );
        expect(Date.parse(row.updated_at)).toBeGreaterThan(midpoint);
      },
      { timeout: 5000, interval: 30 },
    );
    // Recoverable like any delete; restored, it is idle from then on, and the next sweep keeps it.
    expect((await api("POST", `/v1/sessions/${idle}/restore`, { body: {} })).body.entryCount).toBe(5);
    expect(await sweepAll(midpoint + 7 * 24 * 3600_000)).toBe(0);
    expect((await api("GET", `/v1/sessions/${idle}`)).body.entryCount).toBe(5);
    expect((await api("PUT", "/v1/retention", { body: { idleDays: null } })).status).toBe(200);
    expect(await sweepAll(Date.now() + 365 * 24 * 3600_000)).toBe(0);
  });
});
