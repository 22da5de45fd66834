import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { StreamContext } from "../../src/durable/stream/context";
import { formatOffset } from "../../src/durable/stream/offsets";
import { readStream } from "../../src/durable/stream/read";
import { StreamStore } from "../../src/durable/stream/store";
import { seededRandom } from "../support/random";
import type { SseRead } from "./stream-helpers";
import {
  append,
  call,
  concat,
  create,
  head,
  openSse,
  readAll,
  streamObjects,
  streamPath,
} from "./stream-helpers";

const producer = (id: string, epoch: number, seq: number) => ({
  "Producer-Id": id,
  "Producer-Epoch": String(epoch),
  "Producer-Seq": String(seq),
});

describe("live stream reads", () => {
  it("wakes a long-poll at the tail with the data appended", async () => {
    const path = streamPath("poll");
    const tail = await create(path, { body: "before" });
    const poll = call("GET", `${path}?offset=${tail}&live=long-poll`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await append(path, "after");
    const res = await poll;
    expect(res.status).toBe(200);
    expect(res.text).toBe("after");
    expect(res.headers.get("Stream-Up-To-Date")).toBe("true");
    expect(res.headers.get("Stream-Cursor")).toMatch(/^\d+$/);
  });

  it("follows a stream over SSE: the history, each live append, then the close", async () => {
    const path = streamPath("sse");
    await create(path, { contentType: "application/json", body: '[{"n":1}]' });
    const sse = await openSse(path, "-1");
    expect(sse.response.headers.get("Content-Type")).toBe("text/event-stream");
    expect(await sse.next()).toEqual({ event: "data", data: '[{"n":1}]' });
    expect(JSON.parse((await sse.next())?.data as string)).toMatchObject({ upToDate: true });
    await append(path, '{"n":2}', { "Content-Type": "application/json" });
    expect(await sse.next()).toEqual({ event: "data", data: '[{"n":2}]' });
    await sse.next();
    await call("POST", path, { headers: { "Stream-Closed": "true" } });
    const closing = JSON.parse((await sse.next())?.data as string);
    expect(closing).toMatchObject({ streamClosed: true });
    expect(closing.streamCursor).toBeUndefined();
    expect(await sse.next()).toBeUndefined();
  });

  it("gives SSE readers of text whole characters when an append ends inside one", async () => {
    const path = streamPath("utf8");
    const tail = await create(path, { body: "x" });
    const sse = await openSse(path, tail);
    expect(JSON.parse((await sse.next())?.data as string)).toMatchObject({ upToDate: true });
    // "café" in two appends, the second byte of "é" in the second.
    await append(path, new Uint8Array([0x63, 0x61, 0x66, 0xc3]));
    await append(path, new Uint8Array([0xa9, 0x21]));
    expect(await sse.next()).toEqual({ event: "data", data: "café!" });
    const control = JSON.parse((await sse.next())?.data as string);
    expect(control).toMatchObject({ upToDate: true, streamNextOffset: (await head(path)).offset });
    // Appends that end on whole characters go out as they come.
    await append(path, "ü");
    expect(await sse.next()).toEqual({ event: "data", data: "ü" });
    await sse.next();
    // A stream closed inside a character gives what it holds, as a catch-up read does.
    await append(path, new Uint8Array([0xe2, 0x82]), { "Stream-Closed": "true" });
    expect(await sse.next()).toEqual({ event: "data", data: "\ufffd" });
    expect(JSON.parse((await sse.next())?.data as string)).toMatchObject({ streamClosed: true });
    expect((await readAll(path)).text).toBe("xcafé!ü\ufffd");
    await sse.close();
  });

  it("gives SSE readers of text an append that starts with U+FEFF whole, as a catch-up read does", async () => {
    const path = streamPath("bom");
    const tail = await create(path, { body: "x" });
    const sse = await openSse(path, tail);
    expect(JSON.parse((await sse.next())?.data as string)).toMatchObject({ upToDate: true });
    await append(path, "\ufeffab");
    expect(await sse.next()).toEqual({ event: "data", data: "\ufeffab" });
    await sse.close();
    // From its offset, as history.
    expect(await (await openSse(path, tail)).next()).toEqual({ event: "data", data: "\ufeffab" });
    expect((await readAll(path, tail)).text).toBe("\ufeffab");
  });

  it("gives SSE readers of text the text a catch-up read gives when one append ends inside a character", async () => {
    const KIB = 1024;
    const bytes = (...parts: Array<string | number[]>) =>
      concat(
        parts.map((part) =>
          typeof part === "string" ? new TextEncoder().encode(part) : new Uint8Array(part),
        ),
      );
    const path = streamPath("utf8-long");
    await create(path);
    // An event of one append ("€" cut after it), completed by the next.
    await append(path, bytes("a".repeat(600 * KIB - 2), [0xe2, 0x82]));
    await append(path, bytes([0xac], "b".repeat(600 * KIB - 1)));
    // A full event of one append ("😀" cut after it), completed three appends later.
    await append(path, bytes("c".repeat(1024 * KIB - 1), [0xf0]));
    await append(path, bytes([0x9f]));
    await append(path, bytes([0x98]));
    await append(path, bytes([0x80], "d".repeat(10)));
    // At the tail of the open stream: the event waits for the character's end.
    const waitsAt = (await head(path)).offset;
    await append(path, bytes("e".repeat(700 * KIB - 1), [0xc3]));

    /** What an SSE reader gets until the stream closes, and each control event (`whenWaiting` at `waitsAt`). */
    const sseRead = async (sse: SseRead, whenWaiting?: () => Promise<unknown>) => {
      let text = "";
      const controls: Array<{ streamNextOffset: string; upToDate?: boolean; streamClosed?: boolean }> = [];
      for (;;) {
        const event = await sse.next();
        if (!event) return { text, controls };
        if (event.event === "data") text += event.data;
        else {
          const control = JSON.parse(event.data);
          controls.push(control);
          if (control.streamClosed) {
            await sse.close();
            return { text, controls };
          }
          if (whenWaiting && control.streamNextOffset === waitsAt) {
            await whenWaiting();
            whenWaiting = undefined;
          }
        }
      }
    };
    const live = await sseRead(await openSse(path, "-1"), () =>
      append(path, bytes([0xa9], "!"), { "Stream-Closed": "true" }),
    );
    const caughtUp = await readAll(path);
    expect(caughtUp.text).toBe(
      `a${"a".repeat(600 * KIB - 3)}€${"b".repeat(600 * KIB - 1)}${"c".repeat(1024 * KIB - 1)}😀${"d".repeat(10)}${"e".repeat(700 * KIB - 1)}é!`,
    );
    expect(live.text.length).toBe(caughtUp.text.length);
    expect(live.text === caughtUp.text).toBe(true);
    expect(live.controls.map((control) => control.streamNextOffset)).toContain(waitsAt);
    expect(live.controls.at(-1)).toMatchObject({ streamClosed: true, streamNextOffset: caughtUp.offset });
    // A reader resuming from any control event's offset reads on exactly as a catch-up read does.
    for (const { streamNextOffset } of live.controls.slice(0, -1)) {
      const resumed = await sseRead(await openSse(path, streamNextOffset));
      const rest = (await readAll(path, streamNextOffset)).text;
      expect(resumed.text.length, streamNextOffset).toBe(rest.length);
      expect(resumed.text === rest, streamNextOffset).toBe(true);
      expect(caughtUp.text.endsWith(rest)).toBe(true);
    }
    // A stream closed inside a character: its last bytes go with the append that needs them.
    const closed = streamPath("utf8-closed");
    await create(closed);
    await append(closed, bytes("f".repeat(600 * KIB - 2), [0xe2, 0x82]));
    await append(closed, bytes([0xac], "g".repeat(600 * KIB - 2), [0xe2]), { "Stream-Closed": "true" });
    const closedText = `${"f".repeat(600 * KIB - 2)}€${"g".repeat(600 * KIB - 2)}\ufffd`;
    expect((await readAll(closed)).text === closedText).toBe(true);
    expect((await sseRead(await openSse(closed, "-1"))).text === closedText).toBe(true);
  });

  it("ends its live readers when the stream is deleted", async () => {
    const path = streamPath("deleted");
    const tail = await create(path, { body: "x" });
    const sse = await openSse(path, tail);
    await sse.next();
    const poll = call("GET", `${path}?offset=${tail}&live=long-poll`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await call("DELETE", path)).status).toBe(204);
    expect(await sse.next()).toBeUndefined();
    expect((await poll).status).toBe(404);
  });

  it("answers a long-poll 410 when its stream is deleted while forks still read it", async () => {
    const path = streamPath("deleted-forked");
    const tail = await create(path, { body: "x" });
    await create(`${path}-fork`, { headers: { "Stream-Forked-From": path } });
    const poll = call("GET", `${path}?offset=${tail}&live=long-poll`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await call("DELETE", path)).status).toBe(204);
    const answered = await poll;
    expect(answered.status).toBe(410);
    expect(answered.json.error.code).toBe("gone");
    expect((await call("GET", `${path}?offset=${tail}&live=long-poll`)).status).toBe(410);
    expect((await readAll(`${path}-fork`)).text).toBe("x");
  });

  it("gives a reader that drops and resumes at random offsets every byte once, in order", async () => {
    const seed = Date.now();
    const next = seededRandom(seed);
    const path = streamPath("resume");
    await create(path);
    const chunks = Array.from({ length: 600 }, (_, i) => `<${i}:${"x".repeat(Math.floor(next() * 40))}>`);
    const writer = (async () => {
      for (const [i, chunk] of chunks.entries()) {
        const last = i === chunks.length - 1;
        const res = await append(path, chunk, last ? { "Stream-Closed": "true" } : {});
        expect(res.status).toBe(204);
      }
    })();
    const received: string[] = [];
    let offset = "-1";
    let closed = false;
    while (!closed) {
      const mode = next();
      if (mode < 0.4) {
        // SSE, dropped after a random number of events.
        // Data counts once the control event after it says where it ends, as a client resumes.
        const sse = await openSse(path, offset);
        const events = 1 + Math.floor(next() * 12);
        let pending = "";
        for (let i = 0; i < events && !closed; i++) {
          const event = await sse.next(10_000);
          if (!event) break;
          if (event.event === "data") pending += event.data;
          else if (event.event === "control") {
            const control = JSON.parse(event.data);
            received.push(pending);
            pending = "";
            offset = control.streamNextOffset;
            closed = control.streamClosed === true;
          }
        }
        await sse.close();
      } else {
        const live = mode < 0.7 ? "&live=long-poll" : "";
        const res = await call("GET", `${path}?offset=${encodeURIComponent(offset)}${live}`);
        expect([200, 204], res.text).toContain(res.status);
        received.push(res.text);
        offset = res.headers.get("Stream-Next-Offset") as string;
        closed = res.headers.get("Stream-Closed") === "true";
      }
    }
    await writer;
    const got = received.join("");
    const expected = chunks.join("");
    const firstDifference = [...expected].findIndex((char, i) => got[i] !== char);
    expect({ length: got.length, firstDifference }, `seed ${seed}`).toEqual({
      length: expected.length,
      firstDifference: -1,
    });
  }, 120_000);
});

