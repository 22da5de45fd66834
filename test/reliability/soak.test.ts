import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import { faults } from "./faults";
import { runSoak, type SoakTarget, type SocketLike } from "./soak";

/*
 * The seeded soak, against the service with every fault on: statements failing inside
 * transactions, objects reset after a commit (their answer lost), objects evicted between and
 * during requests, alarms failing (the runtime runs them again), directory shards unreachable for
 * a while, and a network losing requests and answers and cutting event streams. `npm test` runs
 * it for a few seconds; `npm run test:soak` for minutes (SOAK_SECONDS), with 50 writers over 20
 * sessions. A failure prints its seed: SOAK_SEED=<seed> runs the same operations again.
 */

const TENANT = "tenant-soak";
const KEY = "key-soak";
const DEFAULT_SEED = 29;

function sessionStub(id: string) {
  return env.SESSIONS.getByName(sessionObjectName(TENANT, id));
}

async function openSocket(path: string): Promise<SocketLike> {
  const res = await exports.default.fetch(`http://sessions.test${path}`, {
    headers: { Upgrade: "websocket", Authorization: `Bearer ${KEY}` },
  });
  const socket = res.webSocket;
  if (!socket) throw new Error(`the socket did not open: ${res.status}`);
  socket.accept();
  return {
    send: (text) => socket.send(text),
    close: (code, reason) => {
      try {
        socket.close(code, reason);
      } catch {
        // Closed already.
      }
    },
    onMessage: (listener) => socket.addEventListener("message", (event) => listener(event.data as string)),
    onClose: (listener) => socket.addEventListener("close", () => listener()),
  };
}

/** The service's own faults while the soak runs: a plan (faults.ts) and two timers. */
function serviceFaults(seed: number): Pick<SoakTarget, "startFaults" | "stopFaults" | "settle"> {
  const timers: ReturnType<typeof setInterval>[] = [];
  let evictions = 0;
  let outages = 0;
  return {
    startFaults(random, sessions) {
      faults.seed(seed);
      faults.add({ point: "statement", chance: 0.005 });
      faults.add({ point: "commit", chance: 0.02 });
      faults.add({ point: "alarm", chance: 0.2 });
      timers.push(
        setInterval(() => {
          const all = sessions();
          const id = all[Math.floor(random() * all.length)] as string;
          // Waits for the requests in flight, then drops the instance; a session not running is skipped.
          evictDurableObject(sessionStub(id)).then(
            () => evictions++,
            () => undefined,
          );
        }, 150),
        setInterval(() => {
          if (faults.directoryDown || random() > 0.3) return;
          faults.directoryDown = true;
          outages++;
          setTimeout(() => {
            faults.directoryDown = false;
          }, 300);
        }, 500),
      );
    },
    async stopFaults() {
      for (const timer of timers) clearInterval(timer);
      faults.clear();
      return { ...faults.injected, eviction: evictions, "directory outage": outages };
    },
    async settle(sessions) {
      // Reports put off by the faults (directory outages, failed alarms) are sent now.
      for (let round = 0; round < 3; round++) {
        for (const id of sessions) await runDurableObjectAlarm(sessionStub(id)).catch(() => false);
      }
    },
  };
}

it("keeps every acknowledged write exactly once, in order, under every fault (seeded soak)", async () => {
  const seed = Number(env.SOAK_SEED) || DEFAULT_SEED;
  const seconds = Number(env.SOAK_SECONDS) || 0;
  const long = seconds > 0;
  const target: SoakTarget = {
    fetch: (request) => exports.default.fetch(request),
    baseUrl: "http://sessions.test",
    token: KEY,
    openSocket,
    ...serviceFaults(seed),
  };
  const report = await runSoak(target, {
    seed,
    writers: long ? 50 : 12,
    sessions: long ? 20 : 6,
    durationMs: long ? seconds * 1000 : 3000,
    watched: long ? 4 : 2,
    network: { loseRequest: 0.03, loseAnswer: 0.06, cutStream: 0.05 },
    dropSocket: 0.02,
    // Enough operations that the short run meets every kind of fault, however slow the machine.
    minOperations: long ? 0 : 150,
    log: (line) => console.log(line),
  });
  const { verdict } = report;
  console.log(
    [
      `soak seed ${seed}: ${verdict.ok ? "the promise held" : "VIOLATED"}`,
      `${report.operations} operations in ${report.seconds.toFixed(1)} s, ${report.acknowledged} acknowledged (${report.throughput.toFixed(0)}/s)`,
      `outcomes: ${JSON.stringify(verdict.counts)}`,
      `faults injected: ${JSON.stringify(report.injected)}`,
      ...verdict.violations,
    ].join("\n"),
  );
  expect(verdict.violations, `soak seed ${seed} (SOAK_SEED=${seed} repeats it)`).toEqual([]);
  // The run did meet faults: answers lost on the way, and the service's own.
  expect(report.injected["lost answer"] ?? 0).toBeGreaterThan(0);
  expect((report.injected.statement ?? 0) + (report.injected.commit ?? 0)).toBeGreaterThan(0);
  expect(report.injected.eviction ?? 0).toBeGreaterThan(0);
  expect(report.acknowledged).toBeGreaterThan(report.operations / 2);
}, 900_000);
