import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import worker from "../../src/worker";
import { api, createSession, expectError, info, KEY_A, sid, userMessage } from "./helpers";

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

const assistantMessage = (text: string, model = "gpt-test") => ({
  type: "message",
  message: {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "openai-completions",
    provider: "openai",
    model,
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: 1_700_000_000_001,
  },
});

async function append(id: string, body: unknown, headers?: Record<string, string>) {
  return api("POST", `/v1/sessions/${id}/entries`, { body, headers });
}

/** Asserts a rejected write changed nothing: same entries, same leaf. */
async function unchanged(id: string, before: { entryCount: number; leafId: string | null }) {
  const after = await info(id);
  expect(after.entryCount).toBe(before.entryCount);
  expect(after.leafId).toBe(before.leafId);
  const records = await api("GET", `/v1/sessions/${id}/entries?limit=1000`);
  expect(records.body.entries.filter((e: { type: string }) => e.type !== "leaf").length).toBe(
    before.entryCount,
  );
}

describe("appending", () => {
  it("appends one entry (201) and moves the leaf, with the new leaf as ETag", async () => {
    const id = await createSession();
    const res = await append(id, userMessage("hello"));
    expect(res.status).toBe(201);
    const [entry] = res.body.entries;
    expect(entry).toMatchObject({
      type: "message",
      parentId: null,
      seq: 1,
      message: { role: "user", content: "hello" },
    });
    expect(res.body.leafId).toBe(entry.id);
    expect(res.headers.get("ETag")).toBe(`"${entry.id}"`);
    const second = await append(id, assistantMessage("hi"));
    expect(second.body.entries[0].parentId).toBe(entry.id);
  });

  it("appends a batch atomically and reports a bad entry with its path", async () => {
    const id = await createSession();
    const res = await append(id, {
      entries: [
        userMessage("a"),
        assistantMessage("b"),
        { type: "model_change", provider: "p", modelId: "m" },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body.entries.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3]);
    const before = await info(id);
    const bad = await append(id, {
      entries: [userMessage("ok"), { type: "message", message: { role: "user", content: 5, timestamp: 1 } }],
    });
    expectError(bad, 400, "invalid_request");
    expect(
      bad.body.error.details.some(
        (d: { path: unknown[] }) => d.path.join(".") === "entries.1.message.content",
      ),
    ).toBe(true);
    await unchanged(id, before);
  });

  it("answers 200 with the stored entries when a request is replayed", async () => {
    const id = await createSession();
    const body = { ...userMessage("once"), id: "client-1" };
    const first = await append(id, body);
    expect(first.status).toBe(201);
    const again = await append(id, body);
    expect(again.status).toBe(200);
    expect(again.body.entries).toEqual(first.body.entries);
    const batch = await append(id, { entries: [body] });
    expect(batch.status).toBe(200);
    expect((await info(id)).entryCount).toBe(1);
  });

  it("refuses the same id with other content (409), writing nothing", async () => {
    const id = await createSession();
    await append(id, { ...userMessage("one"), id: "dup" });
    const before = await info(id);
    expectError(await append(id, { ...userMessage("two"), id: "dup" }), 409, "already_exists");
    await unchanged(id, before);
  });

  it("checks If-Match against the leaf: a stale one writes nothing (412)", async () => {
    const id = await createSession();
    const first = await append(id, userMessage("q"), { "If-Match": '""' });
    expect(first.status).toBe(201);
    const leaf = first.body.leafId;
    expect((await append(id, assistantMessage("a"), { "If-Match": `"${leaf}"` })).status).toBe(201);
    const before = await info(id);
    expectError(await append(id, userMessage("late"), { "If-Match": `"${leaf}"` }), 412, "leaf_conflict");
    expectError(await append(id, userMessage("late"), { "If-Match": "not-quoted" }), 400, "invalid_request");
    await unchanged(id, before);
    expect((await append(id, userMessage("any"), { "If-Match": "*" })).status).toBe(201);
  });

  it("lets exactly one of two clients with the same If-Match win", async () => {
    const id = await createSession();
    const { leafId } = (await append(id, userMessage("q"))).body;
    const results = await Promise.all(
      ["one", "two"].map((text) => append(id, assistantMessage(text), { "If-Match": `"${leafId}"` })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 412]);
    expect((await info(id)).entryCount).toBe(2);
  });

  it("keeps every one of many concurrent appends, in strictly increasing seq", async () => {
    const id = await createSession();
    const n = 40;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => append(id, userMessage(`m${i}`))));
    expect(results.every((r) => r.status === 201)).toBe(true);
    const page = await api("GET", `/v1/sessions/${id}/entries?limit=1000`);
    const seqs = page.body.entries.map((e: { seq: number }) => e.seq);
    expect(seqs).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const texts = new Set(page.body.entries.map((e: { message: { content: string } }) => e.message.content));
    expect(texts.size).toBe(n);
    // Each append went under the leaf at its turn: the whole set is one chain.
    const branch = await api("GET", `/v1/sessions/${id}/branch`);
    expect(branch.body.entries.length).toBe(n);
  });

  it("refuses bad input with the right code and writes nothing", async () => {
    const id = await createSession();
    await append(id, { ...userMessage("root"), id: "root" });
    const before = await info(id);
    expectError(await append(id, { type: "weird" }), 400, "invalid_request");
    expectError(await append(id, { type: "leaf", targetId: null }), 400, "invalid_request");
    expectError(await append(id, { ...userMessage("x"), parentId: "nowhere" }), 422, "parent_not_found");
    expectError(await append(id, { type: "label", targetId: "nowhere", label: "x" }), 422, "invalid_tree");
    expectError(
      await append(id, { type: "compaction", summary: "s", tokensBefore: 1, firstKeptEntryId: "nowhere" }),
      422,
      "invalid_tree",
    );
    expectError(await append(id, { entries: [] }), 400, "invalid_request");
    // A time no date can hold could not be exported.
    const farFuture = await append(id, {
      type: "message",
      message: { role: "user", content: "x", timestamp: 1e18 },
    });
    expectError(farFuture, 400, "invalid_request");
    expect(farFuture.body.error.details[0].path).toEqual(["message", "timestamp"]);
    expectError(
      await append(id, { entries: Array.from({ length: 1001 }, () => userMessage("x")) }),
      413,
      "payload_too_large",
    );
    const malformed = await api("POST", `/v1/sessions/${id}/entries`, {
      raw: "{not json",
      headers: { "Content-Type": "application/json" },
    });
    expectError(malformed, 400, "invalid_request");
    const text = await api("POST", `/v1/sessions/${id}/entries`, {
      raw: "hello",
      headers: { "Content-Type": "text/plain" },
    });
    expectError(text, 415, "unsupported_format");
    await unchanged(id, before);
  });

  it("refuses an entry over 16 MiB (413 entry_too_large) and a body over 32 MiB (413 payload_too_large)", async () => {
    const id = await createSession();
    const before = await info(id);
    expectError(await append(id, userMessage("x".repeat(16 * 1024 * 1024 + 10))), 413, "entry_too_large");
    expectError(await append(id, userMessage("x".repeat(33 * 1024 * 1024))), 413, "payload_too_large");
    await unchanged(id, before);
  });

  it("refuses a body declared over 32 MiB before reading it, and lets go of the stream", async () => {
    const id = await createSession();
    const before = await info(id);
    for (const [path, type] of [
      [`/v1/sessions/${id}/entries`, "application/json"],
      ["/v1/sessions/import", "application/x-ndjson"],
      [`/v1/sessions/${id}/entries`, "text/plain"],
    ] as const) {
      let pulled = 0;
      let cancelled = false;
      // A client that declared 100 MB, sent a few bytes and went quiet.
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulled++ === 0) controller.enqueue(new TextEncoder().encode('{"type":'));
          return new Promise(() => {});
        },
        cancel() {
          cancelled = true;
        },
      });
      const request = new Request(`http://sessions.test${path}`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${KEY_A}`,
          "Content-Type": type,
          "Content-Length": String(100 * 1024 * 1024),
        },
        body,
      });
      const res = await worker.fetch(request, env, ctx());
      expect(res.status, path).toBe(413);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
      expect(pulled).toBeLessThanOrEqual(1);
      expect(cancelled).toBe(true);
    }
    await unchanged(id, before);
  });

  it("stops reading a body sent without a length once it passes 32 MiB, and lets go of the stream", async () => {
    const id = await createSession();
    const before = await info(id);
    const chunk = new Uint8Array(1024 * 1024).fill(0x20);
    let sent = 0;
    let cancelled = false;
    // Spaces after an opening brace, streamed with no Content-Length, for as long as anyone reads.
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("{"));
      },
      pull(controller) {
        sent++;
        controller.enqueue(chunk);
      },
      cancel() {
        cancelled = true;
      },
    });
    const request = new Request(`http://sessions.test/v1/sessions/${id}/entries`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/json" },
      body,
    });
    expect(request.headers.get("Content-Length")).toBeNull();
    const res = await worker.fetch(request, env, ctx());
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
    expect(sent).toBeLessThanOrEqual(36);
    await vi.waitFor(() => expect(cancelled).toBe(true));
    await unchanged(id, before);
  });

  it("takes an empty JSON body as {}, sent with Content-Length: 0 or with no body at all", async () => {
    const inits: { body: string | null; headers: Record<string, string> }[] = [
      { body: "", headers: { "Content-Length": "0" } },
      { body: null, headers: {} },
    ];
    for (const init of inits) {
      const request = new Request("http://sessions.test/v1/sessions", {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/json", ...init.headers },
        body: init.body,
      });
      const res = await worker.fetch(request, env, ctx());
      expect(res.status).toBe(201);
      const created = (await res.json()) as { id: string; entryCount: number };
      expect(created.entryCount).toBe(0);
    }
  });

  it("refuses a body nested deeper than 128 levels on any route, and writes nothing", async () => {
    const id = await createSession();
    const before = await api("GET", `/v1/sessions/${id}`);
    let metadata: unknown = "bottom";
    for (let i = 0; i < 200; i++) metadata = { inner: metadata };
    const patched = await api("PATCH", `/v1/sessions/${id}`, { body: { metadata } });
    expectError(patched, 400, "invalid_request");
    expect(patched.body.error.message).toContain("nests deeper than 128 levels");
    const after = await api("GET", `/v1/sessions/${id}`);
    expect(after.body.metadata).toEqual(before.body.metadata);
    expect(after.body.updatedAt).toBe(before.body.updatedAt);
  });

  it("keeps a 5 MiB entry exactly", async () => {
    const id = await createSession();
    const text = "é€😀abc".repeat((5 * 1024 * 1024) / 10);
    const res = await append(id, userMessage(text));
    expect(res.status).toBe(201);
    const eid = res.body.entries[0].id;
    const back = await api("GET", `/v1/sessions/${id}/entries/${eid}`);
    expect(back.body.message.content).toBe(text);
  });
});

