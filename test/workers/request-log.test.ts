import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { newId } from "../../src/core/ids";
import { errorSummary, sessionObjectName, tenantHash } from "../../src/durable/internal";
import type { WorkerEnv } from "../../src/http/env";
import worker from "../../src/worker";
import { api, createSession, sid, userMessage } from "./helpers";
import { captureLogs, lineOf } from "./log-capture";

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

afterEach(() => {
  vi.restoreAllMocks();
});

const sha256 = async (text: string) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

describe("request ids", () => {
  it("are on every answer, and in every error envelope the same one", async () => {
    const id = await createSession();
    const answers = [
      await api("GET", "/healthz", { key: null }),
      await api("GET", "/v1/sessions"),
      await api("POST", "/v1/sessions", { body: {} }),
      await api("GET", `/v1/sessions/${id}`),
      await api("GET", "/docs", { key: null }),
      await api("DELETE", `/v1/sessions/${await createSession()}`),
      await api("GET", `/v1/sessions/${sid("missing")}`),
      await api("GET", "/no/such/route"),
      await api("GET", "/v1/sessions", { key: null }),
      await api("POST", `/v1/sessions/${id}/entries`, { body: { type: "nonsense" } }),
      await api("POST", `/v1/sessions/${id}/entries`, {
        raw: "x",
        headers: { "Content-Type": "text/plain" },
      }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 201, 200, 200, 204, 404, 404, 401, 400, 415]);
    const ids = answers.map((answer) => answer.headers.get("x-request-id"));
    for (const requestId of ids) expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(ids).size).toBe(ids.length);
    for (const answer of answers.filter((a) => a.status >= 400)) {
      expect(answer.body.error.requestId).toBe(answer.headers.get("x-request-id"));
    }
  });

  it("keep a caller's own when it is short and plain, and replace any other", async () => {
    const own = "req_2026-01-01:abc.DEF-9";
    expect(
      (await api("GET", "/v1/sessions", { headers: { "x-request-id": own } })).headers.get("x-request-id"),
    ).toBe(own);
    for (const refused of ["has spaces", "a".repeat(65), "semi;colon", 'quote"d', "<script>"]) {
      const res = await api("GET", `/v1/sessions/${sid("missing")}`, {
        headers: { "x-request-id": refused },
      });
      const replaced = res.headers.get("x-request-id");
      expect(replaced).not.toBe(refused);
      expect(replaced).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.error.requestId).toBe(replaced);
    }
  });
});

