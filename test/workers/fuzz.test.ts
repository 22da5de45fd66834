import { exports } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KEY_A, sid } from "./helpers";

/*
 * Hostile input: random and mutated bodies, headers, ids and query strings against every route.
 * Whatever arrives, the answer is a success or a 4xx error envelope (never a 500, never a stack),
 * and the sessions written to stay valid trees. Fixed seed and a bounded number of cases.
 */

const SEED = 20261130;
const RUNS = 400;

const hostileStrings = fc.oneof(
  fc.constantFrom(
    "..",
    "../../etc/passwd",
    "%2e%2e%2f",
    "__proto__",
    "constructor",
    "prototype",
    "",
    " ",
    "\u0000",
    "\u202e\u0007",
    "ñandú😀",
    "x".repeat(300),
    "a/b",
    "a?b=c",
    "a#b",
    "NaN",
    "-1",
    "1e309",
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
);

/** What can travel in an HTTP header at all: visible ASCII and spaces. */
const headerValue = fc.oneof(
  fc.stringMatching(/^[\x20-\x7e]{0,60}$/),
  fc.constantFrom('"', '""', 'W/"x"', '"a", "b"', "*, *", "x".repeat(300)),
);

const validId = fc.stringMatching(/^[A-Za-z0-9._:-]{1,20}$/).filter((s) => !/^\.+$/.test(s));
const anyId = fc.oneof(validId, hostileStrings);

const hugeNumbers = fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, -0, 0.1, Number.MAX_SAFE_INTEGER, 1e-320);

function deep(levels: number): unknown {
  let value: unknown = { end: true };
  for (let i = 0; i < levels; i++) value = i % 2 ? [value] : { d: value };
  return value;
}

const jsonish: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  hugeNumbers,
  fc.constant(deep(200)),
  fc.constant(deep(5000)),
  fc.constant(JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}')),
  hostileStrings,
);

const roles = fc.constantFrom("user", "assistant", "toolResult", "custom", "system", "__proto__", 42, null);
const types = fc.constantFrom(
  "message",
  "model_change",
  "thinking_level_change",
  "active_tools_change",
  "compaction",
  "branch_summary",
  "custom",
  "custom_message",
  "label",
  "session_info",
  "leaf",
  "session",
  "__proto__",
  "",
);

/** Entry-shaped objects: right type names, random or missing fields, hostile values. */
const entryish = fc.record(
  {
    type: fc.oneof(types, jsonish),
    id: anyId,
    parentId: fc.oneof(anyId, fc.constant(null)),
    timestamp: fc.oneof(fc.constant("2026-01-01T00:00:00.000Z"), hostileStrings),
    message: fc.record(
      {
        role: roles,
        content: fc.oneof(fc.string(), jsonish),
        timestamp: fc.oneof(fc.integer(), hugeNumbers, jsonish),
      },
      { requiredKeys: [] },
    ),
    targetId: anyId,
    label: fc.oneof(fc.string(), jsonish),
    name: fc.oneof(fc.string(), jsonish),
    summary: fc.oneof(fc.string(), jsonish),
    tokensBefore: fc.oneof(fc.integer(), hugeNumbers, jsonish),
    firstKeptEntryId: anyId,
    thinkingLevel: fc.oneof(fc.constantFrom("off", "high", "max"), jsonish),
    provider: fc.string(),
    modelId: fc.string(),
    customType: fc.string(),
    data: jsonish,
  },
  { requiredKeys: [] },
);

/** A valid entry, then one field replaced or removed. */
const mutated = fc
  .tuple(
    fc.constantFrom<Record<string, unknown>>(
      { type: "message", message: { role: "user", content: "hi", timestamp: 1 } },
      { type: "model_change", provider: "p", modelId: "m" },
      { type: "thinking_level_change", thinkingLevel: "low" },
      { type: "custom", customType: "c", data: { a: 1 } },
      { type: "session_info", name: "n" },
    ),
    fc.string({ maxLength: 12 }),
    fc.option(jsonish),
  )
  .map(([entry, key, value]) => {
    const copy: Record<string, unknown> = { ...entry };
    if (value === null) delete copy[key];
    else copy[key] = value;
    return copy;
  });

const bodies = fc.oneof(
  entryish,
  mutated,
  fc.record({ entries: fc.array(fc.oneof(entryish, mutated), { maxLength: 5 }) }),
  fc.record(
    {
      targetId: fc.oneof(anyId, fc.constant(null), jsonish),
      position: fc.oneof(fc.constantFrom("at", "before"), jsonish),
    },
    { requiredKeys: [] },
  ),
  fc.record({ entryId: anyId, id: anyId, name: jsonish, position: jsonish }, { requiredKeys: [] }),
  fc.record({ idleDays: fc.oneof(fc.integer(), jsonish) }, { requiredKeys: [] }),
  fc.record(
    {
      name: jsonish,
      systemPrompt: jsonish,
      metadata: jsonish,
      autoCompact: jsonish,
      expiresAt: fc.oneof(fc.constant("2099-01-01T00:00:00.000Z"), hostileStrings, jsonish),
      summary: jsonish,
      keepRecentTokens: jsonish,
    },
    { requiredKeys: [] },
  ),
  jsonish,
);