describe("reading", () => {
  it("pages entries by seq with a cursor and filters by type", async () => {
    const id = await createSession();
    await append(id, { entries: Array.from({ length: 25 }, (_, i) => userMessage(`m${i}`)) });
    await append(id, { type: "model_change", provider: "p", modelId: "m" });
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { entries: Array<{ seq: number }>; nextCursor: string | null } } = await api(
        "GET",
        `/v1/sessions/${id}/entries?limit=10${cursor ? `&after=${cursor}` : ""}`,
      );
      seen.push(...page.body.entries.map((e) => e.seq));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(Array.from({ length: 26 }, (_, i) => i + 1));
    const models = await api("GET", `/v1/sessions/${id}/entries?type=model_change`);
    expect(models.body.entries.map((e: { type: string }) => e.type)).toEqual(["model_change"]);
    expect(
      (await api("GET", `/v1/sessions/${id}/entries?type=model_change,message&limit=1000`)).body.entries
        .length,
    ).toBe(26);
    expectError(await api("GET", `/v1/sessions/${id}/entries?type=bogus`), 400, "invalid_request");
    expectError(await api("GET", `/v1/sessions/${id}/entries?limit=1001`), 400, "invalid_request");
    expectError(await api("GET", `/v1/sessions/${id}/entries?after=-1`), 400, "invalid_request");
  });

  it("returns one entry, the branch for any leaf, the tree and the context", async () => {
    const id = await createSession({ body: { systemPrompt: "sys" } });
    const q = (await append(id, { ...userMessage("q"), id: "q" })).body.entries[0];
    await append(id, { ...assistantMessage("first"), id: "a1" });
    await append(id, { ...assistantMessage("second", "gpt-2"), id: "a2", parentId: "q" });
    await append(id, { type: "label", targetId: "a1", label: "keep" });

    expect((await api("GET", `/v1/sessions/${id}/entries/q`)).body).toEqual(q);
    expectError(await api("GET", `/v1/sessions/${id}/entries/none`), 404, "not_found");

    const branch = await api("GET", `/v1/sessions/${id}/branch?leafId=a1`);
    expect(branch.body.entries.map((e: { id: string }) => e.id)).toEqual(["q", "a1"]);
    expectError(await api("GET", `/v1/sessions/${id}/branch?leafId=none`), 404, "not_found");

    const tree = await api("GET", `/v1/sessions/${id}/tree`);
    expect(tree.status).toBe(200);
    expect(tree.text).toBe(JSON.stringify(tree.body));
    const [root] = tree.body.roots;
    expect(root).toMatchObject({ id: "q", type: "message", role: "user", parentId: null });
    expect(root.children.map((n: { id: string }) => n.id)).toEqual(["a1", "a2"]);
    expect(root.children[0].label).toBe("keep");
    expect(root.children[1].children[0].type).toBe("label");

    const context = await api("GET", `/v1/sessions/${id}/context?leafId=a1`);
    expect(context.body).toMatchObject({
      systemPrompt: "sys",
      thinkingLevel: "off",
      model: { provider: "openai", modelId: "gpt-test" },
      activeToolNames: null,
    });
    expect(context.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
    const current = await api("GET", `/v1/sessions/${id}/context`);
    expect(current.body.model).toEqual({ provider: "openai", modelId: "gpt-2" });
    expectError(await api("GET", `/v1/sessions/${id}/context?leafId=none`), 404, "not_found");
  });

  it("serves a 100,000-entry chain as one branch and one tree", async () => {
    const id = await createSession();
    for (let i = 0; i < 100; i++) {
      const res = await append(id, {
        entries: Array.from({ length: 1000 }, (_, j) => userMessage(`m${i * 1000 + j}`)),
      });
      expect(res.status).toBe(201);
    }
    const branch = await api("GET", `/v1/sessions/${id}/branch`);
    expect(branch.body.entries.length).toBe(100_000);
    const tree = await api("GET", `/v1/sessions/${id}/tree`);
    expect(tree.status).toBe(200);
    let depth = 0;
    for (let node = tree.body.roots[0]; node; node = node.children[0]) depth++;
    expect(depth).toBe(100_000);
  });
});

