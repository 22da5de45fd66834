import { describe, expect, it } from "vitest";
import { api, createSession, expectError, sid } from "./helpers";

/*
 * JSON the service parses from inside a field (a tool call's `arguments` string, a Codex line's
 * arguments) is held to the 128-level limit of everything else, so whatever is stored can be
 * exported and imported again; nesting thousands deep is a 400, never a 500.
 */

const NDJSON = { "Content-Type": "application/x-ndjson" };

/** A JSON object nesting `levels` deep, as text. */
function nested(levels: number): string {
  return `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`;
}

const chatCall = (levels: number) => ({
  type: "message",
  format: "openai-chat",
  message: {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: nested(levels) } }],
  },
});

const responsesCall = (levels: number) => ({
  type: "message",
  format: "openai-responses",
  message: {
    object: "response",
    id: "resp_1",
    created_at: 1_767_225_600,
    model: "o3",
    output: [{ type: "function_call", id: "fc_1", call_id: "c1", name: "f", arguments: nested(levels) }],
  },
});

const aiSdkCall = (levels: number) => ({
  type: "message",
  format: "ai-sdk",
  message: {
    role: "assistant",
    content: [{ type: "tool-call", toolCallId: "c1", toolName: "f", input: nested(levels) }],
  },
});

describe("JSON inside fields", () => {
  it("refuses tool-call arguments nested past the limit, in every format, writing nothing", async () => {
    for (const build of [chatCall, responsesCall, aiSdkCall]) {
      for (const levels of [129, 2_000, 3_000, 50_000]) {
        const id = await createSession();
        const res = await api("POST", `/v1/sessions/${id}/entries`, { body: build(levels) });
        expectError(res, 400, "invalid_request");
        expect(res.body.error.message).toMatch(/deeper than 128 levels/);
        expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
      }
    }
  });

  it("stores the deepest arguments it accepts so that the session's export imports again", async () => {
    for (const build of [chatCall, responsesCall, aiSdkCall]) {
      let deepest: string | undefined;
      for (let levels = 128; levels > 100 && !deepest; levels--) {
        const id = await createSession();
        const res = await api("POST", `/v1/sessions/${id}/entries`, { body: build(levels) });
        if (res.status === 201) deepest = id;
        else expectError(res, 400, "invalid_request");
      }
      expect(deepest, build.name).toBeDefined();
      const exported = await api("GET", `/v1/sessions/${deepest}/export`);
      expect(exported.status).toBe(200);
      const imported = await api("POST", `/v1/sessions/import?id=${sid()}`, {
        raw: exported.text,
        headers: NDJSON,
      });
      expect(imported.status, imported.text).toBe(201);
    }
  });

  it("refuses a Codex file whose arguments nest past the limit, naming the line", async () => {
    const lines = [
      {
        timestamp: "2025-01-01T00:00:00Z",
        type: "session_meta",
        payload: { id: sid(), timestamp: "2025-01-01T00:00:00Z", cwd: "/", cli_version: "0.77.0" },
      },
      {
        timestamp: "2025-01-01T00:00:01Z",
        type: "response_item",
        payload: { type: "function_call", name: "f", call_id: "c1", arguments: nested(3_000) },
      },
    ];
    const res = await api("POST", "/v1/sessions/import?format=codex", {
      raw: `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`,
      headers: NDJSON,
    });
    expectError(res, 400, "invalid_request");
    expect(res.body.error.message).toMatch(/^line 2: .*deeper than 128 levels/);
  });

  it("refuses an import line nested past the limit, naming the line", async () => {
    const header = {
      type: "session",
      format: "cf-session",
      version: 1,
      id: sid(),
      createdAt: "2025-01-01T00:00:00Z",
      metadata: {},
    };
    const raw = `${JSON.stringify(header)}\n{"type":"custom","id":"c","parentId":null,"timestamp":"2025-01-01T00:00:00Z","customType":"x","data":${nested(5_000)}}\n`;
    const res = await api("POST", "/v1/sessions/import", { raw, headers: NDJSON });
    expectError(res, 400, "invalid_request");
    expect(res.body.error.message).toMatch(/^line 2: nests deeper than 128 levels/);
  });
});

