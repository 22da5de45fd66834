import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * Sessions at the platform's limits, measured on the real service (`wrangler dev`): one of
 * 1,000,000 entries and one of 2 GB of stored bytes (large tool outputs). For each: waking its
 * object (the server restarted on the same data), reading its head context, a context delta, an
 * export, a compaction and a fork (its answer, its context, its copy in the background), each
 * timed, with the peak resident memory of workerd during it
 * (its high-water mark reset before each step). No step may hold the whole session in memory: V8's
 * heap is capped at the platform's 128 MB (HEAP_CAP), and what a step adds stays far below the
 * session's size. `npm run test:scale` runs it (SCALE_TESTS=1);
 * SCALE_ENTRIES and SCALE_BYTES make it smaller. Figures go to docs/reliability.md.
 */

const ENTRIES = Number(process.env.SCALE_ENTRIES ?? 1_000_000);
const BYTES = Number(process.env.SCALE_BYTES ?? 2 * 1024 ** 3);
const ENTRY_BATCH = 1000;
/** A large tool output, as an agent reading files or running builds stores them. */
const OUTPUT_BYTES = 1024 * 1024;
const OUTPUTS_PER_REQUEST = 4;
/** The peak a step may add to workerd's resident memory (no step holds the session). */
const STEP_MEMORY_BUDGET_MB = 400;

interface Step {
  session: string;
  step: string;
  seconds: number;
  /** workerd's peak resident memory during the step, and what the step added to it. */
  peakMb: number;
  addedMb: number;
  /** Of it, the most of its own memory (anonymous: heaps, buffers; sampled), and what the step added to that. */
  anonPeakMb: number;
  anonAddedMb: number;
  detail?: string;
}

/**
 * workerd runs with V8's heap capped at the platform's 128 MB an isolate (locally the Worker and
 * the objects share one, so this is stricter than deployed): a step that held the session would
 * not finish.
 */
const HEAP_CAP = "--max-old-space-size=128";

const folder = mkdtempSync(join(tmpdir(), "sessions-limits-"));
let server: DevServer | undefined;
const steps: Step[] = [];

afterAll(async () => {
  await server?.stop();
  rmSync(folder, { recursive: true, force: true });
});

/** The workerd processes under the server (its process group's descendants named workerd). */
function workerdPids(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      try {
        if (readFileSync(`/proc/${child}/comm`, "utf8").trim() === "workerd") found.push(child);
      } catch {
        // Gone meanwhile.
      }
      walk(child);
    }
  };
  walk(root);
  return found;
}

function memoryKb(pid: number, field: "VmRSS" | "VmHWM" | "RssAnon"): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  } catch {
    // The process is gone (the step failed): nothing to count.
    return 0;
  }
}

/** Runs a step, timed, with workerd's peak memory during it (its high-water mark reset first). */
async function measure(
  session: string,
  step: string,
  work: () => Promise<string | undefined>,
): Promise<void> {
  const pids = workerdPids(server?.pid as number);
  expect(pids.length).toBeGreaterThan(0);
  for (const pid of pids) writeFileSync(`/proc/${pid}/clear_refs`, "5");
  const total = (field: "VmRSS" | "VmHWM" | "RssAnon") =>
    pids.reduce((sum, pid) => sum + memoryKb(pid, field), 0);
  const before = total("VmRSS");
  const anonBefore = total("RssAnon");
  // The kernel keeps no peak of anonymous memory alone: it is sampled while the step runs.
  let anonPeak = anonBefore;
  const sampler = setInterval(() => {
    anonPeak = Math.max(anonPeak, total("RssAnon"));
  }, 20);
  const started = performance.now();
  let detail: string | undefined;
  try {
    detail = await work();
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - started) / 1000;
  anonPeak = Math.max(anonPeak, total("RssAnon"));
  const peak = total("VmHWM");
  const result: Step = {
    session,
    step,
    seconds: Math.round(seconds * 100) / 100,
    peakMb: Math.round(peak / 1024),
    addedMb: Math.round((peak - before) / 1024),
    anonPeakMb: Math.round(anonPeak / 1024),
    anonAddedMb: Math.round((anonPeak - anonBefore) / 1024),
    ...(detail ? { detail } : {}),
  };
  steps.push(result);
  process.stderr.write(`${JSON.stringify(result)}\n`);
}