describe("request log", () => {
  it("writes one line a request: route pattern, status, error code, duration, sizes, tenant hash, session", async () => {
    const id = await createSession();
    const logs = captureLogs();
    const body = { entries: [userMessage("first"), userMessage("second")] };
    const sent = JSON.stringify(body);
    const appended = await api("POST", `/v1/sessions/${id}/entries`, { body });
    expect(appended.status).toBe(201);
    const line = lineOf(logs, appended.headers.get("x-request-id"));
    expect(line).toEqual({
      type: "request",
      requestId: appended.headers.get("x-request-id"),
      method: "POST",
      route: "/v1/sessions/:sid/entries",
      status: 201,
      errorCode: null,
      durationMs: expect.any(Number),
      bytesIn: new TextEncoder().encode(sent).byteLength,
      bytesOut: new TextEncoder().encode(appended.text).byteLength,
      tenant: await tenantHash("tenant-a"),
      sessionId: id,
    });
    expect(line.tenant).toMatch(/^[0-9a-f]{16}$/);

    const conflict = await api("POST", `/v1/sessions/${id}/entries`, {
      body: userMessage("late"),
      headers: { "If-Match": '"not-the-leaf"' },
    });
    expect(conflict.status).toBe(412);
    expect(lineOf(logs, conflict.headers.get("x-request-id"))).toMatchObject({
      route: "/v1/sessions/:sid/entries",
      status: 412,
      errorCode: "leaf_conflict",
      sessionId: id,
    });

    const unmatched = await api("GET", "/no/such/route", { key: null });
    expect(lineOf(logs, unmatched.headers.get("x-request-id"))).toMatchObject({
      route: null,
      status: 404,
      errorCode: "not_found",
      tenant: null,
      sessionId: null,
    });

    const refused = await api("GET", `/v1/sessions/${id}`, { key: "not-a-key" });
    expect(lineOf(logs, refused.headers.get("x-request-id"))).toMatchObject({
      route: "/v1/sessions/:sid",
      status: 401,
      errorCode: "unauthorized",
      tenant: null,
    });
  });

  it("logs a streamed answer once it has been sent, with its size", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("a".repeat(5000)) });
    const logs = captureLogs();
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.status).toBe(200);
    expect(lineOf(logs, context.headers.get("x-request-id"))).toMatchObject({
      route: "/v1/sessions/:sid/context",
      status: 200,
      bytesOut: new TextEncoder().encode(context.text).byteLength,
    });
  });

  it("answers a failure inside with internal and the request id, and logs what failed without quoting data", async () => {
    const logs = captureLogs();
    const broken = { ...env, SESSIONS: undefined } as unknown as WorkerEnv;
    const res = await worker.fetch(
      new Request(`http://sessions.test/v1/sessions/${sid()}`, {
        headers: { Authorization: "Bearer key-a", "x-request-id": "trace-500" },
      }),
      broken,
      ctx(),
    );
    const text = await res.text();
    expect(res.status).toBe(500);
    expect(res.headers.get("x-request-id")).toBe("trace-500");
    const body = JSON.parse(text);
    expect(body.error).toEqual({
      code: "internal",
      message: "internal error",
      details: { requestId: "trace-500" },
      requestId: "trace-500",
    });
    expect(text).not.toMatch(/getByName|TypeError|\n\s+at /);
    const line = lineOf(logs, "trace-500");
    expect(line).toMatchObject({ status: 500, errorCode: "internal", route: "/v1/sessions/:sid" });
    expect(line.failure).toMatch(/^TypeError: /);
  });

  it("cuts quoted data out of the errors it logs", () => {
    const error = new SyntaxError(`Unexpected token 'h', "hello my secret" is not valid JSON`);
    expect(errorSummary(error)).toBe("SyntaxError: Unexpected token …, … is not valid JSON");
    expect(errorSummary("x".repeat(1000)).length).toBe(300);
  });

  it("never holds a key, a token, a tenant's name or message content", async () => {
    const key = `sk-live-${newId()}`;
    const tenant = `acme-corp-${newId()}`;
    const jwtSecret = "0123456789abcdef0123456789abcdef-log-test";
    const secrets = {
      ...env,
      API_KEYS: JSON.stringify({ [await sha256(key)]: tenant }),
      JWT_SECRET: jwtSecret,
    } as WorkerEnv;
    const header = btoa(JSON.stringify({ alg: "HS256", typ: "JWT" })).replace(/=+$/, "");
    const payload = btoa(JSON.stringify({ tenant, exp: Math.floor(Date.now() / 1000) + 300 })).replace(
      /=+$/,
      "",
    );
    const hmac = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(jwtSecret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const signature = new Uint8Array(
      await crypto.subtle.sign("HMAC", hmac, new TextEncoder().encode(`${header}.${payload}`)),
    );
    const token = `${header}.${payload}.${btoa(String.fromCharCode(...signature))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "")}`;
    const content = `the launch code is ${newId()}`;
    const id = sid();

    const logs = captureLogs();
    const call = async (method: string, path: string, credential: string, init: RequestInit = {}) => {
      const res = await worker.fetch(
        new Request(`http://sessions.test${path}`, {
          ...init,
          method,
          headers: {
            Authorization: `Bearer ${credential}`,
            "Content-Type": "application/json",
            ...init.headers,
          },
        }),
        secrets,
        ctx(),
      );
      await res.arrayBuffer();
      return res.status;
    };
    expect(await call("POST", "/v1/sessions", key, { body: JSON.stringify({ id, name: content }) })).toBe(
      201,
    );
    expect(
      await call("POST", `/v1/sessions/${id}/entries`, token, { body: JSON.stringify(userMessage(content)) }),
    ).toBe(201);
    expect(await call("GET", `/v1/sessions/${id}/context`, key)).toBe(200);
    expect(await call("GET", `/v1/sessions/${id}/export`, token)).toBe(200);
    expect(await call("GET", "/v1/sessions", `${key}-wrong`)).toBe(401);
    expect(await call("GET", "/v1/sessions", `${token}x`)).toBe(401);
    expect(
      await call("POST", `/v1/sessions/${id}/entries`, key, {
        body: JSON.stringify({ type: "message", content }),
      }),
    ).toBe(400);
    const ndjson = `${JSON.stringify({ type: "session", version: 3, id: sid("pi"), timestamp: new Date().toISOString(), cwd: "/" })}\n${JSON.stringify({ type: "message", id: "a1b2c3d4", parentId: null, timestamp: new Date().toISOString(), message: { role: "user", content, timestamp: 1 } })}\n`;
    expect(
      await call("POST", "/v1/sessions/import?format=pi", key, {
        body: ndjson,
        headers: { "Content-Type": "application/x-ndjson" },
      }),
    ).toBe(201);

    const lines = logs.lines.join("\n");
    expect(logs.requests().length).toBe(8);
    for (const secret of [key, token, jwtSecret, tenant, content, "launch code"]) {
      expect(lines).not.toContain(secret);
    }
    expect(new Set(logs.requests().map((line) => line.tenant))).toEqual(
      new Set([await tenantHash(tenant), null]),
    );
  });
});

