import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { importFiles } from "../../src/cli/import-files";
import { main } from "../../src/cli/main";
import type { Output } from "../../src/cli/output";
import { projectKeyOf, remoteKey } from "../../src/cli/project-key";
import { createClient } from "../../src/client";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * Sessions keyed by project, not by path: an import records the project of the folder its agent
 * ran in (the git remote and the folder inside the repository), `list --project` finds them by it
 * from any folder, and `pull` puts one in this machine's checkout of the same repository.
 */

let server: DevServer;
let home: string;

beforeAll(async () => {
  server = await startDevServer();
  home = mkdtempSync(join(tmpdir(), "project-keys-"));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(home, { recursive: true, force: true });
});

/** A git checkout of `remote` at `dir`, with a folder `services/api` in it. */
function checkout(dir: string, remote: string): void {
  mkdirSync(join(dir, "services", "api"), { recursive: true });
  execFileSync("git", ["init", "-q", dir]);
  execFileSync("git", ["-C", dir, "remote", "add", "origin", remote]);
}

/** A pi session file that ran in `cwd`. */
function piFile(dir: string, id: string, cwd: string): string {
  const path = join(dir, `${id}.jsonl`);
  const lines = [
    { type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd },
    {
      type: "message",
      id: "m1",
      parentId: null,
      timestamp: "2026-01-01T00:00:01.000Z",
      message: { role: "user", content: [{ type: "text", text: "hello" }], timestamp: 1 },
    },
  ];
  writeFileSync(path, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
  return path;
}

async function cli(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const output: Output = {
    out: (t) => out.push(t),
    write: () => undefined,
    stream: async () => undefined,
    err: (t) => err.push(t),
    isTTY: false,
  };
  const code = await main(args, output, { CF_SESSIONS_URL: server.url, ...env });
  return { code, out: out.join("\n"), err: err.join("") };
}

describe("project keys", () => {
  it("name a git remote the same however it is written", () => {
    for (const url of [
      "git@github.com:Acme/App.git",
      "https://github.com/acme/app.git",
      "https://user:token@github.com/acme/app",
      "ssh://git@github.com:22/acme/app.git",
      "git://github.com/acme/app/",
    ]) {
      expect(remoteKey(url), url).toBe("github.com/acme/app");
    }
  });

  it("are recorded on import, found by list --project, and pulled into this machine's checkout", async () => {
    const first = join(home, "laptop", "app");
    const second = join(home, "desktop", "code", "app-clone");
    checkout(first, "git@github.com:Acme/App.git");
    checkout(second, "https://github.com/acme/app.git");
    const elsewhere = join(home, "scratch");
    mkdirSync(elsewhere);
    expect(projectKeyOf(join(first, "services", "api"))).toBe("github.com/acme/app/services/api");
    expect(projectKeyOf(elsewhere)).toBe("scratch");

    const files = join(home, "sessions");
    mkdirSync(files);
    const inRepo = crypto.randomUUID();
    const outside = crypto.randomUUID();
    piFile(files, inRepo, join(first, "services", "api"));
    piFile(files, outside, elsewhere);
    const imported = await cli(["import", files, "--format", "pi", "--progress", "none"]);
    expect(imported.code, imported.err).toBe(0);

    const client = createClient({ baseUrl: server.url });
    expect((await client.storage(inRepo).getHeader()).metadata.project).toBe(
      "github.com/acme/app/services/api",
    );
    expect((await client.storage(outside).getHeader()).metadata.project).toBe("scratch");

    const listed = async (project: string) =>
      (JSON.parse((await cli(["list", "--project", project, "--json"])).out) as Array<{ id: string }>).map(
        (s) => s.id,
      );
    // The listing hears of each session's metadata a moment after it is written (DIRECTORY_SYNC_MS).
    await vi.waitFor(
      async () => {
        expect(await listed("https://github.com/acme/app.git")).toEqual([inRepo]);
        expect(await listed("scratch")).toEqual([outside]);
      },
      { timeout: 20_000, interval: 200 },
    );
    expect(await listed("github.com/acme/app/services/api")).toEqual([inRepo]);
    expect(await listed("github.com/acme/app/services")).toEqual([inRepo]);
    expect(await listed("github.com/acme/other")).toEqual([]);

    // On the other machine, from anywhere in its checkout: the project's folder there.
    const previous = process.cwd();
    process.chdir(join(second, "services"));
    try {
      const pi = join(home, "pi-agent");
      const pulled = await cli(["pull", inRepo, "--to", "pi", "--json"], {
        PI_CODING_AGENT_DIR: pi,
        XDG_STATE_HOME: join(home, "state"),
      });
      expect(pulled.code, pulled.err).toBe(0);
      const { path } = JSON.parse(pulled.out) as { path: string };
      const header = JSON.parse(readFileSync(path, "utf8").split("\n")[0] as string);
      expect(header.cwd).toBe(join(second, "services", "api"));
    } finally {
      process.chdir(previous);
    }
  });

  it("are recorded by the next import or sync when the request recording them failed", async () => {
    const project = join(home, "mended");
    mkdirSync(project);
    const imported = crypto.randomUUID();
    const synced = crypto.randomUUID();
    const importDir = join(home, "mended-import");
    const syncDir = join(home, "mended-sync");
    mkdirSync(importDir);
    mkdirSync(syncDir);
    piFile(importDir, imported, project);
    piFile(syncDir, synced, project);
    // The header writes that record the project fail, as on a connection lost, until `down` is off.
    let down = true;
    const client = createClient({
      baseUrl: server.url,
      retryDelayMs: 1,
      fetch: async (request) => {
        if (down && request.method === "PATCH")
          throw new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED") });
        return fetch(request);
      },
    });
    const printed: string[] = [];
    const output: Output = {
      out: (text) => printed.push(text),
      write: () => undefined,
      stream: async () => undefined,
      err: () => undefined,
      isTTY: false,
    };
    const options = { format: "pi", progress: "none", json: true } as const;
    expect(await importFiles(client, importDir, output, { ...options, mode: "import" })).toBe(1);
    expect(await importFiles(client, syncDir, output, { ...options, mode: "sync" })).toBe(1);
    expect((await client.storage(imported).getHeader()).metadata.project).toBeUndefined();

    down = false;
    printed.length = 0;
    expect(await importFiles(client, importDir, output, { ...options, mode: "import" })).toBe(0);
    expect(await importFiles(client, syncDir, output, { ...options, mode: "sync" })).toBe(0);
    expect(printed.map((line) => JSON.parse(line))).toMatchObject([
      { imported: [], skipped: [imported], failed: [] },
      { imported: [], unchanged: [synced], failed: [] },
    ]);
    expect((await client.storage(imported).getHeader()).metadata.project).toBe("mended");
    expect((await client.storage(synced).getHeader()).metadata.project).toBe("mended");
  });
});
