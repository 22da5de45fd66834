import { describe, expect, it } from "vitest";
import { SseReader } from "../../src/core/sse";
import { appendEvents, endGeneration, openGeneration, sessionWithQuestion } from "./generation-helpers";
import { api } from "./helpers";
import { call, open } from "./stream-helpers";

/*
 * A long generation read by a reader that keeps dropping its connection at random places (a
 * catch-up page, a long-poll, an SSE connection cut after a few events) and resuming from the
 * offset it last saw, while the writer appends, sometimes sending an append twice as a writer
 * whose answer was lost does: the reader gets every chunk once, in order, and so does the entry.
 *
 * The chunks are AI SDK text deltas, one event each, which the writer sends a few at a time (the
 * way a writer batches what came while its last append was on its way): each is a record of its
 * own, so the offsets a reader resumes from fall between any two chunks, and 10,000 of them take
 * no 10,000 round trips to write.
 */

const CHUNKS = 10_000;

/** A small seeded generator, so a failure can be run again as it was. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

interface Delta {
  type: string;
  id: string;
  delta: string;
}

interface Reader {
  chunks: Delta[];
  offset: string;
  closed: boolean;
  reconnects: number;
}

/** What an answer (or an SSE data event) carries: a JSON array of the chunks. */
function take(reader: Reader, body: string): void {
  if (body) reader.chunks.push(...(JSON.parse(body) as Delta[]));
}

/** One catch-up read: a page from the offset. */
async function catchUp(stream: string, reader: Reader): Promise<void> {
  const res = await call("GET", `${stream}?offset=${reader.offset}`);
  expect(res.status, res.text).toBe(200);
  take(reader, res.text);
  reader.offset = res.headers.get("Stream-Next-Offset") as string;
  reader.closed = res.headers.get("Stream-Closed") === "true";
}

/** One long-poll: data as soon as there is some, or 204 at the tail. */
async function longPoll(stream: string, reader: Reader): Promise<void> {
  const res = await call("GET", `${stream}?offset=${reader.offset}&live=long-poll`);
  expect([200, 204]).toContain(res.status);
  take(reader, res.text);
  reader.offset = res.headers.get("Stream-Next-Offset") as string;
  reader.closed = res.headers.get("Stream-Closed") === "true";
}

/** An SSE connection read for `events` data events, then dropped. */
async function sse(stream: string, reader: Reader, events: number): Promise<void> {
  const stop = new AbortController();
  const res = await open(`${stream}?offset=${reader.offset}&live=sse`, { signal: stop.signal });
  expect(res.status).toBe(200);
  const body = (res.body as ReadableStream<Uint8Array>).getReader();
  const parser = new SseReader();
  const decoder = new TextDecoder();
  let pending: string | undefined;
  let seen = 0;
  try {
    while (seen < events && !reader.closed) {
      const { done, value } = await body.read();
      if (done) break;
      for (const event of parser.push(decoder.decode(value, { stream: true }))) {
        if (event.event === "data") pending = event.data;
        if (event.event !== "control") continue;
        // Data counts once its control event says where it ends.
        const control = JSON.parse(event.data) as { streamNextOffset: string; streamClosed?: boolean };
        if (pending !== undefined) take(reader, pending);
        pending = undefined;
        reader.offset = control.streamNextOffset;
        reader.closed = control.streamClosed === true;
        seen++;
      }
    }
  } finally {
    stop.abort();
    await body.cancel().catch(() => undefined);
  }
}

describe("a reader that drops its connection at random during a long generation", () => {
  it(`gets every one of ${CHUNKS.toLocaleString("en-US")} chunks once, in order, as does the entry`, async () => {
    const next = random(27);
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id, { format: "ai-sdk-ui" });
    const chunks: Delta[] = Array.from({ length: CHUNKS }, (_, i) => ({
      type: "text-delta",
      id: "t",
      delta: `${i.toString(36)};`,
    }));
    const expected = chunks.map((chunk) => chunk.delta).join("");

    const writer = (async () => {
      let seq = 0;
      for (let from = 0; from < CHUNKS; seq++) {
        const batch = chunks.slice(from, from + 1 + Math.floor(next() * 40));
        from += batch.length;
        const producer = { "Producer-Id": "writer", "Producer-Epoch": "0", "Producer-Seq": String(seq) };
        expect((await appendEvents(generation.stream, batch, producer)).status).toBe(200);
        // Now and then the answer is "lost", and the writer sends the same append again.
        if (next() < 0.05) expect((await appendEvents(generation.stream, batch, producer)).status).toBe(204);
      }
      const done = await endGeneration(id, generation.id, "complete");
      expect(done.status).toBe(201);
    })();

    const reader: Reader = { chunks: [], offset: "-1", closed: false, reconnects: 0 };
    while (!reader.closed) {
      const mode = next();
      if (mode < 0.3) await catchUp(generation.stream, reader);
      else if (mode < 0.5) await longPoll(generation.stream, reader);
      else await sse(generation.stream, reader, 1 + Math.floor(next() * 8));
      reader.reconnects++;
    }
    await writer;

    expect(reader.reconnects).toBeGreaterThan(20);
    expect(reader.chunks.length).toBe(CHUNKS);
    expect(reader.chunks).toEqual(chunks);
    const entry = await api("GET", `/v1/sessions/${id}/entries/${generation.id}`);
    expect(entry.body.message.content).toEqual([{ type: "text", text: expected }]);
  }, 120_000);
});