describe("a long-poll whose reader is gone", () => {
  it("answers at once, without waiting again and again for a reader that left", async () => {
    const stub = streamObjects().getByName("long-poll-aborted");
    await runInDurableObject(stub, async (_instance, state) => {
      const store = state.storage.transactionSync(() => new StreamStore(state.storage.sql));
      // The clock moves with each look at it, so a loop that never waits still ends.
      let clock = Date.now();
      const context = new StreamContext({
        storage: state.storage,
        store,
        sources: () => {
          throw new Error("no forks here");
        },
        scheduleAlarm: () => undefined,
        now: () => clock++,
      });
      const stream = state.storage.transactionSync(() =>
        store.create(
          "polled",
          {
            contentType: "text/plain",
            expiry: { ttlSeconds: null, expiresAt: null },
            closed: false,
            fork: null,
            now: clock,
          },
          [],
        ),
      );
      let waits = 0;
      const wait = context.waiters.wait.bind(context.waiters);
      context.waiters.wait = (...args) => {
        waits += 1;
        return wait(...args);
      };
      const gone = new AbortController();
      gone.abort();
      const tail = encodeURIComponent(formatOffset(stream.tail));
      const request = new Request(`http://streams.test/s?offset=${tail}&live=long-poll`, {
        signal: gone.signal,
      });
      const answer = await readStream(context, request, "polled");
      expect(answer.status).toBe(204);
      expect(waits).toBeLessThanOrEqual(1);
    });
  });
});

