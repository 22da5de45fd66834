import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { SessionInfo, SessionPage } from "../../src/core/session-schemas";
import type { DurableEnv } from "../../src/durable/internal";
import { directoryObjectName, directoryShard, shardCount, shardOf } from "../../src/durable/names";
import { mergePages } from "../../src/durable/router/directory-shards";
import { streamCursor } from "../../src/durable/router/tenant-streams";
import { api, apiWith, expectError, KEY_B, sid, userMessage } from "./helpers";

/*
 * The tenant's directory in shards: each session reports to the shard its id hashes to when it is
 * created, listing merges every shard, and the shard count can grow without losing or repeating
 * a session.
 */

const durableEnv = env as unknown as DurableEnv;

/** The ids each shard of tenant A lists, read from the shards themselves. */
async function rowsByShard(shards: number): Promise<string[][]> {
  const out: string[][] = [];
  for (let shard = 0; shard < shards; shard++) {
    out.push(
      await runInDurableObject(directoryShard(durableEnv, "tenant-a", shard), (_instance, state) =>
        state.storage.sql
          .exec<{ id: string }>("SELECT id FROM sessions ORDER BY id")
          .toArray()
          .map((row) => row.id),
      ),
    );
  }
  return out;
}

/** Every session of the listing, page by page. */
async function listAll(call: ReturnType<typeof apiWith>, order: "updated" | "created", limit: number) {
  const ids: string[] = [];
  const keys: string[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: SessionPage } = await call(
      "GET",
      `/v1/sessions?limit=${limit}&order=${order}${cursor ? `&cursor=${cursor}` : ""}`,
    );
    expect(res.status).toBe(200);
    expect(res.body.sessions.length).toBeLessThanOrEqual(limit);
    for (const info of res.body.sessions) {
      ids.push(info.id);
      keys.push(order === "updated" ? info.updatedAt : info.createdAt);
    }
    cursor = res.body.nextCursor;
  } while (cursor);
  return { ids, keys };
}

