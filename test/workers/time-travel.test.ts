import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import { api, createSession, expectError, info, sid, userMessage } from "./helpers";

/*
 * `asOf`: the context, a fork and the head as the session's leaf stood at a time, read from the
 * leaf history every write records. Each write here is followed by a pause, so that the times
 * taken between writes fall strictly between them.
 */

const pause = () => new Promise((resolve) => setTimeout(resolve, 5));

/** The time now, after a pause, so that it falls after the last write and before the next. */
async function now(): Promise<string> {
  await pause();
  const time = new Date().toISOString();
  await pause();
  return time;
}

async function append(id: string, text: string, parentId?: string): Promise<string> {
  const res = await api("POST", `/v1/sessions/${id}/entries`, {
    body: { ...userMessage(text), ...(parentId ? { parentId } : {}) },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.entries[0].id;
}

const texts = (context: { messages: Array<{ content: unknown }> }) => context.messages.map((m) => m.content);

/** A session written at known times: a, b, the leaf back to a, then c beside b. */
async function history() {
  const id = await createSession();
  const times: Record<string, string> = { created: await now() };
  const a = await append(id, "a");
  times.a = await now();
  const b = await append(id, "b");
  times.b = await now();
  expect((await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: a } })).status).toBe(200);
  times.back = await now();
  const c = await append(id, "c");
  times.c = await now();
  return { id, times, a, b, c };
}

