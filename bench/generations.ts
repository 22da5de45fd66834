import { SseReader } from "../src/core/sse";
import { followSse } from "./sse-follow";

/*
 * Generations (answers in flight, their streams kept in their sessions' objects), measured against
 * the running service: a 20-byte append against the no-op requests of the same run; how soon a
 * reader following the tail sees a chunk (a long-poll, as the client follows, and SSE); a catch-up
 * from offset 0 of a 100,000-chunk generation against reading the same bytes as one entry's
 * context; appends and tail reads at 100,000 chunks against 1,000 (their time, and workerd's
 * memory meanwhile); and 1,000 readers following one generation, each getting every chunk.
 */

export interface GenerationBench {
  url: string;
  quick: boolean;
  record(name: string, unit: string, samples: number[], budget?: { limit: number; note?: string }): void;
  derived(
    name: string,
    unit: string,
    value: number,
    budget?: { limit: number; atLeast?: boolean; note?: string },
  ): void;
  /** The peak resident memory of the workerd processes, in KB. */
  workerdPeakKb(): number;
}

const CHUNK = "0123456789abcdefghij"; // 20 bytes
/** An event of 20 bytes: what a JSON generation's chunk is at its smallest. */
const EVENT = '{"type":"d","x":"0"}';

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

async function timed(url: string, init?: RequestInit): Promise<{ ms: number; res: Response; text: string }> {
  const start = performance.now();
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status >= 400)
    throw new Error(`${init?.method ?? "GET"} ${url} -> ${res.status} ${text.slice(0, 200)}`);
  return { ms: performance.now() - start, res, text };
}

const json = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify(body),
});

const text = (body: string): RequestInit => ({
  method: "POST",
  headers: { "Content-Type": "text/plain" },
  body,
});

/** A session with a question, and a generation open under it: its stream's URL and id. */
async function open(
  bench: GenerationBench,
  id: string,
  format = "text",
): Promise<{ stream: string; gid: string }> {
  await timed(`${bench.url}/v1/sessions`, json({ id }));
  await timed(
    `${bench.url}/v1/sessions/${id}/entries`,
    json({ type: "message", message: { role: "user", content: "go", timestamp: 0 } }),
  );
  const opened = JSON.parse(
    (await timed(`${bench.url}/v1/sessions/${id}/generations`, json({ format }))).text,
  );
  return { stream: `${bench.url}${opened.stream}`, gid: opened.id };
}

/** A 20-byte append to a generation, alternating with a no-op GET and a no-op POST of the same body. */
async function appendCost(bench: GenerationBench): Promise<void> {
  process.stderr.write("generation append over HTTP\n");
  const { stream } = await open(bench, "gen-append");
  await timed(`${bench.url}/v1/sessions`, json({ id: "gen-floor" }));
  const appends: number[] = [];
  const noopGet: number[] = [];
  const noopPost: number[] = [];
  const count = bench.quick ? 200 : 1000;
  for (let i = 0; i < count; i++) {
    noopGet.push((await timed(`${bench.url}/v1/sessions/gen-floor`)).ms);
    // The bench object's no-op reads a JSON body: a JSON string of 20 bytes.
    noopPost.push((await timed(`${bench.url}/bench/noop/noop`, text(JSON.stringify(CHUNK.slice(2))))).ms);
    appends.push((await timed(stream, text(CHUNK))).ms);
  }
  const [a, get, post] = [appends.slice(20), noopGet.slice(20), noopPost.slice(20)];
  bench.record("generations: no-op POST of a 20-byte body to an object, alongside, p50", "ms", post);
  bench.record("generations: no-op GET of a session, alongside, p50", "ms", get);
  bench.record("generation append of a 20-byte chunk over HTTP, p50", "ms", a);
  bench.derived("generation append p50 / no-op POST p50", "×", median(a) / median(post), { limit: 1.3 });
  bench.derived("generation append p50 / no-op GET p50", "×", median(a) / median(get), { limit: 1.3 });
}

/** Follows a text generation by long-polls, as the client does; the time each chunk arrived. */
function longPollReader(
  stream: string,
  seen: Map<string, number>,
  wake: () => void,
  stop: AbortSignal,
): void {
  void (async () => {
    let offset = "now";
    while (!stop.aborted) {
      try {
        const res = await fetch(`${stream}?offset=${offset}&live=long-poll`, { signal: stop });
        const body = await res.text();
        const now = performance.now();
        offset = res.headers.get("Stream-Next-Offset") ?? offset;
        for (const chunk of body.split(";")) if (chunk) seen.set(chunk, now);
        wake();
      } catch {
        return;
      }
    }
  })();
}

