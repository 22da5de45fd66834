import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../../src/core/messages";
import { contextInFormat } from "../../../src/core/providers/convert";
import type { ContextFormat } from "../../../src/core/providers/target";
import {
  ANTHROPIC,
  assistant,
  call,
  context,
  FORMATS,
  image,
  OPENAI_RESPONSES,
  result,
  TARGET_SOURCE,
  targetModel,
  text,
  thinking,
  user,
} from "./support";

/*
 * A conversion does work in proportion to the conversation: counted, not timed. Work is every
 * property read of the input (through a proxy) plus the length of every array a built-in array
 * method walks (through wrapped prototype methods), so a scan of the output per message, a
 * `find` per result or a copy per turn shows up as a ratio near 100 for ten times the messages
 * instead of near 10.
 */

const ARRAY_METHODS = [
  "indexOf",
  "lastIndexOf",
  "includes",
  "find",
  "findIndex",
  "findLast",
  "findLastIndex",
  "some",
  "every",
  "filter",
  "map",
  "flatMap",
  "forEach",
  "reduce",
  "slice",
  "splice",
  "concat",
  "join",
  "shift",
  "unshift",
] as const;

function counting<T>(value: T, counter: { reads: number }): T {
  if (value === null || typeof value !== "object") return value;
  return new Proxy(value as object, {
    get(target, key, receiver) {
      counter.reads++;
      return counting(Reflect.get(target, key, receiver), counter);
    },
  }) as T;
}

/** The work a conversion of `messages` to `format` does. */
function workOf(format: ContextFormat, messages: AgentMessage[]): { work: number; size: number } {
  const counter = { reads: 0 };
  const input = counting(context(messages), counter);
  const prototype = Array.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = ARRAY_METHODS.map((name) => [name, prototype[name]] as const);
  let walked = 0;
  for (const [name, original] of originals) {
    prototype[name] = function (this: unknown[], ...args: unknown[]) {
      walked += this.length;
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    };
  }
  let out: unknown;
  try {
    out = contextInFormat(input, format, targetModel(format));
  } finally {
    for (const [name, original] of originals) prototype[name] = original as (...args: unknown[]) => unknown;
  }
  return { work: counter.reads + walked, size: JSON.stringify(out).length };
}

/** Ten messages touching every rule, repeated: pi's own roles, tool turns, an errored turn, images, thinking of two models. */
function conversation(format: ContextFormat, rounds: number): AgentMessage[] {
  const own = TARGET_SOURCE[format];
  const messages: AgentMessage[] = [];
  for (let i = 0; i < rounds; i++) {
    messages.push(
      user([text(`Question ${i}`), ...(i % 5 === 0 ? [image()] : [])]),
      assistant(
        [
          thinking(`Plan ${i}`, `SIG${i}`),
          text(`Answer ${i}`),
          call(`c${i}a`, "read"),
          call(`c${i}b`, "shot"),
        ],
        own,
      ),
      result(`c${i}b`, "shot", [text("screen"), image()]),
      result(`c${i}a`, "read", `file ${i}`),
      assistant([thinking(`Other ${i}`), call(`call_${i}|fc_${"x".repeat(80)}`, "read")], OPENAI_RESPONSES),
      { role: "custom", customType: "note", content: `note ${i}`, display: true, timestamp: i },
      { role: "bashExecution", command: "ls", output: `out ${i}`, exitCode: 0, timestamp: i },
      assistant([text("cut"), call(`dead${i}`, "read")], ANTHROPIC, "aborted"),
      result(`dead${i}`, "read", "stale"),
      { role: "branchSummary", summary: `branch ${i}`, fromId: "x", timestamp: i },
    );
  }
  return messages;
}

/** One turn of many parallel calls all sharing one id (a provider reusing ids), then their results. */
function sharedIds(count: number): AgentMessage[] {
  const calls = Array.from({ length: count }, () => call("call_0", "read"));
  return [
    user("Go."),
    assistant(calls, ANTHROPIC),
    ...Array.from({ length: count }, (_, i) => result("call_0", "read", `r${i}`)),
  ];
}

describe.each(FORMATS)("%s converts in linear time", (format) => {
  it("10,000 messages cost ten times 1,000", () => {
    const small = workOf(format, conversation(format, 100));
    const large = workOf(format, conversation(format, 1_000));
    expect(conversation(format, 1_000)).toHaveLength(10_000);
    expect(large.work / small.work).toBeGreaterThan(9);
    expect(large.work / small.work).toBeLessThan(11);
    expect(large.size / small.size).toBeGreaterThan(9);
    expect(large.size / small.size).toBeLessThan(11);
  });

  it("a turn of 5,000 calls sharing one id costs ten times one of 500", () => {
    const small = workOf(format, sharedIds(500));
    const large = workOf(format, sharedIds(5_000));
    expect(large.work / small.work).toBeLessThan(11);
  });
});
