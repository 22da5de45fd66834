import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newId } from "../../src/core/ids";
import type { WorkerEnv } from "../../src/http/env";
import worker from "../../src/worker";
import { sid } from "./helpers";

/*
 * Requests as a browser sends them to the local server (`npm start`, the dev tenant: no
 * credential needed) from a page on another origin, and from the viewer on the server's own.
 */

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

const SERVER = "http://127.0.0.1:8787";
const EVIL = "http://evil.example";

/** A dev tenant of its own, so that its listing shows only what this test wrote. */
function localEnv(overrides: Partial<WorkerEnv> = {}): WorkerEnv {
  return { ...env, API_KEYS: undefined, DEV_TENANT: `dev-${newId()}`, ...overrides };
}

async function send(
  workerEnv: WorkerEnv,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
) {
  const res = await worker.fetch(
    new Request(`${SERVER}${path}`, {
      method,
      headers: { "CF-Connecting-IP": "127.0.0.1", ...headers },
      body,
    }),
    workerEnv,
    ctx(),
  );
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

/** What Chromium sends for `fetch(url, {method: "POST", mode: "no-cors", body: text})` from `origin`. */
const noCors = (origin: string, site = "cross-site") => ({
  Origin: origin,
  "Sec-Fetch-Site": site,
  "Sec-Fetch-Mode": "no-cors",
  "Sec-Fetch-Dest": "empty",
  "Content-Type": "text/plain;charset=UTF-8",
});

/** The ids of the tenant's sessions, once a marker session written last shows in the listing. */
async function sessionsAfterMarker(workerEnv: WorkerEnv): Promise<string[]> {
  const marker = sid("marker");
  const json = { "Content-Type": "application/json" };
  expect((await send(workerEnv, "POST", "/v1/sessions", json, JSON.stringify({ id: marker }))).status).toBe(
    201,
  );
  for (let attempt = 0; attempt < 100; attempt++) {
    const ids = (await send(workerEnv, "GET", "/v1/sessions?limit=200", {})).body.sessions.map(
      (s: { id: string }) => s.id,
    );
    if (ids.includes(marker)) return ids.filter((id: string) => id !== marker);
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the marker session never showed in the listing");
}

const NDJSON = `${JSON.stringify({ type: "session", version: 3, id: "imported", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/" })}\n`;

describe("cross-site requests", () => {
  it("refuses a no-cors import, create and compact from a page on another origin, writing nothing", async () => {
    const local = localEnv();
    const existing = sid("kept");
    const json = { "Content-Type": "application/json" };
    expect((await send(local, "POST", "/v1/sessions", json, JSON.stringify({ id: existing }))).status).toBe(
      201,
    );
    const forged = sid("forged");
    for (const [path, body] of [
      [`/v1/sessions/import?format=pi&id=${forged}`, NDJSON],
      ["/v1/sessions", ""],
      ["/v1/sessions", JSON.stringify({ id: forged })],
      [`/v1/sessions/${existing}/compact`, ""],
      [`/v1/sessions/${existing}/entries`, JSON.stringify({ type: "custom", customType: "x" })],
    ] as const) {
      const res = await send(local, "POST", path, noCors(EVIL), body);
      expect(res.status, `${path}: ${res.text}`).toBe(403);
      expect(res.body.error.code).toBe("forbidden");
      expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
    }
    for (const method of ["PATCH", "PUT", "DELETE"]) {
      const path = method === "PUT" ? `/v1/sessions/${existing}/leaf` : `/v1/sessions/${existing}`;
      const res = await send(
        local,
        method,
        path,
        { ...noCors(EVIL), "Content-Type": "application/json" },
        "{}",
      );
      expect(res.status, method).toBe(403);
    }
    expect(await sessionsAfterMarker(local)).toEqual([existing]);
    expect((await send(local, "GET", `/v1/sessions/${existing}`, {})).body.entryCount).toBe(0);
  });

  it("refuses by Origin alone, by Sec-Fetch-Site alone, and an opaque origin (null)", async () => {
    const local = localEnv();
    const json = { "Content-Type": "application/json" };
    const refused: Array<Record<string, string>> = [
      { Origin: EVIL },
      { Origin: "http://127.0.0.1:9999" },
      { Origin: "null" },
      { "Sec-Fetch-Site": "cross-site" },
      { "Sec-Fetch-Site": "same-site", Origin: "http://other.localhost:8787" },
    ];
    for (const headers of refused) {
      const res = await send(local, "POST", "/v1/sessions", { ...json, ...headers }, "{}");
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.body.error.code).toBe("forbidden");
    }
    expect(await sessionsAfterMarker(local)).toEqual([]);
  });

  it("serves the viewer on the server's own origin, clients that send neither header, and reads", async () => {
    const local = localEnv();
    const json = { "Content-Type": "application/json" };
    const viewer = await send(
      local,
      "POST",
      "/v1/sessions",
      { ...json, Origin: SERVER, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors" },
      "{}",
    );
    expect(viewer.status).toBe(201);
    expect((await send(local, "POST", "/v1/sessions", json, "{}")).status).toBe(201);
    // A link followed from another site reads; the browser keeps the answer from that site's page.
    const navigation = await send(local, "GET", "/v1/sessions", { "Sec-Fetch-Site": "cross-site" });
    expect(navigation.status).toBe(200);
    expect(navigation.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });
});

describe("content types", () => {
  it("takes JSON bodies only as application/json, writing nothing otherwise", async () => {
    const local = localEnv();
    const cases: Array<[Record<string, string>, string | undefined]> = [
      [{}, "{}"],
      [{ "Content-Type": "text/plain;charset=UTF-8" }, undefined],
      [{ "Content-Type": "text/plain;charset=UTF-8" }, JSON.stringify({ id: "plain" })],
      [{ "Content-Type": "application/x-www-form-urlencoded" }, "id=form"],
      [{ "Content-Type": "multipart/form-data; boundary=x" }, "--x--"],
    ];
    for (const [headers, body] of cases) {
      const res = await send(local, "POST", "/v1/sessions", headers, body);
      expect(res.status, JSON.stringify(headers)).toBe(415);
      expect(res.body.error.code).toBe("unsupported_format");
    }
    const json = { "Content-Type": "application/json" };
    const id = sid();
    expect((await send(local, "POST", "/v1/sessions", json, JSON.stringify({ id }))).status).toBe(201);
    expect((await send(local, "POST", `/v1/sessions/${id}/compact`, {}, "{}")).status).toBe(415);
    expect(
      (await send(local, "POST", `/v1/sessions/${id}/compact`, { "Content-Type": "text/plain" }, "")).status,
    ).toBe(415);
    expect(await sessionsAfterMarker(local)).toEqual([id]);
    expect((await send(local, "GET", `/v1/sessions/${id}`, {})).body.entryCount).toBe(0);
  });

  it("takes a request without a body and without a type as {}, as curl -X POST sends it", async () => {
    const local = localEnv();
    const id = sid();
    const json = { "Content-Type": "application/json" };
    expect((await send(local, "POST", "/v1/sessions", json, JSON.stringify({ id }))).status).toBe(201);
    const ticket = await send(local, "POST", `/v1/sessions/${id}/tickets`, {});
    expect(ticket.status, ticket.text).toBe(201);
    expect(ticket.body.url).toBe(`/v1/sessions/${id}/ws?ticket=${ticket.body.ticket}`);
    expect((await send(local, "DELETE", `/v1/sessions/${id}`, {})).status).toBe(204);
    // The same request from a page on another site (fetch, no-cors, no body) is still refused.
    const { "Content-Type": _, ...bodiless } = noCors(EVIL);
    const forged = await send(local, "POST", `/v1/sessions/${id}/restore`, bodiless);
    expect(forged.status, forged.text).toBe(403);
    expect(forged.body.error.code).toBe("forbidden");
    expect((await send(local, "GET", `/v1/sessions/${id}`, {})).status).toBe(404);
    const restored = await send(local, "POST", `/v1/sessions/${id}/restore`, {});
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body.id).toBe(id);
    const renamed = await send(local, "PATCH", `/v1/sessions/${id}`, {});
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.entryCount).toBe(0);
    expect(await sessionsAfterMarker(local)).toEqual([id]);
  });

  it("reads the import path as NDJSON only for an import: a session named import takes JSON", async () => {
    const local = localEnv();
    const json = { "Content-Type": "application/json" };
    expect((await send(local, "POST", "/v1/sessions", json, JSON.stringify({ id: "import" }))).status).toBe(
      201,
    );
    const refused = await send(
      local,
      "PATCH",
      "/v1/sessions/import",
      { "Content-Type": "application/x-ndjson" },
      JSON.stringify({ name: "as ndjson" }),
    );
    expect(refused.status, refused.text).toBe(415);
    expect(refused.body.error.code).toBe("unsupported_format");
    const untouched = (await send(local, "GET", "/v1/sessions/import", {})).body;
    expect(untouched.name).toBeUndefined();
    expect(untouched.entryCount).toBe(0);
    const renamed = await send(
      local,
      "PATCH",
      "/v1/sessions/import",
      json,
      JSON.stringify({ name: "Imports" }),
    );
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body).toMatchObject({ id: "import", name: "Imports", entryCount: 1 });
  });

  it("takes imports only as application/x-ndjson or application/jsonl", async () => {
    const local = localEnv();
    for (const type of ["text/plain", "application/json", "application/octet-stream", ""]) {
      const headers: Record<string, string> = type ? { "Content-Type": type } : {};
      const res = await send(
        local,
        "POST",
        `/v1/sessions/import?format=pi&id=${sid("refused")}`,
        headers,
        NDJSON,
      );
      expect(res.status, type).toBe(415);
      expect(res.body.error.code).toBe("unsupported_format");
    }
    expect(await sessionsAfterMarker(local)).toEqual([]);
    for (const type of ["application/x-ndjson", "application/x-ndjson; charset=utf-8", "application/jsonl"]) {
      const id = sid("imported");
      const res = await send(
        local,
        "POST",
        `/v1/sessions/import?format=pi&id=${id}`,
        { "Content-Type": type },
        NDJSON,
      );
      expect(res.status, `${type}: ${res.text}`).toBe(201);
      expect(res.body.id).toBe(id);
    }
  });
});