describe("directory shards", () => {
  it("hashes ids the same way everywhere (FNV-1a), within the shard count", () => {
    expect(shardOf("a", 4)).toBe(0xe40c292c % 4);
    expect(shardOf("a", 7)).toBe(0xe40c292c % 7);
    expect(shardOf("b", 4)).toBe(0xe70c2de5 % 4);
    expect(shardOf("ñandú", 7)).toBe(0xb48f3ccb % 7);
    expect(shardOf("anything", 1)).toBe(0);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 400; i++) (counts[shardOf(`session-${i}`, 4)] as number)++;
    for (const count of counts) expect(count).toBeGreaterThan(60);
    expect(shardCount({ DIRECTORY_SHARDS: undefined })).toBe(1);
    expect(shardCount({ DIRECTORY_SHARDS: " " })).toBe(1);
    expect(shardCount({ DIRECTORY_SHARDS: "1000" })).toBe(64);
  });

  it("refuses to serve while the shard count is set to something other than a count (503 misconfigured), creating nothing", async () => {
    // Read as one shard, such a setting would hide the sessions of every other shard.
    for (const DIRECTORY_SHARDS of ["0", "-4", "four", "2.5"]) {
      expect(() => shardCount({ DIRECTORY_SHARDS }), DIRECTORY_SHARDS).toThrow(/DIRECTORY_SHARDS/);
      const misread = apiWith({ DIRECTORY_SHARDS });
      const id = sid("misread");
      expectError(await misread("POST", "/v1/sessions", { body: { id } }), 503, "misconfigured");
      expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
      expectError(await misread("GET", "/v1/sessions"), 503, "misconfigured");
      expectError(await misread("GET", "/v1/search?q=x"), 503, "misconfigured");
    }
  });

  it("names shards so that no tenant's shard is another tenant's", () => {
    // Shard 0 keeps the name of the unsharded directory; other names are JSON arrays.
    expect(directoryObjectName("acme", 0)).toBe("acme");
    expect(directoryObjectName("acme", 1)).toBe('["acme",1]');
    // A tenant named like a shard of another gets a name of its own.
    expect(directoryObjectName('["acme",1]', 0)).toBe('["[\\"acme\\",1]",0]');
    const names = new Set<string>();
    for (const tenant of ["acme", '["acme",1]', '["acme",0]', "[", "acme,1"])
      for (let shard = 0; shard < 4; shard++) names.add(directoryObjectName(tenant, shard));
    expect(names.size).toBe(20);
  });

  it("merges shard pages newest first by (key, id), and knows when more remain", () => {
    const info = (id: string, updatedAt: string) =>
      ({
        id,
        updatedAt,
        createdAt: updatedAt,
        metadata: {},
        leafId: null,
        entryCount: 0,
        messageCount: 0,
      }) as SessionInfo;
    const pages: SessionPage[] = [
      { sessions: [info("b", "2026-01-03"), info("a", "2026-01-01")], nextCursor: null },
      { sessions: [info("c", "2026-01-03"), info("d", "2026-01-02")], nextCursor: "more" },
      { sessions: [], nextCursor: null },
    ];
    const merged = mergePages(pages, { limit: 2 });
    expect(merged.sessions.map((s) => s.id)).toEqual(["c", "b"]);
    expect(merged.nextCursor).not.toBeNull();
    const all = mergePages(
      pages.map((p) => ({ ...p, nextCursor: null })),
      { limit: 10 },
    );
    expect(all.sessions.map((s) => s.id)).toEqual(["c", "b", "d", "a"]);
    expect(all.nextCursor).toBeNull();
  });

  it("ends a merged page where the first shard cut short stopped, so the next page skips nothing", () => {
    const info = (id: string, updatedAt: string) =>
      ({ id, updatedAt, createdAt: updatedAt, metadata: {}, leafId: null, entryCount: 0 }) as SessionInfo;
    // The first shard sent one session of its page (the rest held too much), the second all it has.
    const pages: SessionPage[] = [
      { sessions: [info("a", "2026-01-05")], nextCursor: "more" },
      {
        sessions: [info("b", "2026-01-06"), info("c", "2026-01-04"), info("d", "2026-01-01")],
        nextCursor: null,
      },
    ];
    const merged = mergePages(pages, { limit: 10 });
    expect(merged.sessions.map((s) => s.id)).toEqual(["b", "a"]);
    expect(merged.nextCursor).not.toBeNull();
  });

  it("grows from 1 to 4 shards without losing or repeating a session", async () => {
    const one = apiWith({ DIRECTORY_SHARDS: "1" });
    const four = apiWith({ DIRECTORY_SHARDS: "4" });
    const before: string[] = [];
    for (let i = 0; i < 24; i++) {
      const id = sid("old");
      expect((await one("POST", "/v1/sessions", { body: { id } })).status).toBe(201);
      before.push(id);
    }
    // With one shard, every session is in shard 0.
    let shards = await rowsByShard(4);
    expect(shards[0]?.sort()).toEqual([...before].sort());
    expect(shards.slice(1).flat()).toEqual([]);

    const after: string[] = [];
    for (let i = 0; i < 24; i++) {
      const id = sid("new");
      expect((await four("POST", "/v1/sessions", { body: { id } })).status).toBe(201);
      after.push(id);
    }
    // Sessions from before keep reporting to shard 0 when they write after the growth.
    for (const id of before.slice(0, 8)) {
      expect(
        (await four("POST", `/v1/sessions/${id}/entries`, { body: userMessage("after growth") })).status,
      ).toBe(201);
    }
    await vi.waitFor(
      async () => {
        const res = await four("GET", "/v1/sessions?limit=200");
        const written = res.body.sessions.filter((s: SessionInfo) => before.slice(0, 8).includes(s.id));
        expect(written.map((s: SessionInfo) => s.entryCount)).toEqual(Array(8).fill(1));
      },
      { timeout: 5000, interval: 30 },
    );
    shards = await rowsByShard(4);
    const everywhere = shards.flat();
    expect(everywhere.sort()).toEqual([...before, ...after].sort());
    for (const id of before) expect(shards[0]).toContain(id);
    for (const id of after) expect(shards[shardOf(id, 4)]).toContain(id);
    expect(shards.filter((rows) => rows.some((id) => after.includes(id))).length).toBeGreaterThan(1);

    // Listing reads every shard: each session exactly once, in order, across small pages.
    for (const order of ["updated", "created"] as const) {
      const { ids, keys } = await listAll(four, order, 5);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort()).toEqual([...before, ...after].sort());
      for (let i = 1; i < keys.length; i++) expect((keys[i - 1] as string) >= (keys[i] as string)).toBe(true);
    }
    // Shrinking back would hide the sessions of the shards above the count: the count only grows.
    const { ids: seenByOne } = await listAll(one, "created", 200);
    expect(seenByOne.length).toBeLessThan(before.length + after.length);
    expect(seenByOne).toEqual(expect.arrayContaining(before));
  });

  it("gives shards added by growth the retention set before them", async () => {
    const one = apiWith({ DIRECTORY_SHARDS: "1" });
    const four = apiWith({ DIRECTORY_SHARDS: "4" });
    expect((await one("PUT", "/v1/retention", { key: KEY_B, body: { idleDays: 9 } })).status).toBe(200);
    let id = sid("grown");
    while (shardOf(id, 4) === 0) id = sid("grown");
    expect((await four("POST", "/v1/sessions", { key: KEY_B, body: { id } })).status).toBe(201);
    const shard = directoryShard(durableEnv, "tenant-b", shardOf(id, 4));
    expect(await shard.retention()).toEqual({ idleDays: 9 });
    expect((await four("GET", "/v1/retention", { key: KEY_B })).body).toEqual({ idleDays: 9 });
  });

  it("refuses a cursor of another listing: another order, or the stream listing's", async () => {
    for (let i = 0; i < 3; i++)
      expect((await api("POST", "/v1/sessions", { body: { id: sid("kind") } })).status).toBe(201);
    const updated = await api("GET", "/v1/sessions?limit=1&order=updated");
    expect(updated.body.nextCursor).toEqual(expect.any(String));
    expectError(
      await api("GET", `/v1/sessions?limit=1&order=created&cursor=${updated.body.nextCursor}`),
      400,
      "invalid_request",
    );
    const streams = streamCursor("some/stream");
    expectError(await api("GET", `/v1/sessions?cursor=${streams}`), 400, "invalid_request");
    expectError(await api("GET", `/v1/streams?cursor=${updated.body.nextCursor}`), 400, "invalid_request");
  });

  it("lists through the configured shards (4 in these tests)", async () => {
    expect(shardCount(durableEnv)).toBe(4);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const id = sid("spread");
      expect((await api("POST", "/v1/sessions", { body: { id } })).status).toBe(201);
      ids.push(id);
    }
    const { ids: listed } = await listAll(apiWith({}), "created", 3);
    expect(listed).toEqual(expect.arrayContaining(ids));
    expect(new Set(listed).size).toBe(listed.length);
  });

  it("holds in a page no more of its sessions' infos than the Worker may hold at once, and pages them all", async () => {
    // 18 sessions of 1 MiB system prompts: more than a page holds (16 Mi characters of JSON).
    const prompt = "p".repeat(1024 * 1024 - 2);
    const ids: string[] = [];
    for (let i = 0; i < 18; i++) {
      const id = sid("large");
      const made = await api("POST", "/v1/sessions", { key: KEY_B, body: { id, systemPrompt: prompt } });
      expect(made.status).toBe(201);
      ids.push(id);
    }
    const listed: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { status: number; text: string; body: SessionPage } = await api(
        "GET",
        `/v1/sessions?limit=200&order=created${cursor ? `&cursor=${cursor}` : ""}`,
        {
          key: KEY_B,
        },
      );
      expect(res.status).toBe(200);
      expect(res.text.length).toBeLessThan(17 * 1024 * 1024);
      for (const info of res.body.sessions as SessionInfo[])
        if (info.id.startsWith("large-")) listed.push(info.id);
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBeGreaterThan(1);
    expect(listed.sort()).toEqual([...ids].sort());
  });
});
