/*
 * pi 1.6's compaction against ours.
 *
 * 1. Ported from earendil-works/pi, packages/coding-agent/test/compaction.test.ts (MIT), as stored
 *    at commit c16bded4ae5bc4ba93f7a62b3750cc6270ba1b21: the cases that file adds to the ones
 *    test/interop/compaction.test.ts ports from 0.73 (a reply whose usage is all zeros is no
 *    anchor, custom messages count in the cut's budget, "prepareCompaction with previous
 *    compaction"). Its other cases are the 0.73 ones, ported there already. pi's functions map to
 *    ours as in that file (getLastAssistantUsage → assistantUsage, findCutPoint → findCut with
 *    prepareCompaction for a split turn), and pi 1.6's own functions answer beside ours.
 * 2. pi 1.6 itself as the oracle: on random sessions its SessionManager writes, our `findCut`
 *    equals pi's `findCutPoint`, and our `prepareCompaction` plans what pi 1.6's plans (where the
 *    kept part starts, what is summarized whole and as a split turn's prefix, the size before,
 *    the previous summary, the files; nothing to summarize is no plan in both), except where
 *    docs/pi.md records a deliberate difference: a kept part never begins between a tool call and
 *    its result (tested at the end).
 */
import {
  type SessionEntry as PiEntry,
  findCutPoint as piFindCutPoint,
  SessionManager,
} from "@earendil-works/pi-coding-agent";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
// The package's exports list leaves its compaction planner out; it is read from its own file.
import {
  estimateContextTokens as piEstimateContextTokens,
  getLastAssistantUsage as piGetLastAssistantUsage,
  prepareCompaction as piPrepareCompaction,
} from "../../../node_modules/@earendil-works/pi-coding-agent/dist/core/compaction/compaction.js";
import { computeFileLists } from "../../../node_modules/@earendil-works/pi-coding-agent/dist/core/compaction/utils.js";
import { prepareCompaction } from "../../../src/core/compaction";
import { findCut } from "../../../src/core/compaction-cut";
import type { TreeEntry } from "../../../src/core/entries";
import { SessionError } from "../../../src/core/errors";
import { MemoryRepo } from "../../../src/core/memory";
import type { AgentMessage } from "../../../src/core/messages";
import { parsePi } from "../../../src/core/pi-format";
import { estimateContextTokens, estimateTokens } from "../../../src/core/tokens";
import { expectCode } from "../../conformance/storage";
import { backends } from "../backends";
import { contextOf, lastAssistantUsage, PiSessionManager, piFileText } from "../pi-adapter";
import { sessionArbitrary, writePiSession } from "./pi16-sessions";

const usage = (input: number, output: number) => ({
  input,
  output,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: input + output,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});

function userMessage(text: string): AgentMessage {
  return { role: "user", content: text, timestamp: 1 };
}

function assistantMessage(text: string, tokens = usage(100, 50)): AgentMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    usage: tokens,
    stopReason: "stop",
    timestamp: 1,
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
  } as AgentMessage;
}

/** pi's test helper: entries chained in order, ids `test-id-<n>`. */
function chain() {
  let n = 0;
  let last: string | null = null;
  const entries: object[] = [];
  const next = (fields: Record<string, unknown>) => {
    const id = `test-id-${n++}`;
    entries.push({
      id,
      parentId: last,
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
      ...fields,
    });
    last = id;
    return id;
  };
  return {
    entries,
    message: (message: AgentMessage) => next({ type: "message", message }),
    compaction: (summary: string, firstKeptEntryId: string) =>
      next({ type: "compaction", summary, firstKeptEntryId, tokensBefore: 10000 }),
    customMessage: (content: string) =>
      next({ type: "custom_message", customType: "test", content, display: true }),
  };
}

