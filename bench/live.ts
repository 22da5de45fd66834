import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { followSse } from "./sse-follow";

/*
 * Live sessions, measured against the running service: how long an event takes from the append's
 * answer to its watchers (1 and 100 of them, Server-Sent Events), what 1,000 idle WebSocket
 * watchers cost and how long one append takes to reach them all, and an agent turn (append, the
 * context by delta, append) at growing history lengths.
 */

export interface LiveBench {
  url: string;
  quick: boolean;
  http(method: string, path: string, body?: unknown): Promise<{ ms: number; status: number; json: any }>;
  record(name: string, unit: string, samples: number[]): void;
  /** Adds a figure computed from samples' percentile. */
  percentile(name: string, unit: string, samples: number[], q: number): void;
  /** Creates a session of `count` entries without compaction, unless this run made it already. */
  fillSession(id: string, count: number): Promise<void>;
  message(i: number, size: number): unknown;
  workerdRssKb(): number;
}

/** An SSE watcher whose `entry` events are timed as they arrive. */
async function sseWatcher(
  url: string,
  arrived: Map<number, number>[],
  index: number,
): Promise<AbortController> {
  const stop = new AbortController();
  const res = await fetch(url, { signal: stop.signal, headers: { Accept: "text/event-stream" } });
  if (!res.ok || !res.body) throw new Error(`events: ${res.status}`);
  const times = new Map<number, number>();
  arrived[index] = times;
  let resolveReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    resolveReady = resolve;
  });
  followSse(res.body, (event, now) => {
    if (event.event === "leaf") resolveReady();
    if (event.event === "entry" && event.id !== undefined) times.set(Number(event.id), now);
  });
  await ready;
  return stop;
}

async function eventLatency(bench: LiveBench, watchers: number): Promise<void> {
  const id = `live-latency-${watchers}`;
  await bench.http("POST", "/v1/sessions", { id });
  const arrived: Map<number, number>[] = [];
  const stops: AbortController[] = [];
  for (let w = 0; w < watchers; w++) {
    stops.push(await sseWatcher(`${bench.url}/v1/sessions/${id}/events`, arrived, w));
  }
  // Both from the moment the append is sent: its answer and its event leave the object once the
  // write is durable, so an event may well arrive before the answer does.
  const latencies: number[] = [];
  const answers: number[] = [];
  const appends = bench.quick ? 50 : 200;
  for (let i = 0; i < appends; i++) {
    const sent = performance.now();
    const { json } = await bench.http("POST", `/v1/sessions/${id}/entries`, {
      type: "message",
      message: bench.message(i, 300),
    });
    answers.push(performance.now() - sent);
    const seq = json.entries[0].seq as number;
    const deadline = sent + 10_000;
    while (arrived.some((times) => !times.has(seq)) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    for (const times of arrived) latencies.push((times.get(seq) ?? deadline) - sent);
  }
  for (const stop of stops) stop.abort();
  const plural = watchers > 1 ? "s" : "";
  bench.record(`append sent → its answer, with ${watchers} SSE watcher${plural}, p50`, "ms", answers);
  bench.record(`append sent → each of ${watchers} SSE watcher${plural} has the event, p50`, "ms", latencies);
  bench.percentile(
    `append sent → each of ${watchers} SSE watcher${plural} has the event, p99`,
    "ms",
    latencies,
    0.99,
  );
}

async function socketFanOut(bench: LiveBench, count: number): Promise<void> {
  const id = "live-sockets";
  await bench.http("POST", "/v1/sessions", { id });
  const wsUrl = `${bench.url.replace(/^http/, "ws")}/v1/sessions/${id}/ws`;
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const before = bench.workerdRssKb();
  const sockets: WebSocket[] = [];
  const arrived: number[] = [];
  for (let i = 0; i < count; i++) {
    const socket = new WebSocket(wsUrl);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener("message", function opened(event) {
        if (String(event.data).includes('"event":"leaf"')) {
          socket.removeEventListener("message", opened);
          resolve();
        }
      });
      socket.addEventListener("error", () => reject(new Error("socket failed")), { once: true });
    });
    socket.addEventListener("message", (event) => {
      if (String(event.data).includes('"event":"entry"')) arrived.push(performance.now());
    });
    sockets.push(socket);
  }
  // Idle: let the session's object go quiet with its watchers connected.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const idle = bench.workerdRssKb();
  bench.record(`${count} idle WebSocket watchers on one session: workerd memory growth`, "MB", [
    (idle - before) / 1024,
  ]);
  const fanOuts: number[] = [];
  for (let round = 0; round < 5; round++) {
    arrived.length = 0;
    // Watchers hear of an append as it commits, often before its writer has the answer: time from the send.
    const sent = performance.now();
    await bench.http("POST", `/v1/sessions/${id}/entries`, {
      type: "message",
      message: bench.message(round, 300),
    });
    const deadline = performance.now() + 30_000;
    while (arrived.length < count && performance.now() < deadline) await new Promise((r) => setTimeout(r, 1));
    if (arrived.length < count) throw new Error(`${count - arrived.length} watchers missed an append`);
    fanOuts.push(Math.max(...arrived) - sent);
  }
  bench.record(`one append to ${count} WebSocket watchers: append sent → the last has it`, "ms", fanOuts);
  for (const socket of sockets) socket.close(1000, "done");
}

