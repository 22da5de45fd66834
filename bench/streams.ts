import { followSse } from "./sse-follow";

/*
 * Streams (/v1/stream), measured against the running service: a 20-byte append against the no-op
 * requests of the same run, how soon a reader following the tail sees a chunk, a catch-up from
 * offset 0 of a 100,000-chunk stream against reading the same bytes as one entry's context, and
 * what a stream's SQLite holds for what was appended.
 */

export interface StreamBench {
  url: string;
  quick: boolean;
  record(name: string, unit: string, samples: number[], budget?: { limit: number; note?: string }): void;
  /** A figure computed from others (a ratio), with its budget. */
  derived(name: string, unit: string, value: number, budget?: { limit: number; note?: string }): void;
  /** The peak resident memory of the workerd processes, in KB. */
  workerdPeakKb(): number;
}

const CHUNK = "0123456789abcdefghij"; // 20 bytes

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

async function timed(url: string, init?: RequestInit): Promise<{ ms: number; res: Response; bytes: number }> {
  const start = performance.now();
  const res = await fetch(url, init);
  const bytes = (await res.arrayBuffer()).byteLength;
  if (res.status >= 400) throw new Error(`${init?.method ?? "GET"} ${url} -> ${res.status}`);
  return { ms: performance.now() - start, res, bytes };
}

const text = (body: string): RequestInit => ({
  method: "POST",
  headers: { "Content-Type": "text/plain" },
  body,
});

async function create(bench: StreamBench, path: string): Promise<void> {
  await timed(`${bench.url}/v1/stream/${path}`, { method: "PUT", headers: { "Content-Type": "text/plain" } });
}

