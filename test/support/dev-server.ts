import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Netns } from "./netns";

/*
 * The real service for tests that run in Node (the command line, the browser): `npm start`'s
 * launcher (scripts/start.mjs, which runs `wrangler dev`) on a free loopback port, with its own
 * storage folder. It may listen on another address inside a private network namespace instead.
 */

const root = resolve(import.meta.dirname, "../..");

export interface DevServer {
  url: string;
  /** The process group of the server (its launcher, wrangler and workerd): to find workerd by. */
  pid: number | undefined;
  stop(): Promise<void>;
  /** What wrangler printed so far (the Worker's console included). */
  logs(): string;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolvePort(address.port) : reject(new Error("no port")),
      );
    });
  });
}

export interface DevServerOptions {
  vars?: Record<string, string>;
  timeoutMs?: number;
  /** Keep the data in this folder (and leave it there on stop), to start again on it. */
  persistTo?: string;
  /** Another wrangler configuration (the benchmark's). */
  config?: string;
  /** Run inside this network namespace, listening on its extra address. */
  netns?: Netns;
  /** Listen on every address (0.0.0.0), reached here through 127.0.0.1. */
  everyAddress?: boolean;
  /** This port rather than a free one (to start again where clients know the service). */
  port?: number;
  /** Run `wrangler dev` itself with DEV_TENANT set, as someone bypassing `npm start` would. */
  devTenantByHand?: boolean;
}

let nextNetnsPort = 8787;

/**
 * Starts the server; when the free port it picked was taken by another process before wrangler
 * bound it (servers of other tests start at the same time), it starts again on another port.
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (attempt >= 3 || options.netns || !/Address already in use/.test(String(error))) throw error;
    }
  }
}

async function startOnce(options: DevServerOptions): Promise<DevServer> {
  const { netns } = options;
  // A namespace holds only the servers started here: each gets the next port.
  const port = netns ? nextNetnsPort++ : (options.port ?? (await freePort()));
  const ip = netns?.address ?? (options.everyAddress ? "0.0.0.0" : "127.0.0.1");
  const state = options.persistTo ?? mkdtempSync(join(tmpdir(), "sessions-dev-"));
  const bin = join(root, "node_modules/.bin");
  const vars = Object.entries({
    ...(options.devTenantByHand ? { DEV_TENANT: "local" } : {}),
    ...options.vars,
  });
  const args = [
    ...(options.config ? ["--config", options.config] : []),
    "--ip",
    ip,
    "--port",
    String(port),
    "--persist-to",
    state,
    "--show-interactive-dev-session=false",
    ...vars.flatMap(([k, v]) => ["--var", `${k}:${v}`]),
  ];
  const [command, commandArgs] = options.devTenantByHand
    ? [join(bin, "wrangler"), ["dev", ...args]]
    : [process.execPath, [join(root, "scripts/start.mjs"), ...args]];
  const [program, programArgs] = netns ? netns.wrap(command, commandArgs) : [command, commandArgs];
  const child: ChildProcess = spawn(program, programArgs, {
    cwd: root,
    // The project's own Node (22) must run wrangler: its bin folder goes first on PATH.
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH ?? ""}`,
      WRANGLER_SEND_METRICS: "false",
      CI: "1",
    },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://${options.everyAddress ? "127.0.0.1" : ip}:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
    }
    if (!options.persistTo) rmSync(state, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      const status = netns
        ? (await netns.request(`${url}/healthz`)).status
        : (await fetch(`${url}/healthz`)).status;
      if (status === 200) return { url, pid: child.pid, stop, logs: () => output };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`wrangler dev did not start:\n${output.slice(-4000)}`);
}
