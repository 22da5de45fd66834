import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CONSUMER_SETTINGS,
  type ConsumerProject,
  consumerProject,
  type PackedPackage,
  packPackage,
  run,
  tsconfig,
} from "../support/consumer-project";
import { type DevServer, startDevServer } from "../support/dev-server";
import { readmeBlocks } from "../support/readme-blocks";

/*
 * What a new user meets: the package as `npm pack` makes it, installed into a fresh project and
 * type-checked there under a bundler's resolution, Node's ESM resolution and the strictest
 * settings, its Node code run, its command line started through npx; and the README, whose HTTP
 * walkthrough runs as written against a local service and whose TypeScript examples compile
 * against the installed package and run.
 */

const root = resolve(import.meta.dirname, "../..");
const fixtures = resolve(import.meta.dirname, "consumer");
let project: ConsumerProject;
let packed: PackedPackage;
let server: DevServer;

beforeAll(async () => {
  [packed, server] = await Promise.all([packPackage(), startDevServer()]);
  project = await consumerProject(packed.tarball);
  project.write("src/node.ts", readFileSync(join(fixtures, "node.ts"), "utf8"));
  project.write("src/worker.ts", readFileSync(join(fixtures, "worker.ts"), "utf8"));
}, 240_000);

afterAll(async () => {
  project?.remove();
  packed?.remove();
  await server?.stop();
});

describe("the installed package", () => {
  for (const [name, settings] of Object.entries(CONSUMER_SETTINGS)) {
    it(`type-checks for a consumer under ${name} settings`, async () => {
      project.write(`tsconfig.node-${name}.json`, tsconfig(settings, ["src/node.ts"], ["node"]));
      project.write(
        `tsconfig.worker-${name}.json`,
        tsconfig(settings, ["src/worker.ts"], ["@cloudflare/workers-types"]),
      );
      const [node, worker] = await Promise.all([
        project.typecheck(`tsconfig.node-${name}.json`),
        project.typecheck(`tsconfig.worker-${name}.json`),
      ]);
      expect(node.stdout).toBe("");
      expect(node.code).toBe(0);
      expect(worker.stdout).toBe("");
      expect(worker.code).toBe(0);
    });
  }

  it("ships declarations beside the JavaScript of every entry point, with resolvable imports", () => {
    const installed = join(project.dir, "node_modules/cf-sessions");
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as {
      exports: Record<string, { types: string; default: string }>;
    };
    expect(Object.keys(manifest.exports)).toEqual([".", "./client", "./node", "./durable", "./http"]);
    for (const { types } of Object.values(manifest.exports)) {
      expect(types).toMatch(/^\.\/dist\/types\/.*\.d\.ts$/);
      expect(readFileSync(join(installed, types), "utf8")).not.toMatch(/from "\.{1,2}\/[^"]*(?<!\.js)"/);
    }
  });

  it("runs in Node from the built files: memory, JSONL files, and the client's errors as the core's", async () => {
    // Types were checked above; here only stripped, the imports left for Node to resolve.
    await project.stripTypes("src/node.ts", "out/node.js");
    const ran = await run(process.execPath, ["out/node.js"], { cwd: project.dir });
    expect(ran.stderr).toBe("");
    expect(JSON.parse(ran.stdout)).toEqual({ messages: 1, listed: ["on-disk"], clientError: "not_found" });
  });

  it("bundles a Worker of one's own with wrangler, from the package's Workers sources", async () => {
    project.write(
      "wrangler.toml",
      [
        'name = "consumer"',
        'main = "src/worker.ts"',
        'compatibility_date = "2026-11-01"',
        "[[durable_objects.bindings]]",
        'name = "SESSIONS"',
        'class_name = "SessionObject"',
        "[[durable_objects.bindings]]",
        'name = "DIRECTORY"',
        'class_name = "SessionDirectory"',
        "[[migrations]]",
        'tag = "v1"',
        'new_sqlite_classes = ["SessionObject", "SessionDirectory"]',
      ].join("\n"),
    );
    const wrangler = join(root, "node_modules/wrangler/bin/wrangler.js");
    const bundled = await run(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", "bundle"], {
      cwd: project.dir,
      env: { WRANGLER_SEND_METRICS: "false", CI: "1" },
    });
    expect(bundled.code, bundled.stdout + bundled.stderr).toBe(0);
    const script = readFileSync(join(project.dir, "bundle/worker.js"), "utf8");
    // The Durable Object classes exported, and the viewer's bundle built into the Worker.
    expect(script).toMatch(/export \{[^}]*\bSessionDirectory\b[^}]*\bSessionObject\b/);
    expect(script).toContain("viewerScript");
  });

  it("starts the command line with npx", async () => {
    const help = await run("npx", ["--no-install", "cf-sessions", "--help"], { cwd: project.dir });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("usage: cf-sessions <command>");
  });
});

