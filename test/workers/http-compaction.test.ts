import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { estimatePathTokens } from "../../src/core/compaction";
import { SessionError } from "../../src/core/errors";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage } from "../../src/core/messages";
import type { AppendEntryInput } from "../../src/core/providers/entry-input";
import type { Session } from "../../src/core/session";
import type { Summarizer } from "../../src/core/summarizers/summarizer";
import type { DurableEnv } from "../../src/durable/internal";
import { DurableRepo, sessionObjectName } from "../../src/durable/internal";
import worker from "../../src/worker";
import { endGeneration, openGeneration } from "./generation-helpers";
import {
  api,
  assistantMessage,
  createSession,
  expectError,
  info,
  KEY_A,
  sid,
  userMessage,
  withObjectEnv,
} from "./helpers";

const words = (n: number) => "word ".repeat(n).trim();
const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

/** A request to the worker with the OpenAI-compatible summarizer pointed at the fake endpoint. */
async function withModel(
  model: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const llmEnv = {
    ...env,
    SUMMARIZER_BASE_URL: `${env.FAKE_LLM_URL}/v1`,
    SUMMARIZER_MODEL: model,
    SUMMARIZER_API_KEY: "test-key",
  };
  const res = await worker.fetch(
    new Request(`http://sessions.test${path}`, {
      method,
      headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    llmEnv,
    ctx(),
  );
  return { status: res.status, body: (await res.json()) as any };
}

/** Waits until the fake model holds the summarizer's request made under `key`. */
async function summarizerHolds(key: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const held = (await (await fetch(`${env.FAKE_LLM_URL}/requests/hold:${key}`)).json()) as unknown[];
      expect(held.length).toBe(1);
    },
    { timeout: 10_000, interval: 50 },
  );
}

async function conversation(turns: number) {
  const id = await createSession();
  const entries = [];
  for (let i = 0; i < turns; i++) {
    entries.push({ ...userMessage(`question ${i} ${words(100)}`), id: `q${i}` });
    entries.push({
      type: "message",
      id: `a${i}`,
      message: {
        role: "assistant",
        content: [{ type: "text", text: `answer ${i} ${words(100)}` }],
        api: "x",
        provider: "p",
        model: "m",
        usage: {
          input: 1,
          output: 1,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 0,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
        },
        stopReason: "stop",
        timestamp: 1,
      },
    });
  }
  expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
  return id;
}

