import { describe, expect, it } from "vitest";
import { appendEvents, endGeneration, openGeneration, sessionWithQuestion } from "./generation-helpers";
import { api, createSession, expectError, sid } from "./helpers";

/*
 * Names that an object inherits (`constructor`, `__proto__`, `toString`, …) are ordinary unknown
 * names wherever input picks a handler or names a key: a role, a block or item type, an entry
 * type, a format, an id, a metadata key. Each answers what any unknown name answers; never 500.
 */

const INHERITED = ["constructor", "__proto__", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf"];

const NDJSON = { "Content-Type": "application/x-ndjson" };

function ndjson(lines: unknown[]): string {
  return `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`;
}

/** The status and error code (if any) of an answer: what must not differ between two names. */
function outcome(res: { status: number; body: { error?: { code?: string } } }) {
  return { status: res.status, code: res.body?.error?.code };
}

/** Appends `build(name)` to a fresh session for every inherited name and for a plain unknown one. */
async function sameAsUnknown(build: (name: string) => unknown) {
  const reference = outcome(
    await api("POST", `/v1/sessions/${await createSession()}/entries`, { body: build("zzz") }),
  );
  expect(reference.status).not.toBe(500);
  for (const name of INHERITED) {
    const id = await createSession();
    const res = await api("POST", `/v1/sessions/${id}/entries`, { body: build(name) });
    expect(outcome(res), `${name}: ${res.text}`).toEqual(reference);
    if (res.status >= 400) {
      expect(res.text).not.toMatch(/\n\s+at /);
      const entries = await api("GET", `/v1/sessions/${id}/entries`);
      expect(entries.body.entries, name).toEqual([]);
    }
  }
  return reference;
}

describe("inherited names as data", () => {
  it("a message with such a role is kept as an unknown role, byte for byte", async () => {
    await sameAsUnknown((role) => ({ type: "message", message: { role, content: "x", timestamp: 1 } }));
    const id = await createSession();
    const res = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "message", message: { role: "constructor", content: "x", timestamp: 1 } },
    });
    expect(res.status).toBe(201);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages).toEqual([{ role: "constructor", content: "x", timestamp: 1 }]);
  });

  it("an entry of such a type is refused as an unknown type, naming the field", async () => {
    const reference = await sameAsUnknown((type) => ({ type }));
    expect(reference).toEqual({ status: 400, code: "invalid_request" });
  });

  it("a provider message with such a block, part, item or role answers as an unknown one", async () => {
    await sameAsUnknown((type) => ({
      type: "message",
      format: "anthropic",
      message: { role: "assistant", content: [{ type }] },
    }));
    await sameAsUnknown((role) => ({
      type: "message",
      format: "anthropic",
      message: { role, content: "x" },
    }));
    await sameAsUnknown((type) => ({
      type: "message",
      format: "ai-sdk",
      message: { role: "assistant", content: [{ type }] },
    }));
    await sameAsUnknown((role) => ({ type: "message", format: "ai-sdk", message: { role, content: "x" } }));
    await sameAsUnknown((type) => ({
      type: "message",
      format: "ai-sdk-ui",
      message: { id: "m1", role: "assistant", parts: [{ type }] },
    }));
    await sameAsUnknown((role) => ({
      type: "message",
      format: "openai-chat",
      message: { role, content: "x" },
    }));
    await sameAsUnknown((type) => ({
      type: "message",
      format: "openai-chat",
      message: { role: "user", content: [{ type }] },
    }));
    await sameAsUnknown((type) => ({ type: "message", format: "openai-responses", message: { type } }));
    await sameAsUnknown((role) => ({
      type: "message",
      format: "openai-responses",
      message: { type: "message", role, content: "x" },
    }));
    await sameAsUnknown((role) => ({
      type: "message",
      format: "gemini",
      message: { role, parts: [{ text: "x" }] },
    }));
    await sameAsUnknown((format) => ({ type: "message", format, message: { role: "user", content: "x" } }));
  });

  it("a key named __proto__ is kept as data, and refused (nothing written) where a schema would drop it", async () => {
    const json = { "Content-Type": "application/json" };
    const id = sid();
    for (const raw of [
      `{"id":"${id}","metadata":{"__proto__":{"polluted":true}}}`,
      `{"id":"${id}","metadata":{"\\u005f_proto__":{"polluted":true}}}`,
      `{"id":"${id}","__proto__":{"polluted":true}}`,
    ]) {
      const res = await api("POST", "/v1/sessions", { raw, headers: json });
      expectError(res, 400, "invalid_request");
      expect(res.text).toMatch(/__proto__/);
    }
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
    const session = await createSession();
    const message = `{"type":"message","message":{"role":"user","content":"x","timestamp":1,"__proto__":{"a":1}}}`;
    expectError(
      await api("POST", `/v1/sessions/${session}/entries`, { raw: message, headers: json }),
      400,
      "invalid_request",
    );
    expect((await api("GET", `/v1/sessions/${session}/entries`)).body.entries).toEqual([]);
    // Inside values the schemas do not rebuild (custom data, tool arguments) it is data, kept.
    const kept = [
      `{"type":"custom","customType":"x","data":{"deep":[{"__proto__":1}]}}`,
      `{"type":"message","format":"openai-chat","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\\"__proto__\\":{\\"a\\":1}}"}}]}}`,
    ];
    for (const raw of kept) {
      const res = await api("POST", `/v1/sessions/${session}/entries`, { raw, headers: json });
      expect(res.status, res.text).toBe(201);
      expect(res.text).toMatch(/"__proto__":/);
    }
    // Files keep what they say: a native header's metadata included.
    const imported = await api("POST", "/v1/sessions/import", {
      raw: `{"type":"session","format":"cf-session","version":1,"id":"${sid()}","createdAt":"2025-01-01T00:00:00Z","metadata":{"__proto__":{"a":1}}}\n`,
      headers: NDJSON,
    });
    expect(imported.status, imported.text).toBe(201);
    expect(imported.text).toContain('"metadata":{"__proto__":{"a":1}}');
  });

  it("ids and metadata keys of other inherited names are kept", async () => {
    const id = sid();
    const metadata = { constructor: "c", toString: 1, valueOf: { hasOwnProperty: [] } };
    const created = await api("POST", "/v1/sessions", { body: { id, metadata } });
    expect(created.status, created.text).toBe(201);
    expect(created.body.metadata).toEqual(metadata);
    const entries = INHERITED.map((name) => ({
      type: "message",
      id: name,
      message: { role: "user", content: name, timestamp: 1 },
    }));
    const labels = INHERITED.map((name) => ({
      type: "label",
      id: `label-${name}`,
      targetId: name,
      label: name,
    }));
    const appended = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [...entries, ...labels] },
    });
    expect(appended.status, appended.text).toBe(201);
    const tree = await api("GET", `/v1/sessions/${id}/tree`);
    const labelled = new Map<string, string>();
    const walk = (nodes: Array<{ id: string; label?: string; children: unknown[] }>) => {
      for (const node of nodes) {
        if (node.label !== undefined) labelled.set(node.id, node.label);
        walk(node.children as typeof nodes);
      }
    };
    walk(tree.body.roots);
    expect([...labelled].sort()).toEqual(INHERITED.map((name) => [name, name]).sort());
    const exported = await api("GET", `/v1/sessions/${id}/export`);
    const imported = await api("POST", `/v1/sessions/import?id=${sid()}`, {
      raw: exported.text,
      headers: NDJSON,
    });
    expect(imported.status, imported.text).toBe(201);
    expect(imported.body.metadata).toEqual(metadata);
  });

  it("imports of every format answer such names as unknown ones", async () => {
    const native = (type: string) =>
      ndjson([
        {
          type: "session",
          format: "cf-session",
          version: 1,
          id: sid(),
          createdAt: new Date().toISOString(),
          metadata: {},
        },
        { type, id: "e1", parentId: null, timestamp: new Date().toISOString() },
      ]);
    const nativeRole = (role: string) =>
      ndjson([
        {
          type: "session",
          format: "cf-session",
          version: 1,
          id: sid(),
          createdAt: new Date().toISOString(),
          metadata: {},
        },
        {
          type: "message",
          id: "e1",
          parentId: null,
          timestamp: new Date().toISOString(),
          message: { role, content: "x", timestamp: 1 },
        },
      ]);
    const pi = (type: string, role = "user") =>
      ndjson([
        { type: "session", version: 3, id: sid(), timestamp: new Date().toISOString(), cwd: "/" },
        type === "message"
          ? {
              type,
              id: "a1",
              parentId: null,
              timestamp: new Date().toISOString(),
              message: { role, content: "x", timestamp: 1 },
            }
          : { type, id: "a1", parentId: null, timestamp: new Date().toISOString() },
      ]);
    const codex = (role: string) =>
      ndjson([
        {
          timestamp: "2025-01-01T00:00:00Z",
          type: "session_meta",
          payload: { id: sid(), timestamp: "2025-01-01T00:00:00Z", cwd: "/", cli_version: "0.77.0" },
        },
        {
          timestamp: "2025-01-01T00:00:01Z",
          type: "response_item",
          payload: { type: "message", role, content: [{ type: "input_text", text: "x" }] },
        },
      ]);
    const codexItem = (type: string) =>
      ndjson([
        {
          timestamp: "2025-01-01T00:00:00Z",
          type: "session_meta",
          payload: { id: sid(), timestamp: "2025-01-01T00:00:00Z", cwd: "/", cli_version: "0.77.0" },
        },
        { timestamp: "2025-01-01T00:00:01Z", type: "response_item", payload: { type } },
        { timestamp: "2025-01-01T00:00:01Z", type },
      ]);
    const claude = (type: string) =>
      ndjson([
        {
          type: "user",
          uuid: "u1",
          parentUuid: null,
          sessionId: sid(),
          timestamp: "2025-01-01T00:00:00Z",
          message: { role: "user", content: "x" },
        },
        {
          type,
          uuid: "u2",
          parentUuid: "u1",
          sessionId: "x",
          timestamp: "2025-01-01T00:00:01Z",
          message: { role: type, content: [{ type }] },
        },
      ]);
    const cases: Array<[string, (name: string) => string]> = [
      ["native", native],
      ["native", nativeRole],
      ["pi", (name) => pi(name)],
      ["pi", (name) => pi("message", name)],
      ["codex", codex],
      ["codex", codexItem],
      ["claude-code", claude],
    ];
    for (const [format, build] of cases) {
      const reference = outcome(
        await api("POST", `/v1/sessions/import?format=${format}`, { raw: build("zzz"), headers: NDJSON }),
      );
      expect(reference.status, format).not.toBe(500);
      for (const name of INHERITED) {
        const res = await api("POST", `/v1/sessions/import?format=${format}`, {
          raw: build(name),
          headers: NDJSON,
        });
        expect(outcome(res), `${format} ${name}: ${res.text}`).toEqual(reference);
      }
    }
    // The tenant stream: a session line of such a type, or an entry of one.
    const tenant = (type: string) =>
      ndjson([
        { type: "tenant", format: "cf-sessions-tenant", version: 1 },
        { type, id: sid() },
      ]);
    const reference = outcome(await api("POST", "/v1/import", { raw: tenant("zzz"), headers: NDJSON }));
    expect(reference.status).not.toBe(500);
    for (const name of INHERITED) {
      const res = await api("POST", "/v1/import", { raw: tenant(name), headers: NDJSON });
      expect(outcome(res), `tenant ${name}: ${res.text}`).toEqual(reference);
    }
  });

  it("a generation's event of such a type passes unchecked, as one of an unknown type, and the answer completes", async () => {
    const text = {
      "pi-ai": (delta: string) => ({ type: "text_delta", contentIndex: 0, delta }),
      "ai-sdk-ui": (delta: string) => ({ type: "text-delta", id: "x1", delta }),
    };
    for (const [format, delta] of Object.entries(text)) {
      for (const name of ["zzz", ...INHERITED]) {
        const { id } = await sessionWithQuestion();
        const generation = await openGeneration(id, { format });
        const appended = await appendEvents(generation.stream, [
          delta("Before "),
          { type: name },
          delta("after."),
        ]);
        expect(appended.status, `${format} ${name}: ${appended.text}`).toBe(204);
        const alone = await appendEvents(generation.stream, { type: name, contentIndex: 0, id: "x1" });
        expect(alone.status, `${format} ${name}: ${alone.text}`).toBe(204);
        const done = await endGeneration(id, generation.id, "complete");
        expect(done.status, `${format} ${name}: ${done.text}`).toBe(201);
        expect(done.body.entries.map((entry: { message: unknown }) => entry.message)).toMatchObject([
          { role: "assistant", content: [{ type: "text", text: "Before after." }] },
        ]);
      }
    }
  });

  it("a format or order of such a name in a query is refused as unknown", async () => {
    const id = await createSession();
    for (const name of INHERITED) {
      expectError(await api("GET", `/v1/sessions/${id}/context?format=${name}`), 415, "unsupported_format");
      expectError(await api("GET", `/v1/sessions/${id}/export?format=${name}`), 415, "unsupported_format");
    }
  });
});
