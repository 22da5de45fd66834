import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { prepareCompaction } from "../../src/core/compaction";
import type { TreeEntry } from "../../src/core/entries";
import { MAX_CONTEXT_TOKENS } from "../../src/core/limits";
import type { SessionObject } from "../../src/durable/internal";
import { sessionObjectName } from "../../src/durable/internal";
import worker from "../../src/worker";
import { api, createSession, expectError, info, KEY_A } from "./helpers";

/*
 * A compaction of a history too long to hold reads its start and its end, and only counts the
 * middle: what it writes (the cut, the size before, the files touched) is what reading the whole
 * path gives, and the summarizer is told what it was not shown instead of being sent it.
 */

const OUTPUT = 1024 * 1024;
const TURNS = 12;
const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

const assistantCall = (i: number, reported = 1) => ({
  type: "message",
  message: {
    role: "assistant",
    content: [
      { type: "text", text: `reading file ${i}` },
      {
        type: "toolCall",
        id: `call-${i}`,
        name: i % 3 === 0 ? "edit" : "read",
        arguments: { path: `src/f${i}.ts` },
      },
    ],
    api: "openai-completions",
    provider: "openai",
    model: "gpt-4o",
    usage: {
      input: reported,
      output: reported,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "toolUse",
    timestamp: 1_700_000_000_000 + i,
  },
});

const toolOutput = (i: number) => ({
  type: "message",
  message: {
    role: "toolResult",
    toolCallId: `call-${i}`,
    toolName: i % 3 === 0 ? "edit" : "read",
    content: [{ type: "text", text: `MIDDLE-${i} ${"x".repeat(OUTPUT)}` }],
    isError: false,
    timestamp: 1_700_000_000_000 + i,
  },
});

const user = (text: string) => ({
  type: "message",
  message: { role: "user", content: text, timestamp: 1_700_000_000_000 },
});

/**
 * A session of TURNS turns, each reading a megabyte, past what a compaction reads whole. Its replies
 * report usage unless `reported` is 0; then a compaction's size before is estimated from the text.
 */
async function longSession(reported = 1): Promise<string> {
  const id = await createSession();
  expect(
    (await api("POST", `/v1/sessions/${id}/entries`, { body: user("goal: port the parser to Rust") })).status,
  ).toBe(201);
  for (let i = 0; i < TURNS; i++) {
    const res = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { entries: [user(`step ${i}`), assistantCall(i, reported), toolOutput(i)] },
    });
    expect(res.status).toBe(201);
  }
  const tail = [
    user("last question"),
    {
      ...assistantCall(99, reported),
      message: {
        ...assistantCall(99, reported).message,
        content: [{ type: "text", text: "last answer" }],
        stopReason: "stop",
      },
    },
  ];
  expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries: tail } })).status).toBe(201);
  return id;
}

/** The whole path, read page by page, as a storage without bounded compaction gives it. */
async function wholePath(id: string): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [];
  for (let after = 0; ; ) {
    const page = (await api("GET", `/v1/sessions/${id}/entries?after=${after}&limit=5`)).body.entries;
    entries.push(...page);
    if (page.length < 5) return entries;
    after = page.at(-1).seq;
  }
}