describe("POST /compact", () => {
  it("compacts with the built-in extractive summarizer by default", async () => {
    const id = await conversation(10);
    const before = await api("GET", `/v1/sessions/${id}/context`);
    const res = await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 500 } });
    expect(res.status).toBe(201);
    const { entry } = res.body;
    expect(entry).toMatchObject({
      type: "compaction",
      parentId: "a9",
      details: { readFiles: [], modifiedFiles: [] },
    });
    expect(entry.summary).toContain("## Goal");
    expect(entry.summary).toContain("question 0");
    const after = await api("GET", `/v1/sessions/${id}/context`);
    expect(after.body.messages[0]).toMatchObject({ role: "compactionSummary", summary: entry.summary });
    expect(after.body.messages.length).toBeLessThan(before.body.messages.length);
    expect(after.body.messages.slice(1)).toEqual(
      before.body.messages.slice(-(after.body.messages.length - 1)),
    );
    expect((await info(id)).leafId).toBe(entry.id);
  });

  it("takes the summary as given, and keeps the tail in the entry with retainTail", async () => {
    const id = await conversation(6);
    const res = await api("POST", `/v1/sessions/${id}/compact`, {
      body: { keepRecentTokens: 300, summary: "mine", retainTail: true },
    });
    expect(res.status).toBe(201);
    expect(res.body.entry.summary).toBe("mine");
    expect(res.body.entry.retainedTail.length).toBeGreaterThan(0);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages.slice(1)).toEqual(res.body.entry.retainedTail);
  });

  it("answers nothing_to_compact (409) when the leaf is a compaction or nothing would be dropped", async () => {
    const id = await conversation(1);
    expectError(await api("POST", `/v1/sessions/${id}/compact`, { body: {} }), 409, "nothing_to_compact");
    await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 1 } });
    expectError(
      await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 1 } }),
      409,
      "nothing_to_compact",
    );
    expectError(
      await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: -1 } }),
      400,
      "invalid_request",
    );
    expectError(await api("POST", `/v1/sessions/${sid("none")}/compact`, { body: {} }), 404, "not_found");
  });

  it("calls an OpenAI-compatible endpoint with the conversation and stores its usage", async () => {
    const id = await conversation(6);
    const model = `ok-${sid()}`;
    const res = await withModel(model, "POST", `/v1/sessions/${id}/compact`, {
      keepRecentTokens: 300,
      customInstructions: "focus on numbers",
    });
    expect(res.status).toBe(201);
    expect(res.body.entry.summary).toBe(`SUMMARY FROM ${model}`);
    expect(res.body.entry.usage).toEqual({ input: 321, output: 12, totalTokens: 333 });
    const requests = (await (await fetch(`${env.FAKE_LLM_URL}/requests/${model}`)).json()) as any[];
    expect(requests.length).toBe(1);
    expect(requests[0].messages[0].role).toBe("system");
    expect(requests[0].messages[1].content).toContain("[User]: question 0");
    expect(requests[0].messages[1].content).toContain("Additional focus: focus on numbers");
  });

  it("writes nothing when the summarizer fails (502 summarizer_failed)", async () => {
    const id = await conversation(6);
    const before = await info(id);
    const res = await withModel("fail", "POST", `/v1/sessions/${id}/compact`, { keepRecentTokens: 300 });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe("summarizer_failed");
    expect(await info(id)).toEqual(before);
  });

  it("writes nothing (412 leaf_conflict) when a navigation moves the branch while the summary is written", async () => {
    const id = await conversation(6);
    const key = sid("hold");
    const pending = withModel(`hold:${key}`, "POST", `/v1/sessions/${id}/compact`, { keepRecentTokens: 300 });
    await summarizerHolds(key);
    // Meanwhile another client goes back to the start and branches from there.
    expect((await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "q0" } })).status).toBe(200);
    expect(
      (await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("a new direction") })).status,
    ).toBe(201);
    await fetch(`${env.FAKE_LLM_URL}/release/${key}`, { method: "POST" });
    const res = await pending;
    expect(res.status).toBe(412);
    expect(res.body.error.code).toBe("leaf_conflict");
    const compactions = await api("GET", `/v1/sessions/${id}/entries?type=compaction`);
    expect(compactions.body.entries).toEqual([]);
  });

  it("appends at the new leaf when an append only extends the branch while the summary is written", async () => {
    const id = await conversation(6);
    const key = sid("hold");
    const pending = withModel(`hold:${key}`, "POST", `/v1/sessions/${id}/compact`, { keepRecentTokens: 300 });
    await summarizerHolds(key);
    const appended = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("one more") });
    await fetch(`${env.FAKE_LLM_URL}/release/${key}`, { method: "POST" });
    const res = await pending;
    expect(res.status).toBe(201);
    expect(res.body.entry.parentId).toBe(appended.body.leafId);
  });
});

describe("POST /compact while a generation is open", () => {
  it("writes nothing (412 leaf_conflict naming it), and compacts once it ends with its answer in the context", async () => {
    const id = await conversation(6);
    const generation = await openGeneration(id);
    const before = await info(id);
    const refused = await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 300 } });
    expectError(refused, 412, "leaf_conflict");
    expect(refused.body.error.details).toMatchObject({ generationId: generation.id });
    expect(await info(id)).toEqual(before);
    // An entry of any door carrying a compaction is refused alike.
    const [question] = (await api("GET", `/v1/sessions/${id}/entries?limit=1`)).body.entries;
    const byEntry = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { type: "compaction", summary: "S", firstKeptEntryId: question.id, tokensBefore: 10 },
    });
    expectError(byEntry, 412, "leaf_conflict");
    expect(await info(id)).toEqual(before);

    const done = await endGeneration(id, generation.id, "complete", {
      message: assistantMessage("the answer").message,
    });
    expect(done.status).toBe(201);
    const compacted = await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 300 } });
    expect(compacted.status).toBe(201);
    const context = (await api("GET", `/v1/sessions/${id}/context`)).body;
    expect(context.messages[0].role).toBe("compactionSummary");
    expect(context.messages.at(-1)).toMatchObject({ role: "assistant", content: [{ text: "the answer" }] });
  });

  it("writes nothing when a generation opened while the summary was written", async () => {
    const id = await conversation(6);
    const key = sid("hold");
    const pending = withModel(`hold:${key}`, "POST", `/v1/sessions/${id}/compact`, { keepRecentTokens: 300 });
    await summarizerHolds(key);
    const generation = await openGeneration(id);
    await fetch(`${env.FAKE_LLM_URL}/release/${key}`, { method: "POST" });
    const res = await pending;
    expect(res.status).toBe(412);
    expect(res.body.error.code).toBe("leaf_conflict");
    expect(res.body.error.details).toMatchObject({ generationId: generation.id });
    const compactions = await api("GET", `/v1/sessions/${id}/entries?type=compaction`);
    expect(compactions.body.entries).toEqual([]);
  });
});

