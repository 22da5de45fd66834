/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/session-manager/build-context.test.ts,
 * at commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT). pi builds the context from a list of
 * entries; here the same entries are written as a pi file, imported into each backend, and the
 * context is built by the session. One deliberate difference is marked where it applies.
 * "includes display:false custom messages in context" comes from the same file in
 * earendil-works/pi as stored at commit 40065aec82961ff091c95159dcfa401778bf9ec4 (pi 1.6).
 */
import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../../src/core/messages";
import { expectCode } from "../../conformance/storage";
import { backends } from "../backends";
import { contextOf } from "../pi-adapter";

function msg(id: string, parentId: string | null, role: "user" | "assistant", text: string) {
  const base = { type: "message" as const, id, parentId, timestamp: "2025-01-01T00:00:00Z" };
  if (role === "user") {
    return { ...base, message: { role, content: text, timestamp: 1 } };
  }
  return {
    ...base,
    message: {
      role,
      content: [{ type: "text", text }],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-test",
      usage: {
        input: 1,
        output: 1,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 2,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: 1,
    },
  };
}

function compaction(id: string, parentId: string | null, summary: string, firstKeptEntryId: string) {
  return {
    type: "compaction",
    id,
    parentId,
    timestamp: "2025-01-01T00:00:00Z",
    summary,
    firstKeptEntryId,
    tokensBefore: 1000,
  };
}

function branchSummary(id: string, parentId: string | null, summary: string, fromId: string) {
  return { type: "branch_summary", id, parentId, timestamp: "2025-01-01T00:00:00Z", summary, fromId };
}

function thinkingLevel(id: string, parentId: string | null, level: string) {
  return {
    type: "thinking_level_change",
    id,
    parentId,
    timestamp: "2025-01-01T00:00:00Z",
    thinkingLevel: level,
  };
}

function customMessage(
  id: string,
  parentId: string | null,
  customType: string,
  content: string,
  display: boolean,
) {
  return {
    type: "custom_message" as const,
    id,
    parentId,
    timestamp: "2025-01-01T00:00:00Z",
    customType,
    content,
    display,
  };
}

function modelChange(id: string, parentId: string | null, provider: string, modelId: string) {
  return { type: "model_change", id, parentId, timestamp: "2025-01-01T00:00:00Z", provider, modelId };
}

/** Loose access to a message's fields, as pi's tests read them. */
const at = (messages: AgentMessage[], i: number) => messages[i] as Record<string, any>;

for (const backend of backends()) {
  describe(`buildSessionContext (${backend.name})`, () => {
    describe("trivial cases", () => {
      it("empty entries returns empty context", async () => {
        const ctx = await contextOf(backend, []);
        expect(ctx.messages).toEqual([]);
        expect(ctx.thinkingLevel).toBe("off");
        expect(ctx.model).toBeNull();
      });

      it("single user message", async () => {
        const ctx = await contextOf(backend, [msg("1", null, "user", "hello")]);
        expect(ctx.messages).toHaveLength(1);
        expect(ctx.messages[0]?.role).toBe("user");
      });

      it("simple conversation", async () => {
        const ctx = await contextOf(backend, [
          msg("1", null, "user", "hello"),
          msg("2", "1", "assistant", "hi there"),
          msg("3", "2", "user", "how are you"),
          msg("4", "3", "assistant", "great"),
        ]);
        expect(ctx.messages).toHaveLength(4);
        expect(ctx.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
      });

      it("includes display:false custom messages in context", async () => {
        const ctx = await contextOf(
          backend,
          [
            msg("1", null, "user", "hello"),
            customMessage("2", "1", "pi-inline-skill-snapshot", "hidden context", false),
            msg("3", "2", "assistant", "hi"),
          ],
          "3",
        );

        expect(ctx.messages).toHaveLength(3);
        expect(at(ctx.messages, 0).role).toBe("user");
        expect(at(ctx.messages, 1).role).toBe("custom");
        expect(at(ctx.messages, 1).customType).toBe("pi-inline-skill-snapshot");
        expect(at(ctx.messages, 1).content).toBe("hidden context");
        expect(at(ctx.messages, 1).display).toBe(false);
        expect(at(ctx.messages, 2).role).toBe("assistant");
      });

      it("tracks thinking level changes", async () => {
        const ctx = await contextOf(backend, [
          msg("1", null, "user", "hello"),
          thinkingLevel("2", "1", "high"),
          msg("3", "2", "assistant", "thinking hard"),
        ]);
        expect(ctx.thinkingLevel).toBe("high");
        expect(ctx.messages).toHaveLength(2);
      });

      it("tracks model from assistant message", async () => {
        const ctx = await contextOf(backend, [
          msg("1", null, "user", "hello"),
          msg("2", "1", "assistant", "hi"),
        ]);
        expect(ctx.model).toEqual({ provider: "anthropic", modelId: "claude-test" });
      });

      it("tracks model from model change entry", async () => {
        const ctx = await contextOf(backend, [
          msg("1", null, "user", "hello"),
          modelChange("2", "1", "openai", "gpt-4"),
          msg("3", "2", "assistant", "hi"),
        ]);
        // Assistant message overwrites model change
        expect(ctx.model).toEqual({ provider: "anthropic", modelId: "claude-test" });
      });
    });

    describe("with compaction", () => {
      it("includes summary before kept messages", async () => {
        const ctx = await contextOf(backend, [
          msg("1", null, "user", "first"),
          msg("2", "1", "assistant", "response1"),
          msg("3", "2", "user", "second"),
          msg("4", "3", "assistant", "response2"),
          compaction("5", "4", "Summary of first two turns", "3"),
          msg("6", "5", "user", "third"),
          msg("7", "6", "assistant", "response3"),
        ]);

        // Should have: summary + kept (3,4) + after (6,7) = 5 messages
        expect(ctx.messages).toHaveLength(5);
        expect(at(ctx.messages, 0).summary).toContain("Summary of first two turns");
        expect(at(ctx.messages, 1).content).toBe("second");
        expect(at(ctx.messages, 2).content[0].text).toBe("response2");
        expect(at(ctx.messages, 3).content).toBe("third");
        expect(at(ctx.messages, 4).content[0].text).toBe("response3");
      });

      it("handles compaction keeping from first message", async () => {
        const ctx = await contextOf(backend, [
          msg("1", null, "user", "first"),
          msg("2", "1", "assistant", "response"),
          compaction("3", "2", "Empty summary", "1"),
          msg("4", "3", "user", "second"),
        ]);

        // Summary + all messages (1,2,4)
        expect(ctx.messages).toHaveLength(4);
        expect(at(ctx.messages, 0).summary).toContain("Empty summary");
      });

      it("multiple compactions uses latest", async () => {
        const ctx = await contextOf(backend, [
          msg("1", null, "user", "a"),
          msg("2", "1", "assistant", "b"),
          compaction("3", "2", "First summary", "1"),
          msg("4", "3", "user", "c"),
          msg("5", "4", "assistant", "d"),
          compaction("6", "5", "Second summary", "4"),
          msg("7", "6", "user", "e"),
        ]);

        // Should use second summary, keep from 4
        expect(ctx.messages).toHaveLength(4);
        expect(at(ctx.messages, 0).summary).toContain("Second summary");
      });
    });

    describe("with branches", () => {
      it("follows path to specified leaf", async () => {
        // Tree:
        //   1 -> 2 -> 3 (branch A)
        //         \-> 4 (branch B)
        const entries = [
          msg("1", null, "user", "start"),
          msg("2", "1", "assistant", "response"),
          msg("3", "2", "user", "branch A"),
          msg("4", "2", "user", "branch B"),
        ];

        const ctxA = await contextOf(backend, entries, "3");
        expect(ctxA.messages).toHaveLength(3);
        expect(at(ctxA.messages, 2).content).toBe("branch A");

        const ctxB = await contextOf(backend, entries, "4");
        expect(ctxB.messages).toHaveLength(3);
        expect(at(ctxB.messages, 2).content).toBe("branch B");
      });

      it("includes branch summary in path", async () => {
        const ctx = await contextOf(
          backend,
          [
            msg("1", null, "user", "start"),
            msg("2", "1", "assistant", "response"),
            msg("3", "2", "user", "abandoned path"),
            branchSummary("4", "2", "Summary of abandoned work", "3"),
            msg("5", "4", "user", "new direction"),
          ],
          "5",
        );

        expect(ctx.messages).toHaveLength(4);
        expect(at(ctx.messages, 2).summary).toContain("Summary of abandoned work");
        expect(at(ctx.messages, 3).content).toBe("new direction");
      });

      it("complex tree with multiple branches and compaction", async () => {
        // Tree:
        //   1 -> 2 -> 3 -> 4 -> compaction(5) -> 6 -> 7 (main path)
        //              \-> 8 -> 9 (abandoned branch)
        //                    \-> branchSummary(10) -> 11 (resumed from 3)
        const entries = [
          msg("1", null, "user", "start"),
          msg("2", "1", "assistant", "r1"),
          msg("3", "2", "user", "q2"),
          msg("4", "3", "assistant", "r2"),
          compaction("5", "4", "Compacted history", "3"),
          msg("6", "5", "user", "q3"),
          msg("7", "6", "assistant", "r3"),
          // Abandoned branch from 3
          msg("8", "3", "user", "wrong path"),
          msg("9", "8", "assistant", "wrong response"),
          // Branch summary resuming from 3
          branchSummary("10", "3", "Tried wrong approach", "9"),
          msg("11", "10", "user", "better approach"),
        ];

        // Main path to 7: summary + kept(3,4) + after(6,7)
        const ctxMain = await contextOf(backend, entries, "7");
        expect(ctxMain.messages).toHaveLength(5);
        expect(at(ctxMain.messages, 0).summary).toContain("Compacted history");
        expect(at(ctxMain.messages, 1).content).toBe("q2");
        expect(at(ctxMain.messages, 2).content[0].text).toBe("r2");
        expect(at(ctxMain.messages, 3).content).toBe("q3");
        expect(at(ctxMain.messages, 4).content[0].text).toBe("r3");

        // Branch path to 11: 1,2,3 + branch_summary + 11
        const ctxBranch = await contextOf(backend, entries, "11");
        expect(ctxBranch.messages).toHaveLength(5);
        expect(at(ctxBranch.messages, 0).content).toBe("start");
        expect(at(ctxBranch.messages, 1).content[0].text).toBe("r1");
        expect(at(ctxBranch.messages, 2).content).toBe("q2");
        expect(at(ctxBranch.messages, 3).summary).toContain("Tried wrong approach");
        expect(at(ctxBranch.messages, 4).content).toBe("better approach");
      });
    });

    describe("edge cases", () => {
      it("an unknown leafId is not_found (pi falls back to the last entry)", async () => {
        // Deliberate difference: an unknown entry id is an error, never a silent fallback.
        await expectCode(
          contextOf(
            backend,
            [msg("1", null, "user", "hello"), msg("2", "1", "assistant", "hi")],
            "nonexistent",
          ),
          "not_found",
        );
      });

      it("handles orphaned entries gracefully", async () => {
        const ctx = await contextOf(
          backend,
          [
            msg("1", null, "user", "hello"),
            msg("2", "missing", "assistant", "orphan"), // parent doesn't exist
          ],
          "2",
        );
        // Should only get the orphan since parent chain is broken
        expect(ctx.messages).toHaveLength(1);
      });
    });
  });
}