function text(messages: readonly AgentMessage[]): string {
  return messages
    .map((m) => {
      const content = (m as { content?: unknown }).content;
      if (typeof content === "string") return content;
      if (Array.isArray(content)) return content.map((p) => (p as { text?: string }).text ?? "").join(" ");
      return String((m as { summary?: unknown }).summary ?? "");
    })
    .join("\n");
}

describe("estimateContextTokens", () => {
  it("uses the last non-zero assistant usage as the context anchor", () => {
    const messages = [
      userMessage("Hello"),
      assistantMessage("Hi", usage(100, 50)),
      userMessage("continue"),
      assistantMessage("Partial thinking", usage(0, 0)),
    ];

    const pi = piEstimateContextTokens(messages as never);
    expect(pi.usageTokens).toBe(150);
    expect(pi.lastUsageIndex).toBe(1);
    const trailing =
      estimateTokens(messages[2] as AgentMessage) + estimateTokens(messages[3] as AgentMessage);
    expect(trailing).toBeGreaterThan(0);
    expect(estimateContextTokens(messages)).toBe(150 + trailing);
    expect(estimateContextTokens(messages)).toBe(pi.tokens);
  });
});

describe.each(backends())("getLastAssistantUsage and findCutPoint in pi 1.6 ($name)", (backend) => {
  it("should skip all-zero assistant usage", async () => {
    const c = chain();
    c.message(userMessage("Hello"));
    c.message(assistantMessage("Hi", usage(100, 50)));
    c.message(userMessage("continue"));
    c.message(assistantMessage("Partial", usage(0, 0)));

    expect(piGetLastAssistantUsage(c.entries as never)?.input).toBe(100);
    const context = await contextOf(backend, c.entries);
    expect(lastAssistantUsage(context.messages)?.input).toBe(100);
  });

  it("should budget context-visible custom message entries", async () => {
    const c = chain();
    c.message(userMessage("hi"));
    c.message(assistantMessage("hello"));
    const custom = c.customMessage("x".repeat(4000));
    const ok = c.message(assistantMessage("ok"));
    expect(piFindCutPoint(c.entries as PiEntry[], 0, c.entries.length, 1)).toEqual({
      firstKeptEntryIndex: 3,
      isSplitTurn: true,
      turnStartIndex: 2,
    });
    expect(piFindCutPoint(c.entries as PiEntry[], 0, c.entries.length, 2)).toEqual({
      firstKeptEntryIndex: 2,
      isSplitTurn: false,
      turnStartIndex: -1,
    });
    const path = (await (
      await PiSessionManager.open(await backend.repo(), piFileText(c.entries))
    ).getBranch()) as TreeEntry[];

    // A budget of one token keeps the last reply: the custom message opens its turn, summarized apart.
    expect(findCut(path, 0, path.length, 1)).toBe(3);
    const tinyBudget = prepareCompaction(path, { keepRecentTokens: 1 });
    expect(tinyBudget.firstKeptEntryId).toBe(ok);
    expect(text(tinyBudget.turnPrefixMessages)).toBe("x".repeat(4000));

    expect(findCut(path, 0, path.length, 2)).toBe(2);
    const customFitsBudget = prepareCompaction(path, { keepRecentTokens: 2 });
    expect(customFitsBudget.firstKeptEntryId).toBe(custom);
    expect(customFitsBudget.turnPrefixMessages).toEqual([]);
  });
});

