import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DevServer } from "../support/dev-server";
import { startDevServer } from "../support/dev-server";

/*
 * The Model Context Protocol's own conformance suite (`@modelcontextprotocol/conformance`), its
 * command line run against `/mcp` of the service as `npm start` runs it (loopback requests are the
 * dev tenant's, so no key). Every server scenario the suite lists runs here, except those
 * docs/mcp.md names as left out with the reason; a scenario a new release of the suite adds fails
 * the first test until it is run or named there.
 */

const root = resolve(import.meta.dirname, "../..");
const suite = join(root, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const run = promisify(execFile);

let server: DevServer | undefined;
let results = "";

/** The suite's command line, under the project's Node (the suite needs 22). */
async function conformance(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [suite, ...args], {
      cwd: results,
      timeout: 60_000,
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
}

/** The server scenarios the suite lists, in its order. */
async function serverScenarios(): Promise<string[]> {
  const { code, output } = await conformance("list");
  expect(code).toBe(0);
  const [serverPart = ""] = output.split(/Client scenarios/);
  return [...serverPart.matchAll(/^\s+- ([a-z0-9-]+) \[/gm)].map(([, name]) => name as string);
}

/** The scenarios docs/mcp.md names as left out: the rows of its table under "The conformance suite". */
function leftOut(): string[] {
  const docs = readFileSync(join(root, "docs/mcp.md"), "utf8");
  const section = docs.split(/^## The conformance suite$/m)[1]?.split(/^## /m)[0] ?? "";
  return [...section.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map(([, name]) => name as string);
}

const listed = await serverScenarios();
const excluded = leftOut();
const applied = listed.filter((name) => !excluded.includes(name));

describe("the MCP conformance suite", () => {
  beforeAll(async () => {
    results = mkdtempSync(join(tmpdir(), "mcp-conformance-"));
    server = await startDevServer();
    // A session, so that the resources listed are the tenant's and not an empty list.
    const created = await fetch(`${server.url}/v1/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: "conformance-1", name: "A session to list" }),
    });
    expect(created.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(results, { recursive: true, force: true });
  });

  it("runs every server scenario the suite lists or names it in docs/mcp.md as left out", () => {
    expect(listed.length).toBeGreaterThan(0);
    expect(excluded.filter((name) => !listed.includes(name))).toEqual([]);
    expect(applied).toEqual(expect.arrayContaining(["server-initialize", "tools-list", "resources-list"]));
  });

  it.each(applied)("%s", async (scenario) => {
    const { code, output } = await conformance(
      "server",
      "--url",
      `${server?.url}/mcp`,
      "--scenario",
      scenario,
    );
    const passed = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(output);
    expect(passed, output).not.toBeNull();
    const [, ok, total, failed, warnings] = passed as RegExpExecArray;
    expect({ code, failed, warnings }, output).toEqual({ code: 0, failed: "0", warnings: "0" });
    expect(Number(total), output).toBeGreaterThan(0);
    expect(ok).toBe(total);
  });
});