describe("request log level", () => {
  it("with REQUEST_LOG=errors, logs answers of 400 and up only, ids on every answer still", async () => {
    const quiet = { ...env, REQUEST_LOG: "errors" } as WorkerEnv;
    const logs = captureLogs();
    const ok = await worker.fetch(new Request("http://sessions.test/healthz"), quiet, ctx());
    const missing = await worker.fetch(
      new Request(`http://sessions.test/v1/sessions/${sid("missing")}`, {
        headers: { Authorization: "Bearer key-a" },
      }),
      quiet,
      ctx(),
    );
    await ok.text();
    await missing.text();
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(missing.status).toBe(404);
    await vi.waitFor(() => expect(logs.requests().map((line) => line.status)).toEqual([404]));
  });
});

describe("background failures", () => {
  it("are logged the same way, with the session and the tenant's hash, and nothing secret", async () => {
    const summarizerKey = `sk-summarizer-${newId()}`;
    const id = await createSession();
    await api("PATCH", `/v1/sessions/${id}`, {
      body: { autoCompact: { contextWindow: 400, reserveTokens: 100, keepRecentTokens: 50 } },
    });
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    await runInDurableObject(stub, (instance) => {
      const object = instance as unknown as { env: WorkerEnv };
      object.env = {
        ...object.env,
        SUMMARIZER_BASE_URL: `${env.FAKE_LLM_URL}/v1`,
        SUMMARIZER_MODEL: "fail",
        SUMMARIZER_API_KEY: summarizerKey,
      };
    });
    const logs = captureLogs();
    const content = `private words ${newId()} `.repeat(40);
    for (let i = 0; i < 4; i++) {
      expect((await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage(content) })).status).toBe(
        201,
      );
    }
    await vi.waitFor(
      () => {
        const failures = logs.background().filter((line) => line.task === "auto_compaction");
        expect(failures.length).toBeGreaterThan(0);
        expect(failures[0]).toEqual({
          type: "background",
          task: "auto_compaction",
          tenant: expect.stringMatching(/^[0-9a-f]{16}$/),
          sessionId: id,
          errorCode: "summarizer_failed",
          error: expect.any(String),
        });
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(logs.background()[0]?.tenant).toBe(await tenantHash("tenant-a"));
    // Compaction is left off once the failure is recorded, so nothing is still running at the end.
    await vi.waitFor(async () => {
      const current = await api("GET", `/v1/sessions/${id}`);
      expect(current.body.autoCompact.status.state).toBe("failed");
    });
    await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact: null } });
    const lines = logs.lines.join("\n");
    expect(lines).not.toContain(summarizerKey);
    expect(lines).not.toContain("private words");
  });
});
