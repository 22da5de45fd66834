import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { unwrap } from "../../src/core/errors";
import { newSessionHeader } from "../../src/core/header";
import { newId } from "../../src/core/ids";
import type { DurableEnv } from "../../src/durable/internal";
import { sessionObjectName } from "../../src/durable/internal";
import { directoryShard, shardCount, shardOf } from "../../src/durable/names";
import type { SessionObject } from "../../src/durable/session/session-object";

/*
 * One owner of a session object's alarm: each part says when its work is due (an expiry, a
 * generation's abandonment, a purge, a directory report) and the alarm comes by the earliest. No
 * write, failed report or restart pushes another part's work back past its due time.
 */

const TENANT = "tenant-c";
const durableEnv = env as unknown as DurableEnv;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const question = { type: "message", message: { role: "user", content: "Hello?", timestamp: 1 } };

/** Runs `work` inside the session's object, with the time its alarm is set for. */
function inObject<T>(
  id: string,
  work: (object: SessionObject, alarm: () => Promise<number | null>) => Promise<T>,
) {
  const stub = durableEnv.SESSIONS.getByName(sessionObjectName(TENANT, id));
  return runInDurableObject(stub, (object, state) => work(object, () => state.storage.getAlarm()));
}

/** A session of tenant C, created in its object as the router creates one. */
async function create(id: string, expiresAt?: number): Promise<void> {
  const header = newSessionHeader({
    id,
    ...(expiresAt ? { expiresAt: new Date(expiresAt).toISOString() } : {}),
  });
  const shard = shardOf(id, shardCount(durableEnv));
  await inObject(id, async (object) => unwrap(await object.init(TENANT, header, { shard })));
}

async function openGeneration(
  id: string,
  abandonAfterSeconds: number,
): Promise<{ gid: string; due: number }> {
  const generation = await inObject(id, async (object) =>
    unwrap(await object.openGeneration({ abandonAfterSeconds })),
  );
  return { gid: generation.id, due: Date.parse(generation.openedAt) + abandonAfterSeconds * 1000 };
}

describe("the session object's alarm", () => {
  it("comes by a session's expiry, whatever write comes just before it", async () => {
    const id = newId();
    const expiresAt = Date.now() + 1000;
    await create(id, expiresAt);
    expect(await inObject(id, async (_, alarm) => alarm())).toBe(expiresAt);
    // Just before the expiry, a write, whose directory report comes a little later.
    await sleep(Math.max(0, expiresAt - Date.now() - 10));
    await inObject(id, async (object, alarm) => {
      const written = await object.appendEntries([question], {});
      const at = await alarm();
      // Set no later than the expiry (at once when the write came after it, before the alarm ran);
      // or the expiry came first, and the write found no session.
      if (written.ok)
        expect(at ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(Math.max(expiresAt, Date.now()));
      else expect(written.error.code).toBe("not_found");
    });
  });

  it("comes by a generation's abandonment, whatever write comes just before it", async () => {
    const id = newId();
    await create(id);
    const { gid, due } = await openGeneration(id, 1);
    await sleep(Math.max(0, due - Date.now() - 10));
    await inObject(id, async (object, alarm) => {
      unwrap(await object.appendEntries([question], {}));
      const at = await alarm();
      // Set no later than the generation's due time (at once when it passed before the alarm ran);
      // or that time came, and it was stopped.
      if (unwrap(await object.getGeneration(gid)).state === "open") {
        expect(at ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(Math.max(due, Date.now()));
      }
    });
  });

  it("comes by a generation's abandonment though directory reports fail and the object restarts", async () => {
    const id = newId();
    await create(id);
    // The session's directory shard refuses its reports from now on (each failure waits longer).
    const shard = directoryShard(durableEnv, TENANT, shardOf(id, shardCount(durableEnv)));
    await runInDurableObject(shard, (_, state) => {
      for (const when of ["INSERT", "UPDATE"]) {
        state.storage.sql.exec(
          `CREATE TRIGGER refuse_${when.toLowerCase()} BEFORE ${when} ON sessions
           WHEN NEW.id = '${id}' BEGIN SELECT RAISE(ABORT, 'the directory is down'); END`,
        );
      }
    });
    const { gid, due } = await openGeneration(id, 3);
    for (let round = 0; round < 3; round++) {
      await inObject(id, async (object) => unwrap(await object.appendEntries([question], {})));
      await sleep(100);
      await evictDurableObject(durableEnv.SESSIONS.getByName(sessionObjectName(TENANT, id)));
      const at = await inObject(id, async (_, alarm) => alarm());
      expect(at ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(due);
    }
    await sleep(due - Date.now() + 200);
    const generation = await inObject(id, async (object) => unwrap(await object.getGeneration(gid)));
    expect(generation).toMatchObject({ state: "stopped", stoppedBy: "abandoned" });
    await runInDurableObject(shard, (_, state) => {
      state.storage.sql.exec("DROP TRIGGER refuse_insert");
      state.storage.sql.exec("DROP TRIGGER refuse_update");
    });
  });

  it("comes by a deleted session's purge, whatever was due after it", async () => {
    const id = newId();
    await create(id);
    await inObject(id, async (object, alarm) => {
      unwrap(await object.appendEntries([question], {}));
      unwrap(await object.delete(1000));
      // The purge is due a second after the delete, by the object's clock, read once it answered.
      const purgeAt = Date.now() + 1000;
      expect((await alarm()) ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(purgeAt);
    });
  });

  it("stops an abandoned generation while the session's expiry fails, and comes back for the expiry", async () => {
    const id = newId();
    await create(id, Date.now() + 1000);
    // Marking the expired session deleted fails while this stands.
    const refuse = (sql: string) =>
      runInDurableObject(durableEnv.SESSIONS.getByName(sessionObjectName(TENANT, id)), (_, state) => {
        state.storage.sql.exec(sql);
      });
    await refuse(
      "CREATE TRIGGER refuse_lifecycle BEFORE INSERT ON lifecycle BEGIN SELECT RAISE(ABORT, 'storage refuses'); END",
    );
    const { gid } = await openGeneration(id, 2);
    await vi.waitFor(
      async () => {
        const generation = await inObject(id, async (object) => unwrap(await object.getGeneration(gid)));
        expect(generation).toMatchObject({ state: "stopped", stoppedBy: "abandoned" });
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(await inObject(id, async (object) => (await object.getInfo()).ok)).toBe(true);
    // Set again once the alarm that stopped it is done.
    await vi.waitFor(async () => expect(await inObject(id, async (_, alarm) => alarm())).not.toBeNull(), {
      timeout: 2_000,
      interval: 50,
    });
    await refuse("DROP TRIGGER refuse_lifecycle");
    await vi.waitFor(
      async () => {
        const info = await inObject(id, async (object) => object.getInfo());
        expect(info.ok ? "listed" : info.error.code).toBe("not_found");
      },
      { timeout: 20_000, interval: 200 },
    );
  });
});
