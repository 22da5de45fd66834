import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../../src/http/auth";
import type { WorkerEnv } from "../../src/http/env";
import worker from "../../src/worker";
import { sid } from "./helpers";

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

async function call(
  workerEnv: WorkerEnv,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await worker.fetch(
    new Request(`http://sessions.test${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    }),
    workerEnv,
    ctx(),
  );
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
}

const OWNER = "api-keys-owner";
const OTHER = "api-keys-other";

/** An env whose API_KEYS holds the owner's key, and `entry` for the other key. */
async function keysEnv(entry: unknown): Promise<WorkerEnv> {
  return {
    ...env,
    API_KEYS: JSON.stringify({ [await sha256Hex(OWNER)]: "tenant-keys", [await sha256Hex(OTHER)]: entry }),
  };
}

afterEach(() => vi.restoreAllMocks());

describe("API_KEYS", () => {
  it("gives a key write access by its tenant alone, or the access its object names", async () => {
    const readEnv = await keysEnv({ tenant: "tenant-keys", access: "read" });
    const id = sid();
    expect((await call(readEnv, "POST", "/v1/sessions", { key: OWNER, body: { id } })).status).toBe(201);
    expect((await call(readEnv, "GET", `/v1/sessions/${id}`, { key: OTHER })).status).toBe(200);
    const refused = await call(readEnv, "DELETE", `/v1/sessions/${id}`, { key: OTHER });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("forbidden");
    expect((await call(readEnv, "GET", `/v1/sessions/${id}`, { key: OWNER })).status).toBe(200);

    const writeEnv = await keysEnv({ tenant: "tenant-keys", access: "write" });
    expect((await call(writeEnv, "DELETE", `/v1/sessions/${id}`, { key: OTHER })).status).toBe(204);
  });

  it("answers 503 misconfigured on every /v1 request while any entry is outside the closed set", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const invalid: Array<[string, unknown]> = [
      ["access in another case", { tenant: "tenant-keys", access: "Read" }],
      ["an unknown access", { tenant: "tenant-keys", access: "readonly" }],
      ["access as a list", { tenant: "tenant-keys", access: ["read"] }],
      ["no access in the object form", { tenant: "tenant-keys" }],
      ["a misspelt field", { tenant: "tenant-keys", acces: "read" }],
      ["an empty tenant", ""],
      ["a number", 42],
      ["null", null],
    ];
    for (const [what, entry] of invalid) {
      const misconfigured = await keysEnv(entry);
      const id = sid();
      for (const [method, key, body] of [
        ["GET", OWNER, undefined],
        ["GET", OTHER, undefined],
        ["POST", OWNER, { id }],
        ["POST", OTHER, { id }],
        ["GET", undefined, undefined],
      ] as const) {
        const res = await call(misconfigured, method, "/v1/sessions", { key, body });
        expect(res.status, `${what}: ${method} ${res.text}`).toBe(503);
        expect(res.body.error.code).toBe("misconfigured");
        expect(res.body.error.message).toMatch(/API_KEYS/);
      }
      // Nothing was written: with the entry fixed, the session does not exist.
      const fixed = await keysEnv("tenant-keys");
      expect((await call(fixed, "GET", `/v1/sessions/${id}`, { key: OWNER })).status, what).toBe(404);
    }
    const logged = errors.mock.calls.map((args) => args.join(" "));
    expect(logged.some((line) => /API_KEYS is invalid.*entry 2\.access/.test(line))).toBe(true);
    // The log names entries by position, never by their key.
    const hash = await sha256Hex(OTHER);
    for (const line of logged) expect(line).not.toContain(hash);
  });

  it("is misconfigured when it is not JSON, not an object, or keyed by something other than a SHA-256", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    for (const API_KEYS of ["{not json", "[]", '"tenant"', JSON.stringify({ [OWNER]: "tenant-keys" })]) {
      const res = await call({ ...env, API_KEYS }, "GET", "/v1/sessions", { key: OWNER });
      expect(res.status, API_KEYS).toBe(503);
      expect(res.body.error.code).toBe("misconfigured");
    }
    // A raw key put where its hash belongs is not printed.
    for (const [line] of errors.mock.calls) expect(String(line)).not.toContain(OWNER);
    // Outside /v1 the service still answers.
    const health = await call({ ...env, API_KEYS: "{not json" }, "GET", "/healthz");
    expect(health.status).toBe(200);
  });
});
