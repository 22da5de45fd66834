/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/compaction.test.ts, at commit
 * 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT). Entries are written as a pi file and imported
 * into each backend; pi's functions map to ours:
 *
 *   calculateContextTokens → usageTokens          getLastAssistantUsage → assistantUsage
 *   shouldCompact          → compactIfNeeded      findCutPoint → findCut (+ prepareCompaction for
 *   buildSessionContext    → Session.buildContext                the start of a split turn)
 *
 * "LLM summarization" (skipped in pi without an API key) runs here with the built-in extractive
 * summarizer. Not ported: "shouldCompact should return false when disabled": `compactIfNeeded` has
 * no switch, the caller decides whether to call it (the service's own is off unless configured).
 * Deliberate difference, tested at the end: where pi's cut leaves nothing to summarize, pi still
 * writes a compaction; here that is `nothing_to_compact` and nothing is written.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { findCutPoint as piFindCutPoint } from "@mariozechner/pi-coding-agent";
import { beforeEach, describe, expect, it } from "vitest";
import { compactIfNeeded } from "../../src/core/agent";
import { DEFAULT_KEEP_RECENT_TOKENS, prepareCompaction } from "../../src/core/compaction";
import { findCut } from "../../src/core/compaction-cut";
import type { MessageEntry, TreeEntry } from "../../src/core/entries";
import type { AgentMessage, AssistantMessage, Usage } from "../../src/core/messages";
import { parsePi } from "../../src/core/pi-format";
import type { Session } from "../../src/core/session";
import { ExtractiveSummarizer } from "../../src/core/summarizers/extractive";
import { usageTokens } from "../../src/core/tokens";
import { expectCode } from "../conformance/storage";
import type { Backend } from "./backends";
import { backends } from "./backends";
import { contextOf, lastAssistantUsage, PiSessionManager, piFileText } from "./pi-adapter";

// ============================================================================
// Test fixtures
// ============================================================================

const largeSession = readFileSync(join(import.meta.dirname, "../fixtures/pi/large-session.jsonl"), "utf-8");

async function loadLargeSession(backend: Backend): Promise<Session> {
  return (await backend.repo()).importSession(parsePi(largeSession));
}

function createMockUsage(input: number, output: number, cacheRead = 0, cacheWrite = 0): Usage {
  return {
    input,
    output,
    cacheRead,
    cacheWrite,
    totalTokens: input + output + cacheRead + cacheWrite,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

function createUserMessage(text: string): AgentMessage {
  return { role: "user", content: text, timestamp: Date.now() };
}

function createAssistantMessage(text: string, usage?: Usage): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    usage: usage || createMockUsage(100, 50),
    stopReason: "stop",
    timestamp: Date.now(),
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
  };
}

let entryCounter = 0;
let lastId: string | null = null;

function resetEntryCounter() {
  entryCounter = 0;
  lastId = null;
}

// Reset counter before each test to get predictable IDs
beforeEach(() => {
  resetEntryCounter();
});

function nextEntry<T extends object>(fields: T) {
  const id = `test-id-${entryCounter++}`;
  const entry = { id, parentId: lastId, timestamp: new Date().toISOString(), ...fields };
  lastId = id;
  return entry;
}

const createMessageEntry = (message: AgentMessage) => nextEntry({ type: "message" as const, message });
const createCompactionEntry = (summary: string, firstKeptEntryId: string) =>
  nextEntry({ type: "compaction" as const, summary, firstKeptEntryId, tokensBefore: 10000 });
const createModelChangeEntry = (provider: string, modelId: string) =>
  nextEntry({ type: "model_change" as const, provider, modelId });
const createThinkingLevelEntry = (thinkingLevel: string) =>
  nextEntry({ type: "thinking_level_change" as const, thinkingLevel });

/** The entries as a backend stores them: root → last. */
async function stored(backend: Backend, entries: readonly object[]): Promise<TreeEntry[]> {
  const manager = await PiSessionManager.open(await backend.repo(), piFileText(entries));
  return manager.getBranch();
}

const extractive = new ExtractiveSummarizer();
const summaryOf = (message: AgentMessage | undefined) => String(message?.summary);

// ============================================================================
// Unit tests
// ============================================================================

describe("Token calculation", () => {
  it("should calculate total context tokens from usage", () => {
    const usage = createMockUsage(1000, 500, 200, 100);
    expect(usageTokens(usage)).toBe(1800);
  });

  it("should handle zero values", () => {
    const usage = createMockUsage(0, 0, 0, 0);
    expect(usageTokens(usage)).toBe(0);
  });

  it("adds up the parts when the usage has no totalTokens (pi before December 2025)", () => {
    expect(usageTokens({ input: 1000, output: 500, cacheRead: 200, cacheWrite: 100 })).toBe(1800);
  });
});

for (const backend of backends()) {
  describe(`getLastAssistantUsage (${backend.name})`, () => {
    it("should find the last non-aborted assistant message usage", async () => {
      const ctx = await contextOf(backend, [
        createMessageEntry(createUserMessage("Hello")),
        createMessageEntry(createAssistantMessage("Hi", createMockUsage(100, 50))),
        createMessageEntry(createUserMessage("How are you?")),
        createMessageEntry(createAssistantMessage("Good", createMockUsage(200, 100))),
      ]);

      const usage = lastAssistantUsage(ctx.messages);
      expect(usage).not.toBeUndefined();
      expect(usage?.input).toBe(200);
    });

    it("should skip aborted messages", async () => {
      const abortedMsg: AssistantMessage = {
        ...createAssistantMessage("Aborted", createMockUsage(300, 150)),
        stopReason: "aborted",
      };

      const ctx = await contextOf(backend, [
        createMessageEntry(createUserMessage("Hello")),
        createMessageEntry(createAssistantMessage("Hi", createMockUsage(100, 50))),
        createMessageEntry(createUserMessage("How are you?")),
        createMessageEntry(abortedMsg),
      ]);

      const usage = lastAssistantUsage(ctx.messages);
      expect(usage).not.toBeUndefined();
      expect(usage?.input).toBe(100);
    });

    it("should return undefined if no assistant messages", async () => {
      const ctx = await contextOf(backend, [createMessageEntry(createUserMessage("Hello"))]);
      expect(lastAssistantUsage(ctx.messages)).toBeUndefined();
    });
  });

  describe(`shouldCompact (${backend.name})`, () => {
    async function sessionAt(contextTokens: number): Promise<Session> {
      const manager = await PiSessionManager.create(await backend.repo());
      for (let i = 0; i < 4; i++) {
        await manager.appendMessage(createUserMessage(`question ${i} ${"word ".repeat(50)}`));
        await manager.appendMessage(createAssistantMessage(`answer ${i}`, createMockUsage(contextTokens, 0)));
      }
      return manager.session;
    }

    it("should compact when context exceeds threshold", async () => {
      const settings = {
        contextWindow: 100000,
        reserveTokens: 10000,
        keepRecentTokens: 10,
        summarizer: extractive,
      };

      expect(await compactIfNeeded(await sessionAt(95000), settings)).toMatchObject({ compacted: true });
      const below = await sessionAt(89000);
      expect(await compactIfNeeded(below, settings)).toEqual({ compacted: false, tokens: 89000 });
      expect((await below.getInfo()).entryCount).toBe(8);
    });
  });

  describe(`findCutPoint (${backend.name})`, () => {
    it("should find cut point based on actual token differences", async () => {
      // Create entries with cumulative token counts
      const entries = [];
      for (let i = 0; i < 10; i++) {
        entries.push(createMessageEntry(createUserMessage(`User ${i}`)));
        entries.push(
          createMessageEntry(
            createAssistantMessage(`Assistant ${i}`, createMockUsage(0, 100, (i + 1) * 1000, 0)),
          ),
        );
      }
      const path = await stored(backend, entries);

      // 20 entries, last assistant has 10000 tokens
      // keepRecentTokens = 2500: keep entries where diff < 2500
      const result = findCut(path, 0, path.length, 2500);

      // Should cut at a valid cut point (user or assistant message)
      expect(path[result]?.type).toBe("message");
      const role = (path[result] as MessageEntry).message.role;
      expect(role === "user" || role === "assistant").toBe(true);
    });

    it("should return startIndex if no valid cut points in range", async () => {
      const path = await stored(backend, [createMessageEntry(createAssistantMessage("a"))]);
      expect(findCut(path, 0, path.length, 1000)).toBe(0);
    });

    it("should keep everything if all messages fit within budget", async () => {
      const path = await stored(backend, [
        createMessageEntry(createUserMessage("1")),
        createMessageEntry(createAssistantMessage("a", createMockUsage(0, 50, 500, 0))),
        createMessageEntry(createUserMessage("2")),
        createMessageEntry(createAssistantMessage("b", createMockUsage(0, 50, 1000, 0))),
      ]);

      expect(findCut(path, 0, path.length, 50000)).toBe(0);
    });

    it("should indicate split turn when cutting at assistant message", async () => {
      // Create a scenario where we cut at an assistant message mid-turn
      const path = await stored(backend, [
        createMessageEntry(createUserMessage("Turn 1")),
        createMessageEntry(createAssistantMessage("A1", createMockUsage(0, 100, 1000, 0))),
        createMessageEntry(createUserMessage("Turn 2")), // index 2
        createMessageEntry(createAssistantMessage("A2-1", createMockUsage(0, 100, 5000, 0))), // index 3
        createMessageEntry(createAssistantMessage("A2-2", createMockUsage(0, 100, 8000, 0))), // index 4
        createMessageEntry(createAssistantMessage("A2-3", createMockUsage(0, 100, 10000, 0))), // index 5
      ]);

      // With keepRecentTokens = 3000, should cut somewhere in Turn 2
      const result = findCut(path, 0, path.length, 3000);

      // If cut at assistant message (not user), the turn's start is summarized apart
      const cutEntry = path[result] as MessageEntry;
      if (cutEntry.message.role === "assistant") {
        const preparation = prepareCompaction(path, { keepRecentTokens: 3000 });
        expect(preparation.turnPrefixMessages[0]).toEqual((path[2] as MessageEntry).message);
      }
    });
  });

  describe(`buildSessionContext (${backend.name})`, () => {
    it("should load all messages when no compaction", async () => {
      const loaded = await contextOf(backend, [
        createMessageEntry(createUserMessage("1")),
        createMessageEntry(createAssistantMessage("a")),
        createMessageEntry(createUserMessage("2")),
        createMessageEntry(createAssistantMessage("b")),
      ]);
      expect(loaded.messages.length).toBe(4);
      expect(loaded.thinkingLevel).toBe("off");
      expect(loaded.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
    });

    it("should handle single compaction", async () => {
      // IDs: u1=test-id-0, a1=test-id-1, u2=test-id-2, a2=test-id-3, compaction=test-id-4, u3=test-id-5, a3=test-id-6
      const u1 = createMessageEntry(createUserMessage("1"));
      const a1 = createMessageEntry(createAssistantMessage("a"));
      const u2 = createMessageEntry(createUserMessage("2"));
      const a2 = createMessageEntry(createAssistantMessage("b"));
      const compaction = createCompactionEntry("Summary of 1,a,2,b", u2.id); // keep from u2 onwards
      const u3 = createMessageEntry(createUserMessage("3"));
      const a3 = createMessageEntry(createAssistantMessage("c"));

      const loaded = await contextOf(backend, [u1, a1, u2, a2, compaction, u3, a3]);
      // summary + kept (u2, a2) + after (u3, a3) = 5
      expect(loaded.messages.length).toBe(5);
      expect(loaded.messages[0]?.role).toBe("compactionSummary");
      expect(summaryOf(loaded.messages[0])).toContain("Summary of 1,a,2,b");
    });

    it("should handle multiple compactions (only latest matters)", async () => {
      // First batch
      const u1 = createMessageEntry(createUserMessage("1"));
      const a1 = createMessageEntry(createAssistantMessage("a"));
      const compact1 = createCompactionEntry("First summary", u1.id);
      // Second batch
      const u2 = createMessageEntry(createUserMessage("2"));
      const b = createMessageEntry(createAssistantMessage("b"));
      const u3 = createMessageEntry(createUserMessage("3"));
      const c = createMessageEntry(createAssistantMessage("c"));
      const compact2 = createCompactionEntry("Second summary", u3.id); // keep from u3 onwards
      // After second compaction
      const u4 = createMessageEntry(createUserMessage("4"));
      const d = createMessageEntry(createAssistantMessage("d"));

      const loaded = await contextOf(backend, [u1, a1, compact1, u2, b, u3, c, compact2, u4, d]);
      // summary + kept from u3 (u3, c) + after (u4, d) = 5
      expect(loaded.messages.length).toBe(5);
      expect(summaryOf(loaded.messages[0])).toContain("Second summary");
    });

    it("should keep all messages when firstKeptEntryId is first entry", async () => {
      const u1 = createMessageEntry(createUserMessage("1"));
      const a1 = createMessageEntry(createAssistantMessage("a"));
      const compact1 = createCompactionEntry("First summary", u1.id); // keep from first entry
      const u2 = createMessageEntry(createUserMessage("2"));
      const b = createMessageEntry(createAssistantMessage("b"));

      const loaded = await contextOf(backend, [u1, a1, compact1, u2, b]);
      // summary + all messages (u1, a1, u2, b) = 5
      expect(loaded.messages.length).toBe(5);
    });

    it("should track model and thinking level changes", async () => {
      const loaded = await contextOf(backend, [
        createMessageEntry(createUserMessage("1")),
        createModelChangeEntry("openai", "gpt-4"),
        createMessageEntry(createAssistantMessage("a")),
        createThinkingLevelEntry("high"),
      ]);
      // model_change is later overwritten by assistant message's model info
      expect(loaded.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
      expect(loaded.thinkingLevel).toBe("high");
    });
  });

  // ==========================================================================
  // Integration tests with real session data
  // ==========================================================================

  describe(`Large session fixture (${backend.name})`, () => {
    it("should parse the large session", async () => {
      const session = await loadLargeSession(backend);
      const entries = await session.getBranch();
      expect(entries.length).toBeGreaterThan(100);

      const messageCount = entries.filter((e) => e.type === "message").length;
      expect(messageCount).toBeGreaterThan(100);
    });

    it("should find cut point in large session, where pi finds it", async () => {
      const session = await loadLargeSession(backend);
      const entries = await session.getBranch();
      const result = findCut(entries, 0, entries.length, DEFAULT_KEEP_RECENT_TOKENS);

      // Cut point should be at a message entry (user or assistant)
      expect(entries[result]?.type).toBe("message");
      const role = (entries[result] as MessageEntry).message.role;
      expect(role === "user" || role === "assistant").toBe(true);
      expect(result).toBe(piFindCutPoint(entries as never, 0, entries.length, 20000).firstKeptEntryIndex);
    });

    it("should load session correctly", async () => {
      const session = await loadLargeSession(backend);
      const loaded = await session.buildContext();

      expect(loaded.messages.length).toBeGreaterThan(100);
      expect(loaded.model).not.toBeNull();
    });
  });

  // ==========================================================================
  // Summarization (pi: with an LLM; here: the extractive summarizer)
  // ==========================================================================

  describe(`Summarization (${backend.name})`, () => {
    it("should generate a compaction result for the large session", async () => {
      const session = await loadLargeSession(backend);
      const compactionResult = await session.compact({ summarizer: extractive });

      expect(compactionResult.summary.length).toBeGreaterThan(100);
      expect(compactionResult.firstKeptEntryId).toBeTruthy();
      expect(compactionResult.tokensBefore).toBeGreaterThan(0);
    });

    it("should produce valid session after compaction", async () => {
      const session = await loadLargeSession(backend);
      const loaded = await session.buildContext();

      const compactionResult = await session.compact({ summarizer: extractive });
      const reloaded = await session.buildContext();

      // Should have summary + kept messages
      expect(reloaded.messages.length).toBeLessThan(loaded.messages.length);
      expect(reloaded.messages[0]?.role).toBe("compactionSummary");
      expect(summaryOf(reloaded.messages[0])).toContain(compactionResult.summary);
    });

    it("is nothing_to_compact where pi's cut leaves nothing to summarize (pi writes a compaction)", async () => {
      // Deliberate difference: a compaction that drops nothing would only add a summary of nothing.
      const manager = await PiSessionManager.create(await backend.repo());
      await manager.appendMessage(createUserMessage("1"));
      await manager.appendMessage(createAssistantMessage("a"));
      const path = await manager.getBranch();
      expect(piFindCutPoint(path as never, 0, path.length, 20000).firstKeptEntryIndex).toBe(0);

      await expectCode(manager.session.compact({ summarizer: extractive }), "nothing_to_compact");
      expect(await manager.getEntries()).toHaveLength(2);
    });
  });
}
