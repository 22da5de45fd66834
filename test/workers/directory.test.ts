import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Result } from "../../src/core/errors";
import { unwrap } from "../../src/core/errors";
import type { ListOptions, SessionInfo, SessionPage } from "../../src/core/session-schemas";
import { inProject } from "../../src/core/session-schemas";
import type { DurableEnv } from "../../src/durable/internal";
import { sessionObjectName } from "../../src/durable/internal";
import { directoryShard, shardCount, shardOf } from "../../src/durable/names";
import { rollBackDirectory } from "./directory-rollback";
import { api, createSession, rowsReadBy, sid, userMessage } from "./helpers";

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

  it("reads none of the other tombstones to remove a session, and still drops those a week old", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    const now = Date.now();
    const old = now - 8 * 24 * 3600 * 1000;
    await runInDurableObject(directory, (_instance, state) => {
      for (let i = 0; i < 3000; i++) {
        const deletedAt = i < 10 ? old : now;
        state.storage.sql.exec(
          "INSERT INTO tombstones (id, incarnation, deleted_at) VALUES (?, 'i', ?)",
          `t${i}`,
          deletedAt,
        );
      }
    });
    const id = sid();
    await directory.put({ info: fakeInfo(id, "2026-01-01T00:00:01.000Z", 1), incarnation: "i", version: 1 });
    const { rows, left } = await runInDurableObject(directory, async (instance, state) => {
      const { rows } = await rowsReadBy(state.storage.sql, () => instance.remove(id, "i"));
      const count = state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM tombstones").one().n;
      return { rows, left: count };
    });
    expect(rows).toBeLessThan(50);
    expect(left).toBe(2991);
    expect((await list(directory)).sessions).toEqual([]);
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

  it("keeps a session that reported while its retention sweep heard it was gone", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    await directory.setRetention({ idleDays: 5 }, `tenant-${sid()}`, 0);
    // The sweep a retention starts at once has run: the next is an interval away.
    await vi.waitFor(
      async () => {
        const next = await runInDurableObject(directory, (_instance, state) => state.storage.getAlarm());
        expect(next).toBeGreaterThan(Date.now() + 30 * 60 * 1000);
      },
      { timeout: 10_000, interval: 20 },
    );
    // Idle rows of sessions whose objects hold none: the sweep hears "missing" of each.
    const [created, restored] = [sid(), sid()];
    const long = "2026-01-01T00:00:01.000Z";
    await directory.put({ info: fakeInfo(created, long, 1), incarnation: "before", version: 1 });
    await directory.put({ info: fakeInfo(restored, long, 1), incarnation: "same", version: 1 });
    const now = new Date().toISOString();
    await runInDurableObject(directory, async (instance) => {
      const sweeping = instance.sweep(Date.now());
      // While it waits for their answers, the id is created again, and the other session restored.
      await instance.put({ info: fakeInfo(created, now, 2), incarnation: "after", version: 1 });
      await instance.put({ info: fakeInfo(restored, now, 3), incarnation: "same", version: 2 });
      expect(await sweeping).toBe(0);
    });
    const page = await list(directory, {});
    expect(page.sessions.map((s) => [s.id, s.entryCount]).sort()).toEqual(
      [
        [created, 2],
        [restored, 3],
      ].sort(),
    );
    // Unchanged since the sweep read it, a row whose session is gone is dropped.
    await directory.put({ info: fakeInfo(created, long, 4), incarnation: "later", version: 1 });
    await runInDurableObject(directory, (instance) => instance.sweep(Date.now()));
    expect((await list(directory, {})).sessions.map((s) => s.id)).toEqual([restored]);
  });

  it("keeps its retention sweep going when a sweep fails", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    // Its storage fails the sweep's first read, once.
    let failed = false;
    await runInDurableObject(directory, (_instance, state) => {
      const sql = state.storage.sql;
      const exec = sql.exec;
      sql.exec = ((query: string, ...bindings: SqlStorageValue[]) => {
        if (!query.includes("updated_at <")) return exec.call(sql, query, ...bindings);
        sql.exec = exec;
        failed = true;
        throw new Error("disk I/O error");
      }) as typeof sql.exec;
    });
    // A retention set sweeps at once.
    await directory.setRetention({ idleDays: 5 }, `tenant-${sid()}`, 0);
    await vi.waitFor(() => expect(failed).toBe(true), { timeout: 10_000, interval: 5 });
    // The next sweep is set by the failed one, not left to the runtime's few retries.
    const next = await runInDurableObject(directory, (_instance, state) => state.storage.getAlarm());
    expect(next).toBeGreaterThan(Date.now() + 30 * 60 * 1000);
  });
});

