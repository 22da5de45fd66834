import { describe, expect, it } from "vitest";
import { SessionError } from "../../src/core/errors";
import { answerFold } from "../../src/core/generations/answer-fold";
import { AnswerSize, answerBytes, checkStoredSize } from "../../src/core/generations/answer-size";
import { checkChunk, MAX_CONTENT_BLOCKS } from "../../src/core/generations/chunks";
import { MAX_JSON_DEPTH } from "../../src/core/json";
import type { AssistantMessage } from "../../src/core/messages";

/*
 * A generation's chunks are checked when appended, so that whatever a stream holds makes an
 * answer: pi-ai's events by their content index (bounded), a `done` event's message an assistant's,
 * no event nested deeper than an entry may be. The fold passes over whatever it cannot use, and
 * keeps blocks by the indices named, never an array as long as the highest.
 */

const source = { provider: "test", model: "m", api: "test-api" };
const finish = { stopped: false, timestamp: 1 };

function refused(format: "pi-ai" | "ai-sdk-ui", chunk: unknown): SessionError {
  try {
    checkChunk(format, chunk, 0);
  } catch (error) {
    expect(error).toBeInstanceOf(SessionError);
    expect((error as SessionError).code).toBe("invalid_request");
    return error as SessionError;
  }
  throw new Error(`accepted: ${JSON.stringify(chunk).slice(0, 200)}`);
}

