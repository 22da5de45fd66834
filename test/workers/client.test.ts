import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ConnectionError, createClient } from "../../src/client";
import { compactIfNeeded } from "../../src/core/agent";
import type { SessionEntry } from "../../src/core/entries";
import { SessionError } from "../../src/core/errors";
import { MemoryRepo } from "../../src/core/memory";
import { parseNative } from "../../src/core/native-format";
import type { Session } from "../../src/core/session";
import { assistant, user } from "../conformance/fixtures";
import { expectCode } from "../conformance/storage";
import { api, KEY_A, sid } from "./helpers";

const worker = (request: Request) => exports.default.fetch(request);

/** A client whose fetch goes through `intercept` before (maybe) reaching the worker. */
function clientWith(intercept: (request: Request, attempt: number) => Promise<Response>) {
  const attempts: string[] = [];
  const client = createClient({
    baseUrl: "http://sessions.test",
    token: KEY_A,
    retryDelayMs: 1,
    fetch: (request) => {
      attempts.push(`${request.method} ${new URL(request.url).pathname}`);
      return intercept(request, attempts.length);
    },
  });
  return { client, attempts };
}

describe("client", () => {
  it("retries 429 and 503, honouring Retry-After", async () => {
    const notApplied = {
      error: { code: "unavailable", message: "overloaded", details: { outcome: "not_applied" } },
    };
    const { client, attempts } = clientWith(async (request, attempt) => {
      if (attempt === 1) return new Response("{}", { status: 429, headers: { "Retry-After": "0" } });
      if (attempt === 2) return Response.json(notApplied, { status: 503 });
      return worker(request);
    });
    const session = await client.create({ id: sid() });
    expect(attempts.length).toBe(3);
    expect((await session.getInfo()).id).toBe(session.id);
  });

  it("resends a write that is not safe to repeat only after a 503 that says it was not applied", async () => {
    // A bare 503 (a proxy's, say) may come after the write was applied.
    const bare = clientWith(async () => new Response("{}", { status: 503 }));
    await expect(bare.client.create({ id: sid() })).rejects.toMatchObject({ code: "internal" });
    expect(bare.attempts).toHaveLength(1);
    // What may be sent twice is sent again after one.
    const reads = clientWith(async (request, attempt) =>
      attempt === 1 ? new Response("{}", { status: 503 }) : worker(request),
    );
    expect((await reads.client.list()).sessions).toBeDefined();
    expect(reads.attempts).toHaveLength(2);
  });

  it("retries an append whose response was lost, and the retry is a replay", async () => {
    let dropped = false;
    const { client, attempts } = clientWith(async (request) => {
      const response = await worker(request);
      if (!dropped && request.method === "POST" && request.url.endsWith("/entries")) {
        dropped = true;
        throw new TypeError("network connection lost");
      }
      return response;
    });
    const session = await client.create({ id: sid() });
    const id = await session.appendMessage(user("only once"));
    expect(attempts.filter((a) => a.endsWith("/entries")).length).toBe(2);
    const entries = await session.getEntries();
    expect(entries.map((e) => e.id)).toEqual([id]);
  });

  it("does not retry other failures, and reports the service's error code", async () => {
    const { client, attempts } = clientWith((request) => worker(request));
    const session = await client.create({ id: sid() });
    const before = attempts.length;
    let caught: unknown;
    try {
      await session.appendMessage(user("x"), { parentId: "nowhere" });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SessionError);
    expect((caught as SessionError).code).toBe("parent_not_found");
    expect(attempts.length - before).toBe(1);
    await expect(client.open(sid("missing"))).rejects.toMatchObject({ code: "not_found" });
  });

  it("names the service's address when it cannot be reached, after retrying only what may be retried", async () => {
    const { client, attempts } = clientWith(async () => {
      throw new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:9") });
    });
    const listing = await client.list().catch((error: unknown) => error);
    expect(listing).toBeInstanceOf(ConnectionError);
    expect((listing as ConnectionError).message).toBe(
      "cannot reach the service at http://sessions.test (GET /v1/sessions: connect ECONNREFUSED 127.0.0.1:9)",
    );
    expect((listing as ConnectionError).url).toBe("http://sessions.test");
    expect(attempts.length).toBe(4);
    await expect(client.create({ id: sid() })).rejects.toThrow(
      "cannot reach the service at http://sessions.test (POST /v1/sessions: connect ECONNREFUSED",
    );
    expect(attempts.length).toBe(5);
  });

  it("imports a file under its own id, and never again as a copy: syncFile appends what it gained", async () => {
    const client = createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker });
    const id = sid("pi");
    const header = { type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/" };
    const line = (entryId: string, parentId: string | null) =>
      JSON.stringify({
        type: "message",
        id: entryId,
        parentId,
        timestamp: header.timestamp,
        message: user(entryId),
      });
    const first = `${JSON.stringify(header)}\n${line("p1", null)}\n`;
    expect((await client.importFile(first, { format: "pi" })).info.id).toBe(id);
    const grown = `${first}${line("p2", "p1")}\n`;
    await expectCode(client.importFile(grown, { format: "pi" }), "already_exists");
    expect((await client.open(id).then((s) => s.getInfo())).entryCount).toBe(1);
    const synced = await client.syncFile(grown, { format: "pi" });
    expect({ status: synced.status, appended: synced.appended, id: synced.info.id }).toEqual({
      status: "appended",
      appended: 1,
      id,
    });
    expect(synced.info.entryCount).toBe(2);
    expect((await client.syncFile(grown, { format: "pi" })).status).toBe("unchanged");
  });

  it("compacts and navigates with the service's summarizer", async () => {
    const client = createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker });
    const session = await client.create({ id: sid() });
    const q = await session.appendMessage(user(`goal ${"word ".repeat(400)}`));
    for (let i = 0; i < 6; i++)
      await session.appendMessage(
        i % 2 ? user(`more ${"word ".repeat(400)}`) : assistant(`reply ${"word ".repeat(400)}`),
      );
    const entry = await session.compact({ keepRecentTokens: 300 });
    expect(entry.summary).toContain("## Goal");
    const moved = await session.navigate(q, { summarize: true });
    expect(moved.entry?.type).toBe("branch_summary");
    expect(await session.getLeafId()).toBe(moved.entry?.id);
  });

  it("navigates with the summary it is given, as the library does, and cancels a compaction it is told to", async () => {
    const { client, attempts } = clientWith((request) => worker(request));
    const session = await client.create({ id: sid() });
    const q = await session.appendMessage(user("the question"));
    await session.appendMessage(assistant("a first answer"));
    const moved = await session.navigate(q, { summarize: true, summary: "tried a first answer; dropped" });
    expect(moved.entry).toMatchObject({ type: "branch_summary", summary: "tried a first answer; dropped" });
    // Cancelled before it is sent: the caller's reason, at once, not a connection failure retried.
    const leaf = await session.getLeafId();
    const sent = attempts.length;
    const cancelled = new AbortController();
    cancelled.abort(new Error("the user cancelled"));
    for (const call of [
      () => session.compact({ summary: "never written", signal: cancelled.signal }),
      () => session.navigate(q, { signal: cancelled.signal }),
    ])
      await expect(call()).rejects.toThrow("the user cancelled");
    expect(attempts.length - sent).toBe(2);
    expect(await session.getLeafId()).toBe(leaf);
  });

  it("asks again for a read whose answer broke off on the way; a write's, it reports as a lost connection", async () => {
    /** The method of the next request whose answer breaks off. */
    let breakNext: string | undefined;
    const { client, attempts } = clientWith(async (request) => {
      const answer = await worker(request);
      if (request.method !== breakNext) return answer;
      breakNext = undefined;
      // The first bytes of the answer, then the connection fails.
      const bytes = new Uint8Array(await answer.arrayBuffer()).slice(0, 10);
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes);
          controller.error(new Error("connection reset"));
        },
      });
      return new Response(body, { status: answer.status, headers: answer.headers });
    });
    const session = await client.create({ id: sid() });
    await session.appendMessage(user("one"));
    await session.appendMessage(assistant("two"));
    const sent = attempts.length;
    breakNext = "GET";
    expect((await session.getBranch()).map((entry) => entry.type)).toEqual(["message", "message"]);
    expect(attempts.slice(sent).filter((attempt) => attempt.startsWith("GET")).length).toBeGreaterThanOrEqual(
      2,
    );
    // An append carries its entries' ids: asked again, it is a replay.
    breakNext = "POST";
    await session.appendMessage(user("three"));
    expect((await session.getBranch()).length).toBe(3);
    // A write that is not safe to send twice is not: its broken answer is a lost connection.
    const head = (await session.getLeafId()) as string;
    breakNext = "POST";
    await expect(session.fork(head)).rejects.toBeInstanceOf(ConnectionError);
  });

  it("exports and imports through the service", async () => {
    const client = createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker });
    const session = await client.create({ id: sid(), name: "to copy" });
    await session.appendMessage(user("hello"));
    let text = "";
    for await (const line of client.storage(session.id).exportLines()) text += line;
    const { session: copy, warnings } = await client.importFile(text, { id: sid("copy") });
    expect(warnings).toEqual([]);
    expect((await copy.getInfo()).name).toBe("to copy");
    expect((await copy.buildContext()).messages).toEqual((await session.buildContext()).messages);
    const piId = sid("pi");
    const header = { type: "session", version: 3, id: piId, timestamp: "2026-01-01T00:00:00.000Z", cwd: "/" };
    const entry = {
      type: "message",
      id: "cc000001",
      parentId: null,
      timestamp: header.timestamp,
      message: user("x"),
    };
    const repaired = await client.importFile(
      `${JSON.stringify(header)}\n${JSON.stringify(entry)}\n{"type":"mess`,
      { format: "pi" },
    );
    expect(repaired.info).toMatchObject({ id: piId, entryCount: 1 });
    expect(repaired.warnings).toEqual([{ line: 3, message: expect.stringContaining("cut short") }]);
    const again = await client.importSession(parseNative(text), { id: sid("again") });
    expect((await again.getEntries()).map((e) => e.id)).toEqual(
      (await session.getEntries()).map((e) => e.id),
    );
  });

  it("imports a session whose head is not its last entry in one request; one whose head names no entry, not at all", async () => {
    const requests: string[] = [];
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      fetch: (request) => {
        requests.push(`${request.method} ${new URL(request.url).pathname}`);
        return worker(request);
      },
    });
    const session = await client.create({ id: sid() });
    const first = await session.appendMessage(user("first"));
    await session.appendMessage(user("second"));
    let text = "";
    for await (const line of client.storage(session.id).exportLines()) text += line;
    const file = { ...parseNative(text), leafId: first };

    requests.length = 0;
    const copy = await client.importSession(file, { id: sid("copy") });
    expect(requests).toEqual(["POST /v1/sessions/import"]);
    expect(await copy.getLeafId()).toBe(first);
    expect((await copy.getBranch()).map((entry) => entry.id)).toEqual([first]);

    const id = sid("nowhere");
    await expectCode(client.importSession({ ...file, leafId: "nowhere1" }, { id }), "invalid_request");
    await expectCode(client.open(id), "not_found");
  });

  it("syncs a file whose head is not its last entry in one request, so a lost request never leaves the head astray", async () => {
    const requests: string[] = [];
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      retryDelayMs: 1,
      fetch: async (request) => {
        const { pathname } = new URL(request.url);
        requests.push(`${request.method} ${pathname}`);
        // A head moved on its own is never answered.
        if (request.method === "PUT" && pathname.endsWith("/leaf")) throw new TypeError("connection reset");
        return worker(request);
      },
    });
    const source = await client.create({ id: sid() });
    const first = await source.appendMessage(user("first"));
    const second = await source.appendMessage(user("second"));
    let text = "";
    for await (const line of client.storage(source.id).exportLines()) text += line;
    const file = { ...parseNative(text), leafId: first };
    const id = sid("synced");
    const memory = new MemoryRepo();

    requests.length = 0;
    const created = await client.syncSession(file, { id });
    expect(requests).toEqual(["POST /v1/sessions/import"]);
    expect(created.status).toBe("created");
    expect(await created.session.getLeafId()).toBe(first);
    expect(await (await memory.syncSession(file, { id })).session.getLeafId()).toBe(first);

    // The file grew under its last entry; its head stayed.
    const third: SessionEntry = {
      type: "message",
      id: "third001",
      parentId: second,
      timestamp: new Date().toISOString(),
      message: user("third"),
    };
    const grown = { ...file, entries: [...file.entries, third] };
    requests.length = 0;
    const appended = await client.syncSession(grown, { id });
    expect(requests).toEqual(["POST /v1/sessions/import"]);
    expect({ status: appended.status, appended: appended.appended }).toEqual({
      status: "appended",
      appended: 1,
    });
    expect(await appended.session.getLeafId()).toBe(first);
    const inMemory = await memory.syncSession(grown, { id });
    expect(await inMemory.session.getLeafId()).toBe(first);
    expect((await client.syncSession(grown, { id })).status).toBe("unchanged");
    expect(await appended.session.getLeafId()).toBe(first);
  });

  it("sends a request at most maxAttempts times, whether its tries are lost or their answers break off", async () => {
    /** What the fetch does with each try, in turn, then again from the start. */
    let script: Array<"lost" | "broken" | "whole"> = [];
    let requests = 0;
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      maxAttempts: 3,
      retryDelayMs: 1,
      fetch: async (request) => {
        const step = script[requests++ % Math.max(1, script.length)] ?? "whole";
        if (step === "lost") throw new TypeError("connection refused");
        const answer = await worker(request);
        if (step === "whole") return answer;
        // The first bytes of the answer, then the connection fails.
        const bytes = new Uint8Array(await answer.arrayBuffer()).slice(0, 5);
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(bytes);
            controller.error(new Error("connection reset"));
          },
        });
        return new Response(body, { status: answer.status, headers: answer.headers });
      },
    });
    const session = await client.create({ id: sid() });
    // Two tries lost, the third's answer broken off: three tries, not three for each read of the answer.
    script = ["lost", "lost", "broken"];
    requests = 0;
    await expect(session.getInfo()).rejects.toBeInstanceOf(ConnectionError);
    expect(requests).toBe(3);
    // Within the budget, a try that is lost and one whose answer broke off are followed by one that succeeds.
    script = ["lost", "broken", "whole"];
    requests = 0;
    expect((await session.getInfo()).id).toBe(session.id);
    expect(requests).toBe(3);
  });

  it("answers no entry for an id that is no id, and refuses such a generation id, before any request", async () => {
    let requests = 0;
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      fetch: (request) => {
        requests++;
        return worker(request);
      },
    });
    const session = await client.create({ id: sid() });
    await session.appendMessage(user("one"));
    const memory = await new MemoryRepo().create({ id: session.id });
    requests = 0;
    for (const id of [".", "..", "...", "a/b", ""]) {
      expect(await session.getEntry(id)).toBeUndefined();
      expect(await memory.getEntry(id)).toBeUndefined();
    }
    expect(requests).toBe(0);
    // Refused as the service refuses a generation id that is no id, without a request for one a
    // URL would resolve away.
    const served = await api("GET", `/v1/sessions/${session.id}/generations/bad!id`);
    expect(served.status).toBe(400);
    for (const id of [".", "..", "bad!id"]) {
      const refused = await session.generation(id).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SessionError);
      const { code, message, details } = refused as SessionError;
      const { requestId: _requestId, ...error } = served.body.error;
      expect({ code, message, details }).toEqual(error);
      await expect(session.stopGeneration(id)).rejects.toMatchObject({ code: "invalid_request" });
      await expect(session.follow(id).next()).rejects.toMatchObject({ code: "invalid_request" });
    }
    expect(requests).toBe(0);
  });

  it("helps an agent loop: compactIfNeeded, and a navigation whose summary fails moves nothing", async () => {
    const client = createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker });
    const session: Session = await client.create({ id: sid() });
    await session.appendMessage(user("small"));
    expect(await compactIfNeeded(session, { contextWindow: 100_000 })).toMatchObject({ compacted: false });
    for (let i = 0; i < 8; i++) await session.appendMessage(user(`big ${"word ".repeat(500)}`));
    const result = await compactIfNeeded(session, {
      contextWindow: 2000,
      reserveTokens: 500,
      keepRecentTokens: 500,
    });
    expect(result.compacted).toBe(true);
    const failing = { name: "down", summarize: async () => Promise.reject(new Error("model down")) };
    const first = (await session.getBranch())[0]?.id as string;
    const leaf = await session.getLeafId();
    let caught: unknown;
    try {
      await session.navigate(first, { summarize: true, summarizer: failing });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SessionError);
    expect((caught as SessionError).code).toBe("branch_summary_failed");
    expect(await session.getLeafId()).toBe(leaf);
    expect((await session.navigate(first, { summarize: false })).leafId).toBe(first);
  });
});
