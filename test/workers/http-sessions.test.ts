import { describe, expect, it, vi } from "vitest";
import { api, createSession, expectError, info, KEY_A_READ, KEY_B, sid, userMessage } from "./helpers";

describe("service basics", () => {
  it("answers /healthz without auth", async () => {
    const res = await api("GET", "/healthz", { key: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
  });

  it("describes the API as OpenAPI and serves a page to browse it", async () => {
    const spec = await api("GET", "/v1/openapi.json", { key: null });
    expect(spec.status).toBe(200);
    expect(spec.body.openapi).toBe("3.1.0");
    for (const path of [
      "/v1/sessions",
      "/v1/sessions/{sid}",
      "/v1/sessions/{sid}/entries",
      "/v1/sessions/{sid}/entries/{eid}",
      "/v1/sessions/{sid}/branch",
      "/v1/sessions/{sid}/tree",
      "/v1/sessions/{sid}/context",
      "/v1/sessions/{sid}/leaf",
      "/v1/sessions/{sid}/fork",
      "/v1/sessions/{sid}/search",
      "/v1/sessions/{sid}/restore",
      "/v1/search",
      "/v1/export",
      "/v1/import",
      "/v1/retention",
    ]) {
      expect(spec.body.paths[path], path).toBeDefined();
    }
    const entryBody =
      spec.body.paths["/v1/sessions/{sid}/entries"].post.requestBody.content["application/json"].schema;
    expect(JSON.stringify(entryBody)).toContain("compaction");
    const docs = await api("GET", "/docs", { key: null });
    expect(docs.status).toBe(200);
    expect(docs.text).toContain("/v1/openapi.json");
  });

  it("answers an unknown route with a not_found envelope", async () => {
    expectError(await api("GET", "/v2/nothing"), 404, "not_found");
    expectError(await api("GET", "/v1/sessions/x/nothing"), 404, "not_found");
  });
});

describe("auth", () => {
  it("refuses requests without a key, with an unknown key, or a malformed header", async () => {
    expectError(await api("GET", "/v1/sessions", { key: null }), 401, "unauthorized");
    expectError(await api("GET", "/v1/sessions", { key: "nope" }), 401, "unauthorized");
    expectError(
      await api("GET", "/v1/sessions", { key: null, headers: { Authorization: "Basic abc" } }),
      401,
      "unauthorized",
    );
    expectError(await api("POST", "/v1/sessions", { key: null, body: {} }), 401, "unauthorized");
  });

  it("lets a read-only key read but not write", async () => {
    const id = await createSession();
    expect((await api("GET", `/v1/sessions/${id}`, { key: KEY_A_READ })).status).toBe(200);
    expectError(
      await api("POST", `/v1/sessions/${id}/entries`, { key: KEY_A_READ, body: userMessage("x") }),
      403,
      "forbidden",
    );
    expectError(await api("DELETE", `/v1/sessions/${id}`, { key: KEY_A_READ }), 403, "forbidden");
    expect((await info(id)).entryCount).toBe(0);
  });
});

describe("sessions", () => {
  it("creates a session and describes it, with its leaf as ETag", async () => {
    const id = sid();
    const res = await api("POST", "/v1/sessions", {
      body: { id, name: "demo", systemPrompt: "be brief", metadata: { owner: "x" } },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id,
      name: "demo",
      systemPrompt: "be brief",
      metadata: { owner: "x" },
      leafId: null,
      entryCount: 0,
      messageCount: 0,
    });
    expect(res.headers.get("ETag")).toBe('""');
    const got = await api("GET", `/v1/sessions/${id}`);
    expect(got.body).toEqual(res.body);
  });

  it("creates with a fresh id when none is given, and from an empty JSON body", async () => {
    const res = await api("POST", "/v1/sessions", { body: {} });
    expect(res.status).toBe(201);
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    const bare = await api("POST", "/v1/sessions", { headers: { "Content-Type": "application/json" } });
    expect(bare.status).toBe(201);
  });

  it("refuses a taken id, a bad id and unknown fields, creating nothing", async () => {
    const id = await createSession();
    expectError(await api("POST", "/v1/sessions", { body: { id, name: "again" } }), 409, "already_exists");
    expect((await info(id)).name).toBeUndefined();
    expectError(await api("POST", "/v1/sessions", { body: { id: "has space" } }), 400, "invalid_request");
    expectError(await api("POST", "/v1/sessions", { body: { id: "../../etc" } }), 400, "invalid_request");
    const unknown = await api("POST", "/v1/sessions", { body: { id: sid(), colour: "red" } });
    expectError(unknown, 400, "invalid_request");
    expect(Array.isArray(unknown.body.error.details)).toBe(true);
    expectError(await api("GET", `/v1/sessions/${"x".repeat(129)}`), 400, "invalid_request");
  });

  it("answers not_found for an unknown session on every route", async () => {
    const id = sid("missing");
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
    expectError(await api("PATCH", `/v1/sessions/${id}`, { body: { name: "x" } }), 404, "not_found");
    expectError(await api("DELETE", `/v1/sessions/${id}`), 404, "not_found");
    expectError(
      await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("x") }),
      404,
      "not_found",
    );
    expectError(await api("GET", `/v1/sessions/${id}/entries`), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}/entries/abc`), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}/branch`), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}/tree`), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}/context`), 404, "not_found");
    expectError(await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: null } }), 404, "not_found");
    expectError(await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "abc" } }), 404, "not_found");
  });

  it("renames, changes the system prompt and replaces metadata", async () => {
    const id = await createSession({ body: { systemPrompt: "old", metadata: { a: 1 } } });
    const res = await api("PATCH", `/v1/sessions/${id}`, { body: { name: "renamed", metadata: { b: 2 } } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: "renamed",
      systemPrompt: "old",
      metadata: { b: 2 },
      entryCount: 1,
    });
    const cleared = await api("PATCH", `/v1/sessions/${id}`, { body: { systemPrompt: null } });
    expect(cleared.body.systemPrompt).toBeUndefined();
    const entries = await api("GET", `/v1/sessions/${id}/entries?type=session_info`);
    expect(entries.body.entries.map((e: { name: string }) => e.name)).toEqual(["renamed"]);
    expectError(await api("PATCH", `/v1/sessions/${id}`, { body: { name: 5 } }), 400, "invalid_request");
  });

  it("refuses a system prompt, metadata, name or label past its limit, writing nothing", async () => {
    // Each is one stored value (the platform stores none over 2 MB in one piece), listed whole.
    const prompt = (bytes: number) => "x".repeat(bytes - 2); // as JSON: the quotes too
    const id = sid();
    const atLimit = await api("POST", "/v1/sessions", {
      body: { id, systemPrompt: prompt(1024 * 1024), metadata: { note: prompt(256 * 1024 - 9) } },
    });
    expect(atLimit.status, atLimit.text).toBe(201);
    for (const body of [
      { id: sid(), systemPrompt: prompt(1024 * 1024 + 1) },
      { id: sid(), systemPrompt: "\u0000".repeat(200 * 1024) }, // 6 bytes each as JSON
      { id: sid(), metadata: { note: prompt(256 * 1024 - 8) } },
      { id: sid(), name: "n".repeat(64 * 1024 + 1) },
    ]) {
      const refused = await api("POST", "/v1/sessions", { body });
      expectError(refused, 400, "invalid_request");
      expectError(await api("GET", `/v1/sessions/${body.id}`), 404, "not_found");
    }
    // A change is checked whole before any of it is written: the name stays as it was.
    const named = await createSession({ body: { name: "before" } });
    const change = { name: "after", metadata: { note: prompt(300 * 1024) } };
    expectError(await api("PATCH", `/v1/sessions/${named}`, { body: change }), 400, "invalid_request");
    expectError(
      await api("PATCH", `/v1/sessions/${named}`, { body: { systemPrompt: prompt(1024 * 1024 + 1) } }),
      400,
      "invalid_request",
    );
    expect(await info(named)).toMatchObject({ name: "before", metadata: {}, entryCount: 0 });
    expect((await info(named)).systemPrompt).toBeUndefined();
    // Entries: a session_info's name and a label's text.
    const target = (await api("POST", `/v1/sessions/${named}/entries`, { body: userMessage("hi") })).body
      .entries[0].id;
    const long = "n".repeat(64 * 1024 + 1);
    for (const entry of [
      { type: "session_info", name: long },
      { type: "label", targetId: target, label: long },
    ])
      expectError(
        await api("POST", `/v1/sessions/${named}/entries`, { body: entry }),
        400,
        "invalid_request",
      );
    expect(await info(named)).toMatchObject({ name: "before", entryCount: 1 });
    // An import's header is checked as a create is.
    const imported = sid();
    const file = `${JSON.stringify({
      type: "session",
      format: "cf-session",
      version: 1,
      id: imported,
      createdAt: new Date().toISOString(),
      systemPrompt: prompt(1024 * 1024 + 1),
      metadata: {},
    })}\n`;
    const refusedImport = await api("POST", "/v1/sessions/import", {
      raw: file,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expectError(refusedImport, 400, "invalid_request");
    expect(refusedImport.body.error.message).toMatch(/line 1/);
    expectError(await api("GET", `/v1/sessions/${imported}`), 404, "not_found");
    // A fork's name is checked as a rename is: no fork is made.
    const forkId = sid();
    expectError(
      await api("POST", `/v1/sessions/${named}/fork`, { body: { entryId: target, id: forkId, name: long } }),
      400,
      "invalid_request",
    );
    expectError(await api("GET", `/v1/sessions/${forkId}`), 404, "not_found");
  });

  it("changes a session whose id is a route's word (import) with JSON, as any other", async () => {
    const created = await api("POST", "/v1/sessions", { key: KEY_B, body: { id: "import" } });
    expect([201, 409]).toContain(created.status);
    const changed = await api("PATCH", "/v1/sessions/import", { key: KEY_B, body: { name: "imports" } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.name).toBe("imports");
  });

  it("lists the tenant's sessions newest first, paged", async () => {
    const ids = [await createSession(), await createSession(), await createSession()];
    const first = await api("GET", "/v1/sessions?limit=2&order=created");
    expect(first.status).toBe(200);
    expect(first.body.sessions.length).toBe(2);
    expect(typeof first.body.nextCursor).toBe("string");
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { sessions: Array<{ id: string }>; nextCursor: string | null } } = await api(
        "GET",
        `/v1/sessions?limit=2&order=created${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      seen.push(...page.body.sessions.map((s) => s.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen.filter((id) => ids.includes(id))).toEqual([...ids].reverse());
    expectError(await api("GET", "/v1/sessions?limit=0"), 400, "invalid_request");
    expectError(await api("GET", "/v1/sessions?limit=201"), 400, "invalid_request");
    expectError(await api("GET", "/v1/sessions?order=random"), 400, "invalid_request");
    expectError(await api("GET", "/v1/sessions?cursor=%%%"), 400, "invalid_request");
    for (const prefix of ["", "has%20space", "a/b", "x".repeat(129)]) {
      const refused = await api("GET", `/v1/sessions?prefix=${prefix}`);
      expectError(refused, 400, "invalid_request");
      expect(JSON.stringify(refused.body.error.details)).toContain("prefix");
    }
  });

  it("lists the sessions whose id starts with a prefix", async () => {
    const prefix = `pre-${crypto.randomUUID()}:`;
    const inside: string[] = [];
    for (let i = 0; i < 4; i++) {
      await createSession({ body: { id: `${prefix}${i}` } });
      inside.push(`${prefix}${i}`);
    }
    await createSession({ body: { id: `${prefix.slice(0, -1)}-beside` } });
    const listed = await api("GET", `/v1/sessions?order=created&prefix=${encodeURIComponent(prefix)}`);
    expect(listed.status).toBe(200);
    expect(listed.body.sessions.map((s: { id: string }) => s.id)).toEqual([...inside].reverse());
  });

  it("lists a project's sessions: those that record it, or a folder in it, as their metadata.project", async () => {
    const project = `github.com/acme/${crypto.randomUUID()}`;
    const at = async (recorded: string | undefined) => {
      const id = await createSession({
        body: { metadata: recorded === undefined ? {} : { project: recorded } },
      });
      return id;
    };
    const root = await at(project);
    const folder = await at(`${project}/services/api`);
    await at(`${project}-fork`);
    await at(`${project}services`);
    await at(undefined);
    const listed = async (query: string) =>
      (
        await api("GET", `/v1/sessions?order=created&limit=200&project=${encodeURIComponent(query)}`)
      ).body.sessions.map((s: { id: string }) => s.id);
    await vi.waitFor(async () => expect(await listed(project)).toEqual([folder, root]), { timeout: 10_000 });
    expect(await listed(`${project}/services`)).toEqual([folder]);
    expect(await listed(`${project}/services/api`)).toEqual([folder]);
    expect(await listed(`${project}/other`)).toEqual([]);
    for (const bad of ["", "x".repeat(513)]) {
      const refused = await api("GET", `/v1/sessions?project=${bad}`);
      expectError(refused, 400, "invalid_request");
      expect(JSON.stringify(refused.body.error.details)).toContain("project");
    }
  });

  it("keeps the listing current after writes", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [userMessage("hello there"), userMessage("again")] },
    });
    await vi.waitFor(
      async () => {
        const res = await api("GET", "/v1/sessions?limit=200");
        const listed = res.body.sessions.find((s: { id: string }) => s.id === id);
        expect(listed).toMatchObject({ entryCount: 2, messageCount: 2, preview: "hello there" });
        expect(res.body.sessions[0].id).toBe(id);
      },
      { timeout: 5000, interval: 50 },
    );
  });

  it("deletes a session: every route answers not_found, it leaves the listing, and the id is free", async () => {
    const id = await createSession();
    await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("x") });
    const res = await api("DELETE", `/v1/sessions/${id}`);
    expect(res.status).toBe(204);
    expectError(await api("GET", `/v1/sessions/${id}`), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}/entries`), 404, "not_found");
    expectError(await api("DELETE", `/v1/sessions/${id}`), 404, "not_found");
    const listed = await api("GET", "/v1/sessions?limit=200");
    expect(listed.body.sessions.map((s: { id: string }) => s.id)).not.toContain(id);
    const again = await api("POST", "/v1/sessions", { body: { id } });
    expect(again.status).toBe(201);
    expect(again.body.entryCount).toBe(0);
    // A late report from the deleted life of the id never brings the old session back.
    await new Promise((r) => setTimeout(r, 100));
    expect((await info(id)).entryCount).toBe(0);
  });
});