describe("asOf", () => {
  it("gives the context as the leaf stood then, byte for byte that of the leaf it stood at", async () => {
    const { id, times, a, b, c } = await history();
    const expected: Array<[string, string | null, string[]]> = [
      [times.created as string, null, []],
      [times.a as string, a, ["a"]],
      [times.b as string, b, ["a", "b"]],
      [times.back as string, a, ["a"]],
      [times.c as string, c, ["a", "c"]],
    ];
    for (const [asOf, leafId, messages] of expected) {
      const res = await api("GET", `/v1/sessions/${id}/context?asOf=${encodeURIComponent(asOf)}`);
      expect(res.status, res.text).toBe(200);
      expect(texts(res.body)).toEqual(messages);
      const byLeaf = await api("GET", `/v1/sessions/${id}/context?leafId=${leafId ?? ""}`);
      if (leafId !== null) expect(res.text).toBe(byLeaf.text);
      const leaf = await api("GET", `/v1/sessions/${id}/leaf?asOf=${encodeURIComponent(asOf)}`);
      expect(leaf.body.leafId).toBe(leafId);
    }
    // In another model API's shape too.
    const anthropic = await api(
      "GET",
      `/v1/sessions/${id}/context?asOf=${encodeURIComponent(times.b as string)}&format=anthropic&model=anthropic/claude-sonnet-4`,
    );
    expect(anthropic.status, anthropic.text).toBe(200);
    // Two user turns in a row are one Messages API turn.
    expect(anthropic.body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      },
    ]);
  });

  it("tells where the head is now and how far back the history goes", async () => {
    const { id, c } = await history();
    const res = await api("GET", `/v1/sessions/${id}/leaf`);
    expect(res.status).toBe(200);
    expect(res.body.leafId).toBe(c);
    expect(res.headers.get("ETag")).toBe(`"${c}"`);
    const { createdAt } = await info(id);
    expect(Date.parse(res.body.historyStartsAt)).toBeGreaterThanOrEqual(Date.parse(createdAt as string));
    expect(Date.parse(res.body.historyStartsAt) - Date.parse(createdAt as string)).toBeLessThan(1000);
  });

  it("moves the head back to where it stood, deleting nothing, and the move is history too", async () => {
    const { id, times, b, c } = await history();
    const before = await info(id);
    const moved = await api("PUT", `/v1/sessions/${id}/leaf`, { body: { asOf: times.b } });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.leafId).toBe(b);
    const after = await info(id);
    expect(after.leafId).toBe(b);
    expect(after.entryCount).toBe(before.entryCount);
    const tree = await api("GET", `/v1/sessions/${id}/tree`);
    expect(JSON.stringify(tree.body)).toContain(c);
    const movedAt = await now();
    expect((await api("GET", `/v1/sessions/${id}/leaf?asOf=${times.c}`)).body.leafId).toBe(c);
    expect((await api("GET", `/v1/sessions/${id}/leaf?asOf=${movedAt}`)).body.leafId).toBe(b);
    // With If-Match, as any move of the head.
    const stale = await api("PUT", `/v1/sessions/${id}/leaf`, {
      body: { asOf: times.c },
      headers: { "If-Match": `"${c}"` },
    });
    expectError(stale, 412, "leaf_conflict");
    expect((await info(id)).leafId).toBe(b);
  });

  it("forks at the leaf as it stood then", async () => {
    const { id, times, a, b } = await history();
    const copy = sid();
    const forked = await api("POST", `/v1/sessions/${id}/fork`, { body: { asOf: times.b, id: copy } });
    expect(forked.status, forked.text).toBe(201);
    expect(forked.body.leafId).toBe(b);
    expect(forked.body.parentSession).toEqual({ id, entryId: b });
    const context = await api("GET", `/v1/sessions/${copy}/context`);
    expect(texts(context.body)).toEqual(["a", "b"]);
    // The fork's own history starts when it was made: before, it did not exist.
    const early = await api("GET", `/v1/sessions/${copy}/context?asOf=${times.a}`);
    expectError(early, 404, "not_found");
    expect((await api("GET", `/v1/sessions/${copy}/leaf`)).body.leafId).toBe(b);
    expect((await info(id)).leafId).not.toBe(a);
  });

  it("refuses a time before the session, to come or malformed, and a second way of naming the leaf, changing nothing", async () => {
    const early = new Date(Date.now() - 60_000).toISOString();
    const { id, times, a, c } = await history();
    const before = await info(id);

    const old = await api("GET", `/v1/sessions/${id}/context?asOf=${early}`);
    expectError(old, 404, "not_found");
    expect(old.body.error.details.asOf).toBe(early);
    expect(Date.parse(old.body.error.details.historyStartsAt)).toBeGreaterThan(Date.parse(early));
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expectError(await api("GET", `/v1/sessions/${id}/context?asOf=${future}`), 400, "invalid_request");
    for (const bad of ["yesterday", "2026-13-01T00:00:00Z", "1700000000000", ""]) {
      const res = await api("GET", `/v1/sessions/${id}/context?asOf=${encodeURIComponent(bad)}`);
      expectError(res, 400, "invalid_request");
      expect(res.text).toContain("asOf");
    }
    expectError(
      await api("GET", `/v1/sessions/${id}/context?asOf=${times.a}&leafId=${a}`),
      400,
      "invalid_request",
    );

    expectError(await api("PUT", `/v1/sessions/${id}/leaf`, { body: { asOf: early } }), 404, "not_found");
    expectError(
      await api("PUT", `/v1/sessions/${id}/leaf`, { body: { asOf: future } }),
      400,
      "invalid_request",
    );
    expectError(
      await api("PUT", `/v1/sessions/${id}/leaf`, { body: { asOf: times.a, targetId: a } }),
      400,
      "invalid_request",
    );
    expectError(await api("PUT", `/v1/sessions/${id}/leaf`, { body: {} }), 400, "invalid_request");
    expectError(
      await api("PUT", `/v1/sessions/${id}/leaf`, { body: { asOf: "soon" } }),
      400,
      "invalid_request",
    );

    const forks = [sid(), sid(), sid(), sid()];
    expectError(
      await api("POST", `/v1/sessions/${id}/fork`, { body: { asOf: early, id: forks[0] } }),
      404,
      "not_found",
    );
    expectError(
      await api("POST", `/v1/sessions/${id}/fork`, { body: { asOf: times.a, entryId: a, id: forks[1] } }),
      400,
      "invalid_request",
    );
    // Right after it was created the session held nothing: there is nothing to fork.
    const empty = await api("POST", `/v1/sessions/${id}/fork`, {
      body: { asOf: times.created, id: forks[2] },
    });
    expectError(empty, 400, "invalid_request");
    expectError(
      await api("POST", `/v1/sessions/${id}/fork`, { body: { id: forks[3] } }),
      400,
      "invalid_request",
    );
    for (const fork of forks) expectError(await api("GET", `/v1/sessions/${fork}`), 404, "not_found");

    const after = await info(id);
    expect(after).toEqual(before);
    expect(after.leafId).toBe(c);
  });

  it("starts the history of a session stored before it was kept at its last write then", async () => {
    const id = await createSession();
    const a = await append(id, "a");
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    // As the session was before the table existed (schema version 3): no history, and none of what
    // the versions after it added either.
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("DROP TABLE leaf_history");
      state.storage.sql.exec("DROP TABLE session_blobs");
      state.storage.sql.exec("ALTER TABLE entries DROP COLUMN blob_bytes");
      for (const column of ["path_bytes", "path_blob_bytes", "path_messages", "path_preview"])
        state.storage.sql.exec(`ALTER TABLE entries DROP COLUMN ${column}`);
      state.storage.sql.exec("DROP TABLE fork_holds");
      state.storage.sql.exec("DROP TABLE fork_copy");
      state.storage.sql.exec("DROP INDEX entries_holding_messages");
      state.storage.sql.exec("DROP INDEX entries_by_edit_target");
      state.storage.sql.exec("ALTER TABLE entries DROP COLUMN messages_held");
      state.storage.sql.exec("ALTER TABLE entries DROP COLUMN edit_target");
      state.storage.sql.exec("DELETE FROM schema_version WHERE version > 3");
    });
    await evictDurableObject(stub);
    const { updatedAt } = await info(id);
    const res = await api("GET", `/v1/sessions/${id}/leaf`);
    expect(res.body.historyStartsAt).toBe(updatedAt);
    expect((await api("GET", `/v1/sessions/${id}/leaf?asOf=${updatedAt}`)).body.leafId).toBe(a);
    const before = new Date(Date.parse(updatedAt as string) - 1).toISOString();
    expectError(await api("GET", `/v1/sessions/${id}/leaf?asOf=${before}`), 404, "not_found");
    const b = await append(id, "b");
    expect((await api("GET", `/v1/sessions/${id}/leaf?asOf=${await now()}`)).body.leafId).toBe(b);
  });
});
