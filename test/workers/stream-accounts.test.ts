import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { newId } from "../../src/core/ids";
import type { DurableEnv } from "../../src/durable/env";
import { directoryShard, shardCount } from "../../src/durable/names";
import { streamObjectName } from "../../src/durable/stream";
import {
  api,
  directoryReplacing,
  expectError,
  heldClaimAnswers,
  KEY_B,
  rowsReadBy,
  sid,
  userMessage,
  withObjectEnv,
} from "./helpers";
import { append, call, create, expectStreamError, head, readAll, streamObjects } from "./stream-helpers";

/*
 * A tenant's streams in its listing, usage, quotas and retention: tenant-few-streams may hold 3
 * streams, tenant-stream-bytes 60,000 bytes of sessions and streams together
 * (vitest.workers.config.ts), and so may tenant-stream-retries, whose streams are each deleted by
 * the test that made it; tenant-stream-usage has streams of this file only, and
 * tenant-refused-streams, which may hold 2, those of the test of refused creates only.
 */

const durableEnv = env as unknown as DurableEnv;
const FEW = "key-few-streams";
const BYTES = "key-stream-bytes";
const USAGE = "key-stream-usage";
const RETRIES = "key-stream-retries";
const REFUSED = "key-refused-streams";

async function listed(query: string, key?: string) {
  const res = await api("GET", `/v1/streams?${query}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body as {
    streams: Array<{ path: string; bytes: number; contentType: string; closed: boolean }>;
    nextCursor: string | null;
  };
}

async function streamUsage(key: string) {
  const res = await api("GET", "/v1/usage", { key });
  expect(res.status, res.text).toBe(200);
  return res.body as {
    bytes: number;
    streams: { streams: number; bytes: number };
    quotas: Record<string, number>;
  };
}

/** The directory's binding, as the objects reach it outside `withObjectEnv`. */
const directories = { DIRECTORY: durableEnv.DIRECTORY };

/** The bytes the tenant's quota ledger counts for the stream at `key` (its claim). */
async function ledgerClaim(tenant: string, key: string): Promise<number | undefined> {
  return runInDurableObject(directoryShard(directories, tenant, 0), (_instance, state) => {
    const rows = state.storage.sql
      .exec<{ bytes: number }>("SELECT bytes FROM quota_claims WHERE session_id = ?", `/${key}`)
      .toArray();
    return rows[0]?.bytes;
  });
}

describe("the tenant's stream listing", () => {
  it("lists the tenant's streams by path, a page at a time, without deleted ones or other tenants'", async () => {
    const prefix = `list-${newId()}`;
    const paths = ["a", "b/one", "b/two", "c", "ü-unicode"].map((name) => `${prefix}/${name}`);
    for (const path of paths) await create(`/v1/stream/${path}`, { body: "hello" });
    await create(`/v1/stream/${prefix}/gone`);
    expect((await call("DELETE", `/v1/stream/${prefix}/gone`)).status).toBe(204);
    await create(`/v1/stream/${prefix}/b/other-tenant`, { key: KEY_B });

    const whole = await listed(`prefix=${encodeURIComponent(`${prefix}/`)}`);
    expect(whole.streams.map((s) => s.path)).toEqual(paths);
    expect(whole.streams[0]).toMatchObject({ bytes: 5, contentType: "text/plain", closed: false });
    expect(whole.nextCursor).toBeNull();

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await listed(
        `prefix=${encodeURIComponent(`${prefix}/`)}&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(page.streams.length).toBeLessThanOrEqual(2);
      seen.push(...page.streams.map((s) => s.path));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(paths);

    expect((await listed(`prefix=${encodeURIComponent(`${prefix}/b/`)}`)).streams.map((s) => s.path)).toEqual(
      [`${prefix}/b/one`, `${prefix}/b/two`],
    );
    expect(
      (await listed(`prefix=${encodeURIComponent(`${prefix}/b/`)}`, KEY_B)).streams.map((s) => s.path),
    ).toEqual([`${prefix}/b/other-tenant`]);
  });

  it("pages and filters paths in the order SQLite keeps them, beyond U+FFFF too", async () => {
    const prefix = `astral-${newId()}`;
    // By code point (SQLite's order, UTF-8's) U+FF01 comes before U+1F600; by UTF-16 unit after.
    const paths = [`${prefix}/a\uff01`, `${prefix}/a\u{1f600}`, `${prefix}/\u{1f600}/x`];
    for (const path of paths) await create(`/v1/stream/${path}`, { body: "hi" });
    const inPrefix = `prefix=${encodeURIComponent(`${prefix}/`)}`;
    expect((await listed(inPrefix)).streams.map((s) => s.path)).toEqual(paths);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await listed(`${inPrefix}&limit=1${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...page.streams.map((s) => s.path));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(paths);
    const astralPrefix = `prefix=${encodeURIComponent(`${prefix}/\u{1f600}/`)}`;
    expect((await listed(astralPrefix)).streams.map((s) => s.path)).toEqual([paths[2]]);
    const paired = `prefix=${encodeURIComponent(`${prefix}/a\u{1f600}`)}`;
    expect((await listed(paired)).streams.map((s) => s.path)).toEqual([paths[1]]);
  });

  it("reads a page's own rows only, however many streams the shard lists", async () => {
    const directory = durableEnv.DIRECTORY.getByName(`stream-pages-${newId()}`);
    const pages = await runInDurableObject(directory, async (instance, state) => {
      let version = 0;
      for (const group of ["a", "m", "z"]) {
        for (let n = 0; n < 300; n++) {
          await instance.reportStream({
            key: `${group}/${String(n).padStart(3, "0")}`,
            version: ++version,
            state: n % 10 === 9 ? "deleted" : "live",
            contentType: "text/plain",
            bytes: 1,
            closed: false,
            activeAt: 1000 + version,
            expiresAt: null,
            tenant: "tenant-stream-pages",
            shard: 0,
          });
        }
      }
      const page = async (prefix: string, after: string | null) => {
        const { result, rows } = await rowsReadBy(state.storage.sql, () =>
          instance.listStreams({ prefix, limit: 3, after }),
        );
        return { paths: result.map((s) => s.path), rows };
      };
      return [
        await page("", null),
        await page("m/", null),
        await page("m/", "a/100"),
        await page("", "m/150"),
        await page("m/", "m/297"),
      ];
    });
    expect(pages.map((p) => p.paths)).toEqual([
      ["a/000", "a/001", "a/002"],
      ["m/000", "m/001", "m/002"],
      ["m/000", "m/001", "m/002"],
      ["m/151", "m/152", "m/153"],
      ["m/298"],
    ]);
    for (const { rows } of pages) expect(rows).toBeLessThan(10);
  });

  it("refuses bad listing input with 400", async () => {
    expectError(await api("GET", "/v1/streams?limit=0"), 400, "invalid_request");
    expectError(await api("GET", "/v1/streams?limit=201"), 400, "invalid_request");
    expectError(await api("GET", "/v1/streams?cursor=not-a-cursor"), 400, "invalid_request");
    expectError(await api("GET", `/v1/streams?prefix=${"x".repeat(1025)}`), 400, "invalid_request");
    // A cursor of the session listing is not one of these.
    const sessions = await api("GET", "/v1/sessions?limit=1");
    if (sessions.body.nextCursor) {
      expectError(await api("GET", `/v1/streams?cursor=${sessions.body.nextCursor}`), 400, "invalid_request");
    }
    expectError(await api("GET", "/v1/streams", { key: null }), 401, "unauthorized");
  });
});

describe("streams in the tenant's usage", () => {
  it("counts a stream from its create, its growth within moments, and nothing once it is deleted", async () => {
    const before = await streamUsage(USAGE);
    const path = `/v1/stream/usage-${newId()}`;
    await create(path, { body: "x".repeat(1000), key: USAGE });
    // Made: reported before the create answered.
    expect((await streamUsage(USAGE)).streams).toEqual({
      streams: before.streams.streams + 1,
      bytes: before.streams.bytes + 1000,
    });
    expect((await append(path, "y".repeat(500), {}, USAGE)).status).toBe(204);
    await vi.waitFor(
      async () => expect((await streamUsage(USAGE)).streams.bytes).toBe(before.streams.bytes + 1500),
      { timeout: 10_000, interval: 100 },
    );
    // A fork holds only what it adds.
    const fork = `/v1/stream/usage-fork-${newId()}`;
    await create(fork, { key: USAGE, body: "z".repeat(10), headers: { "Stream-Forked-From": path } });
    expect((await streamUsage(USAGE)).streams).toEqual({
      streams: before.streams.streams + 2,
      bytes: before.streams.bytes + 1510,
    });
    // Deleted while its fork reads it: kept, and still counted; gone with its fork.
    expect((await call("DELETE", path, { key: USAGE })).status).toBe(204);
    expect((await streamUsage(USAGE)).streams.bytes).toBe(before.streams.bytes + 1510);
    expect((await call("DELETE", fork, { key: USAGE })).status).toBe(204);
    await vi.waitFor(async () => expect((await streamUsage(USAGE)).streams).toEqual(before.streams), {
      timeout: 10_000,
      interval: 100,
    });
  });
});

describe("stream quotas", () => {
  it("refuses a stream past maxStreams, writing nothing, and takes one again once one is deleted", async () => {
    const prefix = `few-${newId()}`;
    for (const n of [1, 2]) await create(`/v1/stream/${prefix}/${n}`, { key: FEW });
    // A fork whose source is not there holds no place.
    const orphan = await call("PUT", `/v1/stream/${prefix}/orphan`, {
      key: FEW,
      headers: { "Stream-Forked-From": `/v1/stream/${prefix}/none` },
    });
    expect(orphan.status, orphan.text).toBe(404);
    await create(`/v1/stream/${prefix}/3`, { key: FEW });
    const refused = await call("PUT", `/v1/stream/${prefix}/4`, {
      key: FEW,
      body: "data",
      headers: { "Content-Type": "text/plain" },
    });
    expect(refused.status, refused.text).toBe(413);
    expect(refused.json.error).toMatchObject({
      code: "quota_exceeded",
      details: { quota: "maxStreams", limit: 3 },
    });
    expect((await head(`/v1/stream/${prefix}/4`, FEW)).status).toBe(404);
    expect((await listed(`prefix=${prefix}/`, FEW)).streams).toHaveLength(3);
    // A fork is a stream too.
    const fork = await call("PUT", `/v1/stream/${prefix}/fork`, {
      key: FEW,
      headers: { "Stream-Forked-From": `/v1/stream/${prefix}/1` },
    });
    expect(fork.status).toBe(413);
    expect((await head(`/v1/stream/${prefix}/fork`, FEW)).status).toBe(404);
    // Sessions are not streams: this tenant has no session quota.
    expect((await api("POST", "/v1/sessions", { key: FEW, body: { id: sid() } })).status).toBe(201);
    expect((await call("DELETE", `/v1/stream/${prefix}/1`, { key: FEW })).status).toBe(204);
    await create(`/v1/stream/${prefix}/4`, { key: FEW, body: "data" });
  });

  it("keeps no place for a create refused for its body, on a path a stream held before", async () => {
    const prefix = `refused-${newId()}`;
    const json = { "Content-Type": "application/json" };
    const before = await streamUsage(REFUSED);
    expect(before.streams.streams).toBe(0);
    const path = `/v1/stream/${prefix}/x`;
    await create(path, { key: REFUSED, contentType: "application/json" });
    expect((await call("DELETE", path, { key: REFUSED })).status).toBe(204);
    const bad = await call("PUT", path, { key: REFUSED, body: "{bad", headers: json });
    expectStreamError(bad, 400, "invalid_request");
    expect((await head(path, REFUSED)).status).toBe(404);
    expect((await streamUsage(REFUSED)).streams).toEqual(before.streams);
    // A fork refused for its body keeps none either.
    const source = `/v1/stream/${prefix}/source`;
    const fork = `/v1/stream/${prefix}/fork`;
    await create(source, { key: REFUSED, contentType: "application/json" });
    await create(fork, {
      key: REFUSED,
      contentType: "application/json",
      headers: { "Stream-Forked-From": source },
    });
    expect((await call("DELETE", fork, { key: REFUSED })).status).toBe(204);
    const badFork = await call("PUT", fork, {
      key: REFUSED,
      body: "{bad",
      headers: { ...json, "Stream-Forked-From": source },
    });
    expectStreamError(badFork, 400, "invalid_request");
    expect((await head(fork, REFUSED)).status).toBe(404);
    expect((await streamUsage(REFUSED)).streams.streams).toBe(1);
    // The second of the tenant's 2 places is free.
    await create(`/v1/stream/${prefix}/y`, { key: REFUSED, contentType: "application/json" });
    for (const name of ["source", "y"])
      expect((await call("DELETE", `/v1/stream/${prefix}/${name}`, { key: REFUSED })).status).toBe(204);
  });

  it("counts streams against maxTenantBytes with the sessions, refusing what would pass it", async () => {
    const path = `/v1/stream/bytes-${newId()}`;
    await create(path, { key: BYTES, body: "a".repeat(30_000) });
    const before = await head(path, BYTES);
    // 30,000 more would pass 60,000 with what the session below and the claims hold.
    const refused = await append(path, "b".repeat(31_000), {}, BYTES);
    expect(refused.status, refused.text).toBe(413);
    expect(refused.json.error).toMatchObject({
      code: "quota_exceeded",
      details: { quota: "maxTenantBytes", limit: 60_000 },
    });
    expect(await head(path, BYTES)).toEqual(before);
    // A session cannot take what the stream holds.
    const id = sid();
    expect((await api("POST", "/v1/sessions", { key: BYTES, body: { id } })).status).toBe(201);
    const big = await api("POST", `/v1/sessions/${id}/entries`, {
      key: BYTES,
      body: userMessage("c".repeat(35_000)),
    });
    expectError(big, 413, "quota_exceeded");
    // Nor a new stream.
    const another = await call("PUT", `/v1/stream/bytes-${newId()}`, {
      key: BYTES,
      body: "d".repeat(35_000),
      headers: { "Content-Type": "text/plain" },
    });
    expect(another.status).toBe(413);
    // Deleting the stream makes room at once.
    expect((await call("DELETE", path, { key: BYTES })).status).toBe(204);
    const fits = await api("POST", `/v1/sessions/${id}/entries`, {
      key: BYTES,
      body: userMessage("c".repeat(35_000)),
    });
    expect(fits.status, fits.text).toBe(201);
  });
  it("answers a producer's retry of an append it holds as a duplicate, near the quota, asking no room", async () => {
    const path = `/v1/stream/retry-${newId()}`;
    await create(path, { key: RETRIES, body: "a".repeat(30_000) });
    const producer = (seq: number) => ({
      "Producer-Id": "p",
      "Producer-Epoch": "0",
      "Producer-Seq": String(seq),
    });
    // Written, its answer lost: the retry would pass 60,000 were it written again.
    const first = await append(path, "b".repeat(20_000), producer(0), RETRIES);
    expect(first.status, first.text).toBe(200);
    const written = await head(path, RETRIES);
    const retry = await append(path, "b".repeat(20_000), producer(0), RETRIES);
    expect(retry.status, retry.text).toBe(204);
    expect(retry.headers.get("Producer-Seq")).toBe("0");
    expect(retry.headers.get("Stream-Next-Offset")).toBe(written.offset);
    // So is a retry of the append that closed the stream.
    const closing = { ...producer(1), "Stream-Closed": "true" };
    expect((await append(path, "c".repeat(8_000), closing, RETRIES)).status).toBe(200);
    const closed = await head(path, RETRIES);
    const again = await append(path, "c".repeat(8_000), closing, RETRIES);
    expect(again.status, again.text).toBe(204);
    expect(again.headers.get("Stream-Closed")).toBe("true");
    expect(await head(path, RETRIES)).toEqual(closed);
    // Another append to the closed stream is still refused for being closed, not for its size.
    expectStreamError(await append(path, "d".repeat(20_000), producer(2), RETRIES), 409, "stream_closed");
    expect((await call("DELETE", path, { key: RETRIES })).status).toBe(204);
  });
  it("asks again for room the stream's idle settle took back while the ledger answered its claim", async () => {
    const key = `settle-race-${newId()}`;
    const path = `/v1/stream/${key}`;
    const tenant = "tenant-stream-retries";
    await create(path, { key: RETRIES, body: "a".repeat(1000) });
    const stub = streamObjects().getByName(streamObjectName(tenant, key));
    // Woken again, the object knows no claim: the append asks the ledger for room.
    await evictDurableObject(stub);
    const claims = heldClaimAnswers();
    await withObjectEnv(stub, { DIRECTORY: claims.directory }, async () => {
      const appended = append(path, "b".repeat(2000), {}, RETRIES);
      await claims.answered();
      // The ledger granted the claim; the alarm's settle, sent after, shrinks it to what is held.
      await runInDurableObject(stub, (_instance, state) => state.storage.setAlarm(Date.now() + 60_000));
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      expect(await ledgerClaim(tenant, key)).toBe(1000);
      claims.letGo();
      const answer = await appended;
      expect(answer.status, answer.text).toBe(204);
    });
    // The stream holds 3000 bytes, and the ledger counts them (with room for more).
    expect((await readAll(path, "-1", RETRIES)).text).toHaveLength(3000);
    expect(await ledgerClaim(tenant, key)).toBeGreaterThanOrEqual(3000);
    // Once idle, what it was granted beyond them goes back: the ledger counts what the stream holds.
    await runInDurableObject(stub, (_instance, state) => state.storage.setAlarm(Date.now() + 60_000));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await ledgerClaim(tenant, key)).toBe(3000);
    expect((await call("DELETE", path, { key: RETRIES })).status).toBe(204);
  });

  it("counts a fork's cut of its source's append as the fork's own bytes, and makes it", async () => {
    const source = `/v1/stream/cut-source-${newId()}`;
    const fork = `/v1/stream/cut-fork-${newId()}`;
    const text = "abcdefghij".repeat(200);
    await create(source, { key: RETRIES, body: text });
    const forkAt = {
      "Stream-Forked-From": source,
      "Stream-Fork-Offset": "0000000000000000_0000000000000000",
      "Stream-Fork-Sub-Offset": "1500",
    };
    const made = await call("PUT", fork, {
      key: RETRIES,
      headers: { "Content-Type": "text/plain", ...forkAt },
    });
    expect(made.status, made.text).toBe(201);
    expect((await readAll(fork, "-1", RETRIES)).text).toBe(text.slice(0, 1500));
    await vi.waitFor(
      async () => {
        const own = (await listed(`prefix=${encodeURIComponent("cut-fork-")}`, RETRIES)).streams;
        expect(own.find((s) => `/v1/stream/${s.path}` === fork)?.bytes).toBe(1500);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect((await call("DELETE", fork, { key: RETRIES })).status).toBe(204);
    expect((await call("DELETE", source, { key: RETRIES })).status).toBe(204);
    // A cut past the room left is refused as any data would be: no fork, and its source counts none.
    const large = `/v1/stream/cut-large-${newId()}`;
    await create(large, { key: RETRIES, body: "x".repeat(40_000) });
    const refused = await call("PUT", fork, {
      key: RETRIES,
      headers: {
        "Content-Type": "text/plain",
        ...forkAt,
        "Stream-Forked-From": large,
        "Stream-Fork-Sub-Offset": "30000",
      },
    });
    expectStreamError(refused, 413, "quota_exceeded");
    expect((await head(fork, RETRIES)).status).toBe(404);
    expect((await call("DELETE", large, { key: RETRIES })).status).toBe(204);
    expect((await head(large, RETRIES)).status).toBe(404);
  });

  it("gives a stream's place back once it is deleted, though its directory never heard of it and its object restarted", async () => {
    const key = `unheard-${newId()}`;
    const path = `/v1/stream/${key}`;
    const stub = streamObjects().getByName(streamObjectName("tenant-stream-retries", key));
    const unreachable = directoryReplacing("reportStream", async () => {
      throw new Error("directory out of reach");
    });
    await withObjectEnv(stub, { DIRECTORY: unreachable }, async () => {
      await create(path, { key: RETRIES, body: "hello" });
    });
    expect(await ledgerClaim("tenant-stream-retries", key)).toBeGreaterThanOrEqual(5);
    // Stopped before its report is tried again: what it held in memory is gone.
    await evictDurableObject(stub);
    expect((await call("DELETE", path, { key: RETRIES })).status).toBe(204);
    await runDurableObjectAlarm(stub);
    expect(await ledgerClaim("tenant-stream-retries", key)).toBeUndefined();
  });
});

describe("retention reaches streams", () => {
  it("deletes a stream idle past the tenant's retention, and keeps one written since", async () => {
    const tenantKey = "key-c";
    const idle = `/v1/stream/idle-${newId()}`;
    const busy = `/v1/stream/busy-${newId()}`;
    await create(idle, { key: tenantKey, body: "old" });
    await create(busy, { key: tenantKey, body: "old" });
    const midpoint = Date.now() + 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await append(busy, "new", {}, tenantKey)).status).toBe(204);
    expect((await api("PUT", "/v1/retention", { key: tenantKey, body: { idleDays: 7 } })).status).toBe(200);
    const sweepAll = async (at: number) => {
      let expired = 0;
      for (let shard = 0; shard < shardCount(durableEnv); shard++) {
        expired += await runInDurableObject(directoryShard(durableEnv, "tenant-c", shard), (directory) =>
          directory.sweep(at),
        );
      }
      return expired;
    };
    expect(await sweepAll(Date.now())).toBe(0);
    expect(await sweepAll(midpoint + 7 * 24 * 3600_000)).toBeGreaterThanOrEqual(1);
    expect((await head(idle, tenantKey)).status).toBe(404);
    expect((await head(busy, tenantKey)).status).toBe(200);
    const names = (await listed(`prefix=${encodeURIComponent("idle-")}`, tenantKey)).streams.map(
      (s) => s.path,
    );
    expect(names).not.toContain(idle.slice("/v1/stream/".length));
    expect((await api("PUT", "/v1/retention", { key: tenantKey, body: { idleDays: null } })).status).toBe(
      200,
    );
  });
});