describe("PUT /leaf with summarize", () => {
  it("summarizes the branch left under the target and makes the summary the leaf", async () => {
    const id = await conversation(3);
    const res = await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "a0", summarize: true } });
    expect(res.status).toBe(200);
    // fromId names the leaf that was left, as pi 1.6 writes it.
    expect(res.body.entry).toMatchObject({ type: "branch_summary", parentId: "a0", fromId: "a2" });
    expect(res.body.leafId).toBe(res.body.entry.id);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages.map((m: { role: string }) => m.role)).toEqual([
      "user",
      "assistant",
      "branchSummary",
    ]);
  });

  it("uses the configured model, and on failure changes nothing (502 branch_summary_failed)", async () => {
    const id = await conversation(3);
    const model = `ok-${sid()}`;
    const ok = await withModel(model, "PUT", `/v1/sessions/${id}/leaf`, { targetId: "q1", summarize: true });
    expect(ok.body.entry.summary).toBe(`SUMMARY FROM ${model}`);
    const before = await info(id);
    const failed = await withModel("fail", "PUT", `/v1/sessions/${id}/leaf`, {
      targetId: "q0",
      summarize: true,
    });
    expect(failed.status).toBe(502);
    expect(failed.body.error.code).toBe("branch_summary_failed");
    expect(await info(id)).toEqual(before);
    // Without a summary the caller can still go.
    const plain = await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: "q0" } });
    expect(plain.body).toMatchObject({ leafId: "q0", record: { type: "leaf", targetId: "q0" } });
  });

  it("writes the summary with no parent when the target is null, fromId naming the leaf left", async () => {
    const id = await conversation(2);
    const res = await api("PUT", `/v1/sessions/${id}/leaf`, { body: { targetId: null, summarize: true } });
    expect(res.body.entry).toMatchObject({ parentId: null, fromId: "a1" });
  });
});

