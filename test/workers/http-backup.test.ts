import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newSessionHeader } from "../../src/core/header";
import type { DurableEnv } from "../../src/durable/internal";
import { DurableRepo, sessionObjectName } from "../../src/durable/internal";
import {
  api,
  assistantMessage,
  createSession,
  expectError,
  KEY_A,
  KEY_A_READ,
  KEY_B,
  sid,
  userMessage,
} from "./helpers";

/*
 * A whole tenant out as one stream (GET /v1/export) and back in (POST /v1/import): every session
 * comes back byte for byte, a cut stream resumes from its last cursor, and each session of an
 * import succeeds or fails on its own.
 */

const NDJSON = { "Content-Type": "application/x-ndjson" };

type Line = Record<string, unknown> & { type: string };

function lines(text: string): Line[] {
  return text
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Line);
}

async function exportTenant(key = KEY_A, cursor?: string) {
  const res = await api("GET", `/v1/export${cursor ? `?cursor=${cursor}` : ""}`, { key });
  expect(res.status, res.text).toBe(200);
  expect(res.headers.get("Content-Type")).toMatch(/^application\/x-ndjson/);
  return res.text;
}

async function importTenant(text: string, key = KEY_B, query = "") {
  return api("POST", `/v1/import${query}`, { key, raw: text, headers: NDJSON });
}

/** Ids of the sessions a stream holds, in order. */
const sessionIds = (text: string) =>
  lines(text)
    .filter((l) => l.type === "session")
    .map((l) => l.id as string);

async function fill(id: string, key: string, words: string) {
  const res = await api("POST", `/v1/sessions/${id}/entries`, {
    key,
    body: {
      entries: [
        { id: "q", ...userMessage(`tell me about ${words}`) },
        { id: "a1", ...assistantMessage(`${words} are interesting`, "hmm") },
        { id: "a2", parentId: "q", ...assistantMessage(`${words}, briefly`) },
        { type: "label", targetId: "a1", label: "long" },
      ],
    },
  });
  expect(res.status).toBe(201);
}

/** A context's JSON without its version, which names the life of the session it came from. */
const withoutVersion = (context: string) => context.replace(/"version":"[^"]*",?/, "");

/** Sessions exported and contexts built by both tenants, as bytes (a context's version aside). */
async function expectSameSessions(ids: readonly string[], from = KEY_A, to = KEY_B) {
  for (const id of ids) {
    for (const path of [
      `/v1/sessions/${id}/export`,
      `/v1/sessions/${id}/context`,
      `/v1/sessions/${id}/tree`,
    ]) {
      const [a, b] = await Promise.all([api("GET", path, { key: from }), api("GET", path, { key: to })]);
      expect(a.status, path).toBe(200);
      expect(b.status, path).toBe(200);
      expect(withoutVersion(b.text), path).toBe(withoutVersion(a.text));
    }
  }
}