describe("producers retrying appends", () => {
  it("writes a retried append once, whether or not its first answer arrived", async () => {
    const path = streamPath("retry");
    await create(path);
    for (let seq = 0; seq < 20; seq++) {
      const headers = { "Content-Type": "text/plain", ...producer("agent", 0, seq) };
      const dropped = new AbortController();
      const first = call("POST", path, { body: `chunk ${seq};`, headers, signal: dropped.signal }).catch(
        () => undefined,
      );
      // The answer is dropped (the connection cut) at a different moment each time.
      setTimeout(() => dropped.abort(), seq % 4);
      await first;
      const retry = await call("POST", path, { body: `chunk ${seq};`, headers });
      expect([200, 204]).toContain(retry.status);
      expect(retry.headers.get("Producer-Seq")).toBe(String(seq));
    }
    const expected = Array.from({ length: 20 }, (_, seq) => `chunk ${seq};`).join("");
    expect((await readAll(path)).text).toBe(expected);
  });

  it("answers a duplicate with 204 and the highest sequence accepted, writing nothing", async () => {
    const path = streamPath("duplicate");
    await create(path);
    for (let seq = 0; seq < 3; seq++)
      expect((await append(path, `${seq}`, producer("p", 0, seq))).status).toBe(200);
    const tail = (await head(path)).offset;
    const duplicate = await append(path, "0", producer("p", 0, 0));
    expect(duplicate.status).toBe(204);
    expect(duplicate.headers.get("Producer-Seq")).toBe("2");
    expect((await head(path)).offset).toBe(tail);
    expect((await readAll(path)).text).toBe("012");
  });

  it("keeps one producer's concurrent appends in the order they were sent", async () => {
    const path = streamPath("ordered");
    await create(path);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, seq) => append(path, `${seq},`, producer("fast", 0, seq))),
    );
    const accepted = answers.filter((res) => res.status === 200).length;
    const text = (await readAll(path)).text;
    // Whatever arrived out of order was refused, never written out of order.
    expect(text).toBe(Array.from({ length: accepted }, (_, seq) => `${seq},`).join(""));
  });
});