describe("leaf", () => {
  it("moves the head, before a user message too, checking If-Match", async () => {
    const id = await createSession();
    await append(id, {
      entries: [
        { ...userMessage("q"), id: "q" },
        { ...assistantMessage("a"), id: "a" },
        { ...userMessage("q2"), id: "q2" },
      ],
    });
    const moved = await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "a" } });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({
      leafId: "a",
      record: { type: "leaf", parentId: null, targetId: "a" },
    });
    expect(moved.headers.get("ETag")).toBe('"a"');
    const before = await api("PUT", `/v1/sessions/${id}/leaf`, {
      body: { targetId: "q2", position: "before" },
    });
    expect(before.body.leafId).toBe("a");
    expectError(
      await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "a", position: "before" } }),
      400,
      "invalid_request",
    );
    expectError(
      await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "none" } }),
      404,
      "not_found",
    );
    expectError(
      await api("PUT", `/v1/sessions/${id}/leaf`, {
        body: { targetId: "q" },
        headers: { "If-Match": '"q2"' },
      }),
      412,
      "leaf_conflict",
    );
    expectError(await api("PUT", `/v1/sessions/${id}/leaf`, { body: {} }), 400, "invalid_request");
    expect((await info(id)).leafId).toBe("a");
    const cleared = await api("PUT", `/v1/sessions/${id}/leaf`, {
      body: { targetId: null },
      headers: { "If-Match": '"a"' },
    });
    expect(cleared.body.leafId).toBeNull();
    const records = await api("GET", `/v1/sessions/${id}/entries?type=leaf`);
    expect(records.body.entries.map((e: { targetId: string | null }) => e.targetId)).toEqual([
      "a",
      "a",
      null,
    ]);
  });

  it("survives the object being evicted", async () => {
    const id = await createSession();
    await append(id, {
      entries: [
        { ...userMessage("q"), id: "q" },
        { ...assistantMessage("a"), id: "a" },
      ],
    });
    await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "q" } });
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    await evictDurableObject(stub);
    const after = await info(id);
    expect(after.leafId).toBe("q");
    expect(after.entryCount).toBe(2);
  });
});

