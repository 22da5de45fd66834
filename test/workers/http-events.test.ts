import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { StoredEntry } from "../../src/core/entries";
import { EVENTS_AFTER_HEADER, entrySummary, sseFrame } from "../../src/core/events";
import type { SessionInfo } from "../../src/core/session-schemas";
import { SseReader } from "../../src/core/sse";
import { sessionObjectName } from "../../src/durable/internal";
import type { EventSource } from "../../src/durable/session/event-sockets";
import { EventHub } from "../../src/durable/session/session-watchers";
import { type ReadEvent, watchEvents } from "./events-helpers";
import { api, createSession, expectError, KEY_A_READ, KEY_B, userMessage } from "./helpers";

async function append(id: string, ...texts: string[]) {
  const res = await api("POST", `/v1/sessions/${id}/entries`, {
    body: { entries: texts.map((text) => userMessage(text)) },
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { entries: Array<{ id: string; seq: number }>; leafId: string };
}

const seqsOfEvents = (events: Array<{ event: string; id?: string }>) =>
  events.filter((e) => e.event === "entry").map((e) => Number(e.id));
const seqsOf = (events: ReadEvent[]) => events.filter((e) => e.event === "entry").map((e) => Number(e.id));

describe("session events (Server-Sent Events)", () => {
  it("opens with the session, replays what came after the resume point, then goes live", async () => {
    const id = await createSession({ body: { name: "watched" } });
    const first = await append(id, "a", "b");
    const watch = await watchEvents(id, { after: 1 });
    expect(watch.status).toBe(200);
    expect(watch.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
    const opening = await watch.next();
    expect(opening).toMatchObject({ event: "session", data: { id, name: "watched" } });
    expect(opening?.id).toBeUndefined();
    const replay = await watch.until((e) => e.event === "leaf");
    expect(replay.map((e) => [e.event, e.id])).toEqual([
      ["entry", "2"],
      ["leaf", "2"],
    ]);
    expect(replay[0]?.data).toMatchObject({ id: first.entries[1]?.id, seq: 2, message: { content: "b" } });
    expect(replay[1]?.data).toEqual({ leafId: first.leafId });
    const next = await append(id, "c");
    const live = await watch.until((e) => e.event === "leaf");
    expect(live.map((e) => [e.event, e.id])).toEqual([
      ["entry", "3"],
      ["leaf", "3"],
    ]);
    expect(live[1]?.data).toEqual({ leafId: next.leafId });
    await watch.close();
  });

  it("ends its replay with the head as it was when the stream opened", async () => {
    const id = await createSession();
    const before = await append(id, "a", "b");
    const watch = await watchEvents(id, { after: 0 });
    // Written after the stream opened, before anything of it was read.
    await append(id, "late");
    await watch.next();
    const replay = await watch.until((e) => e.event === "leaf");
    expect(replay[replay.length - 1]).toEqual({ event: "leaf", id: "2", data: { leafId: before.leafId } });
    const live = await watch.until((e) => e.event === "leaf");
    expect(seqsOf(live)).toEqual([3]);
    await watch.close();
  });

  it("ends a stream that is still replaying with deleted when the session goes", async () => {
    const id = await createSession();
    const big = "q".repeat(200 * 1024);
    for (let i = 0; i < 30; i++) await append(id, `${i} ${big}`);
    const watch = await watchEvents(id, { after: 0 });
    await watch.next();
    await watch.next();
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    const rest = await watch.until((e) => e.event === "deleted");
    expect(rest[rest.length - 1]).toEqual({ event: "deleted", data: { id } });
    expect(seqsOf(rest).length).toBeLessThan(30);
    expect(await watch.next()).toBeUndefined();
  });

  it("opens no stream on a fork deleted while the stream waited for its copy (it would never hear `deleted`)", async () => {
    const source = await createSession();
    // Forks copy in pages of 2 KiB here: this path is copied in several.
    const written = await append(source, ...Array.from({ length: 20 }, (_, i) => `${i} ${"f".repeat(500)}`));
    const forked = await api("POST", `/v1/sessions/${source}/fork`, {
      body: { entryId: written.leafId, id: `fork-${source}` },
    });
    expect(forked.status, forked.text).toBe(201);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", `fork-${source}`));
    const outcome = await runInDurableObject(stub, async (instance) => {
      // A replay from the start waits for the rest of the path; the deletion is made in the meantime.
      const opening = instance.events(0, true);
      const deletion = await instance.delete(60_000);
      const stream = await opening;
      if (stream.ok) await stream.value.body.cancel();
      return { deleted: deletion.ok, error: stream.ok ? undefined : stream.error.code };
    });
    expect(outcome).toEqual({ deleted: true, error: "not_found" });
  });

  it("takes Last-Event-ID like ?after, and starts live from now without either", async () => {
    const id = await createSession();
    await append(id, "a", "b", "c");
    const resumed = await watchEvents(id, { lastEventId: "2" });
    // The header says where the stream starts, before any event is read.
    expect(resumed.headers.get(EVENTS_AFTER_HEADER)).toBe("2");
    await resumed.next();
    expect(seqsOf(await resumed.until((e) => e.event === "leaf"))).toEqual([3]);
    await resumed.close();
    const fresh = await watchEvents(id);
    expect(fresh.headers.get(EVENTS_AFTER_HEADER)).toBe("3");
    await fresh.next();
    const opening = await fresh.until((e) => e.event === "leaf");
    expect(seqsOf(opening)).toEqual([]);
    expect(opening[0]?.id).toBe("3");
    await append(id, "d");
    expect(seqsOf(await fresh.until((e) => e.event === "leaf"))).toEqual([4]);
    await fresh.close();
  });

  it("resumes after Last-Event-ID when an EventSource reconnects to a URL with ?after", async () => {
    const id = await createSession();
    await append(id, "a", "b", "c");
    const reconnected = await watchEvents(id, { after: 0, lastEventId: "2" });
    await reconnected.next();
    expect(seqsOf(await reconnected.until((e) => e.event === "leaf"))).toEqual([3]);
    await reconnected.close();
  });

  it("sends entries without payloads on ?payload=false", async () => {
    const id = await createSession();
    const { entries } = await append(id, "secret words");
    const watch = await watchEvents(id, { after: 0, payload: false });
    await watch.next();
    const entry = await watch.next();
    expect(entry?.data).toEqual({
      id: entries[0]?.id,
      parentId: null,
      type: "message",
      seq: 1,
      timestamp: expect.any(String),
      role: "user",
    });
    await watch.close();
  });

  it("refuses a resume point after the end, or that is no seq", async () => {
    const id = await createSession();
    await append(id, "a");
    expectError(await api("GET", `/v1/sessions/${id}/events?after=5`), 400, "invalid_request");
    expectError(await api("GET", `/v1/sessions/${id}/events?after=-1`), 400, "invalid_request");
    expectError(
      await api("GET", `/v1/sessions/${id}/events`, { headers: { "Last-Event-ID": "abc" } }),
      400,
      "invalid_request",
    );
  });

  it("takes up to 500 streams a session, then answers 429 with Retry-After until one leaves", async () => {
    const id = await createSession();
    const watches = await Promise.all(Array.from({ length: 500 }, () => watchEvents(id)));
    expect(watches.every((watch) => watch.status === 200)).toBe(true);
    const refused = await watchEvents(id);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe("10");
    const body = JSON.parse(refused.text);
    expect(body.error.code).toBe("rate_limited");
    expect(body.error.requestId).toMatch(/\S/);
    await (watches.pop() as (typeof watches)[number]).close();
    // The object hears that a stream went when it next sends on it (an event, or the heartbeat).
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("wake") });
    await vi.waitFor(
      async () => {
        const again = await watchEvents(id);
        expect(again.status).toBe(200);
        watches.push(again);
      },
      { timeout: 10_000, interval: 500 },
    );
    await Promise.all(watches.map((watch) => watch.close()));
  });

  it("shows another tenant nothing, and lets a read-only key watch", async () => {
    const id = await createSession();
    await append(id, "a");
    expectError(await api("GET", `/v1/sessions/${id}/events?after=0`, { key: KEY_B }), 404, "not_found");
    const reader = await watchEvents(id, { after: 0, key: KEY_A_READ });
    expect(reader.status).toBe(200);
    await reader.next();
    expect(seqsOf(await reader.until((e) => e.event === "leaf"))).toEqual([1]);
    await reader.close();
  });

  it("tells of header changes and ends every stream when the session is deleted", async () => {
    const id = await createSession();
    const watch = await watchEvents(id);
    await watch.until((e) => e.event === "leaf");
    expect((await api("PATCH", `/v1/sessions/${id}`, { body: { systemPrompt: "be brief" } })).status).toBe(
      200,
    );
    expect(await watch.next()).toMatchObject({ event: "session", data: { id, systemPrompt: "be brief" } });
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expect(await watch.next()).toEqual({ event: "deleted", data: { id } });
    expect(await watch.next()).toBeUndefined();
  });

  it("gives every seq exactly once, in order, across drops and resumes during concurrent appends", async () => {
    const id = await createSession();
    const writers = 4;
    const rounds = 15;
    const storm = Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let r = 0; r < rounds; r++) {
          const size = 1 + ((w + r) % 3);
          await append(id, ...Array.from({ length: size }, (_, k) => `w${w} r${r} k${k}`));
        }
      }),
    );
    const total = Array.from({ length: writers }, (_, w) =>
      Array.from({ length: rounds }, (_, r) => 1 + ((w + r) % 3)).reduce((a, b) => a + b, 0),
    ).reduce((a, b) => a + b, 0);
    const seen: number[] = [];
    let last = 0;
    let drops = 0;
    // Deterministic "random" drop points: after 1, 2, 3 … events, then resume from the last id.
    while (seen.length < total) {
      const watch = await watchEvents(id, { after: last });
      expect(watch.status).toBe(200);
      let taken = 0;
      const limit = 1 + (drops % 7);
      while (taken < limit && seen.length < total) {
        const event = await watch.next(10_000);
        if (!event) break;
        if (event.event !== "entry") continue;
        seen.push(Number(event.id));
        last = Number(event.id);
        taken++;
      }
      await watch.close();
      drops++;
    }
    await storm;
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(drops).toBeGreaterThan(5);
  });

  it("tells watchers when automatic compaction runs, and sends the compaction it wrote", async () => {
    const id = await createSession();
    const settings = { contextWindow: 2000, reserveTokens: 500, keepRecentTokens: 300 };
    expect((await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact: settings } })).status).toBe(200);
    const watch = await watchEvents(id);
    await watch.until((e) => e.event === "leaf");
    await append(id, ...Array.from({ length: 12 }, (_, i) => `message ${i} ${"word ".repeat(150)}`));
    const seen = await watch.until((e) => e.event === "compaction" && e.data.state === "idle", 10_000);
    const states = seen.filter((e) => e.event === "compaction").map((e) => e.data.state);
    expect(states).toEqual(["running", "idle"]);
    const written = seen.filter((e) => e.event === "entry" && e.data.type === "compaction");
    expect(written).toHaveLength(1);
    expect(seen[seen.length - 1]?.data.lastEntryId).toBe(written[0]?.data.id);
    await watch.close();
  });

  it("closes a watcher that stops reading with a reason, and never holds back the writer or other watchers", async () => {
    const id = await createSession();
    const slow = await watchEvents(id);
    await slow.until((e) => e.event === "leaf");
    const reader = await watchEvents(id);
    await reader.until((e) => e.event === "leaf");
    // The slow watcher reads nothing more while about 24 MiB of entries are appended.
    const big = "y".repeat(1024 * 1024);
    const reading = reader.until((e) => e.event === "leaf" && e.id === "24", 20_000);
    for (let i = 0; i < 24; i++) await append(id, `${i} ${big}`);
    const read = await reading;
    expect(read.filter((e) => e.event === "entry")).toHaveLength(24);
    await reader.close();
    const late = await slow.until((e) => e.event === "closed", 20_000);
    expect(late[late.length - 1]?.data.reason).toMatch(/slow/);
    expect(late.filter((e) => e.event === "entry").length).toBeLessThan(24);
    expect(await slow.next()).toBeUndefined();
  });
});

