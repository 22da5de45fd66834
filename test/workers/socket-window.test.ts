import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import { SOCKET_ACK_CHARS, SOCKET_WINDOW_CHARS } from "../../src/durable/session/event-sockets";
import { api, createSession, KEY_A } from "./helpers";
import { type Message, open } from "./socket-helpers";

/*
 * A WebSocket watcher acknowledges what it has read; one that stops is closed once the live events
 * sent to it and not acknowledged would pass the window, so what the object has in flight for a
 * socket stays bounded however long the writer goes on, and the writer never waits for it.
 */

const BATCHES = 30;
const PER_BATCH = 50;
const TEXT = "w".repeat(1000);

async function appendBatch(id: string, batch: number) {
  const res = await api("POST", `/v1/sessions/${id}/entries`, {
    body: {
      entries: Array.from({ length: PER_BATCH }, (_, i) => ({
        type: "message",
        message: { role: "user", content: `${batch}:${i} ${TEXT}`, timestamp: 1_700_000_000_000 },
      })),
    },
  });
  expect(res.status).toBe(201);
}

/** What the session's object has sent its sockets and not had acknowledged, in characters. */
async function outstanding(id: string): Promise<number[]> {
  const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
  return runInDurableObject(stub, (_instance, state) =>
    state.getWebSockets("events").map((socket) => {
      const attachment = socket.deserializeAttachment() as { sent: number; acked: number };
      return attachment.sent - attachment.acked;
    }),
  );
}

/** The session's sockets as its object holds them: open or not, and taking live events or not. */
async function sockets(id: string): Promise<{ ready: number; live: boolean }[]> {
  const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
  return runInDurableObject(stub, (_instance, state) =>
    state.getWebSockets("events").map((socket) => ({
      ready: socket.readyState,
      live: (socket.deserializeAttachment() as { live: boolean }).live,
    })),
  );
}

const entrySeqs = (messages: Message[]) => messages.filter((m) => m.event === "entry").map((m) => m.id);