describe.each(backends())("prepareCompaction with previous compaction ($name)", (backend) => {
  it("should skip repeated compactions when kept messages still fit", async () => {
    const c = chain();
    c.message(userMessage("user msg 1 (summarized by compaction1)"));
    c.message(assistantMessage("assistant msg 1"));
    const u2 = c.message(userMessage("user msg 2 - kept by compaction1"));
    c.message(assistantMessage("assistant msg 2"));
    c.message(userMessage("user msg 3 - kept by compaction1"));
    c.message(assistantMessage("assistant msg 3", usage(5000, 1000)));
    c.compaction("First summary", u2);
    c.message(userMessage("user msg 4 (new after compaction1)"));
    c.message(assistantMessage("assistant msg 4", usage(8000, 2000)));

    expect(
      piPrepareCompaction(c.entries as PiEntry[], {
        enabled: true,
        reserveTokens: 16384,
        keepRecentTokens: 20000,
      }),
    ).toBeUndefined();
    // No plan here either: nothing_to_compact.
    const session = (await PiSessionManager.open(await backend.repo(), piFileText(c.entries))).session;
    const branch = await session.getBranch();
    await expectCode(
      Promise.resolve().then(() => prepareCompaction(branch, { keepRecentTokens: 20000 })),
      "nothing_to_compact",
    );
    await expectCode(session.compact({ summary: "S", keepRecentTokens: 20000 }), "nothing_to_compact");
    expect(await session.getEntries()).toHaveLength(c.entries.length);
  });

  it("should re-summarize previously kept messages when the recent window moves past them", async () => {
    const c = chain();
    c.message(userMessage("user msg 1 (summarized by compaction1)".repeat(4)));
    c.message(assistantMessage("assistant msg 1".repeat(4)));
    const u2 = c.message(userMessage("user msg 2 - kept by compaction1 ".repeat(12)));
    c.message(assistantMessage("assistant msg 2 ".repeat(12)));
    c.message(userMessage("user msg 3 - kept by compaction1 ".repeat(12)));
    c.message(assistantMessage("assistant msg 3 ".repeat(12), usage(5000, 1000)));
    c.compaction("First summary", u2);
    c.message(userMessage("user msg 4 (new after compaction1) ".repeat(12)));
    c.message(assistantMessage("assistant msg 4 ".repeat(12), usage(8000, 2000)));
    const path = await (await PiSessionManager.open(await backend.repo(), piFileText(c.entries))).getBranch();
    const preparation = prepareCompaction(path as TreeEntry[], { keepRecentTokens: 100 });
    const summarized = text(preparation.messagesToSummarize);
    expect(summarized).toContain("user msg 2 - kept by compaction1");
    expect(summarized).toContain("user msg 3 - kept by compaction1");
    expect(summarized).not.toContain("First summary");
    expect(preparation.previousSummary).toBe("First summary");
  });
});

/** pi 1.6's reading of a session file: the branch to its head. */
function piBranch(text: string): PiEntry[] {
  const [header, ...entries] = text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  return SessionManager.inMemory("/work", { id: header.id }, entries).getBranch();
}

/** The head's branch of a pi file, as our memory backend stores it. */
async function ourBranch(text: string): Promise<TreeEntry[]> {
  const session = await new MemoryRepo().importSession(parsePi(text));
  return (await session.getBranch()).map(({ seq: _seq, ...entry }) => entry as TreeEntry);
}