describe("a session's event hub", () => {
  /** A hub over `source` (a session of no entries by default), its storage always durable, with no socket. */
  function hubOver(source: Partial<EventSource> = {}): EventHub {
    const ctx = {
      storage: { sync: async () => {} },
      getWebSockets: () => [],
    } as unknown as DurableObjectState;
    return new EventHub(
      ctx,
      {
        lastSeq: () => 0,
        leafId: () => null,
        info: () => ({}) as SessionInfo,
        entriesAfter: () => [],
        summariesAfter: () => [],
        openGenerations: () => [],
        ...source,
      },
      (error) => {
        throw error;
      },
    );
  }

  const storedMessage = (seq: number) =>
    ({
      type: "message",
      id: `e${seq}`,
      parentId: seq === 1 ? null : `e${seq - 1}`,
      timestamp: "2026-01-01T00:00:00.000Z",
      seq,
      message: { role: "user", content: `m${seq}`, timestamp: 1 },
    }) as StoredEntry;

  it("ends a stream whose replay fails midway with `closed`, sending none of the live events after it", async () => {
    // 300 entries: the first page reads, the second fails (a storage error).
    const hub = hubOver({
      lastSeq: () => 300,
      leafId: () => "e300",
      entriesAfter: (after, _bound, limit) => {
        if (after >= 256) throw new Error("storage error");
        return Array.from({ length: Math.min(limit, 256 - after) }, (_, i) => storedMessage(after + i + 1));
      },
    });
    const stream = hub.openStream(0, true);
    // A write while the stream replays: its events wait behind the replay.
    hub.written([storedMessage(301)], "e301");
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Read until it ends, or until it sends the write (it would then wait for more).
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += decoder.decode(chunk.value, { stream: true });
      if (text.includes("id: 301")) break;
    }
    const events = new SseReader().push(text);
    const entries = events.filter((event) => event.event === "entry").map((event) => Number(event.id));
    expect(entries).toEqual(Array.from({ length: 256 }, (_, i) => i + 1));
    expect(events.map((event) => event.event).slice(-1)).toEqual(["closed"]);
    expect(events.some((event) => event.id === "301")).toBe(false);
    expect(hub.watchers).toBe(0);
  });

  it("sends a stream whose replay the deletion stopped only `deleted`, none of the live events after it", async () => {
    const hub = hubOver({
      lastSeq: () => 300,
      leafId: () => "e300",
      entriesAfter: (after, _bound, limit) =>
        Array.from({ length: Math.min(limit, 300 - after) }, (_, i) => storedMessage(after + i + 1)),
    });
    const stream = hub.openStream(0, true);
    hub.written([storedMessage(301)], "e301");
    hub.deleted("s");
    const events = new SseReader().push(await new Response(stream).text());
    expect(events.map((event) => event.event)).toEqual(["session", "deleted"]);
  });

  it("lets go of a stream its keep-alive finds too far behind: it stops counting, and the keep-alive stops", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const hub = hubOver();
      hub.openStream(0, true);
      // A change that leaves the unread stream just short of its limit: the next keep-alive takes it past.
      const limit = 8 * 1024 * 1024;
      const sized = (pad: string) => ({ event: "compaction", data: { state: "idle", pad } }) as const;
      const event = sized("x".repeat(limit - 1 - sseFrame(sized("") as never).length));
      expect(sseFrame(event as never).length).toBe(limit - 1);
      hub.changed(event as never);
      await vi.waitFor(() => expect(vi.getTimerCount()).toBe(1));
      expect(hub.watchers).toBe(1);
      await vi.advanceTimersByTimeAsync(15_000);
      expect({ watchers: hub.watchers, watching: hub.watching, timers: vi.getTimerCount() }).toEqual({
        watchers: 0,
        watching: false,
        timers: 0,
      });
    } finally {
      vi.useRealTimers();
    }
  });

  /** A hub over the entries in `entries` (seq n at index n - 1), as a session's storage holds them. */
  function hubOverEntries(entries: StoredEntry[]): EventHub {
    return hubOver({
      lastSeq: () => entries.length,
      leafId: () => entries[entries.length - 1]?.id ?? null,
      entriesAfter: (after, bound, limit) => entries.slice(after, Math.min(bound, after + limit)),
      summariesAfter: (after, bound, limit) =>
        entries.slice(after, Math.min(bound, after + limit)).map(entrySummary),
    });
  }

  const messageOf = (seq: number, content: string) =>
    ({ ...storedMessage(seq), message: { role: "user", content, timestamp: 1 } }) as StoredEntry;

  /** Reads a stream's chunks until one holds `until`, or it ends. */
  async function readUntil(stream: ReadableStream<Uint8Array>, until: string): Promise<Uint8Array[]> {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    const chunks: Uint8Array[] = [];
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      chunks.push(chunk.value);
      if (decoder.decode(chunk.value).includes(until)) break;
    }
    reader.releaseLock();
    return chunks;
  }

  const MiB = 1024 * 1024;
  const decode = (chunks: Uint8Array[]) => chunks.map((chunk) => new TextDecoder().decode(chunk)).join("");

  it("encodes a write once for all its streams: each sends the same bytes, counted once in what waits", async () => {
    const entries: StoredEntry[] = [];
    const hub = hubOverEntries(entries);
    const streams = Array.from({ length: 6 }, () => hub.openStream(0, true));
    entries.push(messageOf(1, "x".repeat(12 * MiB)));
    hub.written(entries, "e1");
    const frame =
      sseFrame({ event: "entry", id: 1, data: entries[0] as StoredEntry }) +
      sseFrame({ event: "leaf", id: 1, data: { leafId: "e1" } });
    // Six streams wait for the write, unread: it is held once, well within the session's 32 MiB.
    await vi.waitFor(() => expect(hub.queuedBytes).toBe(frame.length));
    const sent = await Promise.all(streams.map((stream) => readUntil(stream, "id: 1\n")));
    const live = sent.map((chunks) => chunks[chunks.length - 1] as Uint8Array);
    for (const chunk of live) expect(chunk).toBe(live[0]);
    expect(new TextDecoder().decode(live[0]) === frame).toBe(true);
    expect(hub.queuedBytes).toBe(0);
  });

  it("lets go of the stream furthest behind when a write would take what waits past 32 MiB; it resumes and misses nothing", async () => {
    const entries: StoredEntry[] = [];
    const hub = hubOverEntries(entries);
    // Without payloads, and not read: a first write's 40,000 summaries (over 5 MiB) wait for it.
    const behind = hub.openStream(0, false);
    for (let seq = 1; seq <= 40_000; seq++) entries.push(storedMessage(seq));
    hub.written(entries, "e40000");
    await vi.waitFor(() => expect(hub.queuedBytes).toBeGreaterThan(5 * MiB));
    const summaries = hub.queuedBytes;
    expect(summaries).toBeLessThan(7 * MiB);
    // A stream with payloads, not read either, waits for a 7.5 MiB write (within its own 8 MiB).
    const slow = hub.openStream(entries.length, true);
    entries.push(messageOf(40_001, "y".repeat(7.5 * MiB)));
    hub.written(entries.slice(-1), "e40001");
    await vi.waitFor(() => expect(hub.queuedBytes).toBeGreaterThan(summaries + 7.5 * MiB));
    // A 20 MiB write does not fit beside them: the stream whose oldest frame waits is let go first,
    // though it is within its own 8 MiB.
    const waiting = hub.queuedBytes;
    expect(waiting + 20 * MiB).toBeGreaterThan(32 * MiB);
    const fresh = hub.openStream(entries.length, true);
    entries.push(messageOf(40_002, "z".repeat(20 * MiB)));
    hub.written(entries.slice(-1), "e40002");
    // The stream with payloads is let go too: its 7.5 MiB and the write are more than its own 8 MiB.
    await vi.waitFor(() => expect(hub.watchers).toBe(1));
    expect(hub.queuedBytes).toBeLessThanOrEqual(32 * MiB);
    const letGo = new SseReader().push(decode(await readUntil(behind, "id: 40002\n")));
    // Let go before its replay's `leaf`: no event id reached it, so it resumes where it opened.
    expect(letGo.map((event) => event.event)).toEqual(["session", "closed"]);
    expect(letGo[1]?.data).toBe(JSON.stringify({ reason: "slow: resume from the last event id" }));
    const cursor = Number(letGo.findLast((event) => event.id !== undefined)?.id ?? 0);
    const resumed = new SseReader().push(
      decode(await readUntil(hub.openStream(cursor, false), "id: 40002\n")),
    );
    expect(seqsOfEvents(resumed)).toEqual(Array.from({ length: 40_002 }, (_, i) => i + 1));
    const live = new SseReader().push(decode(await readUntil(fresh, "id: 40002\n")));
    expect(seqsOfEvents(live)).toEqual([40_002]);
    await slow.cancel();
  });
});
