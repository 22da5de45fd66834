import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Result } from "../../src/core/errors";
import { unwrap } from "../../src/core/errors";
import type { ListOptions, SessionInfo, SessionPage } from "../../src/core/session-schemas";
import type { DurableEnv } from "../../src/durable/internal";
import { sessionObjectName } from "../../src/durable/internal";
import { directoryShard, shardCount, shardOf } from "../../src/durable/names";
import { api, createSession, sid, userMessage } from "./helpers";

function fakeInfo(id: string, updatedAt: string, entryCount: number): SessionInfo {
  return {
    id,
    metadata: {},
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt,
    leafId: null,
    entryCount,
    messageCount: 0,
    bytes: entryCount * 100,
  };
}

/** The directory's RPC answer, typed (RPC stubs type `unknown` fields as never). */
async function list(
  directory: { list(options: ListOptions): Promise<unknown> },
  options: ListOptions = {},
): Promise<SessionPage> {
  return unwrap((await directory.list(options)) as Result<SessionPage>);
}

describe("session directory", () => {
  it("applies reports idempotently and ignores older versions", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    const id = sid();
    await directory.put({ info: fakeInfo(id, "2026-01-01T00:00:02.000Z", 2), incarnation: "i1", version: 2 });
    await directory.put({ info: fakeInfo(id, "2026-01-01T00:00:01.000Z", 1), incarnation: "i1", version: 1 });
    await directory.put({ info: fakeInfo(id, "2026-01-01T00:00:02.000Z", 2), incarnation: "i1", version: 2 });
    const page = await list(directory, {});
    expect(page.sessions.map((s) => [s.id, s.entryCount])).toEqual([[id, 2]]);
  });

  it("never lists a removed session again, even if a late report arrives", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    const id = sid();
    await directory.put({
      info: fakeInfo(id, "2026-01-01T00:00:01.000Z", 1),
      incarnation: "old",
      version: 1,
    });
    await directory.remove(id, "old");
    await directory.put({
      info: fakeInfo(id, "2026-01-01T00:00:05.000Z", 5),
      incarnation: "old",
      version: 5,
    });
    let page = await list(directory, {});
    expect(page.sessions).toEqual([]);
    // A new life of the same id is listed.
    await directory.put({
      info: fakeInfo(id, "2026-01-01T00:00:06.000Z", 0),
      incarnation: "new",
      version: 1,
    });
    page = await list(directory, {});
    expect(page.sessions.map((s) => s.id)).toEqual([id]);
  });

  it("orders by update or creation, newest first, and pages with a cursor", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    for (let i = 0; i < 5; i++) {
      const info = {
        ...fakeInfo(`s${i}`, `2026-01-01T00:00:0${9 - i}.000Z`, i),
        createdAt: `2026-01-01T00:00:0${i}.000Z`,
      };
      await directory.put({ info, incarnation: "x", version: 1 });
    }
    const updated = await list(directory, { limit: 3 });
    expect(updated.sessions.map((s) => s.id)).toEqual(["s0", "s1", "s2"]);
    const next = await list(directory, { limit: 3, cursor: updated.nextCursor });
    expect(next.sessions.map((s) => s.id)).toEqual(["s3", "s4"]);
    expect(next.nextCursor).toBeNull();
    const created = await list(directory, { order: "created" });
    expect(created.sessions.map((s) => s.id)).toEqual(["s4", "s3", "s2", "s1", "s0"]);
  });

  it("hears of every write through the session's alarm, which runs again until it gets through", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("x") });
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    // Runs the pending alarm, unless it fired by itself already (and may still be reporting).
    await runDurableObjectAlarm(stub);
    const durableEnv = env as unknown as DurableEnv;
    const directory = directoryShard(durableEnv, "tenant-a", shardOf(id, shardCount(durableEnv)));
    await vi.waitFor(
      async () => {
        const page = await list(directory, { limit: 200 });
        expect(page.sessions.find((s) => s.id === id)?.entryCount).toBe(1);
      },
      { timeout: 10_000, interval: 50 },
    );
    // After a write, a report is pending until the alarm has run (on a slow machine it may have run
    // already); either way the directory hears of the write.
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("y") });
    const pending = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    if (pending !== null) await runDurableObjectAlarm(stub);
    await vi.waitFor(
      async () => {
        const page = await list(directory, { limit: 200 });
        expect(page.sessions.find((s) => s.id === id)?.entryCount).toBe(2);
      },
      { timeout: 10_000, interval: 50 },
    );
  });
});
