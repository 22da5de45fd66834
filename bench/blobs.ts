import { randomBytes } from "node:crypto";

/*
 * Blobs in R2, measured against the running service: a session of screenshots (200 of 200 KB
 * each, as agents send them: base64 PNG data in user messages) written with the R2 tier and again
 * without it (the bench Worker's `/bench-inline` routes serve the same app with no bucket bound),
 * what each stores where, and how long its context takes to read back whole over HTTP.
 */

export interface BlobBench {
  quick: boolean;
  http(method: string, path: string, body?: unknown): Promise<{ ms: number; status: number; json: any }>;
  record(name: string, unit: string, samples: number[]): void;
  /** The context read whole over HTTP, timed, with its size. */
  read(path: string): Promise<{ ms: number; bytes: number }>;
}

/** Base64 text of a screenshot: 150 KiB of bytes, 200 KiB as written. */
const SHOT_BYTES = 150 * 1024;
/** Screenshots one append carries (a request of about 2 MB). */
const BATCH = 10;

function screenshotTurn(i: number) {
  return {
    type: "message",
    message: {
      role: "user",
      content: [
        { type: "text", text: `step ${i}: what the screen shows now` },
        { type: "image", data: randomBytes(SHOT_BYTES).toString("base64"), mimeType: "image/png" },
      ],
      timestamp: 1_767_225_600_000 + i,
    },
  };
}

export async function blobSessions(bench: BlobBench): Promise<void> {
  const shots = bench.quick ? 20 : 200;
  process.stderr.write(`blobs: a session of ${shots} screenshots of 200 KB, with and without R2\n`);
  // The same screenshots both ways.
  const turns = Array.from({ length: shots }, (_, i) => screenshotTurn(i));
  const readRuns = bench.quick ? 3 : 5;
  for (const [label, prefix] of [
    ["with the R2 tier", ""],
    ["without it", "/bench-inline"],
  ] as const) {
    const id = `blobs-${prefix ? "inline" : "r2"}`;
    await bench.http("POST", `${prefix}/v1/sessions`, { id });
    const writes: number[] = [];
    for (let i = 0; i < shots; i += BATCH) {
      const { ms } = await bench.http("POST", `${prefix}/v1/sessions/${id}/entries`, {
        entries: turns.slice(i, i + BATCH),
      });
      writes.push(ms);
    }
    bench.record(`append of ${BATCH} screenshots of 200 KB over HTTP, ${label}`, "ms", writes);
    const info = (await bench.http("GET", `${prefix}/v1/sessions/${id}`)).json;
    const sqlite = info.bytes - (info.blobBytes ?? 0);
    bench.record(`${shots} screenshots of 200 KB: stored in the session's SQLite, ${label}`, "bytes", [
      sqlite,
    ]);
    const reads: number[] = [];
    let size = 0;
    for (let run = 0; run < readRuns; run++) {
      const { ms, bytes } = await bench.read(`${prefix}/v1/sessions/${id}/context`);
      reads.push(ms);
      size = bytes;
    }
    bench.record(
      `GET context of ${shots} screenshots of 200 KB (${(size / 1e6).toFixed(1)} MB), ${label}`,
      "ms",
      reads,
    );
    // Built again from storage each time, not from the context kept at the head.
    const built: number[] = [];
    for (let run = 0; run < readRuns; run++) {
      built.push((await bench.read(`${prefix}/v1/sessions/${id}/context?leafId=${info.leafId}`)).ms);
    }
    bench.record(`GET context by leafId (from storage), same session, ${label}`, "ms", built);
  }
  const stored = (await bench.http("GET", "/bench-blobs/stored")).json as { objects: number; bytes: number };
  bench.record(`${shots} screenshots of 200 KB: stored in R2 (each once, as image bytes)`, "bytes", [
    stored.bytes,
  ]);
  const usage = (await bench.http("GET", "/v1/usage")).json;
  bench.record("tenant's blobs in R2 after the run", "blobs", [usage.blobs.blobs]);
}
