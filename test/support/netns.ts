import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";

/*
 * A private network namespace, for tests of a server listening on an address other than loopback
 * without sending traffic anywhere real: its only interface is `lo`, carrying 127.0.0.1 and one
 * extra address. Made with util-linux's `unshare` and iproute2's `ip`; programs run inside it
 * through util-linux's `nsenter`. As root (with CAP_SYS_ADMIN) it is a network namespace alone;
 * otherwise, where the kernel allows unprivileged user namespaces, it is made inside a user
 * namespace of one's own that maps the user to root.
 */

export interface Netns {
  /** The extra address on the namespace's `lo`. */
  address: string;
  /** A command line that runs `command` inside the namespace. */
  wrap(command: string, args: string[]): [string, string[]];
  /** An HTTP request made from inside the namespace, headers sent exactly as given (Host too). */
  request(url: string, init?: NetnsRequest): Promise<{ status: number; text: string }>;
  close(): Promise<void>;
}

export interface NetnsRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

const setUp = (address: string) => `ip link set lo up && ip addr add ${address}/32 dev lo`;

/** The options of `unshare` that make a namespace, and of `nsenter` that enter it. */
interface Isolation {
  unshare: string[];
  nsenter: string[];
}

const AS_ROOT: Isolation = { unshare: ["-n"], nsenter: ["-n"] };
const IN_USER_NAMESPACE: Isolation = {
  unshare: ["-r", "-n"],
  nsenter: ["-U", "-n", "--preserve-credentials"],
};

let probed: Isolation | string | undefined;

/** How a namespace is made here, or why none can be (what is missing, said plainly). */
function isolation(): Isolation | string {
  probed ??= probe();
  return probed;
}

function probe(): Isolation | string {
  const nsenter = spawnSync("nsenter", ["--version"], { encoding: "utf8" });
  if (nsenter.error) return `nsenter (util-linux) is not installed: ${nsenter.error.message}`;
  const failures: string[] = [];
  for (const way of [AS_ROOT, IN_USER_NAMESPACE]) {
    const made = spawnSync("unshare", [...way.unshare, "sh", "-c", setUp("10.77.0.9")], { encoding: "utf8" });
    if (made.error) return `unshare (util-linux) is not installed: ${made.error.message}`;
    if (made.status === 0) return way;
    failures.push(`unshare ${way.unshare.join(" ")}: ${made.stderr.trim() || `exit ${made.status}`}`);
  }
  return (
    "no private network namespace can be made here: it needs root with CAP_SYS_ADMIN (in a " +
    "container, --cap-add SYS_ADMIN or --privileged) or unprivileged user namespaces, and iproute2's " +
    `ip (${failures.join("; ")})`
  );
}

/** Why no namespace can be made here, or undefined when one can. */
export function netnsUnavailable(): string | undefined {
  const way = isolation();
  return typeof way === "string" ? way : undefined;
}

// Node's http client, unlike fetch, sends a Host header of our choosing.
const CLIENT = `
const http = require("node:http");
const { url, method, headers, body } = JSON.parse(process.argv[1]);
const done = (result) => process.stdout.write(JSON.stringify(result));
const req = http.request(url, { method, headers }, (res) => {
  let text = "";
  res.setEncoding("utf8");
  res.on("data", (chunk) => (text += chunk));
  res.on("end", () => done({ status: res.statusCode, text }));
});
req.setTimeout(15000, () => req.destroy(new Error("timed out")));
req.on("error", (error) => done({ error: String(error) }));
req.end(body);
`;

export async function createNetns(address = "10.77.0.1"): Promise<Netns> {
  const way = isolation();
  if (typeof way === "string") throw new Error(way);
  // unshare execs the shell in the new namespace, so the holder's pid names the namespace.
  const holder: ChildProcess = spawn(
    "unshare",
    [...way.unshare, "sh", "-c", `${setUp(address)} && echo ready && exec sleep 86400`],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  await new Promise<void>((resolve, reject) => {
    let output = "";
    holder.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("ready")) resolve();
    });
    holder.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    holder.once("exit", () => reject(new Error(`the namespace could not be made: ${output}`)));
  });
  const pid = String(holder.pid);
  const wrap = (command: string, args: string[]): [string, string[]] => [
    "nsenter",
    ["-t", pid, ...way.nsenter, "--", command, ...args],
  ];
  return {
    address,
    wrap,
    request(url, init = {}) {
      const [command, args] = wrap(process.execPath, ["-e", CLIENT, JSON.stringify({ url, ...init })]);
      return new Promise((resolve, reject) => {
        execFile(command, args, { encoding: "utf8", timeout: 30_000 }, (error, stdout) => {
          if (error) return reject(error);
          const result = JSON.parse(stdout) as { status: number; text: string } | { error: string };
          if ("error" in result) reject(new Error(result.error));
          else resolve(result);
        });
      });
    },
    async close() {
      if (holder.exitCode !== null) return;
      const exited = new Promise((resolve) => holder.once("exit", resolve));
      holder.kill("SIGKILL");
      await exited;
    },
  };
}