/** Follows a text generation over SSE; the time each chunk arrived. */
async function sseReader(stream: string, seen: Map<string, number>, wake: () => void, stop: AbortSignal) {
  const res = await fetch(`${stream}?offset=now&live=sse`, { signal: stop });
  followSse(
    res.body as ReadableStream<Uint8Array>,
    (event, now) => {
      if (event.event === "data") for (const chunk of event.data.split(";")) if (chunk) seen.set(chunk, now);
    },
    wake,
  );
}

/** A reader at the tail: how long after an append starts it sees the chunk. */
async function tailLatency(bench: GenerationBench, mode: "long-poll" | "sse"): Promise<void> {
  process.stderr.write(`generation tail latency (${mode})\n`);
  const { stream } = await open(bench, `gen-tail-${mode}`);
  const stop = new AbortController();
  const seen = new Map<string, number>();
  let wake: (() => void) | undefined;
  const woken = () => wake?.();
  if (mode === "sse") await sseReader(stream, seen, woken, stop.signal);
  else longPollReader(stream, seen, woken, stop.signal);
  // The reader is waiting before the first append.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const appends: number[] = [];
  const arrivals: number[] = [];
  const count = bench.quick ? 100 : 300;
  for (let i = 0; i < count; i++) {
    const chunk = `t${String(i).padStart(17, "0")};`; // 20 bytes
    const start = performance.now();
    appends.push((await timed(stream, text(chunk))).ms);
    const key = chunk.slice(0, -1);
    while (!seen.has(key)) await new Promise<void>((resolve) => (wake = resolve));
    arrivals.push((seen.get(key) as number) - start);
  }
  stop.abort();
  bench.record(`generation append (followed by a ${mode} reader), p50`, "ms", appends.slice(10));
  bench.record(`the chunk at the ${mode} reader, from the append's start, p50`, "ms", arrivals.slice(10));
  bench.derived(
    `generation tail reader (${mode}) latency p50 / append p50`,
    "×",
    median(arrivals.slice(10)) / median(appends.slice(10)),
    { limit: 1.5 },
  );
}

/** A JSON generation of `chunks` 20-byte events, written 1,000 an append. */
async function fill(
  bench: GenerationBench,
  id: string,
  chunks: number,
): Promise<{ stream: string; gid: string }> {
  const opened = await open(bench, id, "ai-sdk-ui");
  const batch = `[${Array.from({ length: 1000 }, () => EVENT).join(",")}]`;
  for (let done = 0; done < chunks; done += 1000) {
    await timed(opened.stream, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: batch,
    });
  }
  return opened;
}

/** Every page from offset 0; the bytes read and how many events they held. */
async function catchUpOnce(stream: string): Promise<{ ms: number; bytes: number; events: number }> {
  const start = performance.now();
  let offset = "-1";
  let bytes = 0;
  let events = 0;
  for (;;) {
    const { res, text: body } = await timed(`${stream}?offset=${offset}`);
    bytes += body.length;
    events += (body.length - 1) / (EVENT.length + 1);
    offset = res.headers.get("Stream-Next-Offset") as string;
    if (res.headers.get("Stream-Up-To-Date") === "true") break;
  }
  return { ms: performance.now() - start, bytes, events: Math.round(events) };
}

/** Catch-up from offset 0 of a long generation, against the same bytes as one entry's context. */
async function catchUp(bench: GenerationBench, stream: string, chunks: number): Promise<void> {
  const label = chunks.toLocaleString("en-US");
  process.stderr.write(`generation catch-up, ${label} chunks\n`);
  await catchUpOnce(stream);
  const reads: number[] = [];
  let total = 0;
  for (let run = 0; run < 5; run++) {
    const read = await catchUpOnce(stream);
    if (read.events !== chunks) throw new Error(`catch-up read ${read.events} events of ${chunks}`);
    reads.push(read.ms);
    total = read.bytes;
  }
  bench.record(`generation catch-up from offset 0, ${label} chunks of 20 bytes, every page`, "ms", reads);
  await timed(`${bench.url}/v1/sessions`, json({ id: "gen-compare" }));
  await timed(
    `${bench.url}/v1/sessions/gen-compare/entries`,
    json({ type: "message", message: { role: "user", content: "x".repeat(total), timestamp: 0 } }),
  );
  const contexts: number[] = [];
  for (let run = 0; run < 5; run++)
    contexts.push((await timed(`${bench.url}/v1/sessions/gen-compare/context`)).ms);
  bench.record(
    `generations: GET context of one entry of the same ${total.toLocaleString("en-US")} bytes`,
    "ms",
    contexts,
  );
  bench.derived(
    `generation catch-up (${label} chunks) / the same bytes as one entry's context`,
    "×",
    median(reads) / median(contexts),
    { limit: 2 },
  );
}

/**
 * A writer and a reader at the tail of a generation of `chunks`: 300 rounds of a 20-byte append
 * and a read of what it added (from the offset before it). What they take, and how much the peak
 * resident memory of workerd (every object and the router, a high-water mark) grows meanwhile.
 */
