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