describe("the README, run as written", () => {
  it("runs every shell block of the HTTP walkthrough in order against a local service", async () => {
    const blocks = readmeBlocks("sh").filter((block) => block.code.includes("$B"));
    // Every curl fails on an error answer, and none follows a stream without a bound.
    for (const block of blocks) {
      for (const line of block.code.split("\n").filter((text) => /^\s*curl /.test(text))) {
        expect(line, `README.md:${block.line}`).toMatch(/^\s*curl -fsS/);
        if (/^\s*curl -fsSN/.test(line)) expect(line, `README.md:${block.line}`).toContain("--max-time");
      }
    }
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    // From the repository's folder, as the README says: its test files are there, and the files
    // the walkthrough writes land in a folder of their own.
    const cwd = mkdtempSync(join(tmpdir(), "cf-sessions-walkthrough-"));
    try {
      symlinkSync(join(root, "test"), join(cwd, "test"));
      const script = blocks
        .map((block) => `echo "--- README.md:${block.line}" >&2\n${block.code}`)
        .join("\n");
      writeFileSync(join(cwd, "walkthrough.sh"), script);
      const port = new URL(server.url).port;
      const walked = await run("bash", ["-euo", "pipefail", "walkthrough.sh"], { cwd, env: { PORT: port } });
      // Nothing on stderr but the block markers, and the events example's time running out.
      expect(
        walked.stderr
          .split("\n")
          .filter(
            (line) => !line.startsWith("--- README.md:") && !/^curl: \(28\) Operation timed out/.test(line),
          ),
        walked.stderr,
      ).toEqual([""]);
      expect(walked.code).toBe(0);
      expect(walked.stdout).toContain('"sync":{"status":"appended","appended":1}');
      expect(walked.stdout).toContain('"type":"branch_summary"');
      // The events example replayed the session, then stopped on its own.
      expect(walked.stdout).toMatch(/^event: entry\nid: 1\n/m);
      expect(readFileSync(join(cwd, "demo.ndjson"), "utf8")).toMatch(
        /^{"type":"session","format":"cf-session"/,
      );
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it("compiles every TypeScript example under strict settings against the installed package, and runs them", async () => {
    const blocks = readmeBlocks("ts");
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const imports = (code: string) => [...code.matchAll(/from "([^"]+)"/g)].map((m) => m[1] as string);
    const isWorker = (code: string) =>
      imports(code).some((name) => /^cf-sessions\/(durable|http)$/.test(name));
    // What an example imports besides this package and Node's modules: a model API's client.
    const clients = (code: string) =>
      imports(code).filter((name) => !name.startsWith("cf-sessions") && !name.startsWith("node:"));
    const files = blocks.map((block) => ({ ...block, file: `readme/line-${block.line}.ts` }));
    for (const { file, code } of files) {
      project.write(file, code);
      for (const name of clients(code))
        project.link(name.startsWith("@") ? name : (name.split("/")[0] as string));
    }
    const node = files.filter((f) => !isWorker(f.code));
    const workers = files.filter((f) => isWorker(f.code));
    // The examples are checked strictly; the model clients' own declarations are theirs to keep
    // (this package's are checked under the same settings above).
    const settings = { ...CONSUMER_SETTINGS.strict, skipLibCheck: true };
    project.write(
      "tsconfig.readme-node.json",
      tsconfig(
        settings,
        node.map((f) => f.file),
        ["node"],
        { noEmit: false, outDir: "readme-out" },
      ),
    );
    project.write(
      "tsconfig.readme-workers.json",
      tsconfig(
        settings,
        workers.map((f) => f.file),
        ["@cloudflare/workers-types"],
      ),
    );
    const [checked, checkedWorkers] = await Promise.all([
      project.typecheck("tsconfig.readme-node.json"),
      project.typecheck("tsconfig.readme-workers.json"),
    ]);
    expect(checked.stdout).toBe("");
    expect(checkedWorkers.stdout).toBe("");
    // Run: every example that needs neither a Worker nor a model API, nor declares what it leaves
    // to the reader (those are compiled only).
    const runnable = node.filter((f) => clients(f.code).length === 0 && !/^declare /m.test(f.code));
    expect(runnable.length).toBeGreaterThanOrEqual(3);
    for (const { file, line } of runnable) {
      const ran = await run(
        process.execPath,
        [join("readme-out", file.replace(/^readme\//, "").replace(/\.ts$/, ".js"))],
        {
          cwd: project.dir,
          env: { CF_SESSIONS_URL: server.url },
        },
      );
      expect({ line, code: ran.code, stderr: ran.stderr }).toEqual({ line, code: 0, stderr: "" });
    }
  });
});