describe("tenancy", () => {
  it("never lets one tenant read, list, write, fork or delete another's session", async () => {
    const id = await createSession();
    const entry = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("secret") });
    const eid = entry.body.entries[0].id;
    expectError(await api("GET", `/v1/sessions/${id}`, { key: KEY_B }), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}/entries/${eid}`, { key: KEY_B }), 404, "not_found");
    expectError(await api("GET", `/v1/sessions/${id}/context`, { key: KEY_B }), 404, "not_found");
    expectError(
      await api("POST", `/v1/sessions/${id}/entries`, { key: KEY_B, body: userMessage("x") }),
      404,
      "not_found",
    );
    expectError(
      await api("POST", `/v1/sessions/${id}/fork`, { key: KEY_B, body: { entryId: eid } }),
      404,
      "not_found",
    );
    expectError(await api("DELETE", `/v1/sessions/${id}`, { key: KEY_B }), 404, "not_found");
    const listed = await api("GET", "/v1/sessions?limit=200", { key: KEY_B });
    expect(listed.body.sessions.map((s: { id: string }) => s.id)).not.toContain(id);
    // The same id is a separate session for tenant B.
    expect((await api("POST", "/v1/sessions", { key: KEY_B, body: { id } })).status).toBe(201);
    expect((await info(id, KEY_B)).entryCount).toBe(0);
    expect((await info(id)).entryCount).toBe(1);
  });
});