/**
 * A WebSocket watcher that stops reading (a raw connection that completes the handshake, then
 * never reads again, so the service's sends back up in the network) while a writer appends
 * thousands of entries: the appends' times with it and without it, and what workerd's memory grew
 * by. The object closes the silent socket once its window is used up (docs/live.md).
 */
async function silentWatcher(bench: LiveBench): Promise<void> {
  const entries = bench.quick ? 2000 : 5000;
  const batch = 10;
  const appendAll = async (id: string): Promise<number[]> => {
    const times: number[] = [];
    for (let i = 0; i < entries; i += batch) {
      const body = {
        entries: Array.from({ length: batch }, (_, k) => ({
          type: "message",
          message: bench.message(i + k, 1000),
        })),
      };
      times.push((await bench.http("POST", `/v1/sessions/${id}/entries`, body)).ms);
    }
    return times;
  };
  await bench.http("POST", "/v1/sessions", { id: "live-unwatched" });
  const alone = await appendAll("live-unwatched");
  const id = "live-silent";
  await bench.http("POST", "/v1/sessions", { id });
  const url = new URL(`${bench.url}/v1/sessions/${id}/ws?after=0`);
  const socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.once("connect", () => {
      socket.write(
        `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
      socket.once("data", (answer) => {
        if (!answer.toString().startsWith("HTTP/1.1 101")) reject(new Error(`no upgrade: ${answer}`));
        // From here on nothing is read: the service's sends fill the network's buffers.
        socket.pause();
        resolve();
      });
    });
  });
  const before = bench.workerdRssKb();
  const watched = await appendAll(id);
  const grown = (bench.workerdRssKb() - before) / 1024;
  socket.destroy();
  bench.record(`append of ${batch} entries, ${entries} in all, no watcher, p50`, "ms", alone);
  bench.record(
    `append of ${batch} entries, ${entries} in all, a WebSocket watcher that stopped reading, p50`,
    "ms",
    watched,
  );
  bench.record(
    `the same, last tenth of the appends (stays flat), p50`,
    "ms",
    watched.slice(-Math.ceil(watched.length / 10)),
  );
  bench.record(`workerd memory growth while the silent watcher was sent to`, "MB", [grown]);
}

/** An agent turn: the user's message, the context by delta, the model's answer. */
async function agentTurns(bench: LiveBench, id: string, history: number): Promise<void> {
  const size = (body: unknown) => JSON.stringify(body).length;
  let { json: context } = await bench.http("GET", `/v1/sessions/${id}/context`);
  let version = context.version as string;
  const times: number[] = [];
  const bytes: number[] = [];
  const turns = bench.quick ? 10 : 30;
  for (let turn = 0; turn < turns; turn++) {
    const start = performance.now();
    const question = { type: "message", message: bench.message(2 * turn, 300) };
    await bench.http("POST", `/v1/sessions/${id}/entries`, question);
    const delta = await bench.http("GET", `/v1/sessions/${id}/context?since=${version}`);
    if (delta.json.since !== version) throw new Error("the turn's context was not a delta");
    version = delta.json.version;
    context = delta.json;
    const answer = { type: "message", message: bench.message(2 * turn + 1, 300) };
    const appended = await bench.http("POST", `/v1/sessions/${id}/entries`, answer);
    times.push(performance.now() - start);
    bytes.push(size(question) + size(delta.json) + size(answer) + size(appended.json));
  }
  const label = `agent turn (append, context by delta, append), ${history.toLocaleString("en-US")} entries of history`;
  bench.record(label, "ms", times);
  bench.record(`${label}: bytes moved`, "bytes", bytes);
}

export async function liveSessions(bench: LiveBench): Promise<void> {
  process.stderr.write("live sessions: event latency, WebSocket fan-out, agent turns\n");
  await eventLatency(bench, 1);
  await eventLatency(bench, bench.quick ? 20 : 100);
  await socketFanOut(bench, bench.quick ? 100 : 1000);
  await silentWatcher(bench);
  await bench.fillSession("live-turn-100", 100);
  await agentTurns(bench, "live-turn-100", 100);
  // The sessions the context figures filled (no compaction; filled now without them), grown by these turns.
  for (const history of bench.quick ? [10_000] : [10_000, 100_000]) {
    await bench.fillSession(`http-${history}`, history);
    await agentTurns(bench, `http-${history}`, history);
  }
}
