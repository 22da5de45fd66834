import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, createSession, expectError, info, KEY_A, KEY_B, sid, userMessage } from "./helpers";

async function importFile(body: string, query = "", key = KEY_A) {
  const res = await exports.default.fetch(`http://sessions.test/v1/sessions/import${query}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/x-ndjson" },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe("export and import", () => {
  it("exports native NDJSON that imports to the same session", async () => {
    const id = await createSession({ body: { name: "orig", systemPrompt: "sys", metadata: { k: 1 } } });
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        entries: [
          { ...userMessage("q"), id: "q" },
          { ...userMessage("a"), id: "a" },
        ],
      },
    });
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { ...userMessage("b"), id: "b", parentId: "q" },
    });
    await api("POST", `/v1/sessions/${id}/entries`, { body: { type: "label", targetId: "a", label: "L" } });
    await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "a" } });

    const exported = await api("GET", `/v1/sessions/${id}/export`);
    expect(exported.status).toBe(200);
    expect(exported.headers.get("Content-Type")).toContain("application/x-ndjson");
    const lines = exported.text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: "session", format: "cf-session", version: 1, id, name: "orig" });
    expect(lines.filter((l) => l.type === "leaf").length).toBe(1);

    const copyId = sid("copy");
    const imported = await importFile(exported.text, `?id=${copyId}`);
    expect(imported.status).toBe(201);
    const [original, copy] = [await info(id), await info(copyId)];
    // The same but for its id, which its header's bytes count.
    const bytes = (original.bytes as number) + copyId.length - id.length;
    expect({ ...copy, id, updatedAt: "" }).toEqual({ ...original, bytes, updatedAt: "" });
    const [e1, e2] = [
      await api("GET", `/v1/sessions/${id}/entries?limit=1000`),
      await api("GET", `/v1/sessions/${copyId}/entries?limit=1000`),
    ];
    expect(e2.body.entries).toEqual(e1.body.entries);
    // The same context; its version differs, as each session's does (it names the session's life).
    const { version: copyVersion, ...copyContext } = (await api("GET", `/v1/sessions/${copyId}/context`))
      .body;
    const { version: originalVersion, ...originalContext } = (await api("GET", `/v1/sessions/${id}/context`))
      .body;
    expect(copyContext).toEqual(originalContext);
    expect(copyVersion).not.toBe(originalVersion);
    expect((await api("GET", `/v1/sessions/${copyId}/export`)).text).toBe(
      exported.text.replace(`"id":"${id}"`, `"id":"${copyId}"`),
    );
  });

  it("keeps the file's id unless taken, and refuses a chosen id that is taken", async () => {
    const id = await createSession();
    const exported = (await api("GET", `/v1/sessions/${id}/export`)).text;
    const again = await importFile(exported);
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(id);
    const taken = await importFile(exported, `?id=${id}`);
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe("already_exists");
    // Another tenant gets the file's own id: ids are per tenant.
    const other = await importFile(exported, "", KEY_B);
    expect(other.body.id).toBe(id);
  });

  it("syncs a growing pi file with mode=sync: 201 made, 200 appended or unchanged, 409 diverged", async () => {
    const id = sid("pi");
    const header = { type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/w" };
    const line = (entryId: string, parentId: string | null, text: string) =>
      JSON.stringify({
        type: "message",
        id: entryId,
        parentId,
        timestamp: "2026-01-01T00:00:01.000Z",
        message: { role: "user", content: text, timestamp: 1_767_225_601_000 },
      });
    const first = [JSON.stringify(header), line("e1", null, "one")].join("\n");
    const created = await importFile(first, "?format=pi&mode=sync");
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id, entryCount: 1, sync: { status: "created", appended: 1 } });
    const grown = [first, line("e2", "e1", "two"), line("e3", "e2", "three")].join("\n");
    const appended = await importFile(grown, "?format=pi&mode=sync");
    expect(appended.status).toBe(200);
    expect(appended.body).toMatchObject({
      id,
      entryCount: 3,
      leafId: "e3",
      sync: { status: "appended", appended: 2 },
    });
    const unchanged = await importFile(grown, "?format=pi&mode=sync");
    expect(unchanged.status).toBe(200);
    expect(unchanged.body.sync).toEqual({ status: "unchanged", appended: 0 });
    const before = (await api("GET", `/v1/sessions/${id}/entries`)).body;
    const diverged = [first, line("e2", "e1", "TWO"), line("e4", "e2", "four")].join("\n");
    const refused = await importFile(diverged, "?format=pi&mode=sync");
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("already_exists");
    expect(refused.body.error.details).toEqual({ id, entryId: "e2" });
    expect((await api("GET", `/v1/sessions/${id}/entries`)).body).toEqual(before);
    const spec = (await api("GET", "/v1/openapi.json", { key: null })).body;
    const operation = spec.paths["/v1/sessions/import"].post;
    expect(operation.parameters).toContainEqual(
      expect.objectContaining({
        name: "mode",
        in: "query",
        schema: expect.objectContaining({ enum: ["sync"] }),
      }),
    );
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["200", "201", "409"]));
    // Without mode=sync the file's session is copied under a new id, as before.
    const copied = await importFile(grown, "?format=pi");
    expect(copied.status).toBe(201);
    expect(copied.body.id).not.toBe(id);
    expect(copied.body.sync).toBeUndefined();
    expectError(
      await api("POST", "/v1/sessions/import?mode=merge", {
        raw: grown,
        headers: { "Content-Type": "application/x-ndjson" },
      }),
      400,
      "invalid_request",
    );
  });

  it("imports a pi session and exports it back as pi version 3 with the head last", async () => {
    const piId = sid("pi");
    const file = [
      { type: "session", version: 3, id: piId, timestamp: "2025-05-01T00:00:00.000Z", cwd: "/repo" },
      {
        type: "message",
        id: "aa000001",
        parentId: null,
        timestamp: "2025-05-01T00:00:01.000Z",
        message: { role: "user", content: "hi", timestamp: 1 },
      },
      {
        type: "message",
        id: "aa000002",
        parentId: "aa000001",
        timestamp: "2025-05-01T00:00:02.000Z",
        message: { role: "user", content: "more", timestamp: 2 },
      },
      {
        type: "thinking_level_change",
        id: "aa000003",
        parentId: "aa000001",
        timestamp: "2025-05-01T00:00:03.000Z",
        thinkingLevel: "high",
      },
    ]
      .map((l) => JSON.stringify(l))
      .join("\n");
    const res = await importFile(file, "?format=pi");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id: piId,
      leafId: "aa000003",
      createdAt: "2025-05-01T00:00:00.000Z",
      metadata: { pi: { cwd: "/repo" } },
      warnings: [],
    });
    const context = await api("GET", `/v1/sessions/${piId}/context`);
    expect(context.body.thinkingLevel).toBe("high");
    expect(context.body.messages.map((m: { content: string }) => m.content)).toEqual(["hi"]);

    await api("PUT", `/v1/sessions/${piId}/leaf`, { body: { targetId: "aa000002" } });
    const exported = await api("GET", `/v1/sessions/${piId}/export?format=pi`);
    const lines = exported.text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0]).toEqual({
      type: "session",
      version: 3,
      id: piId,
      timestamp: "2025-05-01T00:00:00.000Z",
      cwd: "/repo",
    });
    expect(lines.map((l) => l.id).slice(1)).toEqual(["aa000001", "aa000003", "aa000002"]);
  });

  it("lists what it repaired in a pi file: a missing parent, a torn last line", async () => {
    const piId = sid("repaired");
    const lines = [
      { type: "session", version: 3, id: piId, timestamp: "2025-05-01T00:00:00.000Z", cwd: "/repo" },
      {
        type: "message",
        id: "bb000001",
        parentId: "gone0000",
        timestamp: "2025-05-01T00:00:01.000Z",
        message: { role: "user", content: "after a label pi left out", timestamp: 1 },
      },
    ].map((l) => JSON.stringify(l));
    const res = await importFile(`${lines.join("\n")}\n{"type":"message","id":"bb0000`, "?format=pi");
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: piId, leafId: "bb000001", entryCount: 1 });
    expect(res.body.warnings).toEqual([
      { line: 2, message: expect.stringContaining("parentId gone0000 names no entry of the file") },
      { line: 3, message: expect.stringContaining("cut short") },
    ]);
    const entry = await api("GET", `/v1/sessions/${piId}/entries/bb000001`);
    expect(entry.body.parentId).toBeNull();

    // A corrupt line before the last is no torn write: the file is refused, nothing imported.
    const corruptId = sid("corrupt");
    const corrupt = await importFile(
      `${lines[0]}\n{"type":"mess\n${lines[1]}\n`,
      `?format=pi&id=${corruptId}`,
    );
    expect(corrupt.status).toBe(400);
    expect(corrupt.body.error).toMatchObject({ code: "invalid_request", details: { line: 2 } });
    expectError(await api("GET", `/v1/sessions/${corruptId}`), 404, "not_found");
  });

  it("refuses bad files with the line, unknown formats with 415, and imports nothing", async () => {
    const before = await api("GET", "/v1/sessions?limit=200");
    const good = JSON.stringify({
      type: "session",
      format: "cf-session",
      version: 1,
      id: sid("f"),
      createdAt: "2025-01-01T00:00:00.000Z",
    });
    const bad = await importFile(
      `${good}\n{"type":"message","id":"x","parentId":"ghost","timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":"x","timestamp":1}}`,
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "invalid_request", details: { line: 2 } });
    const truncated = await importFile(`${good}\n{"type":"mess`);
    expect(truncated.body.error.details.line).toBe(2);
    const format = await importFile(good, "?format=csv");
    expect(format.status).toBe(415);
    expect(format.body.error.code).toBe("unsupported_format");
    const exportFormat = await api("GET", `/v1/sessions/${await createSession()}/export?format=csv`);
    expectError(exportFormat, 415, "unsupported_format");
    expectError(await api("GET", `/v1/sessions/${sid("none")}/export`), 404, "not_found");
    const after = await api("GET", "/v1/sessions?limit=200");
    expect(after.body.sessions.length).toBe(before.body.sessions.length + 1);
  });

  it("streams the export of a 100,000-entry session", async () => {
    const id = await createSession();
    for (let i = 0; i < 100; i++) {
      await api("POST", `/v1/sessions/${id}/entries`, {
        body: { entries: Array.from({ length: 1000 }, (_, j) => userMessage(`m${i * 1000 + j}`)) },
      });
    }
    const res = await exports.default.fetch(`http://sessions.test/v1/sessions/${id}/export`, {
      headers: { Authorization: `Bearer ${KEY_A}` },
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let newlines = 0;
    let chunks = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks++;
      for (const byte of value) if (byte === 10) newlines++;
    }
    expect(newlines).toBe(100_001);
    expect(chunks).toBeGreaterThan(100);
  });
});