describe("tenant export", () => {
  it("streams every session, newest first by creation, each closed by a cursor, then an end line", async () => {
    const ids: string[] = [];
    for (const words of ["otters", "herons", "voles"]) {
      const id = await createSession({ body: { name: words, metadata: { words } } });
      await fill(id, KEY_A, words);
      ids.push(id);
    }
    const gone = await createSession();
    await fill(gone, KEY_A, "ghosts");
    expect((await api("DELETE", `/v1/sessions/${gone}`)).status).toBe(204);
    const theirs = await createSession({ key: KEY_B });

    const text = await exportTenant();
    const all = lines(text);
    expect(all[0]).toEqual({ type: "export", format: "cf-tenant", version: 1, cursor: null });
    expect(all.at(-1)).toEqual({ type: "end", sessions: ids.length });
    const exportedIds = sessionIds(text);
    // Other tests' sessions of tenant A may be there too; these three are, newest first.
    expect(exportedIds.filter((id) => ids.includes(id))).toEqual([...ids].reverse());
    expect(exportedIds).not.toContain(gone);
    expect(exportedIds).not.toContain(theirs);
    // Each session is its native export, then its cursor.
    for (const id of ids) {
      const native = (await api("GET", `/v1/sessions/${id}/export`)).text;
      const start = text.indexOf(native);
      expect(start).toBeGreaterThan(0);
      const after = lines(text.slice(start + native.length))[0];
      expect(after?.type).toBe("cursor");
    }
  });

  it("resumes after the last cursor of a cut stream, and refuses a cursor it did not make", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = await createSession({ body: { name: `resume ${i}` } });
      await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage(`message ${i}`) });
      ids.push(id);
    }
    const whole = await exportTenant();
    const order = sessionIds(whole);
    const cursors = lines(whole)
      .filter((l) => l.type === "cursor")
      .map((l) => l.cursor as string);
    expect(cursors).toHaveLength(order.length);
    // Cut after the second session: resuming gives exactly the rest.
    const rest = await exportTenant(KEY_A, cursors[1]);
    expect(lines(rest)[0]).toMatchObject({ type: "export", cursor: cursors[1] });
    expect(sessionIds(rest)).toEqual(order.slice(2));
    expect(lines(rest).at(-1)).toEqual({ type: "end", sessions: order.length - 2 });
    expectError(await api("GET", "/v1/export?cursor=not-a-cursor"), 400, "invalid_request");
    // A cursor of the listing by update would resume the export at the wrong place.
    const listed = await api("GET", "/v1/sessions?limit=1&order=updated");
    expect(listed.body.nextCursor).toEqual(expect.any(String));
    expectError(await api("GET", `/v1/export?cursor=${listed.body.nextCursor}`), 400, "invalid_request");
    // An export's session cursor is one of the listing by creation, and pages it.
    const byCreation = await api("GET", `/v1/sessions?limit=1&order=created&cursor=${cursors[1]}`);
    expect(byCreation.body.sessions.map((s: { id: string }) => s.id)).toEqual([order[2]]);
    expectError(
      await api("GET", `/v1/sessions?limit=1&order=updated&cursor=${cursors[1]}`),
      400,
      "invalid_request",
    );
  });

  it("is allowed to read-only keys; importing is not, and writes nothing", async () => {
    const id = await createSession();
    await fill(id, KEY_A, "moles");
    const text = await exportTenant(KEY_A_READ);
    expect(sessionIds(text)).toContain(id);
    const refused = await importTenant(text, KEY_A_READ);
    expectError(refused, 403, "forbidden");
    const copy = text.replaceAll(id, sid("never-written"));
    expectError(await importTenant(copy, KEY_A_READ), 403, "forbidden");
    const neverWritten = lines(copy).find((l) => l.type === "session")?.id as string;
    expectError(await api("GET", `/v1/sessions/${neverWritten}`), 404, "not_found");
  });
});