type Directory = ReturnType<typeof env.DIRECTORY.getByName>;

describe("session directory, by project", () => {
  const project = "github.com/acme/app";
  /** Sessions recording the project, a folder in it, keys beside it, and none. */
  const recorded: Array<[string, unknown]> = [
    ["root", project],
    ["folder", `${project}/services/api`],
    ["deep", `${project}/services/api/v2`],
    ["dash", `${project}-fork`],
    ["joined", `${project}services`],
    ["dot", `${project}.old`],
    ["zero", `${project}0`],
    ["number", 7],
    ["none", undefined],
  ];

  async function putAll(directory: Directory) {
    for (const [i, [id, value]] of recorded.entries()) {
      const info = {
        ...fakeInfo(id, `2026-01-01T00:00:${String(20 - i).padStart(2, "0")}.000Z`, 1),
        createdAt: `2026-01-01T00:00:${String(i).padStart(2, "0")}.000Z`,
        metadata: value === undefined ? {} : { project: value },
      };
      await directory.put({ info, incarnation: "x", version: 1 });
    }
  }

  /** Every page of a listing, a session at a time. */
  async function listedIds(directory: Directory, options: ListOptions) {
    const ids: string[] = [];
    let cursor: string | null | undefined;
    do {
      const page = await list(directory, { ...options, limit: 1, cursor });
      ids.push(...page.sessions.map((s) => s.id));
      cursor = page.nextCursor;
    } while (cursor);
    return ids;
  }

  /** What a filter over the whole listing finds: the sessions `inProject` accepts, in its order. */
  async function scanned(directory: Directory, options: ListOptions) {
    const { project: key, ...rest } = options;
    const all = await list(directory, { ...rest, limit: 200 });
    return all.sessions.filter((s) => inProject(s.metadata.project, key ?? "")).map((s) => s.id);
  }

  async function expectListings(directory: Directory) {
    for (const order of ["updated", "created"] as const) {
      for (const key of [project, `${project}/services`, `${project}/services/api/v2`, `${project}/none`]) {
        const options = { order, project: key };
        expect(await listedIds(directory, options)).toEqual(await scanned(directory, options));
      }
    }
  }

  it("lists a project's sessions in a directory written before projects were indexed", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    await putAll(directory);
    // As a directory of the release before: no project column, nor its indexes.
    await runInDurableObject(directory, (_instance, state) => {
      rollBackDirectory(state.storage.sql, 6);
    });
    await evictDurableObject(directory);
    expect(await listedIds(directory, { project })).toEqual(["root", "folder", "deep"]);
    expect(await listedIds(directory, { order: "created", project })).toEqual(["deep", "folder", "root"]);
    await expectListings(directory);
    // A later report moves a session to another project.
    const moved = { ...fakeInfo("none", "2026-01-01T00:00:59.000Z", 2), metadata: { project } };
    await directory.put({ info: moved, incarnation: "x", version: 2 });
    expect(await listedIds(directory, { project })).toEqual(["none", "root", "folder", "deep"]);
    await expectListings(directory);
  });

  it("reads a project's rows through its index, in either order", async () => {
    const directory = env.DIRECTORY.getByName(`dir-${sid()}`);
    await putAll(directory);
    await runInDurableObject(directory, async (instance, state) => {
      const sql = state.storage.sql;
      const exec = sql.exec;
      for (const order of ["updated", "created"] as const) {
        const plans: string[] = [];
        // Each statement the listing runs is planned as it runs, with its own bindings.
        sql.exec = ((query: string, ...bindings: unknown[]) => {
          if (query.includes("FROM sessions") && !query.startsWith("EXPLAIN")) {
            const plan = exec.call(sql, `EXPLAIN QUERY PLAN ${query}`, ...bindings).toArray();
            plans.push(plan.map((row) => String(row.detail)).join("\n"));
          }
          return exec.call(sql, query, ...bindings);
        }) as typeof exec;
        try {
          unwrap(await instance.list({ order, project }));
        } finally {
          sql.exec = exec;
        }
        expect(plans).toHaveLength(1);
        expect(plans[0]).toContain(`USING INDEX sessions_by_project_${order}`);
        expect(plans[0]).not.toMatch(/SCAN sessions(?! USING)/);
      }
    });
  });
});