describe("compaction of a history too long to hold", () => {
  it("writes what reading the whole path would: the same cut, size before and files", async () => {
    const id = await longSession();
    const whole = prepareCompaction(await wholePath(id), { keepRecentTokens: 50 });
    const res = await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 50 } });
    expect(res.status, res.text).toBe(201);
    const { entry } = res.body;
    expect(entry.firstKeptEntryId).toBe(whole.firstKeptEntryId);
    expect(entry.tokensBefore).toBe(whole.tokensBefore);
    expect(entry.details).toEqual({ readFiles: whole.readFiles, modifiedFiles: whole.modifiedFiles });
    expect(entry.details.readFiles).toContain("src/f5.ts");
    expect(entry.details.modifiedFiles).toContain("src/f6.ts");
    // The extractive summary still knows the goal, from the start it read.
    expect(entry.summary).toContain("## Goal\ngoal: port the parser to Rust");
    const context = (await api("GET", `/v1/sessions/${id}/context`)).body;
    expect(context.messages[0].role).toBe("compactionSummary");
  });

  it("counts the middle's tool outputs stored as blobs by their values, not their references", async () => {
    // No usage reported: the size before is every message's text, the middle's counted in place.
    const id = await longSession(0);
    expect((await api("GET", `/v1/sessions/${id}`)).body.blobBytes).toBeGreaterThan((TURNS - 1) * OUTPUT);
    const whole = prepareCompaction(await wholePath(id), { keepRecentTokens: 50 });
    expect(whole.tokensBefore).toBeGreaterThan((TURNS * OUTPUT) / 4);
    const res = await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 50 } });
    expect(res.status, res.text).toBe(201);
    const { entry } = res.body;
    expect(entry.firstKeptEntryId).toBe(whole.firstKeptEntryId);
    // A reference's few characters stand for the value's length: a token at most apart per blob.
    expect(Math.abs(entry.tokensBefore - whole.tokensBefore)).toBeLessThanOrEqual(TURNS);
  });

  it("answers nothing_to_compact without reading the path when it holds less than keepRecentTokens", async () => {
    const id = await longSession(0);
    const before = await info(id);
    const keep = 9_000_000;
    // The object plans no read of the whole path: it answers at once.
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const plan = await runInDurableObject(stub, (instance: SessionObject) =>
      instance.compactionPlan(before.leafId as string, keep),
    );
    expect(plan).toMatchObject({ ok: false, error: { code: "nothing_to_compact" } });
    const res = await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: keep } });
    expectError(res, 409, "nothing_to_compact");
    expect(await info(id)).toMatchObject({ entryCount: before.entryCount, leafId: before.leafId });
  });

  it(`refuses a keepRecentTokens or a contextWindow over ${MAX_CONTEXT_TOKENS} tokens, writing nothing`, async () => {
    const id = await createSession();
    const before = await info(id);
    const over = MAX_CONTEXT_TOKENS + 1;
    expectError(
      await api("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: over } }),
      400,
      "invalid_request",
    );
    expectError(
      await api("PATCH", `/v1/sessions/${id}`, {
        body: { autoCompact: { contextWindow: over, reserveTokens: 16_384 } },
      }),
      400,
      "invalid_request",
    );
    expect(await info(id)).toEqual(before);
    const largest = { contextWindow: MAX_CONTEXT_TOKENS, reserveTokens: 16_384 };
    const patched = await api("PATCH", `/v1/sessions/${id}`, { body: { autoCompact: largest } });
    expect(patched.status, patched.text).toBe(200);
  });

  it("tells a model summarizer what it left out instead of sending it", async () => {
    const id = await longSession();
    const model = `bounded-${id}`;
    const res = await worker.fetch(
      new Request(`http://sessions.test/v1/sessions/${id}/compact`, {
        method: "POST",
        headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/json" },
        body: JSON.stringify({ keepRecentTokens: 50 }),
      }),
      { ...env, SUMMARIZER_BASE_URL: `${env.FAKE_LLM_URL}/v1`, SUMMARIZER_MODEL: model } as never,
      ctx(),
    );
    expect(res.status).toBe(201);
    const requests = (await (await fetch(`${env.FAKE_LLM_URL}/requests/${model}`)).json()) as unknown[];
    expect(requests).toHaveLength(1);
    const prompt = JSON.stringify(requests[0]);
    expect(prompt).toContain("goal: port the parser to Rust");
    expect(prompt).toMatch(/earlier messages \(about \d+ tokens\) are not shown/);
    // The middle's outputs were counted, not sent.
    expect(prompt).not.toContain("MIDDLE-5");
    expect(prompt.length).toBeLessThan(2 * OUTPUT);
  });
});

describe("a branch summary of a branch too long to hold", () => {
  it("reads the branch's start and end and tells the summarizer what it left out", async () => {
    const id = await createSession();
    const goal = await api("POST", `/v1/sessions/${id}/entries`, {
      body: user("goal: port the parser to Rust"),
    });
    expect(goal.status).toBe(201);
    const goalId = goal.body.entries[0].id;
    for (let i = 1; i <= TURNS; i++) {
      const res = await api("POST", `/v1/sessions/${id}/entries`, {
        body: user(`MIDDLE-${i} ${"y".repeat(OUTPUT)}`),
      });
      expect(res.status).toBe(201);
    }
    const left = (await api("GET", `/v1/sessions/${id}`)).body.leafId;
    const model = `branch-${id}`;
    const res = await worker.fetch(
      new Request(`http://sessions.test/v1/sessions/${id}/leaf`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/json" },
        body: JSON.stringify({ targetId: goalId, summarize: true }),
      }),
      { ...env, SUMMARIZER_BASE_URL: `${env.FAKE_LLM_URL}/v1`, SUMMARIZER_MODEL: model } as never,
      ctx(),
    );
    const moved = (await res.json()) as { leafId: string; entry: { parentId: string; fromId: string } };
    expect(res.status, JSON.stringify(moved)).toBe(200);
    expect(moved.entry).toMatchObject({ parentId: goalId, fromId: left });
    const requests = (await (await fetch(`${env.FAKE_LLM_URL}/requests/${model}`)).json()) as unknown[];
    expect(requests).toHaveLength(1);
    const prompt = JSON.stringify(requests[0]);
    // The branch's first and last messages are shown, its middle counted.
    expect(prompt).toContain("MIDDLE-1 ");
    expect(prompt).toContain(`MIDDLE-${TURNS} `);
    expect(prompt).not.toContain("MIDDLE-5 ");
    expect(prompt).toMatch(/earlier messages \(about \d+ tokens\) are not shown/);
    expect(prompt.length).toBeLessThan(4 * OUTPUT);
  });
});
