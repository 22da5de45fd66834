import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
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
import { type CodeBlock, documentationPages, pageBlocks } from "../support/doc-blocks";

/*
 * What a new user meets: the package as `npm pack` makes it, installed into a fresh project and
 * type-checked there under a bundler's resolution, Node's ESM resolution and the strictest
 * settings, its Node code run, its command line started through npx; and the documentation (the
 * README and the pages under docs/), whose HTTP walkthrough runs as written against a local service
 * and whose TypeScript examples compile against the installed package and run.
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

/** The frameworks the adapters are written for: optional peer dependencies, none installed here. */
const FRAMEWORKS: Record<string, string[]> = {
  "cf-sessions/langgraph": ["@langchain/langgraph-checkpoint", "@langchain/core"],
  "cf-sessions/openai-agents": ["@openai/agents-core"],
  "cf-sessions/claude-agent-sdk": ["@anthropic-ai/claude-agent-sdk"],
  "cf-sessions/ai-sdk": ["ai"],
};

describe("the installed package", () => {
  it("installs none of the frameworks it has adapters for (the tests below run without them)", () => {
    for (const name of Object.values(FRAMEWORKS).flat()) {
      expect(existsSync(join(project.dir, "node_modules", name)), name).toBe(false);
    }
  });

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
    expect(Object.keys(manifest.exports)).toEqual([
      ".",
      "./formats",
      "./interchange",
      "./compaction",
      "./client",
      "./node",
      "./durable",
      "./http",
      "./langgraph",
      "./openai-agents",
      "./claude-agent-sdk",
      "./ai-sdk",
    ]);
    for (const { types } of Object.values(manifest.exports)) {
      expect(types).toMatch(/^\.\/dist\/types\/.*\.d\.ts$/);
      expect(readFileSync(join(installed, types), "utf8")).not.toMatch(/from "\.{1,2}\/[^"]*(?<!\.js)"/);
    }
  });

  it("runs in Node from the built files: memory, formats, files, compaction, JSONL files, and the client's errors as the core's", async () => {
    // Types were checked above; here only stripped, the imports left for Node to resolve.
    await project.stripTypes("src/node.ts", "out/node.js");
    const ran = await run(process.execPath, ["out/node.js"], { cwd: project.dir });
    expect(ran.stderr).toBe("");
    expect(JSON.parse(ran.stdout)).toEqual({
      messages: 1,
      anthropic: 1,
      copied: ["message", "message", "session_info"],
      summarized: true,
      listed: ["on-disk"],
      clientError: "not_found",
    });
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

/*
 * The pages with examples, in the order their walkthrough runs: the README's tour creates the `demo`
 * session that compaction.md and live.md go on with; imports.md copies it to `demo-restored` and
 * deletes it, and search.md searches the copy.
 */
const PAGES = [
  "README.md",
  "docs/compaction.md",
  "docs/live.md",
  "docs/formats.md",
  "docs/imports.md",
  "docs/search.md",
  "docs/library.md",
  "docs/streams.md",
  "docs/generations.md",
];

/** Pages whose examples need more than the walkthrough's service: each is run by its own test below. */
const PAGES_RUN_APART = ["docs/frameworks.md"];

/** The shell blocks that talk to the service (they use `$B`), and every TypeScript block. */
const walkthroughBlocks = (page: string) =>
  pageBlocks(page, "sh").filter((block) => block.code.includes("$B"));
const typescriptBlocks = (page: string) => pageBlocks(page, "ts");
const where = (block: CodeBlock) => `${block.page}:${block.line}`;

describe("the documentation, run as written", () => {
  it("lists every page that has examples, and only those", () => {
    const withExamples = documentationPages().filter(
      (page) => walkthroughBlocks(page).length > 0 || typescriptBlocks(page).length > 0,
    );
    expect([...PAGES, ...PAGES_RUN_APART].sort()).toEqual(withExamples.sort());
  });

  it("runs every shell block of the HTTP walkthrough in order against a local service", async () => {
    const blocks = PAGES.flatMap(walkthroughBlocks);
    // Every curl fails on an error answer, and none follows a stream without a bound.
    for (const block of blocks) {
      for (const line of block.code.split("\n").filter((text) => /^\s*curl /.test(text))) {
        expect(line, where(block)).toMatch(/^\s*curl -fsS/);
        if (/^\s*curl -fsSN/.test(line)) expect(line, where(block)).toContain("--max-time");
      }
    }
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    // From the repository's folder, as the README says: its test files are there, and the files
    // the walkthrough writes land in a folder of their own.
    const cwd = mkdtempSync(join(tmpdir(), "cf-sessions-walkthrough-"));
    try {
      symlinkSync(join(root, "test"), join(cwd, "test"));
      const script = blocks.map((block) => `echo "--- ${where(block)}" >&2\n${block.code}`).join("\n");
      writeFileSync(join(cwd, "walkthrough.sh"), script);
      const port = new URL(server.url).port;
      const walked = await run("bash", ["-euo", "pipefail", "walkthrough.sh"], { cwd, env: { PORT: port } });
      // Nothing on stderr but the block markers, and the events examples' time running out.
      expect(
        walked.stderr
          .split("\n")
          .filter((line) => !line.startsWith("--- ") && !/^curl: \(28\) Operation timed out/.test(line)),
        walked.stderr,
      ).toEqual([""]);
      expect(walked.code).toBe(0);
      expect(walked.stdout).toContain('"sync":{"status":"appended","appended":1}');
      expect(walked.stdout).toContain('"type":"branch_summary"');
      // The events example replayed the session, then stopped on its own.
      expect(walked.stdout).toMatch(/^event: entry\nid: 1\n/m);
      // The streams example read back what it appended, and the JSON stream as one array.
      expect(walked.stdout).toContain("Hello, world");
      expect(walked.stdout).toContain('[{"n":1},{"n":2}]');
      // The tenant's streams listed: the JSON stream and its fork (its own data none).
      expect(walked.stdout).toMatch(
        /{"streams":\[{"path":"events","contentType":"application\/json","bytes":14,/,
      );
      expect(walked.stdout).toMatch(/{"path":"events-b","contentType":"application\/json","bytes":0,/);
      // The README's answer in flight: read back halfway, then its entry.
      expect(walked.stdout).toContain("One, two, \n");
      expect(walked.stdout).toContain('"text":"One, two, three."');
      // The generations example: the answer read back, then its entry; the late append refused.
      expect(walked.stdout).toContain('"text":"The Nile, the Amazon and the Yangtze."');
      expect(walked.stdout).toContain("refused (22)");
      expect(readFileSync(join(cwd, "demo.ndjson"), "utf8")).toMatch(
        /^{"type":"session","format":"cf-session"/,
      );
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it("compiles every TypeScript example under strict settings against the installed package, and runs them", async () => {
    const blocks = PAGES.flatMap(typescriptBlocks);
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const imports = (code: string) => [...code.matchAll(/from "([^"]+)"/g)].map((m) => m[1] as string);
    const isWorker = (code: string) =>
      imports(code).some((name) => /^cf-sessions\/(durable|http)$/.test(name));
    // What an example imports besides this package and Node's modules: a model API's client.
    const clients = (code: string) =>
      imports(code).filter((name) => !name.startsWith("cf-sessions") && !name.startsWith("node:"));
    // docs/examples/README/line-86.ts, docs/examples/library/line-12.ts, ...
    const files = blocks.map((block) => ({
      ...block,
      file: `docs/examples/${block.page.replace(/^docs\//, "").replace(/\.md$/, "")}/line-${block.line}.ts`,
    }));
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
      "tsconfig.docs-node.json",
      tsconfig(
        settings,
        node.map((f) => f.file),
        ["node"],
        { noEmit: false, rootDir: "docs/examples", outDir: "docs-out" },
      ),
    );
    project.write(
      "tsconfig.docs-workers.json",
      tsconfig(
        settings,
        workers.map((f) => f.file),
        ["@cloudflare/workers-types"],
      ),
    );
    const [checked, checkedWorkers] = await Promise.all([
      project.typecheck("tsconfig.docs-node.json"),
      project.typecheck("tsconfig.docs-workers.json"),
    ]);
    // Judged by the compiler's exit code: a tsc that failed without a word on stdout fails here.
    expect(checked).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(checkedWorkers).toEqual({ code: 0, stdout: "", stderr: "" });
    // Run: every example that needs neither a Worker nor a model API, nor declares what it leaves
    // to the reader (those are compiled only).
    const runnable = node.filter((f) => clients(f.code).length === 0 && !/^declare /m.test(f.code));
    expect(runnable.length).toBeGreaterThanOrEqual(3);
    for (const example of runnable) {
      const ran = await run(
        process.execPath,
        [join("docs-out", example.file.replace(/^docs\/examples\//, "").replace(/\.ts$/, ".js"))],
        {
          cwd: project.dir,
          env: { CF_SESSIONS_URL: server.url },
        },
      );
      expect({ example: where(example), code: ran.code, stderr: ran.stderr }).toEqual({
        example: where(example),
        code: 0,
        stderr: "",
      });
    }
  });
});

describe("docs/frameworks.md, run as written", () => {
  const page = "docs/frameworks.md";

  it("compiles each framework's example against the installed package, with the framework installed, and runs it", async () => {
    const blocks = pageBlocks(page, "ts");
    expect(blocks.length).toBe(4);
    const imports = (code: string) => [...code.matchAll(/from "([^"]+)"/g)].map((m) => m[1] as string);
    const files = blocks.map((block) => ({ ...block, file: `frameworks/line-${block.line}.ts` }));
    for (const { file, code } of files) {
      project.write(file, code);
      for (const name of imports(code)) {
        if (name.startsWith("cf-sessions")) for (const peer of FRAMEWORKS[name] ?? []) project.link(peer);
        else if (!name.startsWith("node:"))
          project.link(
            name.startsWith("@") ? name.split("/").slice(0, 2).join("/") : (name.split("/")[0] as string),
          );
      }
    }
    project.write(
      "tsconfig.frameworks.json",
      tsconfig(
        // The examples strictly; the frameworks' own declarations are theirs to keep.
        { ...CONSUMER_SETTINGS.strict, skipLibCheck: true },
        files.map((f) => f.file),
        ["node"],
        { noEmit: false, outDir: "frameworks-out" },
      ),
    );
    const checked = await project.typecheck("tsconfig.frameworks.json");
    expect(checked.stdout).toBe("");
    const outputs: string[] = [];
    for (const { file, line } of files) {
      const ran = await run(
        process.execPath,
        [join("frameworks-out", file.replace(/^frameworks\//, "").replace(/\.ts$/, ".js"))],
        {
          cwd: project.dir,
          env: { CF_SESSIONS_URL: server.url },
        },
      );
      expect({ line, code: ran.code, stderr: ran.stderr }).toEqual({ line, code: 0, stderr: "" });
      outputs.push(ran.stdout);
    }
    expect(outputs[0]).toContain("verdict: 'yes'");
    expect(outputs[1]).toContain("3 items so far");
    expect(outputs[2]).toContain("[ 'user', 'assistant' ]");
    expect(outputs[3]).toContain("[ 'q1', 'a2' ]");
  });

  it("mirrors a pi sessions folder with the command of the guide, and again after the file grew", async () => {
    const [block] = pageBlocks(page, "sh");
    expect(block?.code).toContain("cf-sessions sync");
    const folder = mkdtempSync(join(tmpdir(), "pi-sessions-"));
    try {
      mkdirSync(join(folder, "--home-me-project--"));
      const file = join(folder, "--home-me-project--", "session.jsonl");
      // A session file as pi (v3) writes it: a header, then entries chained by id.
      const at = (n: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, n)).toISOString();
      const entry = (id: string, parentId: string | null, n: number, role: string, text: string) => ({
        type: "message",
        id,
        parentId,
        timestamp: at(n),
        message: { role, content: [{ type: "text", text }], timestamp: Date.parse(at(n)) },
      });
      const lines = [
        { type: "session", version: 3, id: crypto.randomUUID(), timestamp: at(0), cwd: "/home/me/project" },
        entry("a1b2c3d4", null, 1, "user", "hello"),
      ];
      writeFileSync(file, lines.map((line) => `${JSON.stringify(line)}\n`).join(""));
      const env = { CF_SESSIONS_URL: server.url, PI_SESSIONS: folder };
      const first = await run("bash", ["-euo", "pipefail", "-c", block?.code as string], {
        cwd: project.dir,
        env,
      });
      expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: "" });
      appendFileSync(
        file,
        `${JSON.stringify(entry("e5f6a7b8", "a1b2c3d4", 2, "user", "and one more thing"))}\n`,
      );
      const second = await run("bash", ["-euo", "pipefail", "-c", block?.code as string], {
        cwd: project.dir,
        env,
      });
      expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: "" });
      expect(second.stdout).toMatch(/appended/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