describe("a WebSocket watcher's window", () => {
  it("closes a watcher that stops acknowledging (4008), never holding more than the window for it", async () => {
    const id = await createSession();
    const watch = await open(`/v1/sessions/${id}/ws?after=0`);
    await watch.until((m) => m.event === "leaf");
    const most: number[] = [];
    for (let batch = 0; batch < BATCHES; batch++) {
      await appendBatch(id, batch);
      most.push(...(await outstanding(id)));
    }
    // Every write was answered (the writer never waited); the silent socket was let go on the way.
    expect(Math.max(...most)).toBeLessThanOrEqual(SOCKET_WINDOW_CHARS);
    expect(await outstanding(id)).toEqual([]);
    let received: Message[] = [];
    await expect(
      watch.until((m) => {
        received.push(m);
        return false;
      }),
    ).rejects.toThrow(/closed: 4008 slow: resume from the last seq/);
    received = received.filter((m) => m.event === "entry");
    // What it had been sent is a prefix of the session, in order: it resumes from the last seq.
    const seqs = entrySeqs(received);
    expect(seqs.length).toBeGreaterThan(0);
    expect(seqs.length).toBeLessThan(BATCHES * PER_BATCH);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it("keeps a watcher that acknowledges as it reads through thousands of entries", async () => {
    const id = await createSession();
    const watch = await open(`/v1/sessions/${id}/ws?after=0`);
    await watch.until((m) => m.event === "leaf");
    const seqs: number[] = [];
    let asked = 0;
    for (let batch = 0; batch < BATCHES; batch++) {
      await appendBatch(id, batch);
      const got = await watch.until((m) => m.event === "leaf");
      seqs.push(...(entrySeqs(got) as number[]));
      const ack = got[got.length - 1]?.data.ack;
      if (typeof ack === "string") {
        asked++;
        watch.socket.send(JSON.stringify({ ack }));
        // A repeated acknowledgement changes nothing and is not answered.
        watch.socket.send(JSON.stringify({ ack }));
      }
      expect(Math.max(0, ...(await outstanding(id)))).toBeLessThanOrEqual(SOCKET_WINDOW_CHARS);
    }
    expect(seqs).toEqual(Array.from({ length: BATCHES * PER_BATCH }, (_, i) => i + 1));
    // One acknowledgement asked for every SOCKET_ACK_CHARS or so, not one a write.
    expect(asked).toBeGreaterThan(0);
    expect(asked).toBeLessThan(BATCHES);
    expect(asked).toBeGreaterThanOrEqual(
      Math.floor((BATCHES * PER_BATCH * TEXT.length) / (2 * SOCKET_ACK_CHARS)),
    );
    expect(await outstanding(id)).toHaveLength(1);
    watch.socket.close(1000, "done");
  });

  it("asks for acknowledgements of large changes besides entries, keeping a watcher that gives them", async () => {
    const id = await createSession();
    const watch = await open(`/v1/sessions/${id}/ws?after=0`);
    await watch.until((m) => m.event === "leaf");
    const asked = new Set<string>();
    // The watcher acknowledges every ask as it reads, whatever event it waits for.
    const reading = (match: (m: Message) => boolean) => (m: Message) => {
      const ack = m.data?.ack;
      if (typeof ack === "string" && !asked.has(ack)) {
        asked.add(ack);
        watch.socket.send(JSON.stringify({ ack }));
      }
      return match(m);
    };
    // Each change about SOCKET_ACK_CHARS, near the most metadata a session takes; four fill the window.
    const notes = "m".repeat(SOCKET_ACK_CHARS - 100);
    for (let round = 0; round < 4; round++) {
      const patched = await api("PATCH", `/v1/sessions/${id}`, { body: { metadata: { round, notes } } });
      expect(patched.status, patched.text).toBe(200);
      await watch.until(reading((m) => m.event === "session" && m.data.metadata.round === round));
    }
    const appended = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "message", message: { role: "user", content: "w".repeat(1000), timestamp: 1 } },
    });
    expect(appended.status, appended.text).toBe(201);
    const got = await watch.until(reading((m) => m.event === "leaf" && m.id === 1));
    expect(entrySeqs(got)).toEqual([1]);
    expect(asked.size).toBeGreaterThan(0);
    expect(Math.max(0, ...(await outstanding(id)))).toBeLessThanOrEqual(SOCKET_WINDOW_CHARS);
    watch.socket.close(1000, "done");
  });

  it("sends a write larger than the window whole to a watcher that acknowledged everything", async () => {
    const id = await createSession();
    const watch = await open(`/v1/sessions/${id}/ws?after=0`);
    await watch.until((m) => m.event === "leaf");
    const big = "b".repeat(SOCKET_WINDOW_CHARS + 1024);
    const res = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "message", message: { role: "user", content: big, timestamp: 1 } },
    });
    expect(res.status).toBe(201);
    const got = await watch.until((m) => m.event === "leaf");
    expect(got[0]?.data.message.content).toBe(big);
    const ack = got[got.length - 1]?.data.ack;
    expect(ack).toEqual(expect.any(String));
    // Not acknowledged yet: the next write would pass the window, so the socket is let go instead.
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "message", message: { role: "user", content: "next", timestamp: 1 } },
    });
    await expect(watch.until((m) => m.event === "entry", 2000)).rejects.toThrow(/closed: 4008/);
  });

  it("lets a watcher closed as too slow hold back no other: the next events and the deletion reach the rest", async () => {
    const id = await createSession();
    // Never read: its close is never answered, so the object keeps it (closing) among its sockets.
    const silent = await exports.default.fetch(`http://sessions.test/v1/sessions/${id}/ws?after=0`, {
      headers: { Upgrade: "websocket", Authorization: `Bearer ${KEY_A}` },
    });
    expect(silent.status).toBe(101);
    const watch = await open(`/v1/sessions/${id}/ws?after=0`);
    await watch.until((m) => m.event === "leaf");
    const seqs: number[] = [];
    for (let batch = 0; (await sockets(id)).every((socket) => socket.ready === WebSocket.OPEN); batch++) {
      expect(batch).toBeLessThan(BATCHES);
      await appendBatch(id, batch);
      const got = await watch.until((m) => m.event === "leaf");
      seqs.push(...(entrySeqs(got) as number[]));
      const ack = got[got.length - 1]?.data.ack;
      if (typeof ack === "string") watch.socket.send(JSON.stringify({ ack }));
    }
    expect(await sockets(id)).toEqual([
      { ready: WebSocket.CLOSING, live: false },
      { ready: WebSocket.OPEN, live: true },
    ]);
    await appendBatch(id, BATCHES);
    seqs.push(...(entrySeqs(await watch.until((m) => m.event === "leaf")) as number[]));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    // A header change (no entry) goes to every live socket at once.
    const patched = await api("PATCH", `/v1/sessions/${id}`, { body: { metadata: { stage: "two" } } });
    expect(patched.status).toBe(200);
    const header = await watch.until((m) => m.event === "session", 2000);
    expect(header).toEqual([
      { event: "session", data: expect.objectContaining({ metadata: { stage: "two" } }) },
    ]);
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expect((await watch.until((m) => m.event === "deleted", 2000))[0]?.data).toEqual({ id });
    silent.webSocket?.accept();
    silent.webSocket?.close(1000, "done");
  });
});