describe("findCutPoint and prepareCompaction, against pi 1.6", () => {
  const keep = fc.integer({ min: 1, max: 600 });

  it("cut the raw path where pi 1.6's findCutPoint cuts it", async () => {
    await fc.assert(
      fc.asyncProperty(sessionArbitrary, keep, async (ops, keepRecentTokens) => {
        const text = writePiSession(ops);
        const branch = piBranch(text);
        const ours = await ourBranch(text);
        const pi = piFindCutPoint(branch, 0, branch.length, keepRecentTokens);
        expect(findCut(ours, 0, ours.length, keepRecentTokens)).toBe(pi.firstKeptEntryIndex);
      }),
      { numRuns: 150 },
    );
  });

  it("plan what pi 1.6's prepareCompaction plans", async () => {
    let compared = 0;
    await fc.assert(
      fc.asyncProperty(sessionArbitrary, keep, async (ops, keepRecentTokens) => {
        const text = writePiSession(ops);
        const branch = piBranch(text);
        const ours = await ourBranch(text);
        const pi = piPrepareCompaction(branch, { enabled: true, reserveTokens: 16384, keepRecentTokens });
        let plan: ReturnType<typeof prepareCompaction> | undefined;
        try {
          plan = prepareCompaction(ours, { keepRecentTokens });
        } catch (error) {
          expect(error).toBeInstanceOf(SessionError);
          expect((error as SessionError).code).toBe("nothing_to_compact");
        }
        if (!pi || (pi.messagesToSummarize.length === 0 && pi.turnPrefixMessages.length === 0)) {
          expect(plan).toBeUndefined();
          return;
        }
        compared++;
        expect(plan).toBeDefined();
        if (!plan) return;
        expect(plan.firstKeptEntryId).toBe(pi.firstKeptEntryId);
        expect(plan.messagesToSummarize).toEqual(pi.messagesToSummarize);
        expect(plan.turnPrefixMessages).toEqual(pi.turnPrefixMessages);
        expect(plan.tokensBefore).toBe(pi.tokensBefore);
        expect(plan.previousSummary).toBe(pi.previousSummary);
        const files = computeFileLists(pi.fileOps);
        expect({ readFiles: plan.readFiles, modifiedFiles: plan.modifiedFiles }).toEqual(files);
      }),
      { numRuns: 200 },
    );
    expect(compared).toBeGreaterThan(50);
  });
});

describe("a failed attempt an edit left out, against pi 1.6", () => {
  it("moves the cut past it, as pi 1.6 does", async () => {
    const sm = SessionManager.inMemory("/work");
    sm.appendMessage({ role: "user", content: "first ".repeat(100), timestamp: 1 });
    sm.appendMessage(assistantMessage("first answer ".repeat(50)) as never);
    sm.appendMessage({ role: "user", content: "second ".repeat(100), timestamp: 3 });
    const attempt = sm.appendMessage({
      ...(assistantMessage("oops") as object),
      stopReason: "error",
      errorMessage: "overloaded",
    } as never);
    sm.appendContextEdit(attempt, null);
    const text = `${[sm.getHeader(), ...sm.getEntries()].map((line) => JSON.stringify(line)).join("\n")}\n`;
    const pi = piPrepareCompaction(piBranch(text), {
      enabled: true,
      reserveTokens: 16384,
      keepRecentTokens: 10,
    });
    expect(pi?.firstKeptEntryId).toBe(attempt);
    const plan = prepareCompaction(await ourBranch(text), { keepRecentTokens: 10 });
    expect(plan.firstKeptEntryId).toBe(attempt);
    expect(plan.messagesToSummarize).toEqual(pi?.messagesToSummarize);
  });
});

describe.each(backends())("the deliberate difference from pi 1.6's compaction ($name)", (backend) => {
  it("never begins the kept part between a tool call and its result (pi cuts at a user message there)", async () => {
    const call = {
      role: "assistant",
      content: [{ type: "toolCall", id: "c1", name: "read", arguments: { path: "a.ts" } }],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "m",
      usage: usage(1, 1),
      stopReason: "toolUse",
      timestamp: 1,
    } as AgentMessage;
    const c = chain();
    c.message(userMessage("start ".repeat(200)));
    c.message(call);
    const steer = c.message(userMessage("steering while the tool runs"));
    c.message({
      role: "toolResult",
      toolCallId: "c1",
      toolName: "read",
      content: [{ type: "text", text: "x".repeat(400) }],
      isError: false,
      timestamp: 1,
    } as AgentMessage);
    const manager = await PiSessionManager.open(await backend.repo(), piFileText(c.entries));
    const path = (await manager.getBranch()) as TreeEntry[];
    const pi = piFindCutPoint(path as never, 0, path.length, 50);
    expect(path[pi.firstKeptEntryIndex]?.id).toBe(steer);
    const ours = findCut(path, 0, path.length, 50);
    expect(ours).toBe(1);
  });
});
