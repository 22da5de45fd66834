import { SessionManager } from "@earendil-works/pi-coding-agent";
import fc from "fast-check";

/*
 * Random sessions written by pi 1.6's own SessionManager: every kind of entry it appends (usage,
 * context edits, system messages, compactions carrying the replayed system message, branch
 * summaries naming the leaf left, labels, names, custom entries) and the message fields pi 1.6
 * added (signatures, redacted thinking, `deferred`, response model, durations, tool-result usage
 * and nested calls, cache and reasoning usage, provider-reported cost). The file is what pi would
 * write: its header, then every entry in append order.
 */

type Pick = number;

export type Op =
  | { kind: "user"; text: string; image: boolean }
  | { kind: "assistant"; text: string; thinking: boolean; calls: number; stop: string; extras: boolean }
  | { kind: "system"; content: string; section: string | null; sectionName: string; tools: number }
  | { kind: "bash"; command: string }
  | { kind: "custom_message"; text: string; display: boolean }
  | { kind: "custom" }
  | { kind: "usage"; note: boolean }
  | { kind: "edit"; pick: Pick; replacement: "null" | "string" | "blocks" }
  | { kind: "compaction"; pick: Pick | null; withUsage: boolean }
  | { kind: "branch_summary"; pick: Pick | null; summary: string }
  | { kind: "branch"; pick: Pick }
  | { kind: "model" }
  | { kind: "thinking"; level: string }
  | { kind: "label"; pick: Pick }
  | { kind: "name"; name: string };

const word = fc.constantFrom("alpha", "beta", "read", "write", "edit", "plan", "test", "fix", "🙂", "ünï");
const text = fc.array(word, { minLength: 1, maxLength: 40 }).map((words) => words.join(" "));
const pick = fc.nat({ max: 1000 });

export const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("user" as const), text, image: fc.boolean() }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("assistant" as const),
      text,
      thinking: fc.boolean(),
      calls: fc.nat({ max: 2 }),
      stop: fc.constantFrom("stop", "stop", "toolUse", "error", "aborted", "deferred", "length"),
      extras: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("system" as const),
      content: fc.oneof(fc.constant(""), text),
      section: fc.oneof(fc.constant(null), text),
      sectionName: fc.constantFrom("preamble", "tools", "cwd", "skills"),
      tools: fc.nat({ max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("bash" as const), command: text }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("custom_message" as const), text, display: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("custom" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("usage" as const), note: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("edit" as const),
      pick,
      replacement: fc.constantFrom("null" as const, "string" as const, "blocks" as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("compaction" as const),
      pick: fc.option(pick),
      withUsage: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("branch_summary" as const),
      pick: fc.option(pick),
      summary: text,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("branch" as const), pick }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("model" as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("thinking" as const),
      level: fc.constantFrom("low", "high", "off"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("label" as const), pick }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("name" as const), name: text }) },
);

export const sessionArbitrary = fc.array(opArbitrary, { minLength: 8, maxLength: 60, size: "large" });

