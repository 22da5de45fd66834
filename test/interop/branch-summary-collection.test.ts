import {
  collectEntriesForBranchSummary,
  prepareBranchEntries,
  SessionManager,
} from "@mariozechner/pi-coding-agent";
import { describe, expect, it } from "vitest";
import type { ImportedSession } from "../../src/core/interchange";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage } from "../../src/core/messages";
import { parsePi } from "../../src/core/pi-format";
import type { Summarizer, SummaryRequest } from "../../src/core/summarizers/summarizer";
import { assistant, toolResult, user } from "../conformance/fixtures";

/*
 * Navigating with a summary summarizes what pi's `collectEntriesForBranchSummary` collects: the
 * entries from the old head back to the common ancestor with the entry navigated to, never that
 * entry itself (on a user message the head goes to its parent, as in pi). Checked against pi's
 * function for every pair of old head and target on the same trees.
 */

type Pi = Omit<SessionManager, "appendMessage"> & { appendMessage(message: AgentMessage): string };

const trees: Record<string, (pi: Pi) => void> = {
  "a conversation with tool calls": (pi) => {
    pi.appendMessage(user("read a.ts"));
    pi.appendMessage(
      assistant("reading", { toolCalls: [{ id: "c1", name: "read", arguments: { path: "a.ts" } }] }),
    );
    pi.appendMessage(toolResult("c1", "read", "contents"));
    pi.appendMessage(assistant("read it"));
    pi.appendMessage(user("now fix it"));
    pi.appendMessage(
      assistant("fixing", { toolCalls: [{ id: "c2", name: "edit", arguments: { path: "a.ts" } }] }),
    );
    pi.appendMessage(toolResult("c2", "edit", "done"));
    pi.appendMessage(user("thanks"));
  },
  "branches, a branch summary, labels, settings and custom messages": (pi) => {
    const q = pi.appendMessage(user("question"));
    const a1 = pi.appendMessage(assistant("first"));
    pi.appendLabelChange(a1, "first try");
    pi.appendModelChange("anthropic", "claude");
    pi.appendMessage(user("follow-up"));
    pi.appendCustomMessageEntry("note", "remember this", true);
    pi.branch(q);
    pi.appendThinkingLevelChange("high");
    pi.appendMessage(assistant("second"));
    pi.branchWithSummary(a1, "we tried a follow-up and came back");
    pi.appendMessage(user("after the summary"));
    pi.appendMessage(assistant("answer"));
  },
  "a compaction, then a branch off the kept part": (pi) => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(pi.appendMessage(i % 2 ? assistant(`a${i}`) : user(`u${i}`)));
    pi.appendCompaction("summary of the start", ids[2] as string, 1234);
    pi.appendMessage(user("u6"));
    pi.appendMessage(assistant("a7"));
    pi.branch(ids[3] as string);
    pi.appendMessage(user("u8 on the side"));
    pi.appendMessage(assistant("a9"));
  },
};

function piFile(manager: SessionManager): string {
  return `${[manager.getHeader(), ...manager.getEntries()].map((e) => JSON.stringify(e)).join("\n")}\n`;
}

/** A summarizer that keeps what it was asked to summarize. */
function recorder(): Summarizer & { requests: SummaryRequest[] } {
  const requests: SummaryRequest[] = [];
  return {
    name: "recorder",
    requests,
    summarize: async (request) => {
      requests.push(request);
      return { text: "summary" };
    },
  };
}

describe("branch summaries collect what pi collects", () => {
  for (const [name, build] of Object.entries(trees)) {
    it(`for every old head and target: ${name}`, async () => {
      const manager = SessionManager.inMemory("/p");
      build(manager as unknown as Pi);
      const file: ImportedSession = parsePi(piFile(manager));
      const repo = new MemoryRepo();
      const entries = manager.getEntries();
      let summarized = 0;
      for (const from of entries) {
        for (const target of entries) {
          // pi does nothing when the target is the head already.
          if (from.id === target.id) continue;
          const expected = collectEntriesForBranchSummary(manager, from.id, target.id);
          const session = await repo.importSession(file);
          await session.setLeafId(from.id);
          const onUser = target.type === "message" && target.message.role === "user";
          const summarizer = recorder();
          const result = await session.navigate(target.id, {
            position: onUser ? "before" : "at",
            summarize: true,
            summarizer,
          });
          const pair = `${from.id} → ${target.id}`;
          if (expected.entries.length === 0) {
            expect(summarizer.requests, pair).toEqual([]);
            expect(result.entry, pair).toBeUndefined();
          } else {
            summarized++;
            expect(summarizer.requests[0]?.messages, pair).toEqual(
              prepareBranchEntries(expected.entries).messages,
            );
            // Written where pi writes it: under the target, or under a user message's parent. (pi
            // also goes to a custom message's parent; `before` applies to user messages only here.)
            const parent = onUser ? target.parentId : target.id;
            expect(result.entry, pair).toMatchObject({ type: "branch_summary", parentId: parent });
          }
        }
      }
      expect(summarized).toBeGreaterThan(entries.length);
    });
  }
});