describe("automatic compaction", () => {
  it("compacts in the background once the context passes the budget, and shows its state", async () => {
    const id = await createSession();
    const settings = { contextWindow: 2000, reserveTokens: 500, keepRecentTokens: 300 };
    const patched = await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact: settings } });
    expect(patched.status).toBe(200);
    expect(patched.body.autoCompact).toMatchObject({ ...settings, status: { state: "idle" } });
    const small = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("short") });
    expect(small.status).toBe(201);
    const entries = Array.from({ length: 12 }, (_, i) => userMessage(`message ${i} ${words(150)}`));
    const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    // The append itself is not delayed: it answers with its own entries, compaction comes after.
    expect(res.status).toBe(201);
    expect(res.body.leafId).toBe(res.body.entries[11].id);
    await vi.waitFor(
      async () => {
        const current = await info(id);
        expect((current.autoCompact as any).status).toMatchObject({
          state: "idle",
          lastEntryId: expect.any(String),
        });
      },
      { timeout: 10_000, interval: 50 },
    );
    const compactions = await api("GET", `/v1/sessions/${id}/entries?type=compaction`);
    expect(compactions.body.entries.length).toBe(1);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages[0].role).toBe("compactionSummary");
    expectError(
      await api("PATCH", `/v1/sessions/${id}`, {
        body: { autoCompact: { contextWindow: 100, reserveTokens: 200 } },
      }),
      400,
      "invalid_request",
    );
    // What a compaction keeps must fit in the budget, or each write after it would compact again.
    for (const autoCompact of [
      { contextWindow: 32_000, reserveTokens: 16_384 },
      { contextWindow: 2000, reserveTokens: 500, keepRecentTokens: 1500 },
    ]) {
      const refused = await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact } });
      expectError(refused, 400, "invalid_request");
      expect(JSON.stringify(refused.body.error.details)).toContain("keepRecentTokens");
    }
    expect((await api("GET", `/v1/sessions/${id}`)).body.autoCompact).toMatchObject({ ...settings });
    const off = await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact: null } });
    expect(off.body.autoCompact).toBeUndefined();
  });

  it("waits for an open generation to end, then compacts the branch its answer continues", async () => {
    const id = await createSession();
    const entries = Array.from({ length: 12 }, (_, i) => userMessage(`message ${i} ${words(150)}`));
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    const generation = await openGeneration(id);
    const settings = { contextWindow: 2000, reserveTokens: 500, keepRecentTokens: 300 };
    expect((await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact: settings } })).status).toBe(200);
    // The answer goes under the generation's parent: a compaction there now would be left behind.
    await runDurableObjectAlarm(env.SESSIONS.getByName(sessionObjectName("tenant-a", id)));
    expect((await info(id)).autoCompact).toMatchObject({ status: { state: "idle" } });
    expect((await info(id)).autoCompact as any).not.toHaveProperty("status.lastEntryId");
    expect((await api("GET", `/v1/sessions/${id}/entries?type=compaction`)).body.entries).toEqual([]);
    const answer = assistantMessage("the answer");
    const completed = await endGeneration(id, generation.id, "complete", {
      message: { ...answer.message, usage: { ...answer.message.usage, totalTokens: 5000 } },
    });
    expect(completed.status, completed.text).toBe(201);
    await vi.waitFor(
      async () =>
        expect((await info(id)).autoCompact).toMatchObject({
          status: { state: "idle", lastEntryId: expect.any(String) },
        }),
      { timeout: 10_000, interval: 50 },
    );
    const compactions = (await api("GET", `/v1/sessions/${id}/entries?type=compaction`)).body.entries;
    expect(compactions).toHaveLength(1);
    expect(compactions[0]).toMatchObject({ parentId: generation.id });
    expect((await info(id)).leafId).toBe(compactions[0].id);
    expect(((await info(id)).autoCompact as any).status.lastEntryId).toBe(compactions[0].id);
  });

  it("writes nothing when a generation opens while the summary is written, and compacts after it ends", async () => {
    const id = await createSession();
    const key = sid("hold");
    const settings = { contextWindow: 2000, reserveTokens: 500, keepRecentTokens: 300 };
    expect((await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact: settings } })).status).toBe(200);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    await runInDurableObject(stub, (instance) => {
      const object = instance as unknown as { env: DurableEnv };
      object.env = {
        ...object.env,
        SUMMARIZER_BASE_URL: `${env.FAKE_LLM_URL}/v1`,
        SUMMARIZER_MODEL: `hold:${key}`,
      } as DurableEnv;
    });
    const entries = Array.from({ length: 12 }, (_, i) => userMessage(`message ${i} ${words(150)}`));
    const appended = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    expect(appended.status).toBe(201);
    await summarizerHolds(key);
    expect((await info(id)).autoCompact).toMatchObject({ status: { state: "running" } });
    // The answer goes under the leaf the generation opened on: a compaction there now would be left behind.
    const generation = await openGeneration(id);
    expect(generation.parentId).toBe(appended.body.leafId);
    await fetch(`${env.FAKE_LLM_URL}/release/${key}`, { method: "POST" });
    await vi.waitFor(
      async () => expect((await info(id)).autoCompact).toMatchObject({ status: { state: "idle" } }),
      { timeout: 10_000, interval: 50 },
    );
    expect((await info(id)).autoCompact as any).not.toHaveProperty("status.lastEntryId");
    expect((await api("GET", `/v1/sessions/${id}/entries?type=compaction`)).body.entries).toEqual([]);
    expect((await info(id)).leafId).toBe(appended.body.leafId);
    const answer = assistantMessage("the answer");
    const completed = await endGeneration(id, generation.id, "complete", {
      message: { ...answer.message, usage: { ...answer.message.usage, totalTokens: 5000 } },
    });
    expect(completed.status, completed.text).toBe(201);
    await vi.waitFor(
      async () =>
        expect((await info(id)).autoCompact).toMatchObject({
          status: { state: "idle", lastEntryId: expect.any(String) },
        }),
      { timeout: 10_000, interval: 50 },
    );
    const compactions = (await api("GET", `/v1/sessions/${id}/entries?type=compaction`)).body.entries;
    expect(compactions).toHaveLength(1);
    expect(compactions[0]).toMatchObject({ parentId: generation.id });
    expect((await info(id)).leafId).toBe(compactions[0].id);
  });

  it("measures the context as the whole context path does: a reply's usage and what follows it, or every message", async () => {
    const reply = (id: string, totalTokens: number) => {
      const answer = assistantMessage(`reply ${id} ${words(40)}`);
      return {
        ...answer,
        id,
        message: { ...answer.message, usage: { ...answer.message.usage, totalTokens } },
      };
    };
    const ask = (id: string, n: number) => ({ ...userMessage(`${id} ${words(n)}`), id });
    const system = {
      type: "message",
      id: "sys",
      message: { role: "system", content: "", sections: { rules: words(30) }, timestamp: 1 },
    };
    const shapes = [
      // What follows the last reply counts on top of its usage, once.
      [
        system,
        ask("u1", 300),
        reply("a1", 700),
        ask("u2", 200),
        reply("a2", 1500),
        { ...system, id: "sys2" },
        ask("u3", 150),
      ],
      // An edit after the reply: every message counts.
      [
        ask("u1", 300),
        reply("a1", 700),
        { type: "context_edit", id: "e", targetId: "u1", replacement: { content: "short" } },
        ask("u2", 200),
      ],
      // The reply is in what the latest compaction kept: every message counts.
      [
        ask("u1", 300),
        reply("a1", 700),
        ask("u2", 200),
        reply("a2", 900),
        { type: "compaction", id: "c", summary: words(60), firstKeptEntryId: "u2", tokensBefore: 100 },
        ask("u3", 150),
      ],
      [system, ask("u1", 300), ask("u2", 200), ask("u3", 150)],
    ];
    for (const entries of shapes) {
      const id = await createSession();
      expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
      const session = await new DurableRepo(env as unknown as DurableEnv, "tenant-a").open(id);
      const tokens = estimatePathTokens(await session.storage.getContextPath());
      const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
      const compactsWithin = async (contextWindow: number) => {
        const autoCompact = { contextWindow, reserveTokens: 0, keepRecentTokens: 1 };
        expect((await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact } })).status).toBe(200);
        await runDurableObjectAlarm(stub);
        return ((await info(id)).autoCompact as any).status.lastEntryId !== undefined;
      };
      // The alarm runs when the test says.
      await withObjectEnv(stub, { DIRECTORY_SYNC_MS: "3600000" }, async () => {
        expect(await compactsWithin(tokens)).toBe(false);
        expect(await compactsWithin(tokens - 1)).toBe(true);
      });
    }
  });

  it("says a compaction the object was evicted in the middle of failed, and compacts after the next write", async () => {
    const id = await createSession();
    const settings = { contextWindow: 2000, reserveTokens: 500, keepRecentTokens: 300 };
    expect((await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact: settings } })).status).toBe(200);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    // What the object stores as it calls the summarizer, then it is evicted before the answer.
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE session SET auto_compaction = ?", JSON.stringify({ state: "running" }));
    });
    await evictDurableObject(stub);
    const status = ((await info(id)).autoCompact as any).status;
    expect(status).toMatchObject({ state: "failed", lastError: expect.stringContaining("interrupted") });
    const entries = Array.from({ length: 12 }, (_, i) => userMessage(`message ${i} ${words(150)}`));
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    await vi.waitFor(
      async () =>
        expect((await info(id)).autoCompact).toMatchObject({
          status: { state: "idle", lastEntryId: expect.any(String) },
        }),
      { timeout: 10_000, interval: 50 },
    );
  });
});