describe("fork", () => {
  it("creates a new session holding the path to an entry; the source is unchanged", async () => {
    const id = await createSession({ body: { name: "source" } });
    await append(id, {
      entries: [
        { ...userMessage("q"), id: "q" },
        { ...assistantMessage("a"), id: "a" },
        { ...userMessage("q2"), id: "q2" },
      ],
    });
    await append(id, { ...assistantMessage("other"), id: "b", parentId: "q" });
    const sourceBefore = await info(id);
    const res = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "a" } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: "source",
      leafId: "a",
      entryCount: 2,
      parentSession: { id, entryId: "a" },
    });
    const forkBranch = await api("GET", `/v1/sessions/${res.body.id}/branch`);
    const sourceBranch = await api("GET", `/v1/sessions/${id}/branch?leafId=a`);
    expect(forkBranch.body.entries).toEqual(sourceBranch.body.entries);
    expect(await info(id)).toEqual(sourceBefore);

    const named = await api("POST", `/v1/sessions/${id}/fork`, {
      body: { entryId: "q2", position: "before", id: "my-fork", name: "try" },
    });
    expect(named.body).toMatchObject({ id: "my-fork", name: "try", leafId: "a" });
    expectError(
      await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "q", id: "my-fork" } }),
      409,
      "already_exists",
    );
    expectError(
      await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "none" } }),
      404,
      "not_found",
    );
    expectError(await api("POST", `/v1/sessions/${id}/fork`, { body: {} }), 400, "invalid_request");
  });

  it("moves the rows of a branched, compacted path as they are stored, and the fork reads and grows as the source would", async () => {
    const id = await createSession({ body: { name: "moved" } });
    await append(id, {
      entries: [
        { ...userMessage("where are the otters"), id: "q1" },
        { type: "model_change", id: "m1", provider: "openai", modelId: "gpt-5" },
        { ...assistantMessage("by the river"), id: "a1" },
        { ...userMessage("and the beavers"), id: "q2" },
      ],
    });
    // Another branch in between leaves gaps in the seqs of the path below.
    await append(id, {
      entries: [{ ...assistantMessage("elsewhere"), id: "x1", parentId: "q1" }, userMessage("x2")],
    });
    await append(id, {
      entries: [
        { type: "thinking_level_change", id: "t1", parentId: "q2", thinkingLevel: "high" },
        { ...assistantMessage("at the dam"), id: "a2" },
        {
          type: "compaction",
          id: "c1",
          summary: "otters and beavers",
          tokensBefore: 100,
          firstKeptEntryId: "q2",
        },
        { type: "label", id: "l1", targetId: "a1", label: "river" },
        { type: "session_info", id: "n1", name: "renamed" },
        { ...userMessage("what next"), id: "q3" },
      ],
    });
    const source = await info(id);
    const fork = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "q3", id: sid("moved") } });
    expect(fork.status, fork.text).toBe(201);
    const copy = fork.body.id as string;
    const path = (await api("GET", `/v1/sessions/${id}/branch?leafId=q3`)).body.entries;
    expect((await api("GET", `/v1/sessions/${copy}/branch`)).body.entries).toEqual(path);
    expect(fork.body).toMatchObject({
      name: "renamed",
      entryCount: path.length,
      messageCount: path.filter((e: { type: string }) => e.type === "message").length,
      preview: "where are the otters",
    });
    // Its path's entries as stored, and its own header beside them (which takes the source's name).
    const entryBytes = path.reduce(
      (sum: number, { seq: _seq, ...entry }: { seq: number }) => sum + JSON.stringify(entry).length,
      0,
    );
    const forkHeader = {
      id: copy,
      createdAt: fork.body.createdAt,
      metadata: {},
      name: "renamed",
      parentSession: fork.body.parentSession,
    };
    expect(fork.body.bytes).toBe(entryBytes + JSON.stringify(forkHeader).length);
    expect(fork.body.bytes).toBeLessThan(source.bytes as number);
    const withoutVersion = ({ version: _version, ...context }: Record<string, unknown>) => context;
    const sourceContext = await api("GET", `/v1/sessions/${id}/context?leafId=q3`);
    const forkContext = await api("GET", `/v1/sessions/${copy}/context`);
    expect(withoutVersion(forkContext.body)).toEqual(withoutVersion(sourceContext.body));
    expect((await api("GET", `/v1/sessions/${copy}/entries/a1`)).body).toMatchObject({ id: "a1" });
    const tree = (await api("GET", `/v1/sessions/${copy}/tree`)).body.roots;
    expect(JSON.stringify(tree)).toContain('"label":"river"');
    // Found by search, and grown past the copied seqs.
    const hits = (await api("GET", `/v1/sessions/${copy}/search?q=beavers`)).body.hits;
    expect(hits.map((hit: { entryId: string }) => hit.entryId)).toEqual(expect.arrayContaining(["q2", "c1"]));
    const grown = await append(copy, userMessage("onwards"));
    expect(grown.status, grown.text).toBe(201);
    expect(grown.body.entries[0].seq).toBeGreaterThan(path.at(-1).seq);
    const after = await api("GET", `/v1/sessions/${copy}/context`);
    expect(after.body.messages.at(-1).content).toBe("onwards");
    expect(after.body.messages.length).toBe(sourceContext.body.messages.length + 1);
  });

  it("forks a 10,000-entry path whole", async () => {
    const id = await createSession();
    for (let i = 0; i < 10; i++) {
      await append(id, { entries: Array.from({ length: 1000 }, (_, j) => userMessage(`m${i * 1000 + j}`)) });
    }
    const { leafId } = await info(id);
    const res = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: leafId } });
    expect(res.status).toBe(201);
    expect(res.body.entryCount).toBe(10_000);
    const context = await api("GET", `/v1/sessions/${res.body.id}/context`);
    expect(context.body.messages.length).toBe(10_000);
    expect(context.body.messages[9_999].content).toBe("m9999");
  });
});
