import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient } from "../../src/client";
import type { TenantEvent } from "../../src/core/events";
import { SseReader } from "../../src/core/sse";
import type { DurableEnv } from "../../src/durable/internal";
import { shardCount, shardOf } from "../../src/durable/names";
import { api, KEY_A, KEY_A_READ, KEY_B, sid, userMessage } from "./helpers";

/** The tenant's event stream, read event by event. */
async function watchTenant(key = KEY_A) {
  const res = await exports.default.fetch("http://sessions.test/v1/events", {
    headers: { Authorization: `Bearer ${key}` },
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const sse = new SseReader();
  const decoder = new TextDecoder();
  const seen: TenantEvent[] = [];
  return {
    /** Events until one matches (included). */
    async until(match: (event: TenantEvent) => boolean, timeoutMs = 5000): Promise<TenantEvent[]> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const at = seen.findIndex(match);
        if (at >= 0) return seen.splice(0, at + 1);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no matching event; saw ${JSON.stringify(seen)}`);
        const read = await Promise.race([
          reader.read(),
          new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), left)),
        ]);
        if (read === "timeout") continue;
        if (read.done) throw new Error("the stream ended");
        for (const event of sse.push(decoder.decode(read.value, { stream: true }))) {
          seen.push({ event: event.event, data: JSON.parse(event.data) } as TenantEvent);
        }
      }
    },
    pending: seen,
    close: () => reader.cancel(),
  };
}

describe("tenant events", () => {
  it("says when a session is created, updated (with its listing row) and deleted, from every shard", async () => {
    const watch = await watchTenant();
    // One id on each shard of the tenant's directory (each shard sends its own sessions' events).
    const shards = shardCount(env as unknown as DurableEnv);
    expect(shards).toBeGreaterThan(1);
    const byShard = new Map<number, string>();
    while (byShard.size < shards) {
      const id = sid("listed");
      if (!byShard.has(shardOf(id, shards))) byShard.set(shardOf(id, shards), id);
    }
    const ids = [...byShard.values()];
    for (const id of ids)
      expect((await api("POST", "/v1/sessions", { body: { id, name: `n ${id}` } })).status).toBe(201);
    const createdIds = new Set<string>();
    while (createdIds.size < ids.length) {
      const [event] = (await watch.until((e) => e.event === "created")).slice(-1);
      if (event?.event === "created") createdIds.add(event.data.id);
    }
    expect(createdIds).toEqual(new Set(ids));
    const [first] = ids as [string];
    await api("POST", `/v1/sessions/${first}/entries`, { body: userMessage("hello") });
    const updated = await watch.until((e) => e.event === "updated" && e.data.id === first);
    expect(updated[updated.length - 1]?.data).toMatchObject({ id: first, entryCount: 1, preview: "hello" });
    expect((await api("DELETE", `/v1/sessions/${first}`)).status).toBe(204);
    expect(await watch.until((e) => e.event === "deleted")).toContainEqual({
      event: "deleted",
      data: { id: first },
    });
    await watch.close();
  });

  it("shows a tenant only its own sessions, and lets a read-only key watch", async () => {
    const watchB = await watchTenant(KEY_B);
    const reader = await watchTenant(KEY_A_READ);
    const mine = sid("a-only");
    const theirs = sid("b-only");
    expect((await api("POST", "/v1/sessions", { body: { id: mine } })).status).toBe(201);
    expect((await api("POST", "/v1/sessions", { key: KEY_B, body: { id: theirs } })).status).toBe(201);
    const seenByB = await watchB.until((e) => e.event === "created" && e.data.id === theirs);
    expect(seenByB.some((e) => e.event !== "closed" && "id" in e.data && e.data.id === mine)).toBe(false);
    const seenByReader = await reader.until((e) => e.event === "created" && e.data.id === mine);
    expect(seenByReader.some((e) => "id" in e.data && e.data.id === theirs)).toBe(false);
    expect((await api("GET", "/v1/events", { key: null })).status).toBe(401);
    await watchB.close();
    await reader.close();
  });

  it("reaches the typed client: repo.watch()", async () => {
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      fetch: async (r) => {
        const answer = await exports.default.fetch(r);
        if (new URL(r.url).pathname === "/v1/events") opened();
        return answer;
      },
    });
    let opened: () => void = () => {};
    const watchOpened = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const stop = new AbortController();
    const id = sid("client-watched");
    const seen: string[] = [];
    const watching = (async () => {
      for await (const event of client.watch({ signal: stop.signal })) {
        if (event.event === "created" && event.data.id === id) {
          seen.push(event.event);
          stop.abort();
        }
      }
    })();
    // The watch has its answer (it hears from then on) before the session is created.
    await watchOpened;
    await client.create({ id });
    await watching;
    expect(seen).toEqual(["created"]);
  });
});

describe("a tenant watcher that stops reading", () => {
  it("is let go with `closed` once more than 8 MiB waits for it, rather than held in memory", async () => {
    const slow = await exports.default.fetch("http://sessions.test/v1/events", {
      headers: { Authorization: `Bearer ${KEY_A}` },
    });
    const fast = await watchTenant();
    // Sessions on one shard, each `created` carrying 240 KiB of metadata: 10 MiB in all.
    const shards = shardCount(env as unknown as DurableEnv);
    const ids: string[] = [];
    while (ids.length < 44) {
      const id = sid("slow");
      if (shardOf(id, shards) === 0) ids.push(id);
    }
    const last = ids[ids.length - 1];
    // A watcher that keeps reading hears them all, so the shard has sent them to the slow one too.
    const heard = fast.until((e) => e.event === "created" && e.data.id === last, 30_000);
    const metadata = { padding: "x".repeat(240 * 1024) };
    for (const id of ids)
      expect((await api("POST", "/v1/sessions", { body: { id, metadata } })).status).toBe(201);
    await heard;
    await fast.close();

    const reader = (slow.body as ReadableStream<Uint8Array>).getReader();
    const sse = new SseReader();
    const decoder = new TextDecoder();
    const events: TenantEvent[] = [];
    let ended = false;
    while (!ended && events.filter((e) => e.event === "created").length < ids.length) {
      const read = await reader.read();
      ended = read.done;
      for (const event of sse.push(decoder.decode(read.value, { stream: true }))) {
        events.push({ event: event.event, data: JSON.parse(event.data) } as TenantEvent);
      }
    }
    const names = events.map((e) => e.event);
    expect(names.filter((name) => name === "created").length).toBeLessThan(ids.length);
    expect(names[names.length - 1]).toBe("closed");
    expect(events[events.length - 1]?.data).toEqual({ reason: "slow: resume from the last event id" });
    expect(ended || (await reader.read()).done).toBe(true);
  });
});
