import { readFileSync } from "node:fs";
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

/*
 * The package as someone installs it: `npm pack`, `npm install` of the tarball into a fresh
 * project, then that project type-checked under a bundler's resolution, Node's ESM resolution and
 * the strictest settings, its Node code run, and the command line started through npx.
 */

const fixtures = resolve(import.meta.dirname, "consumer");
let project: ConsumerProject;
let packed: PackedPackage;

beforeAll(async () => {
  packed = await packPackage();
  project = await consumerProject(packed.tarball);
  project.write("src/node.ts", readFileSync(join(fixtures, "node.ts"), "utf8"));
  project.write("src/worker.ts", readFileSync(join(fixtures, "worker.ts"), "utf8"));
}, 240_000);

afterAll(() => {
  project?.remove();
  packed?.remove();
});

describe("the installed package", () => {
  for (const [name, settings] of Object.entries(CONSUMER_SETTINGS)) {
    it(`type-checks for a consumer under ${name} settings`, async () => {
      project.write(`tsconfig.node-${name}.json`, tsconfig(settings, ["src/node.ts"], ["node"]));
      project.write(
        `tsconfig.worker-${name}.json`,
        tsconfig(settings, ["src/worker.ts"], ["@cloudflare/workers-types"]),
      );
      const node = await project.typecheck(`tsconfig.node-${name}.json`);
      expect(node.stdout).toBe("");
      expect(node.code).toBe(0);
      const worker = await project.typecheck(`tsconfig.worker-${name}.json`);
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
    project.write(
      "tsconfig.emit.json",
      tsconfig(CONSUMER_SETTINGS.nodenext, ["src/node.ts"], ["node"], { noEmit: false, outDir: "out" }),
    );
    expect((await project.typecheck("tsconfig.emit.json")).code).toBe(0);
    const ran = await run(process.execPath, ["out/node.js"], { cwd: project.dir });
    expect(ran.stderr).toBe("");
    expect(JSON.parse(ran.stdout)).toEqual({ messages: 1, listed: ["on-disk"], clientError: "not_found" });
  });

  it("starts the command line with npx", async () => {
    const help = await run("npx", ["--no-install", "cf-sessions", "--help"], { cwd: project.dir });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("usage: cf-sessions <command>");
  });
});