async function http(method: string, path: string, body?: unknown): Promise<Response> {
  const res = await fetch(`${server?.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${(await res.text()).slice(0, 500)}`);
  return res;
}

/** Reads a streamed answer to its end without keeping it: its size. */
async function drain(res: Response): Promise<number> {
  let bytes = 0;
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    bytes += value.byteLength;
  }
}

const words = (i: number, n: number) =>
  Array.from({ length: n }, (_, k) => `w${(i * 31 + k * 7) % 5000}`).join(" ");

function conversationEntry(i: number) {
  return i % 2 === 0
    ? {
        type: "message",
        message: {
          role: "user",
          content: `question ${i}: ${words(i, 30)}`,
          timestamp: 1_700_000_000_000 + i,
        },
      }
    : {
        type: "message",
        message: {
          role: "assistant",
          content: [{ type: "text", text: `answer ${i}: ${words(i, 30)}` }],
          api: "openai-completions",
          provider: "openai",
          model: "gpt-4o",
          usage: {
            input: 10,
            output: 10,
            cacheRead: 0,
            cacheWrite: 0,
            totalTokens: 20,
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
          },
          stopReason: "stop",
          timestamp: 1_700_000_000_000 + i,
        },
      };
}

/** A turn reading a large file: the call, then its output (about OUTPUT_BYTES). */
function toolTurn(i: number) {
  const call = `call-${i}`;
  return [
    {
      type: "message",
      message: {
        role: "assistant",
        content: [{ type: "toolCall", id: call, name: "read", arguments: { path: `src/file-${i}.ts` } }],
        api: "openai-completions",
        provider: "openai",
        model: "gpt-4o",
        usage: {
          input: 10,
          output: 10,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 20,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
        },
        stopReason: "toolUse",
        timestamp: 1_700_000_000_000 + i,
      },
    },
    {
      type: "message",
      message: {
        role: "toolResult",
        toolCallId: call,
        toolName: "read",
        content: [
          {
            type: "text",
            text: `${i} ${words(i, 40)} `.repeat(Math.ceil(OUTPUT_BYTES / 250)).slice(0, OUTPUT_BYTES),
          },
        ],
        isError: false,
        timestamp: 1_700_000_000_000 + i,
      },
    },
  ];
}

async function stored(
  id: string,
): Promise<{ entryCount: number; bytes: number; blobBytes?: number; leafId: string }> {
  return (await (await http("GET", `/v1/sessions/${id}`)).json()) as never;
}

/**
 * Tool outputs stay in the session's SQLite, as a service without a blob bucket keeps them: the
 * local service binds one, which would take them out to R2, away from the object's storage limit.
 */
const INLINE = { BLOB_MIN_BYTES: String(2 ** 40) };

async function start(): Promise<DevServer> {
  process.env.MINIFLARE_WORKERD_V8_FLAGS = HEAP_CAP;
  return startDevServer({ persistTo: folder, timeoutMs: 120_000, vars: INLINE });
}

