import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DevServer } from "../support/dev-server";
import { startDevServer } from "../support/dev-server";

/*
 * The OpenAPI document the service serves, checked by Redocly's linter with its recommended
 * rules (redocly.yaml; the exceptions are in .redocly.lint-ignore.yaml, each with its reason).
 */

const root = resolve(import.meta.dirname, "../..");
let server: DevServer;

beforeAll(async () => {
  server = await startDevServer();
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

describe("the OpenAPI document", () => {
  it("passes redocly lint, every operation named", async () => {
    const document = await (await fetch(`${server.url}/v1/openapi.json`)).json();
    const operations = Object.values(
      document.paths as Record<string, Record<string, { operationId?: string }>>,
    )
      .flatMap((path) => Object.values(path))
      .map((operation) => operation.operationId);
    expect(operations.every((id) => typeof id === "string")).toBe(true);
    expect(new Set(operations).size).toBe(operations.length);
    await mkdir(join(root, "test-artifacts"), { recursive: true });
    await writeFile(join(root, "test-artifacts/openapi.json"), JSON.stringify(document, null, 2));
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
      execFile(
        process.execPath,
        [
          join(root, "node_modules/@redocly/cli/bin/cli.js"),
          "lint",
          "test-artifacts/openapi.json",
          "--format=json",
        ],
        {
          cwd: root,
          env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
        },
        (error, stdout, stderr) =>
          done({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
      ),
    );
    // Judged by the exit code and the linter's own count of problems, never by its wording.
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; message: string }>;
    };
    expect(report.problems).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 120_000);
});