describe("the context path the object reads for Session.buildContext and compaction", () => {
  const system = (id: string) => ({
    type: "message",
    id,
    message: { role: "system", content: "", sections: { rules: "be brief" }, timestamp: 1_700_000_000_000 },
  });

  it("keeps what a compaction kept when its first kept entry is a system message", async () => {
    const id = await createSession();
    const entries = [
      { ...userMessage(`first question ${words(40)}`), id: "u1" },
      system("sys"),
      { ...userMessage("second question about otters"), id: "u2" },
      { ...assistantMessage("otters hold hands"), id: "a2" },
      { type: "compaction", id: "c", summary: "S", firstKeptEntryId: "sys", tokensBefore: 100 },
      { ...userMessage("third question"), id: "u3" },
    ];
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    const { version: _, ...http } = (await api("GET", `/v1/sessions/${id}/context`)).body;
    expect(http.messages.map((m: { role: string }) => m.role)).toEqual([
      "compactionSummary",
      "user",
      "assistant",
      "user",
    ]);
    const session = await new DurableRepo(env as unknown as DurableEnv, "tenant-a").open(id);
    expect(await session.buildContext()).toEqual(http);
    expect(await session.buildContext({ leafId: "u3" })).toEqual(http);

    const res = await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 1 } });
    expect(res.status).toBe(201);
    expect(res.body.entry.summary).toContain("otters");
  });

  it("lands a compaction on a branch that left the latest one, as the Node backends do", async () => {
    // An older compaction (x) the latest one (p) left out of the context, then a compaction cut
    // (at u3) inside what p kept: meanwhile the branch goes back under p and grows elsewhere.
    const entries = [
      { ...userMessage(`goal ${words(50)}`), id: "u1" },
      { ...assistantMessage("first answer"), id: "a1" },
      { type: "compaction", id: "x", summary: "X", firstKeptEntryId: "a1", tokensBefore: 100 },
      { ...userMessage(`second ${words(200)}`), id: "u2" },
      { ...assistantMessage(`second answer ${words(200)}`), id: "a2" },
      { ...userMessage(`third ${words(200)}`), id: "u3" },
      { ...assistantMessage(`third answer ${words(200)}`), id: "a3" },
      { type: "compaction", id: "p", summary: "P", firstKeptEntryId: "u2", tokensBefore: 900 },
      { ...userMessage("fourth"), id: "u4" },
      { ...assistantMessage("fourth answer"), id: "a4" },
    ];
    const outcome = async (session: Session) => {
      const moving: Summarizer = {
        name: "slow",
        async summarize() {
          await session.setLeafId("a3");
          await session.appendMessage(userMessage("another way").message as AgentMessage);
          return { text: "summary" };
        },
      };
      const entry = await session.compact({ keepRecentTokens: 300, summarizer: moving }).catch((e) => e);
      if (entry instanceof SessionError) return { code: entry.code };
      const { messages } = await session.buildContext();
      return { firstKeptEntryId: entry.firstKeptEntryId, context: messages.map((m) => m.role) };
    };
    const memory = await new MemoryRepo().create();
    await memory.storage.appendEntries(entries as AppendEntryInput[]);
    const id = await createSession();
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    const durable = await new DurableRepo(env as unknown as DurableEnv, "tenant-a").open(id);
    const expected = {
      firstKeptEntryId: "u3",
      context: ["compactionSummary", "user", "assistant", "user"],
    };
    expect(await outcome(memory)).toEqual(expected);
    expect(await outcome(durable)).toEqual(expected);
  });

  it("keeps the latest settings when a LangGraph checkpoint holds the messages", async () => {
    const id = await createSession();
    const entries = [
      { type: "thinking_level_change", id: "t", thinkingLevel: "high" },
      { type: "model_change", id: "m", provider: "anthropic", modelId: "claude" },
      { ...userMessage("before the checkpoint"), id: "u1" },
      {
        type: "custom",
        id: "cp",
        customType: "langgraph:checkpoint",
        data: {
          values: {
            messages: {
              type: "json",
              json: [
                {
                  lc: 1,
                  type: "constructor",
                  id: ["langchain_core", "messages", "HumanMessage"],
                  kwargs: { id: "h1", content: "held", additional_kwargs: {}, response_metadata: {} },
                },
              ],
            },
          },
        },
      },
      { ...userMessage("after the checkpoint"), id: "u2" },
    ];
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    const { version: _, ...http } = (await api("GET", `/v1/sessions/${id}/context`)).body;
    expect(http).toMatchObject({
      thinkingLevel: "high",
      model: { provider: "anthropic", modelId: "claude" },
    });
    const session = await new DurableRepo(env as unknown as DurableEnv, "tenant-a").open(id);
    expect(await session.buildContext()).toEqual(http);
  });
});
