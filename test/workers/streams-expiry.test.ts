import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { STREAM_ROUTE, streamObjectName } from "../../src/durable/stream";
import { call, create, head, open, streamObjects, streamPath } from "./stream-helpers";

/** The object of one of tenant A's streams (test/workers/helpers.ts: key-a). */
function objectOf(path: string) {
  return streamObjects().getByName(
    streamObjectName("tenant-a", decodeURIComponent(path.slice(STREAM_ROUTE.length))),
  );
}

/*
 * An alarm the pool sees due runs by itself; `runDurableObjectAlarm` runs one still pending at
 * once. Either way the proof is the object's storage, read without a request that could expire
 * the stream on its way.
 */

/** The streams the object still stores (deleted ones kept for forks included), read from its SQLite. */
function storedStreams(path: string): Promise<number> {
  return runInDurableObject(objectOf(path), (_instance, state) => {
    const tables = state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'streams'").toArray();
    if (tables.length === 0) return 0;
    return Number(state.storage.sql.exec("SELECT count(*) AS n FROM streams").one().n);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("stream expiry by the object's alarm", () => {
  it("removes a stream past its TTL, though nothing asks for it and its object was evicted", async () => {
    const path = streamPath("ttl");
    await create(path, { body: "short-lived", headers: { "Stream-TTL": "1" } });
    await evictDurableObject(objectOf(path));
    await sleep(1100);
    await runDurableObjectAlarm(objectOf(path));
    expect(await storedStreams(path)).toBe(0);
    expect((await head(path)).status).toBe(404);
  });

  it("removes a stream at its Expires-At after an eviction", async () => {
    const path = streamPath("expires-at");
    const expiresAt = new Date(Date.now() + 3_000).toISOString();
    await create(path, { body: "until then", headers: { "Stream-Expires-At": expiresAt } });
    const read = await call("HEAD", path);
    expect(new Date(read.headers.get("Stream-Expires-At") as string).toISOString()).toBe(expiresAt);
    await evictDurableObject(objectOf(path));
    await sleep(Date.parse(expiresAt) - Date.now() + 100);
    await runDurableObjectAlarm(objectOf(path));
    expect(await storedStreams(path)).toBe(0);
  });

  it("keeps its alarm working for a stream stored with an expiry past what an alarm can be set to", async () => {
    const path = streamPath("far-stored");
    await create(path, { body: "x", headers: { "Stream-TTL": "3600" } });
    // As a stream made before expiries were bounded may be stored.
    const far = Date.parse("2300-01-01T00:00:00Z");
    await runInDurableObject(objectOf(path), (_instance, state) => {
      state.storage.sql.exec("UPDATE streams SET ttl_seconds = NULL, expires_at = ?", far);
    });
    await evictDurableObject(objectOf(path));
    expect(
      (await call("POST", path, { body: "more", headers: { "Content-Type": "text/plain" } })).status,
    ).toBe(204);
    await sleep(100);
    await runDurableObjectAlarm(objectOf(path));
    expect(await storedStreams(path)).toBe(1);
    const read = await call("HEAD", path);
    expect(read.headers.get("Stream-Expires-At")).toBe(new Date(far).toISOString());
  });

  it("keeps a stream whose TTL a read renewed, across an eviction, until the renewed time", async () => {
    const path = streamPath("renewed");
    // Seconds apart, so that a slow machine still puts each check on its side of a deadline.
    await create(path, { body: "kept alive", headers: { "Stream-TTL": "6" } });
    await sleep(3_000);
    expect((await call("GET", path)).status).toBe(200);
    const renewed = Date.now() + 6_000;
    await evictDurableObject(objectOf(path));
    // Past the first deadline (7 s after the create), before the renewed one (9 s at the least).
    await sleep(4_000);
    await runDurableObjectAlarm(objectOf(path));
    expect(await storedStreams(path)).toBe(1);
    expect((await head(path)).status).toBe(200);
    await sleep(renewed - Date.now() + 100);
    await runDurableObjectAlarm(objectOf(path));
    expect(await storedStreams(path)).toBe(0);
  });

  it("keeps a stream with a sliding TTL while an SSE reader follows it, writing nothing", async () => {
    const path = streamPath("followed");
    await create(path, { body: "watched", headers: { "Stream-TTL": "3" } });
    const response = await open(`${path}?offset=now&live=sse`);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let received = "";
    const decoder = new TextDecoder();
    const drained = (async () => {
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        received += decoder.decode(read.value, { stream: true });
      }
    })();
    // Past the first deadline, and the alarm's turn too.
    await sleep(5_000);
    await runDurableObjectAlarm(objectOf(path));
    expect(await storedStreams(path)).toBe(1);
    expect((await head(path)).status).toBe(200);
    expect(received).toContain('"upToDate":true');
    // The pending read ends with the cancel.
    await reader.cancel();
    await drained.catch(() => undefined);
  });

  it("removes a deleted source with its last fork, when the fork expires by alarm", async () => {
    const source = streamPath("source");
    const fork = streamPath("fork");
    await create(source, { body: "shared" });
    const forked = await call("PUT", fork, { headers: { "Stream-Forked-From": source, "Stream-TTL": "3" } });
    expect(forked.status).toBe(201);
    const expires = Date.now() + 3_000;
    expect((await call("DELETE", source)).status).toBe(204);
    expect((await head(source)).status).toBe(410);
    expect(await storedStreams(source)).toBe(1);
    await evictDurableObject(objectOf(fork));
    await sleep(expires - Date.now() + 100);
    await runDurableObjectAlarm(objectOf(fork));
    expect(await storedStreams(fork)).toBe(0);
    expect(await storedStreams(source)).toBe(0);
    expect((await head(source)).status).toBe(404);
  });

  it("stores nothing in the object of a stream that was only asked about", async () => {
    const path = streamPath("probe");
    expect((await call("GET", path)).status).toBe(404);
    expect((await call("POST", path, { body: "x", headers: { "Content-Type": "text/plain" } })).status).toBe(
      404,
    );
    const tables = await runInDurableObject(objectOf(path), (_instance, state) =>
      state.storage.sql
        .exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'")
        .toArray(),
    );
    expect(tables).toEqual([]);
  });
});