describe("tenant import", () => {
  it("restores another tenant's export session for session, byte-equal, and reports each", async () => {
    const ids: string[] = [];
    for (const words of ["badgers", "stoats"]) {
      const id = await createSession({ body: { name: words } });
      await fill(id, KEY_A, words);
      ids.push(id);
    }
    const text = await exportTenant();
    const res = await importTenant(text);
    expect(res.status, res.text).toBe(200);
    const exported = sessionIds(text);
    expect(res.body.sessions.map((s: { id: string }) => s.id)).toEqual(exported);
    for (const id of ids) {
      expect(res.body.sessions.find((s: { id: string }) => s.id === id)).toEqual({
        id,
        status: "imported",
        entries: 4,
      });
    }
    expect(res.body).toMatchObject({ imported: exported.length, skipped: 0, refused: 0, failed: 0 });
    await expectSameSessions(ids);
    // Listed, and searchable in the new tenant.
    const listed = await api("GET", "/v1/sessions?limit=200", { key: KEY_B });
    expect(listed.body.sessions.map((s: { id: string }) => s.id)).toEqual(expect.arrayContaining(ids));
    const found = await api("GET", `/v1/sessions/${ids[0]}/search?q=badgers`, { key: KEY_B });
    expect(found.body.hits.length).toBeGreaterThan(0);

    // Again: what exists is skipped, or refused when asked to.
    const again = await importTenant(text);
    expect(again.body).toMatchObject({ imported: 0, skipped: exported.length });
    const refused = await importTenant(text, KEY_B, "?existing=refuse");
    expect(refused.body).toMatchObject({ imported: 0, refused: exported.length });
    expect(refused.body.sessions[0].error).toMatchObject({ code: "already_exists" });
    expectError(await importTenant(text, KEY_B, "?existing=overwrite"), 400, "invalid_request");
  });

  it("restores a session whose expiry passed without it, and one whose expiry is ahead with it", async () => {
    const [passed, ahead] = [sid("passed"), sid("ahead")];
    const later = new Date(Date.now() + 3600_000).toISOString();
    const session = (id: string, expiresAt: string) =>
      [
        JSON.stringify({
          type: "session",
          format: "cf-session",
          version: 1,
          id,
          createdAt: "2026-01-01T00:00:00.000Z",
          expiresAt,
        }),
        JSON.stringify({
          type: "message",
          id: "m1",
          parentId: null,
          timestamp: "2026-01-01T00:00:01.000Z",
          message: { role: "user", content: "kept", timestamp: 1 },
        }),
      ].join("\n");
    const stream = `${session(passed, "2026-01-02T00:00:00.000Z")}\n${session(ahead, later)}\n`;
    const res = await importTenant(stream);
    expect(res.body.sessions).toEqual([
      { id: passed, status: "imported", entries: 1 },
      { id: ahead, status: "imported", entries: 1 },
    ]);
    // Its alarm run, the session whose expiry passed is there, without one; the other keeps its.
    for (const id of [passed, ahead]) {
      const object = env.SESSIONS.getByName(sessionObjectName("tenant-b", id));
      await runDurableObjectAlarm(object);
    }
    const restored = await api("GET", `/v1/sessions/${passed}`, { key: KEY_B });
    expect(restored.status).toBe(200);
    expect(restored.body).not.toHaveProperty("expiresAt");
    expect((await api("GET", `/v1/sessions/${ahead}`, { key: KEY_B })).body.expiresAt).toBe(later);
  });

  it("imports native exports one after another, each session failing on its own", async () => {
    const good = sid("good");
    const bad = sid("bad");
    const late = sid("late");
    const header = (id: string) =>
      JSON.stringify({
        type: "session",
        format: "cf-session",
        version: 1,
        id,
        createdAt: "2026-01-01T00:00:00.000Z",
      });
    const entry = (id: string, parentId: string | null, text: string) =>
      JSON.stringify({
        type: "message",
        id,
        parentId,
        timestamp: "2026-01-01T00:00:01.000Z",
        message: { role: "user", content: text, timestamp: 1 },
      });
    const stream = [
      header(good),
      entry("m1", null, "one"),
      entry("m2", "m1", "two"),
      header(bad),
      entry("m1", null, "one"),
      entry("m3", "missing", "orphan"),
      entry("m4", "m3", "after the orphan"),
      header(late),
      entry("m1", null, "late one"),
      "{not json",
      header(sid("fine")),
      entry("x", null, "fine"),
      '{"type":"session","format":"cf-session","version":1,"id":"../etc"}',
      entry("y", null, "belongs to the refused header"),
    ].join("\n");
    const res = await importTenant(stream);
    expect(res.status, res.text).toBe(200);
    const statuses = res.body.sessions.map((s: { id: string | null; status: string }) => [s.id, s.status]);
    expect(statuses.slice(0, 3)).toEqual([
      [good, "imported"],
      [bad, "failed"],
      [late, "failed"],
    ]);
    expect(statuses[3][1]).toBe("imported");
    expect(statuses[4]).toEqual([null, "failed"]);
    expect(res.body.sessions[1].error).toMatchObject({ code: "parent_not_found", line: 6 });
    expect(res.body.sessions[2].error).toMatchObject({ code: "invalid_request", line: 10 });
    expect(res.body.sessions[4].error).toMatchObject({ line: 13 });
    expect(res.body).toMatchObject({ imported: 2, failed: 3 });
    expect((await api("GET", `/v1/sessions/${good}`, { key: KEY_B })).body.entryCount).toBe(2);
    // A failed session leaves nothing behind.
    for (const id of [bad, late])
      expectError(await api("GET", `/v1/sessions/${id}`, { key: KEY_B }), 404, "not_found");
  });

  it("fails a session of a tenant import whose line holds a number too large to store, and imports the rest", async () => {
    const [big, fine] = [sid("big-number"), sid("next")];
    const header = (id: string) =>
      JSON.stringify({
        type: "session",
        format: "cf-session",
        version: 1,
        id,
        createdAt: "2026-01-01T00:00:00.000Z",
      });
    const custom = (id: string, data: string) =>
      `{"type":"custom","id":"${id}","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","customType":"x","data":${data}}`;
    const res = await importTenant(
      [header(big), custom("c1", '{"v":1e400}'), header(fine), custom("c1", "1")].join("\n"),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.sessions).toEqual([
      {
        id: big,
        status: "failed",
        error: { code: "invalid_request", message: "line 2: holds a number too large to store", line: 2 },
      },
      { id: fine, status: "imported", entries: 1 },
    ]);
    expectError(await api("GET", `/v1/sessions/${big}`, { key: KEY_B }), 404, "not_found");
    expect((await api("GET", `/v1/sessions/${fine}`, { key: KEY_B })).body.entryCount).toBe(1);
  });

  it("drops a session the exporter could not finish, and writes again one an import left incomplete", async () => {
    const cut = sid("cut");
    const incomplete = sid("incomplete");
    // An earlier import stopped inside this session: its id is taken, but it was never listed.
    const repo = new DurableRepo(env as unknown as DurableEnv, "tenant-b");
    const left = await repo.initialize(newSessionHeader({ id: incomplete }), false);
    await left.appendEntries([
      { type: "message", message: { role: "user", content: "partial", timestamp: 1 } },
    ]);
    const header = (id: string) =>
      JSON.stringify({
        type: "session",
        format: "cf-session",
        version: 1,
        id,
        createdAt: "2026-01-01T00:00:00.000Z",
      });
    const entry = (id: string) =>
      JSON.stringify({
        type: "message",
        id,
        parentId: null,
        timestamp: "2026-01-01T00:00:01.000Z",
        message: { role: "user", content: id, timestamp: 1 },
      });
    const stream = [
      JSON.stringify({ type: "export", format: "cf-tenant", version: 1, cursor: null }),
      header(cut),
      entry("a"),
      JSON.stringify({ type: "error", id: cut, error: { code: "internal", message: "read failed" } }),
      header(incomplete),
      entry("whole-1"),
      entry("whole-2"),
      JSON.stringify({ type: "cursor", cursor: "x" }),
      JSON.stringify({ type: "end", sessions: 1 }),
    ].join("\n");
    const res = await importTenant(stream);
    expect(res.body.sessions).toEqual([
      { id: cut, status: "failed", error: expect.objectContaining({ line: 4 }) },
      { id: incomplete, status: "imported", entries: 2 },
    ]);
    expectError(await api("GET", `/v1/sessions/${cut}`, { key: KEY_B }), 404, "not_found");
    const entries = await api("GET", `/v1/sessions/${incomplete}/entries`, { key: KEY_B });
    expect(entries.body.entries.map((e: { id: string }) => e.id)).toEqual(["whole-1", "whole-2"]);
  });

  it("reports an end line that counts other sessions, and imports (and reports) what follows an end line", async () => {
    const first = await createSession({ key: KEY_A });
    await fill(first, KEY_A, "otters");
    const text = await exportTenant();
    const all = sessionIds(text).length;
    const clean = await importTenant(text, KEY_B, "?existing=skip");
    expect(clean.body.warnings).toEqual([]);

    // The end line of a stream that lost a session on the way.
    const cut = lines(text);
    const endAt = cut.findIndex((line) => line.type === "end");
    const miscounted = text.replace(/{"type":"end","sessions":\d+}/, `{"type":"end","sessions":${all + 1}}`);
    const counted = await importTenant(miscounted);
    expect(counted.status).toBe(200);
    expect(counted.body.warnings).toEqual([
      {
        line: endAt + 1,
        message: `the end line counts ${all + 1} sessions; the stream holds ${all} complete ones`,
      },
    ]);

    // A session after the end line is not dropped without a word.
    const late = sid();
    const after = `${text}{"type":"session","format":"cf-session","version":1,"id":"${late}","createdAt":"2026-01-01T00:00:00.000Z","metadata":{}}\n{"type":"message","id":"m","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"late","timestamp":1}}\n`;
    const res = await importTenant(after);
    expect(res.body.sessions.at(-1)).toEqual({ id: late, status: "imported", entries: 1 });
    expect(res.body.warnings).toEqual([
      {
        line: endAt + 2,
        message: `the stream goes on after its end line (line ${endAt + 1}): what follows is imported as it is`,
      },
    ]);
    // Two whole streams one after the other are two streams, not a warning.
    const twice = await importTenant(`${text}${text}`, KEY_B, "?existing=skip");
    expect(twice.body.warnings).toEqual([]);
  });

  it("names the line of a byte that is not UTF-8, in a tenant import and a session import", async () => {
    const header = `{"type":"session","format":"cf-session","version":1,"id":"${sid()}","createdAt":"2026-01-01T00:00:00.000Z","metadata":{}}\n`;
    const entry = `{"type":"message","id":"m","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"ok","timestamp":1}}\n`;
    const bytes = new Uint8Array([...new TextEncoder().encode(header + entry), 0x7b, 0xff, 0x7d, 0x0a]);
    for (const path of ["/v1/import", "/v1/sessions/import"]) {
      const res = await api("POST", path, { key: KEY_B, raw: bytes, headers: NDJSON });
      expectError(res, 400, "invalid_request");
      expect(res.body.error.message).toBe("line 3: not valid UTF-8");
    }
  });

  it("refuses what is not a stream of sessions, and other media types", async () => {
    expectError(await importTenant('{"type":"message"}\n'), 400, "invalid_request");
    expectError(await importTenant("not json\n"), 400, "invalid_request");
    expectError(
      await importTenant('{"type":"export","format":"cf-tenant","version":2}\n'),
      400,
      "invalid_request",
    );
    const json = await api("POST", "/v1/import", { key: KEY_B, body: { sessions: [] } });
    expectError(json, 415, "unsupported_format");
    const invalidUtf8 = await api("POST", "/v1/import", {
      key: KEY_B,
      raw: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d, 0x0a]),
      headers: NDJSON,
    });
    expectError(invalidUtf8, 400, "invalid_request");
    expect((await importTenant("")).body).toMatchObject({ imported: 0, sessions: [] });
  });

  it("keeps tenants apart: an import writes to the caller's tenant, an export reads only it", async () => {
    const id = await createSession({ key: KEY_B });
    await fill(id, KEY_B, "secrets");
    const onlyA = await createSession({ key: KEY_A });
    const res = await importTenant(await exportTenant(KEY_B), KEY_A);
    expect(res.status).toBe(200);
    // Tenant A holds a copy of its own: writing to it leaves tenant B's session as it was.
    expect(
      (await api("POST", `/v1/sessions/${id}/entries`, { key: KEY_A, body: userMessage("mine") })).status,
    ).toBe(201);
    expect((await api("GET", `/v1/sessions/${id}`, { key: KEY_B })).body.entryCount).toBe(4);
    expect((await api("GET", `/v1/sessions/${id}`, { key: KEY_A })).body.entryCount).toBe(5);
    expect(sessionIds(await exportTenant(KEY_B))).not.toContain(onlyA);
  });
});