describe("CORS", () => {
  const APP = "https://app.example";
  const preflight = (origin: string, method = "POST") => ({
    Origin: origin,
    "Access-Control-Request-Method": method,
    "Access-Control-Request-Headers": "authorization,content-type",
    "Sec-Fetch-Mode": "cors",
    "Sec-Fetch-Site": "cross-site",
  });

  it("answers no preflight while no origin is allowed", async () => {
    const res = await send(localEnv(), "OPTIONS", "/v1/sessions", preflight(APP));
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("forbidden");
    expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });

  it("lets the origins in CORS_ALLOWED_ORIGINS in, and no other", async () => {
    const errors: unknown[] = [];
    const originalError = console.error;
    console.error = (...args: unknown[]) => errors.push(args);
    const local = localEnv({
      CORS_ALLOWED_ORIGINS: `${APP}, http://localhost:5173, *, https://bad.example/path`,
    });
    try {
      const ok = await send(local, "OPTIONS", "/v1/sessions/abc/entries", preflight(APP));
      expect(ok.status).toBe(204);
      expect(ok.headers.get("Access-Control-Allow-Origin")).toBe(APP);
      expect(ok.headers.get("Access-Control-Allow-Methods")).toContain("POST");
      expect(ok.headers.get("Access-Control-Allow-Headers")).toMatch(/Authorization.*Content-Type.*If-Match/);
      // A page resuming an event stream sends Last-Event-ID itself (EventSource cannot send a
      // key), and may send its own request id.
      const allowed = ok.headers.get("Access-Control-Allow-Headers")?.toLowerCase().split(", ");
      expect(allowed).toEqual(expect.arrayContaining(["last-event-id", "x-request-id"]));
      expect(ok.headers.get("Access-Control-Allow-Credentials")).toBeNull();
      expect(ok.headers.get("Vary")).toContain("Origin");

      const id = sid("cors");
      const created = await send(
        local,
        "POST",
        "/v1/sessions",
        {
          Origin: APP,
          "Sec-Fetch-Site": "cross-site",
          "Sec-Fetch-Mode": "cors",
          "Content-Type": "application/json",
        },
        JSON.stringify({ id }),
      );
      expect(created.status).toBe(201);
      expect(created.headers.get("Access-Control-Allow-Origin")).toBe(APP);
      expect(created.headers.get("Access-Control-Expose-Headers")).toContain("ETag");
      expect(created.headers.get("Access-Control-Expose-Headers")?.split(", ")).toContain("x-request-id");
      const refusedError = await send(local, "GET", "/v1/sessions/no-such-session", { Origin: APP });
      expect(refusedError.status).toBe(404);
      expect(refusedError.headers.get("Access-Control-Allow-Origin")).toBe(APP);

      for (const origin of [EVIL, "https://app.example.evil", "*", "https://bad.example"]) {
        const res = await send(local, "OPTIONS", "/v1/sessions", preflight(origin));
        expect(res.status, origin).toBe(403);
        expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
        const write = await send(
          local,
          "POST",
          "/v1/sessions",
          { ...noCors(origin), "Content-Type": "application/json" },
          "{}",
        );
        expect(write.status, origin).toBe(403);
      }
      expect(await sessionsAfterMarker(local)).toEqual([id]);
    } finally {
      console.error = originalError;
    }
    const logged = errors.map((args) => String((args as unknown[])[0]));
    expect(logged.some((line) => /CORS_ALLOWED_ORIGINS entry "\*" is not an origin/.test(line))).toBe(true);
    expect(logged.some((line) => line.includes('"https://bad.example/path"'))).toBe(true);
  });
});