describe("JSON bodies", () => {
  /** An array nesting `levels` deep, as text: 40 KB holds 20,000 levels. */
  const deepArray = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
  const JSON_TYPE = { "Content-Type": "application/json" };

  it("refuses a body nested thousands of levels deep with 400 on every kind of route, writing nothing", async () => {
    const id = await createSession();
    const before = (await api("GET", `/v1/sessions/${id}`)).body;
    for (const levels of [129, 5_000, 20_000]) {
      const deep = deepArray(levels);
      const created = sid();
      const requests: Array<[string, string, string]> = [
        ["POST", "/v1/sessions", `{"id":"${created}","metadata":{"a":${deep}}}`],
        ["PATCH", `/v1/sessions/${id}`, `{"metadata":{"a":${deep}}}`],
        ["POST", `/v1/sessions/${id}/entries`, `{"type":"custom","customType":"x","data":${deep}}`],
      ];
      for (const [method, path, raw] of requests) {
        const res = await api(method, path, { raw, headers: JSON_TYPE });
        expectError(res, 400, "invalid_request");
        expect(res.body.error.message, `${method} ${path}`).toMatch(/deeper than 128 levels/);
      }
      expect((await api("GET", `/v1/sessions/${created}`)).status).toBe(404);
    }
    expect((await api("GET", `/v1/sessions/${id}`)).body).toEqual(before);
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
  });

  it("refuses a number past the largest a double holds (it would be stored as null) with 400, writing nothing", async () => {
    const id = await createSession();
    const before = (await api("GET", `/v1/sessions/${id}`)).body;
    const created = sid();
    const requests: Array<[string, string, string]> = [
      ["POST", "/v1/sessions", `{"id":"${created}","metadata":{"inf":1e400}}`],
      ["PATCH", `/v1/sessions/${id}`, `{"metadata":{"deep":[{"neg":-1e999}]}}`],
      ["POST", `/v1/sessions/${id}/entries`, `{"type":"custom","customType":"x","data":{"v":1e400}}`],
      ["POST", `/v1/sessions/${id}/entries`, `{"type":"custom","customType":"x","data":1e400}`],
    ];
    for (const [method, path, raw] of requests) {
      const res = await api(method, path, { raw, headers: JSON_TYPE });
      expectError(res, 400, "invalid_request");
      expect(res.body.error.message, `${method} ${path}`).toBe("the body holds a number too large to store");
    }
    expect((await api("GET", `/v1/sessions/${created}`)).status).toBe(404);
    expect((await api("GET", `/v1/sessions/${id}`)).body).toEqual(before);
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body.entries).toEqual([]);
    // The largest a double holds is kept as it was sent.
    const kept = await api("POST", `/v1/sessions/${id}/entries`, {
      raw: '{"type":"custom","customType":"x","data":{"v":1.7976931348623157e308}}',
      headers: JSON_TYPE,
    });
    expect(kept.status).toBe(201);
    const [entry] = (await api("GET", `/v1/sessions/${id}/entries`)).body.entries;
    expect(entry.data).toEqual({ v: Number.MAX_VALUE });
  });

  it("refuses an import line holding a number too large to store, naming the line", async () => {
    const id = sid();
    const header = {
      type: "session",
      format: "cf-session",
      version: 1,
      id,
      createdAt: "2025-01-01T00:00:00Z",
    };
    const raw = `${JSON.stringify(header)}\n{"type":"custom","id":"c","parentId":null,"timestamp":"2025-01-01T00:00:00Z","customType":"x","data":{"v":1e400}}\n`;
    const res = await api("POST", "/v1/sessions/import", { raw, headers: NDJSON });
    expectError(res, 400, "invalid_request");
    expect(res.body.error.message).toMatch(/^line 2: holds a number too large to store/);
    expect((await api("GET", `/v1/sessions/${id}`)).status).toBe(404);
  });
});