async function atTail(stream: string, workerdPeakKb: () => number) {
  const appends: number[] = [];
  const reads: number[] = [];
  let offset = (await timed(`${stream}?offset=now`)).res.headers.get("Stream-Next-Offset") as string;
  const before = workerdPeakKb();
  for (let i = 0; i < 300; i++) {
    const appended = await timed(stream, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: EVENT,
    });
    appends.push(appended.ms);
    const read = await timed(`${stream}?offset=${offset}`);
    if (read.text !== `[${EVENT}]`) throw new Error(`the tail read ${read.text.slice(0, 100)}`);
    reads.push(read.ms);
    offset = appended.res.headers.get("Stream-Next-Offset") as string;
  }
  return { appends: appends.slice(20), reads: reads.slice(20), growthMb: (workerdPeakKb() - before) / 1024 };
}

/**
 * What a generation's length costs the object: appends and reads at the tail of a 100,000-chunk
 * generation against a 1,000-chunk one (time, and workerd's peak memory meanwhile).
 */
async function lengthCost(
  bench: GenerationBench,
  short: string,
  long: string,
  chunks: number,
): Promise<void> {
  process.stderr.write("generation appends and tail reads by length\n");
  const label = chunks.toLocaleString("en-US");
  // Warm, each once.
  await atTail(short, bench.workerdPeakKb);
  await atTail(long, bench.workerdPeakKb);
  const a = await atTail(short, bench.workerdPeakKb);
  const b = await atTail(long, bench.workerdPeakKb);
  bench.record("generation append at 1,000 chunks, p50", "ms", a.appends);
  bench.record(`generation append at ${label} chunks, p50`, "ms", b.appends);
  bench.record("read of the last chunk at 1,000 chunks, p50", "ms", a.reads);
  bench.record(`read of the last chunk at ${label} chunks, p50`, "ms", b.reads);
  bench.derived(`append p50 at ${label} chunks / at 1,000`, "×", median(b.appends) / median(a.appends), {
    limit: 1.5,
  });
  bench.derived(`tail read p50 at ${label} chunks / at 1,000`, "×", median(b.reads) / median(a.reads), {
    limit: 1.5,
  });
  bench.derived("workerd peak growth over 300 appends and tail reads at 1,000 chunks", "MB", a.growthMb);
  bench.derived(`workerd peak growth over the same at ${label} chunks`, "MB", b.growthMb);
}

/** Readers following one generation over SSE, each until the generation completes: what each got. */
async function manyReaders(bench: GenerationBench): Promise<void> {
  const count = bench.quick ? 200 : 1000;
  const chunks = 50;
  process.stderr.write(`${count} readers following one generation\n`);
  const { stream, gid } = await open(bench, "gen-readers");
  const expected = Array.from({ length: chunks }, (_, i) => `c${String(i).padStart(18, "0")};`).join("");
  const readers = Array.from({ length: count }, async () => {
    let got = "";
    const res = await fetch(`${stream}?offset=-1&live=sse`);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const sse = new SseReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const event of sse.push(decoder.decode(value, { stream: true }))) {
        if (event.event === "data") got += event.data;
        if (event.event === "control" && JSON.parse(event.data).streamClosed) {
          await reader.cancel().catch(() => undefined);
          return { got, at: performance.now() };
        }
      }
    }
    return { got, at: performance.now() };
  });
  // Every reader is connected before the first chunk.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const appends: number[] = [];
  for (let i = 0; i < chunks; i++)
    appends.push((await timed(stream, text(expected.slice(i * 20, i * 20 + 20)))).ms);
  const completed = performance.now();
  await timed(`${bench.url}/v1/sessions/gen-readers/generations/${gid}/complete`, json({}));
  const results = await Promise.all(readers);
  const whole = results.filter((result) => result.got === expected).length;
  bench.record(`generation append with ${count} readers following, p50`, "ms", appends);
  bench.derived(
    `readers of ${count} that got every one of ${chunks} chunks, once, in order`,
    "readers",
    whole,
    {
      limit: count,
      atLeast: true,
    },
  );
  bench.derived(
    `complete → the last of ${count} readers told the generation is closed`,
    "ms",
    Math.max(...results.map((result) => result.at)) - completed,
  );
}

export async function generationFigures(bench: GenerationBench): Promise<void> {
  await appendCost(bench);
  await tailLatency(bench, "long-poll");
  await tailLatency(bench, "sse");
  const chunks = bench.quick ? 20_000 : 100_000;
  const long = await fill(bench, `gen-long-${chunks}`, chunks);
  const short = await fill(bench, "gen-short", 1000);
  await catchUp(bench, long.stream, chunks);
  await lengthCost(bench, short.stream, long.stream, chunks);
  await manyReaders(bench);
}
