import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runSoak, type SoakTarget, type SocketLike } from "../reliability/soak";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * The soak end to end: the real service under `wrangler dev`, killed (SIGKILL, every object with
 * it) in the middle of the run and started again on the same data, while writers and watchers go
 * on through a network that loses requests and answers. The history checker then holds the
 * service to its promise, as in the Workers pool (test/reliability/soak.test.ts).
 */

const SEED = Number(process.env.SOAK_SEED) || 31;

it("keeps every acknowledged write when the whole service is killed and restarted mid-run", async () => {
  const folder = mkdtempSync(join(tmpdir(), "sessions-restart-soak-"));
  let server: DevServer = await startDevServer({ persistTo: folder });
  let restarts = 0;
  let kill: ReturnType<typeof setTimeout> | undefined;
  let restarted: Promise<void> | undefined;
  const here = () => new URL(server.url);
  try {
    const target: SoakTarget = {
      baseUrl: "http://service.test",
      // Every request goes to wherever the service listens now (a restart takes a new port).
      fetch: async (request) => {
        const url = new URL(request.url);
        url.host = here().host;
        const body =
          request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer();
        return fetch(url, { method: request.method, headers: request.headers, body, signal: request.signal });
      },
      openSocket: (path) =>
        new Promise<SocketLike>((resolve, reject) => {
          const socket = new WebSocket(`ws://${here().host}${path}`);
          socket.addEventListener("open", () =>
            resolve({
              send: (text) => socket.send(text),
              close: (code, reason) => socket.close(code, reason),
              onMessage: (listener) =>
                socket.addEventListener("message", (event) => listener(String(event.data))),
              onClose: (listener) => socket.addEventListener("close", () => listener()),
            }),
          );
          socket.addEventListener("error", () => reject(new Error("the socket did not open")));
        }),
      startFaults() {
        // A sixth of the way in: every process of the service killed at once, then started again.
        kill = setTimeout(() => {
          restarted = (async () => {
            if (server.pid) process.kill(-server.pid, "SIGKILL");
            restarts++;
            server = await startDevServer({ persistTo: folder });
          })();
        }, 2000);
      },
      async stopFaults() {
        clearTimeout(kill);
        await restarted;
        return { restart: restarts };
      },
    };
    const report = await runSoak(target, {
      seed: SEED,
      writers: 8,
      sessions: 4,
      durationMs: 12_000,
      watched: 2,
      network: { loseRequest: 0.01, loseAnswer: 0.02, cutStream: 0.02 },
      dropSocket: 0.01,
    });
    const { verdict } = report;
    process.stderr.write(
      `restart soak seed ${SEED}: ${verdict.ok ? "the promise held" : "VIOLATED"}; ${report.operations} operations, ${report.acknowledged} acknowledged; ${JSON.stringify(report.injected)}\n${verdict.violations.join("\n")}\n`,
    );
    expect(verdict.violations, `restart soak seed ${SEED}`).toEqual([]);
    expect(report.injected.restart).toBe(1);
    expect(report.acknowledged).toBeGreaterThan(0);
  } finally {
    await server.stop();
    rmSync(folder, { recursive: true, force: true });
  }
}, 240_000);
