import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DevServer } from "../support/dev-server";
import { startDevServer } from "../support/dev-server";

/*
 * The OpenAPI document the service serves, checked by Redocly's linter with its recommended
 * rules (redocly.yaml; the one exception is in .redocly.lint-ignore.yaml, with its reason).
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
    const result = await new Promise<{ code: number; output: string }>((done) =>
      execFile(
        process.execPath,
        [
          join(root, "node_modules/@redocly/cli/bin/cli.js"),
          "lint",
          "test-artifacts/openapi.json",
          "--format=stylish",
        ],
        {
          cwd: root,
          env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
        },
        (error, stdout, stderr) =>
          done({
            code: error ? (typeof error.code === "number" ? error.code : 1) : 0,
            output: `${stdout}${stderr}`,
          }),
      ),
    );
    expect(result.output).toMatch(/Woohoo! Your API description is valid|valid/);
    expect(result.output, result.output).not.toMatch(/\b(error|warning)\b {2}/);
    expect(result.code, result.output).toBe(0);
  }, 120_000);
});
