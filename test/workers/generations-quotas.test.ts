import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import {
  appendEvents,
  appendText,
  endGeneration,
  openGeneration,
  sessionWithQuestion,
  snapshot,
} from "./generation-helpers";
import { api, expectError, info } from "./helpers";
import { expectStreamError } from "./stream-helpers";

/*
 * A generation's chunks count against the tenant like its entries: in the session's `bytes`, so
 * in `maxSessionBytes`, `maxTenantBytes` and `GET /v1/usage`, from the moment they are appended
 * until its stream is removed (once it ended, only what they exceed its answer by). A session holds
 * at most `maxOpenGenerations` generations open at once (64 unless QUOTAS says otherwise).
 */

const KEY = "key-small-tenant"; // tenant-small-tenant: 6,000 bytes in all
const usageBytes = async (key: string) => (await api("GET", "/v1/usage", { key })).body.bytes as number;

describe("a generation's chunks and the tenant's quotas", () => {
  it("count in the session's bytes and the tenant's usage, and the chunk past the quota is refused", async () => {
    const { id } = await sessionWithQuestion(KEY);
    const entriesOnly = (await info(id, KEY)).bytes as number;
    const generation = await openGeneration(id, { retainSeconds: 0 }, KEY);
    expect((await appendText(generation.stream, "a".repeat(2000), {}, KEY)).status).toBe(204);
    expect((await info(id, KEY)).bytes as number).toBe(entriesOnly + 2000);
    await vi.waitFor(async () => expect(await usageBytes(KEY)).toBe(entriesOnly + 2000), {
      timeout: 5000,
      interval: 30,
    });
    // Past the tenant's 6,000 bytes: refused, nothing written.
    const before = await snapshot(id, generation.stream);
    const over = await appendText(generation.stream, "b".repeat(4000), {}, KEY);
    expectStreamError(over, 413, "quota_exceeded");
    expect(over.json.error.details).toMatchObject({ quota: "maxTenantBytes", limit: 6000 });
    expect(await snapshot(id, generation.stream)).toEqual(before);
    expect((await info(id, KEY)).bytes as number).toBe(entriesOnly + 2000);

    // Ended, the chunks became the answer, which counts instead of them.
    const stopped = await endGeneration(id, generation.id, "stop", {}, KEY);
    expect(stopped.status).toBe(201);
    const answer = ((await info(id, KEY)).bytes as number) - entriesOnly;
    expect(answer).toBeGreaterThan(2000);
    expect(answer).toBeLessThan(2500);
    // Its stream removed once its retention window (here none) closed, the session holds its entries.
    await runDurableObjectAlarm(env.SESSIONS.getByName(sessionObjectName("tenant-small-tenant", id)));
    expect((await api("GET", `/v1/sessions/${id}/generations/${generation.id}`, { key: KEY })).status).toBe(
      404,
    );
    expect((await info(id, KEY)).bytes as number).toBe(entriesOnly + answer);
    await vi.waitFor(async () => expect(await usageBytes(KEY)).toBe(entriesOnly + answer), {
      timeout: 5000,
      interval: 30,
    });
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`, { key: KEY })).status).toBe(204);
  });

  it("keep counting, once it ended, what its chunks exceed its answer by", async () => {
    const { id } = await sessionWithQuestion(KEY);
    const entriesOnly = (await info(id, KEY)).bytes as number;
    const generation = await openGeneration(id, { format: "ai-sdk-ui" }, KEY);
    // Events that add nothing to the answer: their bytes still count.
    const events = Array.from({ length: 20 }, (_, n) => ({
      type: "data-note",
      data: { n, pad: "p".repeat(100) },
    }));
    const res = await api("POST", generation.stream, { key: KEY, body: events });
    expect(res.status).toBe(204);
    const chunks = ((await info(id, KEY)).bytes as number) - entriesOnly;
    // Each event's bytes, as the stream holds it.
    expect(chunks).toBe(events.reduce((bytes, event) => bytes + JSON.stringify(event).length, 0));
    const stopped = await endGeneration(id, generation.id, "stop", {}, KEY);
    expect(stopped.status).toBe(201);
    // The empty answer is smaller than the chunks, which go on counting for what they exceed it by.
    expect((await info(id, KEY)).bytes as number).toBe(entriesOnly + chunks);
    expect((await api("DELETE", `/v1/sessions/${id}?purge=true`, { key: KEY })).status).toBe(204);
  });

  it("count what the stream holds of a JSON append, not the array's brackets, commas and spaces", async () => {
    const events = Array.from({ length: 20 }, (_, n) => ({ type: "data-note", data: { n } }));
    // The same events to two generations: as one padded array, and one event an append.
    const written = async (send: (stream: string) => Promise<void>) => {
      const { id } = await sessionWithQuestion(KEY);
      const entriesOnly = (await info(id, KEY)).bytes as number;
      const generation = await openGeneration(id, { format: "ai-sdk-ui", retainSeconds: 0 }, KEY);
      await send(generation.stream);
      const chunks = ((await info(id, KEY)).bytes as number) - entriesOnly;
      expect((await endGeneration(id, generation.id, "stop", {}, KEY)).status).toBe(201);
      // Its stream removed (by this alarm, or by the runtime's own, already due), it holds its entries.
      await runDurableObjectAlarm(env.SESSIONS.getByName(sessionObjectName("tenant-small-tenant", id)));
      const gone = async () =>
        (await api("GET", `/v1/sessions/${id}/generations/${generation.id}`, { key: KEY })).status;
      await vi.waitFor(async () => expect(await gone()).toBe(404), { timeout: 5000, interval: 30 });
      const removed = ((await info(id, KEY)).bytes as number) - entriesOnly;
      expect((await api("DELETE", `/v1/sessions/${id}?purge=true`, { key: KEY })).status).toBe(204);
      return { chunks, removed };
    };
    const padded = await written(async (stream) => {
      const body = ` [${events.map((event) => JSON.stringify(event)).join(" ,\n ")}]${" ".repeat(1000)}\n`;
      expect((await appendEvents(stream, undefined, {}, KEY, body)).status).toBe(204);
    });
    const apart = await written(async (stream) => {
      for (const event of events) expect((await appendEvents(stream, event, {}, KEY)).status).toBe(204);
    });
    const held = events.reduce((bytes, event) => bytes + JSON.stringify(event).length, 0);
    expect(apart.chunks).toBe(held);
    expect(padded).toEqual(apart);
  });
});

describe("open generations of a session", () => {
  it("are at most 64 unless QUOTAS says otherwise: one more is refused until one ends", async () => {
    const { id } = await sessionWithQuestion();
    const opened = [];
    for (let n = 0; n < 64; n++) opened.push(await openGeneration(id));
    const refused = await api("POST", `/v1/sessions/${id}/generations`, { body: {} });
    expectError(refused, 413, "quota_exceeded");
    expect(refused.body.error.details).toEqual({ quota: "maxOpenGenerations", limit: 64 });
    expect(
      (await api("GET", `/v1/sessions/${id}/generations?state=open&limit=200`)).body.generations,
    ).toHaveLength(64);
    expect((await endGeneration(id, opened[0]?.id as string, "stop")).status).toBe(201);
    await openGeneration(id);
  }, 60_000);
});