/** A 20-byte append, alternating with a no-op GET and a no-op POST of the same body. */
async function appendCost(bench: StreamBench): Promise<void> {
  process.stderr.write("stream append over HTTP\n");
  await create(bench, "bench-append");
  await timed(`${bench.url}/v1/sessions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ id: "stream-floor" }),
  });
  const appends: number[] = [];
  const noopGet: number[] = [];
  const noopPost: number[] = [];
  const count = bench.quick ? 200 : 1000;
  for (let i = 0; i < count; i++) {
    noopGet.push((await timed(`${bench.url}/v1/sessions/stream-floor`)).ms);
    // The bench object's no-op reads a JSON body: a JSON string of 20 bytes.
    noopPost.push((await timed(`${bench.url}/bench/noop/noop`, text(JSON.stringify(CHUNK.slice(2))))).ms);
    appends.push((await timed(`${bench.url}/v1/stream/bench-append`, text(CHUNK))).ms);
  }
  const [a, get, post] = [appends.slice(20), noopGet.slice(20), noopPost.slice(20)];
  bench.record("no-op POST of a 20-byte body to an object, alongside, p50", "ms", post);
  bench.record("no-op GET of a session, alongside, p50", "ms", get);
  bench.record("stream append of a 20-byte chunk over HTTP, p50", "ms", a);
  bench.derived("stream append p50 / no-op POST p50", "×", median(a) / median(post), { limit: 1.3 });
  bench.derived("stream append p50 / no-op GET p50", "×", median(a) / median(get), { limit: 1.3 });
}

/** A reader at the tail (SSE): how long after an append starts it sees the chunk. */
async function tailLatency(bench: StreamBench): Promise<void> {
  process.stderr.write("stream tail latency\n");
  await create(bench, "bench-tail");
  const stop = new AbortController();
  const res = await fetch(`${bench.url}/v1/stream/bench-tail?offset=now&live=sse`, { signal: stop.signal });
  const seen = new Map<string, number>();
  let wake: (() => void) | undefined;
  followSse(
    res.body as ReadableStream<Uint8Array>,
    (event, now) => {
      if (event.event === "data") seen.set(event.data, now);
    },
    () => wake?.(),
  );
  const appends: number[] = [];
  const arrivals: number[] = [];
  const count = bench.quick ? 100 : 300;
  for (let i = 0; i < count; i++) {
    const chunk = `tick-${String(i).padStart(15, "0")}`;
    const start = performance.now();
    appends.push((await timed(`${bench.url}/v1/stream/bench-tail`, text(chunk))).ms);
    while (!seen.has(chunk)) await new Promise<void>((resolve) => (wake = resolve));
    arrivals.push((seen.get(chunk) as number) - start);
  }
  stop.abort();
  bench.record("stream append (followed by an SSE reader), p50", "ms", appends.slice(10));
  bench.record("the chunk at the tail reader, from the append's start, p50", "ms", arrivals.slice(10));
  bench.derived(
    "tail reader latency p50 / append p50",
    "×",
    median(arrivals.slice(10)) / median(appends.slice(10)),
    { limit: 1.5 },
  );
}

/**
 * Catch-up from offset 0 of a long stream, against the same bytes as one entry's context. The
 * stream is JSON, filled 1,000 messages an append: each message is one record, stored and read as
 * a 20-byte text append is, without 100,000 round trips to make it.
 */
async function catchUp(bench: StreamBench): Promise<void> {
  const chunks = bench.quick ? 10_000 : 100_000;
  const label = chunks.toLocaleString("en-US");
  process.stderr.write(`stream catch-up, ${label} chunks\n`);
  const message = JSON.stringify(CHUNK.slice(2)); // 20 bytes
  await timed(`${bench.url}/v1/stream/bench-long`, {
    method: "PUT",
    headers: { "Content-Type": "application/json" },
  });
  const batch = `[${Array.from({ length: 1000 }, () => message).join(",")}]`;
  for (let done = 0; done < chunks; done += 1000) {
    await timed(`${bench.url}/v1/stream/bench-long`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: batch,
    });
  }
  const reads: number[] = [];
  let total = 0;
  const before = bench.workerdPeakKb();
  for (let run = 0; run < 5; run++) {
    const start = performance.now();
    let offset = "-1";
    let messages = 0;
    total = 0;
    for (;;) {
      const { res, bytes } = await timed(`${bench.url}/v1/stream/bench-long?offset=${offset}`);
      total += bytes;
      messages += (bytes - 1) / (message.length + 1);
      offset = res.headers.get("Stream-Next-Offset") as string;
      if (res.headers.get("Stream-Up-To-Date") === "true") break;
    }
    reads.push(performance.now() - start);
    if (Math.round(messages) !== chunks) throw new Error(`catch-up read ${messages} messages of ${chunks}`);
  }
  const growthMb = (bench.workerdPeakKb() - before) / 1024;
  // The same bytes as one entry: a user message of that many characters, read as the context.
  await timed(`${bench.url}/v1/sessions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ id: "stream-compare" }),
  });
  await timed(`${bench.url}/v1/sessions/stream-compare/entries`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      type: "message",
      message: { role: "user", content: "x".repeat(total), timestamp: 0 },
    }),
  });
  const contexts: number[] = [];
  for (let run = 0; run < 5; run++) {
    contexts.push((await timed(`${bench.url}/v1/sessions/stream-compare/context`)).ms);
  }
  bench.record(`stream catch-up from offset 0, ${label} chunks of 20 bytes, every page`, "ms", reads);
  bench.record(`GET context of one entry of the same ${total.toLocaleString("en-US")} bytes`, "ms", contexts);
  bench.derived("catch-up / the same bytes as one entry's context", "×", median(reads) / median(contexts), {
    limit: 2,
  });
  bench.derived(`workerd peak memory growth catching up ${label} chunks (whole process)`, "MB", growthMb);
}

/**
 * What a stream's SQLite holds for what was appended, in both modes: one append of 1 MiB (JSON: of
 * one-digit messages), and 20,000 appends of 20 bytes (JSON: a string message each).
 */
async function storedBytes(bench: StreamBench): Promise<void> {
  process.stderr.write("stream storage\n");
  for (const json of [false, true]) {
    for (const [size, appends, label] of [
      [1024 * 1024, 1, "one append of 1 MiB"],
      [20, 20_000, "20,000 appends of 20 bytes"],
    ] as const) {
      const name = `stream-storage-${json}-${size}-${Date.now()}`;
      const res = await fetch(
        `${bench.url}/bench/${name}/streamStorage?json=${json}&size=${size}&appends=${appends}`,
      );
      if (!res.ok) throw new Error(`streamStorage -> ${res.status}`);
      const { appended, stored } = (await res.json()) as { appended: number; stored: number };
      const mode = json ? "JSON" : "binary";
      bench.derived(`stream stored / appended bytes, ${mode}, ${label}`, "×", stored / appended, {
        limit: 1.3,
      });
    }
  }
}

export async function streamFigures(bench: StreamBench): Promise<void> {
  await storedBytes(bench);
  await appendCost(bench);
  await tailLatency(bench);
  await catchUp(bench);
}