/** A value nested `depth` levels deep. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe("a generation's chunks, checked when appended", () => {
  it("bound a pi-ai content index to 0 … 4095, a whole number", () => {
    for (const contentIndex of [500_000_000, 4_294_967_294, MAX_CONTENT_BLOCKS, -1, 1.5, "0", null]) {
      refused("pi-ai", { type: "text_delta", contentIndex, delta: "x" });
    }
    for (const type of ["text_start", "thinking_end", "toolcall_delta"])
      refused("pi-ai", { type, delta: "" });
    checkChunk("pi-ai", { type: "text_delta", contentIndex: MAX_CONTENT_BLOCKS - 1, delta: "x" }, 0);
    checkChunk("pi-ai", { type: "text_delta", contentIndex: 0, delta: "x" }, 0);
  });

  it("refuse a done or error event whose message is not an assistant's, and a tool call that is not one", () => {
    refused("pi-ai", { type: "done", message: { nope: 1 } });
    refused("pi-ai", { type: "error", error: { role: "user", content: "x", timestamp: 1 } });
    refused("pi-ai", { type: "toolcall_end", contentIndex: 0, toolCall: { type: "toolCall", id: "c" } });
    refused("pi-ai", { type: "text_delta", contentIndex: 0, delta: 5 });
    refused("ai-sdk-ui", { type: "text-delta", id: "t", delta: { text: "x" } });
    refused("ai-sdk-ui", { type: "tool-output-available" });
    const message: AssistantMessage = {
      role: "assistant",
      content: [{ type: "text", text: "fine" }],
      provider: "p",
      model: "m",
      api: "a",
      usage: {
        input: 0,
        output: 0,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 0,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: 1,
    };
    checkChunk("pi-ai", { type: "done", reason: "stop", message }, 0);
    // Events it has no use for pass, as do the fields it does not read.
    checkChunk("pi-ai", { type: "something_new", anything: [1] }, 0);
    checkChunk("ai-sdk-ui", { type: "data-weather", data: { city: "Paris" } }, 0);
  });

  it("refuse an event nested deeper than its values may be in an entry", () => {
    const error = refused("ai-sdk-ui", {
      type: "tool-input-available",
      toolCallId: "c",
      toolName: "t",
      input: nested(200),
    });
    expect(error.message).toMatch(/nests deeper/);
    // As deep as the entry can hold it (the input becomes its message.content[i].arguments).
    checkChunk(
      "ai-sdk-ui",
      { type: "tool-input-available", toolCallId: "c", toolName: "t", input: nested(MAX_JSON_DEPTH - 5) },
      0,
    );
  });
});

describe("the fold of a pi-ai generation", () => {
  it("keeps blocks by the indices named, in order, and passes over an index out of bounds", () => {
    const fold = answerFold("pi-ai", source);
    fold.add({ type: "text_delta", contentIndex: 4_294_967_294, delta: "never" });
    fold.add({ type: "text_delta", contentIndex: 4095, delta: "last" });
    fold.add({ type: "thinking_delta", contentIndex: 7, delta: "middle" });
    fold.add({ type: "text_delta", contentIndex: 0, delta: "first" });
    const [answer] = fold.finish(finish) as AssistantMessage[];
    expect(answer?.content).toEqual([
      { type: "text", text: "first" },
      { type: "thinking", thinking: "middle" },
      { type: "text", text: "last" },
    ]);
  });

  it("passes over a done event whose message is not an assistant's, keeping what the deltas made", () => {
    const fold = answerFold("pi-ai", source);
    fold.add({ type: "text_delta", contentIndex: 0, delta: "kept" });
    fold.add({ type: "done", message: { nope: 1 } });
    const [answer] = fold.finish({ stopped: true, timestamp: 1 }) as AssistantMessage[];
    expect(answer).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "kept" }],
      stopReason: "aborted",
    });
  });
});

describe("what a chunk adds to its answer", () => {
  it("counts text as it is stored, escapes included", () => {
    expect(answerBytes("text", "abc")).toBe(3);
    expect(answerBytes("text", "\u0001".repeat(10))).toBe(60);
    expect(answerBytes("text", 'say "hi"\n')).toBe(12);
    expect(answerBytes("text", "é")).toBe(2);
  });

  it("counts the text and values events carry, not the rest of them", () => {
    expect(
      answerBytes("pi-ai", {
        type: "text_delta",
        contentIndex: 0,
        delta: "\u0001",
        partial: { content: ["x".repeat(100)] },
      }),
    ).toBe(6);
    expect(answerBytes("ai-sdk-ui", { type: "text-delta", id: "t", delta: "abc" })).toBe(3);
    // A tool's output is the text of its result: its JSON, escaped again.
    expect(
      answerBytes("ai-sdk-ui", { type: "tool-output-available", toolCallId: "c", output: { a: '"' } }),
    ).toBe(1 + '{\\"a\\":\\"\\\\\\"\\"}'.length);
    expect(answerBytes("ai-sdk-ui", { type: "start-step" })).toBe(0);
    // A generator tool's yields on the way are replaced by its final output: they take nothing.
    const yielded = {
      type: "tool-output-available",
      toolCallId: "c",
      output: "x".repeat(100),
      preliminary: true,
    };
    expect(answerBytes("ai-sdk-ui", yielded)).toBe(0);
  });

  it("counts a tool call's name each time the answer copies it, as many times as it is written", () => {
    const size = new AnswerSize("ai-sdk-ui");
    const fold = answerFold("ai-sdk-ui", source);
    const parts = [
      { type: "tool-input-start", toolCallId: "a", toolName: "n".repeat(100) },
      { type: "tool-input-available", toolCallId: "a", toolName: "", input: {} },
      { type: "tool-input-available", toolCallId: "a", toolName: "", input: {} },
      { type: "tool-input-error", toolCallId: "a", toolName: "", input: {}, errorText: "bad" },
      { type: "tool-output-available", toolCallId: "a", output: "ok" },
      { type: "tool-output-error", toolCallId: "a", errorText: "failed" },
      { type: "tool-output-denied", toolCallId: "a" },
    ];
    for (const part of parts) {
      size.add(part);
      fold.add(part);
    }
    // Three calls' blocks and four results: seven copies of the name.
    const names = fold
      .finish(finish)
      .flatMap((message) =>
        message.role === "toolResult"
          ? [message.toolName]
          : (message as AssistantMessage).content.flatMap((block) =>
              block.type === "toolCall" ? [block.name] : [],
            ),
      );
    expect(names).toEqual(Array(7).fill("n".repeat(100)));
    expect(size.bytes).toBeGreaterThanOrEqual(7 * 100);
    expect(new AnswerSize("ai-sdk-ui").add(parts[1])).toBeLessThan(100);
  });

  it("keeps what a provider said of each part on its block, signatures copied, and counts both", () => {
    const size = new AnswerSize("ai-sdk-ui");
    const fold = answerFold("ai-sdk-ui", source);
    const summary = 's"'.repeat(1000);
    const encrypted = "e".repeat(3000);
    const signature = "a".repeat(3000);
    const thoughtSignature = "g".repeat(3000);
    const parts = [
      { type: "start-step" },
      { type: "reasoning-start", id: "r1", providerMetadata: { openai: { itemId: "rs_1" } } },
      { type: "reasoning-delta", id: "r1", delta: summary },
      {
        type: "reasoning-end",
        id: "r1",
        providerMetadata: { openai: { itemId: "rs_1", reasoningEncryptedContent: encrypted } },
      },
      { type: "reasoning-start", id: "r2" },
      { type: "reasoning-delta", id: "r2", delta: "Count." },
      { type: "reasoning-end", id: "r2", providerMetadata: { anthropic: { signature } } },
      { type: "text-start", id: "t1" },
      { type: "text-delta", id: "t1", delta: "Forty." },
      { type: "text-end", id: "t1", providerMetadata: { openai: { itemId: "msg_1" } } },
      { type: "text-end", id: "unknown", providerMetadata: { openai: { itemId: "msg_2" } } },
      {
        type: "tool-input-start",
        toolCallId: "c1",
        toolName: "count",
        providerMetadata: { google: { thoughtSignature } },
      },
      { type: "tool-input-available", toolCallId: "c1", toolName: "count", input: {} },
      { type: "finish", finishReason: "tool-calls" },
    ];
    for (const part of parts) {
      size.add(part);
      fold.add(part);
    }
    const [answer] = fold.finish(finish) as AssistantMessage[];
    expect(answer?.content).toEqual([
      {
        type: "thinking",
        thinking: summary,
        thinkingSignature: JSON.stringify({
          type: "reasoning",
          id: "rs_1",
          summary: [{ type: "summary_text", text: summary }],
          encrypted_content: encrypted,
        }),
        providerOptions: { openai: { itemId: "rs_1", reasoningEncryptedContent: encrypted } },
      },
      {
        type: "thinking",
        thinking: "Count.",
        thinkingSignature: signature,
        providerOptions: { anthropic: { signature } },
      },
      {
        type: "text",
        text: "Forty.",
        textSignature: expect.stringContaining("msg_1"),
        providerOptions: { openai: { itemId: "msg_1" } },
      },
      {
        type: "toolCall",
        id: "c1",
        name: "count",
        arguments: {},
        thoughtSignature,
        providerOptions: { google: { thoughtSignature } },
      },
    ]);
    // What the metadata adds, counted: as much as it adds to the stored answer, at least.
    const plain = new AnswerSize("ai-sdk-ui");
    const plainFold = answerFold("ai-sdk-ui", source);
    for (const { providerMetadata: _, ...part } of parts as Array<Record<string, unknown>>) {
      plain.add(part);
      plainFold.add(part);
    }
    const [bare] = plainFold.finish(finish) as AssistantMessage[];
    const bytes = (message?: AssistantMessage) => JSON.stringify(message?.content).length;
    expect(size.bytes - plain.bytes).toBeGreaterThanOrEqual(bytes(answer) - bytes(bare));
  });

  it("refuses an answer a message of which is more than an entry holds, without making it one string", () => {
    const fold = answerFold("ai-sdk-ui", source);
    const name = "x".repeat(1_000_000);
    fold.add({ type: "tool-input-start", toolCallId: "a", toolName: name });
    for (let i = 0; i < 1000; i++) fold.add({ type: "tool-input-available", toolCallId: "a", toolName: "" });
    const answer = fold.finish(finish);
    expect(() => checkStoredSize(answer)).toThrow(expect.objectContaining({ code: "entry_too_large" }));
    // Sixteen copies fit.
    const message = answer[0] as AssistantMessage;
    const fits: AssistantMessage = { ...message, content: message.content.slice(0, 16) };
    expect(() => checkStoredSize([fits])).not.toThrow();
  });
});