function usage(n: number, extras = false) {
  return {
    input: n,
    output: n + 1,
    cacheRead: n * 2,
    cacheWrite: 0,
    ...(extras ? { cacheWrite1h: 3, reasoning: 7 } : {}),
    totalTokens: n * 4 + 1,
    cost: {
      input: 0.1,
      output: 0.2,
      cacheRead: 0,
      cacheWrite: 0,
      total: 0.3,
      ...(extras ? { totalFromProvider: true } : {}),
    },
  };
}

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/** Applies the operations to a new pi 1.6 session in memory; returns the file pi would have written. */
export function writePiSession(ops: readonly Op[]): string {
  const sm = SessionManager.inMemory("/work/project");
  let clock = Date.UTC(2026, 10, 1);
  let n = 0;
  const tick = () => (clock += 1000);
  for (const op of ops) {
    n++;
    const branch = sm.getBranch();
    const onBranch = (p: Pick) => branch[p % branch.length];
    switch (op.kind) {
      case "user":
        sm.appendMessage({
          role: "user",
          content: op.image
            ? [
                { type: "text", text: op.text },
                { type: "image", data: PNG, mimeType: "image/png" },
              ]
            : op.text,
          timestamp: tick(),
        });
        break;
      case "assistant": {
        const calls = Array.from({ length: op.calls }, (_, i) => ({
          type: "toolCall" as const,
          id: `call_${n}_${i}`,
          name: i % 2 === 0 ? "read" : "edit",
          arguments: { path: `src/file${n % 5}.ts` },
        }));
        sm.appendMessage({
          role: "assistant",
          content: [
            ...(op.thinking
              ? [
                  op.extras
                    ? { type: "thinking" as const, thinking: "", thinkingSignature: "sig-r", redacted: true }
                    : {
                        type: "thinking" as const,
                        thinking: `thinking ${op.text}`,
                        thinkingSignature: `sig-${n}`,
                      },
                ]
              : []),
            { type: "text" as const, text: op.text, ...(op.extras ? { textSignature: `ts-${n}` } : {}) },
            ...calls,
          ],
          api: "anthropic-messages",
          provider: "anthropic",
          model: n % 3 === 0 ? "claude-a" : "claude-b",
          usage: usage(n * 10, op.extras),
          stopReason: (calls.length > 0 ? "toolUse" : op.stop) as "stop",
          ...(op.stop === "error" ? { errorMessage: "overloaded" } : {}),
          ...(op.extras ? { responseModel: "claude-b-2026", durationMs: 1234, thinkingLevel: "high" } : {}),
          timestamp: tick(),
        } as never);
        // Results follow their calls at once, as pi's agent loop appends them.
        for (const call of calls) {
          sm.appendMessage({
            role: "toolResult",
            toolCallId: call.id,
            toolName: call.name,
            content: [{ type: "text", text: `result of ${call.name} ${op.text}` }],
            isError: false,
            ...(op.extras
              ? {
                  usage: usage(1),
                  durationMs: 12,
                  nestedCalls: {
                    calls: [{ id: "n1", name: "write", arguments: { path: "nested.ts" }, status: "ok" }],
                    complete: true,
                  },
                }
              : {}),
            timestamp: tick(),
          } as never);
        }
        break;
      }
      case "system":
        sm.appendMessage({
          role: "system",
          content: op.content,
          sections: { [op.sectionName]: op.section },
          ...(op.tools > 0
            ? {
                toolsAdded: Array.from({ length: op.tools }, (_, i) => ({
                  name: `tool${i}`,
                  description: "does things",
                  parameters: { type: "object", properties: {} },
                })),
              }
            : { toolsRemoved: [{ name: "tool0" }] }),
          timestamp: tick(),
        } as never);
        break;
      case "bash":
        sm.appendMessage({
          role: "bashExecution",
          command: op.command,
          output: `output ${op.command}`,
          exitCode: 0,
          cancelled: false,
          truncated: false,
          timestamp: tick(),
        } as never);
        break;
      case "custom_message":
        sm.appendCustomMessageEntry("note", op.text, op.display, op.display ? { shown: true } : undefined);
        break;
      case "custom":
        sm.appendCustomEntry("state", { n });
        break;
      case "usage":
        sm.appendUsage(
          "cache_warm",
          "anthropic",
          "claude-b",
          usage(n) as never,
          op.note ? "warm-up" : undefined,
        );
        break;
      case "edit": {
        const editable = branch.filter(
          (e) =>
            e.type === "custom_message" ||
            (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)),
        );
        const target = editable[op.pick % Math.max(1, editable.length)];
        if (!target) break;
        sm.appendContextEdit(
          target.id,
          op.replacement === "null"
            ? null
            : op.replacement === "string"
              ? { content: `edited ${n}` }
              : { content: [{ type: "text", text: `edited block ${n}` }] },
        );
        break;
      }
      case "compaction": {
        if (branch.length === 0) break;
        sm.appendCompaction(
          `summary ${n}`,
          op.pick === null ? null : (onBranch(op.pick)?.id ?? null),
          1000 + n,
          { readFiles: [`r${n}.ts`], modifiedFiles: [] },
          false,
          op.withUsage ? (usage(2) as never) : undefined,
        );
        break;
      }
      case "branch_summary": {
        const target = op.pick === null || branch.length === 0 ? null : (onBranch(op.pick)?.id ?? null);
        sm.branchWithSummary(target, op.summary, { readFiles: [], modifiedFiles: [`m${n}.ts`] });
        break;
      }
      case "branch": {
        const entries = sm.getEntries();
        const target = entries[op.pick % Math.max(1, entries.length)];
        if (target) sm.branch(target.id);
        break;
      }
      case "model":
        sm.appendModelChange("openai", `gpt-${n}`);
        break;
      case "thinking":
        sm.appendThinkingLevelChange(op.level);
        break;
      case "label": {
        const target = branch[op.pick % Math.max(1, branch.length)];
        if (target) sm.appendLabelChange(target.id, `label ${n}`);
        break;
      }
      case "name":
        sm.appendSessionInfo(op.name);
        break;
    }
  }
  const header = sm.getHeader();
  return `${[header, ...sm.getEntries()].map((line) => JSON.stringify(line)).join("\n")}\n`;
}