const rawBodies = fc.oneof(
  bodies.map((b) => JSON.stringify(b) ?? "null"),
  fc.string({ maxLength: 200 }),
  fc.constantFrom("{", "[1,2", '{"type":"message"', "\uFEFF{}", "null", '"\\ud800"', "{} {}", "1e99999"),
  // Tenant streams, whole and broken.
  fc.constantFrom(
    '{"type":"export","format":"cf-tenant","version":1,"cursor":null}\n{"type":"session","format":"cf-session","version":1,"id":"fz","createdAt":"2026-01-01T00:00:00.000Z"}\n{"type":"cursor","cursor":"x"}\n{"type":"end","sessions":1}\n',
    '{"type":"session","format":"cf-session","version":1,"id":"fz2","createdAt":"2026-01-01T00:00:00.000Z"}\n{"type":"message"}\n',
    '{"type":"export","format":"cf-tenant","version":1}\n{"type":"end"}\n{"type":"session"',
    '{"type":"session","format":"cf-session","version":1,"id":"../x"}\n{"type":"error"}\n',
  ),
);

const contentTypes = fc.constantFrom(
  "application/json",
  "application/json; charset=utf-8",
  "application/vnd.api+json",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/x-ndjson",
  "",
);

const routes = [
  ["POST", "/v1/sessions"],
  ["GET", "/v1/sessions"],
  ["GET", "/v1/sessions/{sid}"],
  ["PATCH", "/v1/sessions/{sid}"],
  ["DELETE", "/v1/sessions/{rid}"],
  ["POST", "/v1/sessions/{sid}/entries"],
  ["GET", "/v1/sessions/{sid}/entries"],
  ["GET", "/v1/sessions/{sid}/entries/{eid}"],
  ["GET", "/v1/sessions/{sid}/branch"],
  ["GET", "/v1/sessions/{sid}/tree"],
  ["GET", "/v1/sessions/{sid}/context"],
  ["PUT", "/v1/sessions/{sid}/leaf"],
  ["POST", "/v1/sessions/{sid}/fork"],
  ["POST", "/v1/sessions/{sid}/compact"],
  ["POST", "/v1/sessions/{sid}/import"],
  ["GET", "/v1/sessions/{sid}/export"],
  ["POST", "/v1/sessions/import"],
  ["GET", "/v1/sessions/{sid}/search"],
  ["POST", "/v1/sessions/{sid}/restore"],
  ["GET", "/v1/search"],
  ["GET", "/v1/export"],
  ["POST", "/v1/import"],
  ["GET", "/v1/retention"],
  ["PUT", "/v1/retention"],
] as const;

const queryKeys = [
  "limit",
  "cursor",
  "order",
  "after",
  "type",
  "leafId",
  "format",
  "id",
  "q",
  "thinking",
  "existing",
  "purge",
] as const;

/** `arbitrary` once in `every` cases, else null (the well-formed default). */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, every: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: every - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary });
}

const requests = fc.record({
  route: fc.constantFrom(...routes),
  /** Three live sessions, one never created, one deleted. */
  session: fc.constantFrom(0, 1, 2, 3, 4),
  randomId: anyId,
  entryId: anyId,
  query: fc.array(
    fc.tuple(fc.constantFrom(...queryKeys), fc.oneof(hostileStrings, fc.integer().map(String))),
    { maxLength: 3 },
  ),
  body: fc.option(rawBodies, { freq: 4 }),
  contentType: contentTypes,
  ifMatch: sometimes(
    fc.oneof(
      headerValue,
      validId.map((id) => `"${id}"`),
      fc.constant("*"),
    ),
    4,
  ),
  authorization: sometimes(
    fc.oneof(
      fc.constant("Bearer"),
      fc.constant("Basic x"),
      headerValue.map((s) => `Bearer ${s}`),
    ),
    10,
  ),
});

const auth = { Authorization: `Bearer ${KEY_A}` };

/** One well-formed value for each query key any route of a session reads (purging aside). */
const validQueryValues: Record<Exclude<(typeof queryKeys)[number], "purge" | "existing">, string> = {
  limit: "5",
  cursor: "c",
  order: "updated",
  after: "0",
  type: "message",
  leafId: "x",
  format: "pi",
  id: "copy",
  q: "hello",
  thinking: "true",
};

