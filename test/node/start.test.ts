import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../support/dev-server";

/*
 * `npm start` (scripts/start.mjs): the port from PORT or `--port`, wrangler's own options passed
 * through, and a wrong port or a dev tenant beyond loopback refused before wrangler starts.
 */

const root = resolve(import.meta.dirname, "../..");
const state = mkdtempSync(join(tmpdir(), "sessions-start-"));
afterAll(() => rmSync(state, { recursive: true, force: true }));

function start(args: string[], env: Record<string, string> = {}) {
  let output = "";
  const child: ChildProcess = spawn(process.execPath, [join(root, "scripts/start.mjs"), ...args], {
    cwd: root,
    env: {
      ...process.env,
      PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH ?? ""}`,
      WRANGLER_SEND_METRICS: "false",
      CI: "1",
      ...env,
    },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return {
    exited,
    output: () => output,
    async healthy(url: string): Promise<boolean> {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline && child.exitCode === null) {
        try {
          if ((await fetch(`${url}/healthz`)).ok) return true;
        } catch {
          // not listening yet
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      return false;
    },
    async stop() {
      if (child.exitCode === null && child.pid) process.kill(-child.pid, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.pid) process.kill(-child.pid, "SIGKILL");
    },
  };
}

/**
 * How a start that should refuse at once ended: its exit code, or null when it did not within 10
 * seconds (it went on to start wrangler, which is stopped).
 */
async function refused(server: ReturnType<typeof start>): Promise<number | null> {
  const code = await Promise.race([
    server.exited,
    new Promise<null>((r) => setTimeout(() => r(null), 10_000)),
  ]);
  if (code === null) await server.stop();
  return code;
}

describe("npm start", () => {
  it("listens on PORT, and on --port when both are given", async () => {
    const fromEnv = await freePort();
    const server = start(["--persist-to", state, "--show-interactive-dev-session=false"], {
      PORT: String(fromEnv),
    });
    try {
      expect(await server.healthy(`http://127.0.0.1:${fromEnv}`), server.output()).toBe(true);
      const listed = await fetch(`http://127.0.0.1:${fromEnv}/v1/sessions`);
      expect(listed.status).toBe(200);
    } finally {
      await server.stop();
    }
    const fromFlag = await freePort();
    const flagged = start(
      ["--port", String(fromFlag), "--persist-to", state, "--show-interactive-dev-session=false"],
      {
        PORT: String(fromEnv),
      },
    );
    try {
      expect(await flagged.healthy(`http://127.0.0.1:${fromFlag}`), flagged.output()).toBe(true);
      await expect(fetch(`http://127.0.0.1:${fromEnv}/healthz`)).rejects.toThrow();
    } finally {
      await flagged.stop();
    }
  }, 150_000);

  it("refuses a port that is not a number, naming it, before starting anything", async () => {
    const server = start([], { PORT: "eighty" });
    expect(await server.exited).toBe(2);
    expect(server.output()).toBe('npm start: the port must be a number from 0 to 65535, not "eighty"\n');
  });

  it("refuses a DEV_TENANT from the local vars files or the configuration's vars when it would listen beyond loopback", async () => {
    const folder = mkdtempSync(join(tmpdir(), "sessions-start-vars-"));
    try {
      const config = join(folder, "wrangler.toml");
      for (const [file, text] of [
        [".dev.vars", "API_KEYS={}\nDEV_TENANT=local\n"],
        [".env", "export DEV_TENANT=someone\n"],
      ] as const) {
        rmSync(join(folder, ".dev.vars"), { force: true });
        rmSync(join(folder, ".env"), { force: true });
        writeFileSync(join(folder, file), text);
        const server = start(["--ip", "0.0.0.0", "--config", config]);
        expect(await server.exited).toBe(2);
        expect(server.output()).toContain(`refusing to serve a DEV_TENANT (set in ${join(folder, file)})`);
      }
      for (const vars of [
        ["--var", "DEV_TENANT:local"],
        ["--var=DEV_TENANT:local"],
        ["--var", "A:1", "--var=DEV_TENANT:x"],
        ["--var", "A:1", "DEV_TENANT:x"],
      ]) {
        const byFlag = start(["--ip", "0.0.0.0", ...vars, "--config", config]);
        expect(await refused(byFlag), vars.join(" ")).toBe(2);
        expect(byFlag.output()).toContain("refusing to serve a DEV_TENANT (set in --var)");
      }
      // A vars file elsewhere, given by --env-file in either form.
      rmSync(join(folder, ".env"), { force: true });
      const elsewhere = join(folder, "elsewhere.env");
      writeFileSync(elsewhere, "DEV_TENANT=local\n");
      for (const flag of [["--env-file", elsewhere], [`--env-file=${elsewhere}`]]) {
        const byFile = start(["--ip", "0.0.0.0", ...flag, "--config", config]);
        expect(await refused(byFile), flag.join(" ")).toBe(2);
        expect(byFile.output()).toContain(`refusing to serve a DEV_TENANT (set in ${elsewhere})`);
      }
      // The process's environment, when wrangler is told to read it as vars.
      const byEnvironment = start(["--ip", "0.0.0.0", "--config", config], {
        CLOUDFLARE_INCLUDE_PROCESS_ENV: "true",
        DEV_TENANT: "local",
      });
      expect(await refused(byEnvironment)).toBe(2);
      expect(byEnvironment.output()).toContain("set in the environment (CLOUDFLARE_INCLUDE_PROCESS_ENV)");
      for (const [toml, where] of <Array<[string, string]>>[
        ['name = "s"\n[vars]\nDEV_TENANT = "local"\n', "[vars]"],
        ['name = "s"\nvars = { DEV_TENANT = "local" }\n', "[vars]"],
        [
          'name = "s"\n[env.staging]\nname = "s-staging"\n[env.staging.vars]\nDEV_TENANT = "x"\n',
          "[env.staging.vars]",
        ],
      ]) {
        writeFileSync(config, toml);
        const server = start(["--ip", "0.0.0.0", "--config", config]);
        expect(await server.exited).toBe(2);
        expect(server.output()).toContain(`refusing to serve a DEV_TENANT (set in ${config} ${where})`);
      }
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe("deployed environments", () => {
  it("production and staging have no dev tenant: none of their vars sets DEV_TENANT", async () => {
    const { experimental_readRawConfig } = await import("wrangler");
    const { rawConfig } = experimental_readRawConfig({ config: join(root, "wrangler.toml") });
    expect(Object.keys(rawConfig.env ?? {}).sort()).toEqual(["production", "staging"]);
    for (const name of ["production", "staging"]) {
      const vars = rawConfig.env?.[name]?.vars ?? {};
      expect(Object.keys(vars).length, name).toBeGreaterThan(0);
      expect(Object.hasOwn(vars, "DEV_TENANT"), name).toBe(false);
    }
    // The local service gets its dev tenant from npm start alone, never from the configuration.
    expect(Object.hasOwn(rawConfig.vars ?? {}, "DEV_TENANT")).toBe(false);
  });
});
