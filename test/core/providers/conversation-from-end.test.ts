import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TreeEntry } from "../../../src/core/entries";
import type { AgentMessage } from "../../../src/core/messages";
import { conversationFromEnd } from "../../../src/core/providers/conversation-from-end";
import { lastTurnOf } from "../../../src/core/providers/last-turn";
import { conversationOf } from "../../../src/core/providers/provider-entries";
import { assistant, toolResult, user } from "../../conformance/fixtures";

/*
 * Read from its end, a path gives the conversation read from the whole of it, cut to its last
 * turn, whatever it holds: compactions keeping entries before them or a tail of their own, system
 * messages, context edits, LangGraph checkpoints holding the messages or changes to them, model
 * changes and replies of several models.
 */

type Step =
  | { kind: "user" | "tools" | "system" | "custom_message" | "label" }
  | { kind: "reply"; model: string }
  | { kind: "model_change"; model: string }
  | { kind: "compaction"; keep: number | null; tail: boolean; system: boolean }
  | { kind: "edit"; back: number; omit: boolean }
  | { kind: "checkpoint"; holds: "value" | "changes"; held: "HumanMessage" | "AIMessage" };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constantFrom("user" as const, "tools" as const) }) },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant("reply" as const), model: fc.constantFrom("m1", "m2") }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom("system" as const, "custom_message" as const, "label" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("model_change" as const), model: fc.constantFrom("m3", "m4") }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("compaction" as const),
      keep: fc.option(fc.integer({ min: 0, max: 30 })),
      tail: fc.boolean(),
      system: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("edit" as const),
      back: fc.integer({ min: 1, max: 30 }),
      omit: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("checkpoint" as const),
      holds: fc.constantFrom("value" as const, "changes" as const),
      held: fc.constantFrom("HumanMessage" as const, "AIMessage" as const),
    }),
  },
);

const system = (text: string): AgentMessage =>
  ({ role: "system", content: text, timestamp: 1 }) as AgentMessage;

function entryOf(spec: Step, id: string, earlier: readonly TreeEntry[]): Record<string, unknown> {
  const back = (n: number) => earlier[Math.max(0, earlier.length - n)]?.id;
  switch (spec.kind) {
    case "user":
      return { type: "message", message: user(`u ${id}`) };
    case "tools":
      return { type: "message", message: toolResult(`call ${id}`, "ls", `r ${id}`) };
    case "reply":
      return { type: "message", message: assistant(`a ${id}`, { model: spec.model }) };
    case "system":
      return { type: "message", message: system(`s ${id}`) };
    case "custom_message":
      return { type: "custom_message", customType: "note", content: `n ${id}`, display: true };
    case "label":
      return { type: "label", targetId: back(1) ?? id, label: "x" };
    case "model_change":
      return { type: "model_change", provider: "p", modelId: spec.model };
    case "compaction":
      return {
        type: "compaction",
        summary: `summary ${id}`,
        tokensBefore: 1,
        ...(spec.keep === null ? {} : { firstKeptEntryId: back(spec.keep) ?? id }),
        ...(spec.tail ? { retainedTail: [user(`tail ${id}`)] } : {}),
        ...(spec.system ? { systemMessage: system(`prompt ${id}`) } : {}),
      };
    case "edit":
      return {
        type: "context_edit",
        targetId: back(spec.back) ?? id,
        replacement: spec.omit ? null : { content: `edited by ${id}` },
      };
    case "checkpoint": {
      const held = {
        lc: 1,
        type: "constructor",
        id: ["langchain_core", "messages", spec.held],
        kwargs: { content: `held ${id}`, additional_kwargs: {}, response_metadata: {} },
      };
      const data =
        spec.holds === "value" ? { values: { messages: { type: "json", json: [held] } } } : { messages: [] };
      return { type: "custom", customType: "langgraph:checkpoint", data };
    }
  }
}

function pathOf(steps: readonly Step[]): TreeEntry[] {
  const path: TreeEntry[] = [];
  for (const [i, spec] of steps.entries()) {
    const id = `e${i}`;
    const fields = entryOf(spec, id, path);
    path.push({
      ...fields,
      id,
      parentId: path.at(-1)?.id ?? null,
      timestamp: new Date(i * 1000).toISOString(),
    } as TreeEntry);
  }
  return path;
}

function fromEnd(path: readonly TreeEntry[]) {
  const asked: number[] = [];
  const conversation = conversationFromEnd(
    path.map(({ id, type }) => ({ id, type })),
    (positions) => {
      asked.push(...positions);
      return positions.map((at) => path[at] as TreeEntry);
    },
  );
  return { conversation, asked };
}

describe("conversationFromEnd", () => {
  it("gives the last turn and the model the whole path gives", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const path = pathOf(steps);
        const whole = conversationOf(path);
        const { conversation, asked } = fromEnd(path);
        expect(conversation).toEqual({ messages: lastTurnOf(whole.messages), model: whole.model });
        expect(new Set(asked).size).toBe(asked.length);
      }),
      {
        numRuns: 500,
        examples: [
          // A checkpoint holding the messages, kept by a compaction after it: the context starts there.
          [
            [
              { kind: "user" },
              { kind: "checkpoint", holds: "value", held: "AIMessage" },
              { kind: "compaction", keep: 1, tail: false, system: true },
              { kind: "tools" },
            ],
          ],
        ],
      },
    );
  });

  it("reads a long path only as far back as its last turn and its model", () => {
    const steps: Step[] = [];
    for (let i = 0; i < 1000; i++) steps.push({ kind: "user" }, { kind: "reply", model: "m1" });
    steps.push({ kind: "tools" }, { kind: "reply", model: "m2" }, { kind: "tools" });
    const path = pathOf(steps);
    const { conversation, asked } = fromEnd(path);
    expect(conversation.model).toEqual({ provider: "openai", modelId: "m2" });
    expect(conversation.messages.map((m) => m.role)).toEqual(["assistant", "toolResult"]);
    expect(asked.length).toBeLessThanOrEqual(16);
    expect(Math.min(...asked)).toBeGreaterThanOrEqual(path.length - 16);
  });
});