/** What a route needs in its query to get past validation to the session, and its own values. */
const requiredQuery: Record<string, string> = { "GET /v1/sessions/{sid}/search": "q=hello" };
const routeQueryValues: Record<string, Partial<typeof validQueryValues>> = {
  "GET /v1/sessions/{sid}/search": { order: "rank" },
  // The context's formats are model APIs; the other routes' are interchange formats.
  "GET /v1/sessions/{sid}/context": { format: "anthropic" },
};

/** A well-formed body for each route of a session that takes one. */
const validBodies: Record<string, unknown> = {
  "PATCH /v1/sessions/{sid}": { name: "renamed" },
  "POST /v1/sessions/{sid}/entries": {
    type: "message",
    message: { role: "user", content: "hi", timestamp: 1 },
  },
  "PUT /v1/sessions/{sid}/leaf": { targetId: "m1" },
  "POST /v1/sessions/{sid}/fork": { entryId: "m1" },
  "POST /v1/sessions/{sid}/compact": {},
  "POST /v1/sessions/{sid}/import": { entries: [] },
};

async function call(method: string, path: string, init: RequestInit = {}) {
  return exports.default.fetch(`http://sessions.test${path}`, { method, ...init });
}

async function json(method: string, path: string, body?: unknown) {
  const res = await call(method, path, {
    headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/**
 * The invariants every session keeps, whatever it was sent; `exists` says whether the run left it
 * there (a session a request deleted must be gone, and only such a one). A session there exports,
 * and its export imports again as the same context.
 */
async function expectValidSession(id: string, exists: boolean) {
  const info = await json("GET", `/v1/sessions/${id}`);
  if (!exists) {
    expect(info.status, `${id} should not exist`).toBe(404);
    return;
  }
  expect(info.status, `${id} should exist`).toBe(200);
  const entries: Array<{
    seq: number;
    id: string;
    parentId: string | null;
    type: string;
    targetId?: string | null;
  }> = [];
  let cursor: string | null = null;
  do {
    const page: { body: { entries: typeof entries; nextCursor: string | null } } = await json(
      "GET",
      `/v1/sessions/${id}/entries?limit=1000${cursor ? `&after=${cursor}` : ""}`,
    );
    entries.push(...page.body.entries);
    cursor = page.body.nextCursor;
  } while (cursor);
  const byId = new Map(entries.map((e) => [e.id, e]));
  expect(byId.size).toBe(entries.length);
  entries.forEach((entry, i) => {
    if (i > 0) expect(entry.seq).toBeGreaterThan((entries[i - 1] as { seq: number }).seq);
    if (entry.type === "leaf") expect(entry.parentId).toBeNull();
    else if (entry.parentId !== null) {
      const parent = byId.get(entry.parentId);
      expect(parent && parent.type !== "leaf" && parent.seq < entry.seq).toBe(true);
    }
  });
  expect(info.body.entryCount).toBe(entries.filter((e) => e.type !== "leaf").length);
  if (info.body.leafId !== null) expect(byId.get(info.body.leafId)?.type).not.toBe("leaf");
  const context = await json("GET", `/v1/sessions/${id}/context`);
  expect(context.status).toBe(200);
  expect((await json("GET", `/v1/sessions/${id}/tree`)).status).toBe(200);
  expect((await json("GET", `/v1/sessions/${id}/branch`)).status).toBe(200);
  // Whatever the service accepted, its export imports again.
  const exported = await call("GET", `/v1/sessions/${id}/export`, { headers: auth });
  expect(exported.status).toBe(200);
  const copy = sid("copy");
  const imported = await call("POST", `/v1/sessions/import?id=${copy}`, {
    headers: { ...auth, "Content-Type": "application/x-ndjson" },
    body: await exported.text(),
  });
  expect(imported.status, await imported.clone().text()).toBe(201);
  const copied = await json("GET", `/v1/sessions/${copy}/context`);
  expect({ ...copied.body, version: undefined }).toEqual({ ...context.body, version: undefined });
}

describe("hostile input", () => {
  it("never answers 500 or a stack, and leaves every session a valid tree", async () => {
    const sessions = [sid("fuzz"), sid("fuzz"), sid("fuzz"), sid("never"), sid("gone")];
    for (const id of [sessions[0], sessions[1], sessions[2], sessions[4]] as string[]) {
      expect((await json("POST", "/v1/sessions", { id })).status).toBe(201);
      await json("POST", `/v1/sessions/${id}/entries`, {
        entries: [
          { type: "message", id: "m1", message: { role: "user", content: "hello", timestamp: 1 } },
          { type: "label", targetId: "m1", label: "start" },
        ],
      });
    }
    expect((await call("DELETE", `/v1/sessions/${sessions[4]}`, { headers: auth })).status).toBe(204);
    // Whether each session is there, as the requests that succeeded left it.
    const exists = new Map(sessions.map((id, index) => [id, index < 3]));
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requests, async (r) => {
        const method = r.route[0];
        const template: string = r.route[1];
        const path = template
          .replace("{sid}", encodeURIComponent(sessions[r.session] as string))
          .replace("{rid}", encodeURIComponent(r.randomId))
          .replace("{eid}", encodeURIComponent(r.entryId));
        const query = new URLSearchParams(r.query).toString();
        const headers: Record<string, string> = { Authorization: r.authorization ?? `Bearer ${KEY_A}` };
        if (r.contentType) headers["Content-Type"] = r.contentType;
        if (r.ifMatch !== null) headers["If-Match"] = r.ifMatch;
        const res = await call(method, `${path}${query ? `?${query}` : ""}`, {
          headers,
          body: method === "GET" || r.body === null ? undefined : r.body,
        });
        const text = await res.text();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const target = sessions.find((id) => path.startsWith(`/v1/sessions/${encodeURIComponent(id)}`));
        if (target && res.status < 300) {
          if (method === "DELETE" && path === `/v1/sessions/${encodeURIComponent(target)}`)
            exists.set(target, false);
          if (method === "POST" && path.endsWith("/restore")) exists.set(target, true);
        }
        expect(res.status, `${method} ${path}?${query} -> ${text.slice(0, 300)}`).toBeLessThan(500);
        expect(text).not.toMatch(/\n\s+at /);
        if (res.status >= 400) {
          const body = JSON.parse(text) as { error: { code: string; message: string } };
          expect(typeof body.error.code).toBe("string");
          expect(typeof body.error.message).toBe("string");
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
    for (const id of sessions) await expectValidSession(id, exists.get(id) as boolean);
    // The run exercised both sides: some requests were accepted, most refused.
    expect([...statuses.keys()].some((s) => s < 300)).toBe(true);
    expect([...statuses.keys()].some((s) => s >= 400)).toBe(true);
  });

  it("answers 404 for a never-created and a deleted session on every route, with every query", async () => {
    const deleted = sid("gone");
    expect((await json("POST", "/v1/sessions", { id: deleted })).status).toBe(201);
    await json("POST", `/v1/sessions/${deleted}/entries`, {
      type: "message",
      id: "m1",
      message: { role: "user", content: "hello", timestamp: 1 },
    });
    expect((await call("DELETE", `/v1/sessions/${deleted}`, { headers: auth })).status).toBe(204);
    const answers: string[] = [];
    // Restore is the one route meant for a deleted session (http-recovery.test.ts).
    const sessionRoutes = routes.filter(([, path]) => /\{[sr]id\}/.test(path) && !path.endsWith("/restore"));
    for (const id of [sid("never"), deleted]) {
      for (const [method, template] of sessionRoutes) {
        const path = template.replace(/\{[sr]id\}/, id).replace("{eid}", "m1");
        const body = validBodies[`${method} ${template}`];
        const values = { ...validQueryValues, ...routeQueryValues[`${method} ${template}`] };
        const queries: Array<[string, string] | undefined> = [undefined, ...Object.entries(values)];
        for (const given of queries) {
          const params = new URLSearchParams(requiredQuery[`${method} ${template}`] ?? "");
          if (given) params.set(...given);
          const query = params.size > 0 ? `?${params}` : "";
          const res = await call(method, `${path}${query}`, {
            headers: { ...auth, "Content-Type": "application/json" },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          const text = await res.text();
          answers.push(`${method} ${template}${query} -> ${res.status} ${text.slice(0, 120)}`);
          expect(res.status, answers.at(-1)).toBe(404);
          expect((JSON.parse(text) as { error: { code: string } }).error.code).toBe("not_found");
        }
      }
    }
    expect(answers.length).toBe(2 * 15 * (Object.keys(validQueryValues).length + 1));
    const never = await call("POST", `/v1/sessions/${sid("never")}/restore`, {
      headers: { ...auth, "Content-Type": "application/json" },
    });
    expect(never.status).toBe(404);
  });

  it("keeps prototype keys as data without polluting anything", async () => {
    const id = sid("proto");
    await json("POST", "/v1/sessions", { id });
    const raw =
      '{"type":"custom","customType":"x","data":{"__proto__":{"polluted":true},"constructor":{"prototype":{"p":1}}}}';
    const res = await call("POST", `/v1/sessions/${id}/entries`, {
      headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/json" },
      body: raw,
    });
    expect(res.status).toBe(201);
    const stored = (await res.json()) as { entries: Array<{ data: unknown }> };
    expect(JSON.stringify(stored.entries[0]?.data)).toBe(
      '{"__proto__":{"polluted":true},"constructor":{"prototype":{"p":1}}}',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await expectValidSession(id, true);
  });
});