/** The steps on a session that exists: wake, head context, delta, export, compaction, fork. */
async function measureSession(id: string): Promise<void> {
  // Waking: a new server process on the same data, then the session's first request.
  await server?.stop();
  server = await start();
  await measure(id, "wake (first request after a restart)", async () => {
    const info = await stored(id);
    return `${info.entryCount} entries, ${Math.round(info.bytes / 1024 ** 2)} MB`;
  });
  let version = "";
  await measure(id, "head context (whole, streamed)", async () => {
    const res = await http("GET", `/v1/sessions/${id}/context`);
    version = (res.headers.get("ETag") ?? "").replaceAll('"', "");
    return `${Math.round((await drain(res)) / 1024 ** 2)} MB of JSON`;
  });
  await http("POST", `/v1/sessions/${id}/entries`, conversationEntry(0));
  await measure(id, "context delta (one append)", async () => {
    const res = await http("GET", `/v1/sessions/${id}/context?since=${encodeURIComponent(version)}`);
    const delta = (await res.json()) as { append?: unknown[] };
    expect(delta.append).toHaveLength(1);
    return "1 message";
  });
  await measure(id, "export (native NDJSON, streamed)", async () => {
    const res = await http("GET", `/v1/sessions/${id}/export`);
    return `${Math.round((await drain(res)) / 1024 ** 2)} MB`;
  });
  await measure(id, "compaction (extractive summary)", async () => {
    const res = await http("POST", `/v1/sessions/${id}/compact`, {});
    const { entry } = (await res.json()) as { entry: { tokensBefore: number; firstKeptEntryId: string } };
    return `${entry.tokensBefore} tokens before`;
  });
  const { leafId } = await stored(id);
  const fork = `${id}-fork`;
  await measure(id, "fork (the whole path): the answer", async () => {
    const res = await http("POST", `/v1/sessions/${id}/fork`, { entryId: leafId, id: fork });
    const info = (await res.json()) as { entryCount: number; copying?: { copied: number } };
    expect(info.copying).toBeDefined();
    return `${info.entryCount} entries, ${info.copying?.copied} of them copied`;
  });
  await measure(id, "fork: its context (while it copies, or once it has)", async () => {
    const res = await http("GET", `/v1/sessions/${fork}/context`);
    const bytes = await drain(res);
    const { copying } = (await (await http("GET", `/v1/sessions/${fork}`)).json()) as {
      copying?: { copied: number };
    };
    return `${Math.round(bytes / 1024)} KB; ${copying ? `${copying.copied} copied` : "copy done"}`;
  });
  await measure(id, "fork: its copy in the background, to the whole path", async () => {
    for (;;) {
      const info = (await (await http("GET", `/v1/sessions/${fork}`)).json()) as {
        entryCount: number;
        copying?: unknown;
      };
      if (info.copying === undefined) return `${info.entryCount} entries held`;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  });
  // The copy holds the source's path, byte for byte (each read streamed through a hash).
  const digest = async (session: string) => {
    const hash = createHash("sha256");
    const reader = (
      (await http("GET", `/v1/sessions/${session}/branch`)).body as ReadableStream<Uint8Array>
    ).getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) hash.update(read.value);
    return hash.digest("hex");
  };
  expect(await digest(fork)).toBe(await digest(id));
}

it(
  `measures a session of ${ENTRIES.toLocaleString("en-US")} entries and one of ${(BYTES / 1024 ** 3).toFixed(1)} GiB in bounded memory`,
  async () => {
    server = await start();

    await http("POST", "/v1/sessions", { id: "many" });
    await measure("many", "build (appends of 1,000)", async () => {
      for (let start = 0; start < ENTRIES; start += ENTRY_BATCH) {
        const entries = Array.from({ length: Math.min(ENTRY_BATCH, ENTRIES - start) }, (_, k) =>
          conversationEntry(start + k),
        );
        await http("POST", "/v1/sessions/many/entries", { entries });
      }
      return undefined;
    });
    await measureSession("many");

    await http("POST", "/v1/sessions", { id: "large" });
    await measure("large", "build (appends of 4 MiB)", async () => {
      let i = 0;
      for (let bytes = 0; bytes < BYTES; bytes += OUTPUTS_PER_REQUEST * OUTPUT_BYTES) {
        const entries = [
          conversationEntry(2 * i),
          ...Array.from({ length: OUTPUTS_PER_REQUEST }, () => toolTurn(i++)).flat(),
        ];
        await http("POST", "/v1/sessions/large/entries", { entries });
      }
      return undefined;
    });
    // Every byte of it in the object's own storage.
    expect((await stored("large")).blobBytes).toBeUndefined();
    await measureSession("large");

    process.stderr.write(
      `\n| session | step | time (s) | workerd peak RSS (MB) | added (MB) | own memory peak (MB) | added (MB) | |\n|---|---|---|---|---|---|---|---|\n${steps
        .map(
          (s) =>
            `| ${s.session} | ${s.step} | ${s.seconds} | ${s.peakMb} | ${s.addedMb} | ${s.anonPeakMb} | ${s.anonAddedMb} | ${s.detail ?? ""} |`,
        )
        .join("\n")}\n`,
    );
    for (const step of steps.filter((s) => !s.step.startsWith("build"))) {
      expect(step.anonAddedMb, `${step.session}: ${step.step}`).toBeLessThan(STEP_MEMORY_BUDGET_MB);
    }
  },
  4 * 3600_000,
);
