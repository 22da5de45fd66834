import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SessionError } from "../../../src/core/errors";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../../../src/core/messages";
import { convertProviderMessage } from "../../../src/core/providers/convert";
import { fromAnthropic } from "../../../src/core/providers/from-anthropic";
import { fromGemini } from "../../../src/core/providers/from-gemini";
import { fromLangChain } from "../../../src/core/providers/from-langchain";
import { fromOpenAIChat } from "../../../src/core/providers/from-openai-chat";
import { fromOpenAIResponses } from "../../../src/core/providers/from-openai-responses";
import { toAnthropic } from "../../../src/core/providers/to-anthropic";
import { toGemini } from "../../../src/core/providers/to-gemini";
import { toOpenAIChat } from "../../../src/core/providers/to-openai-chat";
import { toOpenAIResponses } from "../../../src/core/providers/to-openai-responses";
import { assistant, call, context, GEMINI, user } from "./support";

const FIXTURES = join(import.meta.dirname, "../../fixtures/providers");

function fixture<T = Record<string, unknown>>(name: string): T {
  return JSON.parse(readFileSync(join(FIXTURES, name), "utf8")) as T;
}

function only<T extends AgentMessage>(messages: AgentMessage[]): T {
  expect(messages).toHaveLength(1);
  return messages[0] as T;
}

const ZERO_COST = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };

function expectInvalid(run: () => unknown, where: string): SessionError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SessionError);
    const e = error as SessionError;
    expect(e.code).toBe("invalid_request");
    expect(e.message).toContain(where);
    expect((e.details as Array<{ path: unknown[] }>)[0]?.path.join(".")).toBe(where);
    return e;
  }
  throw new Error("expected invalid_request");
}

describe("OpenAI Chat Completions in", () => {
  const response = fixture("openai-chat-tool-call.json");

  it("reads a reply: tool calls, usage, stop reason, model", () => {
    expect(only(fromOpenAIChat(response))).toEqual({
      role: "assistant",
      content: [
        {
          type: "toolCall",
          id: "call_abc123",
          name: "get_current_weather",
          arguments: { location: "Boston, MA" },
        },
      ],
      api: "openai-completions",
      provider: "openai",
      model: "gpt-4o-mini",
      usage: { input: 82, output: 17, cacheRead: 0, cacheWrite: 0, totalTokens: 99, cost: ZERO_COST },
      stopReason: "toolUse",
      timestamp: 1699896916000,
      responseId: "chatcmpl-abc123",
    });
  });

  it("sends the reply back as the API returned it", () => {
    const reply = only<AssistantMessage>(fromOpenAIChat(response));
    const out = toOpenAIChat(context([user("Weather in Boston?"), reply], ""), {
      provider: "openai",
      modelId: "gpt-4o-mini",
    });
    const original = (response.choices as Array<{ message: Record<string, unknown> }>)[0]?.message as {
      tool_calls: Array<{ function: { arguments: string } }>;
    };
    const sent = out.messages[1] as typeof original;
    // Arguments are sent as compact JSON: the same object, not the same whitespace.
    expect(JSON.parse(sent.tool_calls[0]?.function.arguments as string)).toEqual(
      JSON.parse(original.tool_calls[0]?.function.arguments as string),
    );
    const withoutArguments = (m: typeof original) => ({
      ...m,
      tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: "" } })),
    });
    expect(withoutArguments(sent)).toEqual(withoutArguments(original));
  });

  it("reads a server's reasoning field and sends it back in that field", () => {
    const reply = only<AssistantMessage>(
      fromOpenAIChat(
        { role: "assistant", content: "4", reasoning_content: "2+2" },
        { model: { modelId: "deepseek" } },
      ),
    );
    expect(reply.content).toEqual([
      { type: "thinking", thinking: "2+2", thinkingSignature: "reasoning_content" },
      { type: "text", text: "4" },
    ]);
    const out = toOpenAIChat(context([user("2+2?"), reply], ""), { provider: "openai", modelId: "deepseek" });
    expect(out.messages[1]).toEqual({ role: "assistant", content: "4", reasoning_content: "2+2" });
  });

  it("reads a tool message, naming its tool from the conversation", () => {
    const history = [user("Go."), assistant([call("call_1", "read")])];
    const message = only<ToolResultMessage>(
      fromOpenAIChat(
        { role: "tool", tool_call_id: "call_1", content: "file body" },
        { history, timestamp: 5 },
      ),
    );
    expect(message).toEqual({
      role: "toolResult",
      toolCallId: "call_1",
      toolName: "read",
      content: [{ type: "text", text: "file body" }],
      isError: false,
      timestamp: 5,
    });
  });

  it("reads a user message with a data URL image", () => {
    expect(
      fromOpenAIChat(
        {
          role: "user",
          content: [
            { type: "text", text: "Look" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
          ],
        },
        { timestamp: 1 },
      ),
    ).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Look" },
          { type: "image", data: "AAAA", mimeType: "image/png" },
        ],
        timestamp: 1,
      },
    ]);
  });

  it("refuses an invalid message naming the field", () => {
    expectInvalid(
      () => fromOpenAIChat({ role: "tool", tool_call_id: 7, content: "x" }),
      "message.tool_call_id",
    );
    expectInvalid(
      () =>
        fromOpenAIChat({
          role: "user",
          content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }],
        }),
      "message.content.0.image_url.url",
    );
    expectInvalid(
      () => convertProviderMessage("openai-chat", { role: "system", content: "x" }),
      "message.role",
    );
  });
});

describe("OpenAI Responses in", () => {
  const withMessage = fixture("openai-responses-reasoning-message.json");
  const withCall = fixture("openai-responses-reasoning-function-call.json");
  const model = { provider: "openai", modelId: "gpt-5-mini-2025-08-07" };

  it("reads reasoning (encrypted content kept), message and usage", () => {
    const reply = only<AssistantMessage>(fromOpenAIResponses(withMessage));
    const output = withMessage.output as Array<Record<string, unknown>>;
    expect(reply.content).toEqual([
      {
        type: "thinking",
        thinking: (output[0] as { summary: Array<{ text: string }> }).summary[0]?.text,
        thinkingSignature: JSON.stringify(output[0]),
      },
      {
        type: "text",
        text: "12 + 7 = 19\n19 × 3 = 57\n57 × 10 = 570\n\nFinal result: 570",
        textSignature: JSON.stringify({ v: 1, id: output[1]?.id }),
      },
    ]);
    expect(reply).toMatchObject({
      api: "openai-responses",
      provider: "openai",
      model: "gpt-5-mini-2025-08-07",
      usage: { input: 865, output: 163, cacheRead: 0, cacheWrite: 0, totalTokens: 1028 },
      stopReason: "stop",
      timestamp: 1765591383000,
      responseId: withMessage.id,
    });
  });

  it("sends the same model its reasoning and message items back as they came", () => {
    const reply = only<AssistantMessage>(fromOpenAIResponses(withMessage));
    const { input } = toOpenAIResponses(context([user("Compute it."), reply], ""), model);
    const output = withMessage.output as Array<Record<string, unknown>>;
    expect(input[1]).toEqual(output[0]);
    expect(output[1]).toMatchObject(input[2] as Record<string, unknown>);
    expect(input).toHaveLength(3);
  });

  it("sends a reasoning item and its function call back, and the result under the call id", () => {
    const reply = only<AssistantMessage>(fromOpenAIResponses(withCall));
    expect(reply.stopReason).toBe("toolUse");
    expect(reply.content[1]).toEqual({
      type: "toolCall",
      id: "call_2mhz5FtwkZnzXQkTOMtYZpZH|fc_08c7eac45286fefb006a5f41bceb6081a3a366f3ae718bea5e",
      name: "semantic_scholar_search",
      arguments: { query: "machine learning", limit: 10, offset: 0, year: 0 },
    });
    const history = [user("Find papers."), reply];
    const resultMessage = only<ToolResultMessage>(
      fromOpenAIResponses(
        { type: "function_call_output", call_id: "call_2mhz5FtwkZnzXQkTOMtYZpZH", output: "3 papers" },
        { history },
      ),
    );
    expect(resultMessage.toolCallId).toBe(reply.content[1]?.id);
    expect(resultMessage.toolName).toBe("semantic_scholar_search");
    const { input } = toOpenAIResponses(context([...history, resultMessage], ""), {
      provider: "openai",
      modelId: "o3-2025-04-16",
    });
    const output = withCall.output as Array<Record<string, unknown>>;
    expect(input[1]).toEqual(output[0]);
    expect(output[1]).toMatchObject(input[2] as Record<string, unknown>);
    expect(input[3]).toEqual({
      type: "function_call_output",
      call_id: "call_2mhz5FtwkZnzXQkTOMtYZpZH",
      output: "3 papers",
    });
  });

  it("maps a failed or incomplete response to its stop reason", () => {
    const failed = { ...withMessage, status: "failed", error: { code: "server_error", message: "boom" } };
    expect(only<AssistantMessage>(fromOpenAIResponses(failed))).toMatchObject({
      stopReason: "error",
      errorMessage: "server_error: boom",
    });
    const cut = { ...withMessage, status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
    expect(only<AssistantMessage>(fromOpenAIResponses(cut)).stopReason).toBe("length");
  });

  it("refuses an invalid item naming the field", () => {
    expectInvalid(
      () =>
        fromOpenAIResponses({
          ...withCall,
          output: [{ type: "function_call", call_id: "c", name: 1, arguments: "{}" }],
        }),
      "message.output.0.name",
    );
  });
});

describe("Anthropic in", () => {
  const withTool = fixture("anthropic-thinking-tool-use.json");
  const redacted = fixture("anthropic-redacted-thinking.json");

  it("reads signed thinking, tool use, usage and stop reason", () => {
    expect(only(fromAnthropic(withTool, { timestamp: 7 }))).toEqual({
      role: "assistant",
      content: [
        {
          type: "thinking",
          thinking: "The user wants me to call checkSandboxErrors immediately.",
          thinkingSignature: (withTool.content as Array<{ signature?: string }>)[0]?.signature,
        },
        { type: "toolCall", id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9", name: "checkSandboxErrors", arguments: {} },
      ],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-6",
      usage: { input: 599, output: 59, cacheRead: 0, cacheWrite: 0, totalTokens: 658, cost: ZERO_COST },
      stopReason: "toolUse",
      timestamp: 7,
      responseId: "msg_011CfWBu94HWxZXjXK6ZhEXM",
    });
  });

  it("sends thinking, redacted thinking and text back exactly as they came", () => {
    const reply = only<AssistantMessage>(fromAnthropic(redacted));
    const out = toAnthropic(context([user("Analyze."), reply], ""), {
      provider: "anthropic",
      modelId: "claude-3-7-sonnet-20250219",
    });
    expect(out.messages[1]).toEqual({ role: "assistant", content: redacted.content });
  });

  it("sends a tool use back with its signed thinking, and reads the results the caller made", () => {
    const reply = only<AssistantMessage>(fromAnthropic(withTool));
    const turn = fromAnthropic(
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9", content: "no errors" },
          { type: "text", text: "Also check the logs." },
        ],
      },
      { history: [user("Check."), reply], timestamp: 9 },
    );
    expect(turn).toEqual([
      {
        role: "toolResult",
        toolCallId: "toolu_017R7ACrx7NF7sLDDtvdQ1u9",
        toolName: "checkSandboxErrors",
        content: [{ type: "text", text: "no errors" }],
        isError: false,
        timestamp: 9,
      },
      { role: "user", content: [{ type: "text", text: "Also check the logs." }], timestamp: 9 },
    ]);
    const out = toAnthropic(context([user("Check."), reply, ...turn], ""), {
      provider: "anthropic",
      modelId: "claude-sonnet-4-6",
    });
    for (const [i, block] of out.messages[1]?.content.entries() ?? []) {
      expect((withTool.content as object[])[i]).toMatchObject(block);
    }
    expect(out.messages[2]?.content).toEqual([
      {
        type: "tool_result",
        tool_use_id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9",
        content: "no errors",
        is_error: false,
      },
      { type: "text", text: "Also check the logs." },
    ]);
  });

  it("refuses an invalid block naming the field", () => {
    expectInvalid(
      () => fromAnthropic({ ...withTool, content: [{ type: "tool_use", id: 5, name: "x", input: {} }] }),
      "message.content.0.id",
    );
    expectInvalid(
      () => fromAnthropic({ role: "user", content: [{ type: "document", source: {} }] }),
      "message.content.0.type",
    );
  });
});

describe("Gemini in", () => {
  const withCall = fixture("gemini-3-function-call.json");
  const withText = fixture("gemini-3-text-signature.json");
  const model = { provider: "google", modelId: "gemini-3-pro-preview" };

  it("reads a function call without an id under a stable id made from the response", () => {
    const first = only<AssistantMessage>(fromGemini(withCall));
    const again = only<AssistantMessage>(fromGemini(withCall));
    const block = first.content[0] as { id: string };
    expect(block.id).toMatch(/^call_[a-z0-9]+_0$/);
    expect(again.content[0]).toEqual(first.content[0]);
    expect(first).toMatchObject({
      content: [
        {
          type: "toolCall",
          name: "weather",
          arguments: { location: "San Francisco" },
          thoughtSignature: (
            withCall.candidates as Array<{ content: { parts: Array<{ thoughtSignature: string }> } }>
          )[0]?.content.parts[0]?.thoughtSignature,
        },
      ],
      api: "google-generative-ai",
      provider: "google",
      model: "gemini-3-pro-preview",
      usage: { input: 29, output: 1816, cacheRead: 0, cacheWrite: 0, totalTokens: 1845 },
      stopReason: "toolUse",
      responseId: "JniLacKqGqH0xs0P0O776As",
    });
  });

  it("gives each id-less call of one response its own id", () => {
    const response = {
      candidates: [
        {
          content: {
            role: "model",
            parts: [
              { functionCall: { name: "weather", args: { city: "Paris" } } },
              { functionCall: { name: "weather", args: { city: "Tokyo" } } },
            ],
          },
          finishReason: "STOP",
        },
      ],
    };
    const reply = only<AssistantMessage>(fromGemini(response));
    const ids = reply.content.map((block) => (block as { id: string }).id);
    expect(new Set(ids).size).toBe(2);
  });

  it("gives an id-less call an id no call of the conversation has, the same for the same conversation", () => {
    const content = { role: "model", parts: [{ functionCall: { name: "get_time", args: {} } }] };
    const response = { candidates: [{ content, finishReason: "STOP" }] };
    for (const input of [content, response]) {
      const idOf = (history: AgentMessage[]) =>
        (only<AssistantMessage>(fromGemini(input, { history })).content[0] as { id: string }).id;
      const first = idOf([user("What time is it?")]);
      const answered = [user("What time is it?"), assistant([call(first, "get_time")], GEMINI)];
      const later = [...answered, user("And now?")];
      expect(idOf(later)).not.toBe(first);
      expect(idOf(later)).toBe(idOf(later));
      expect(idOf([user("What time is it?")])).toBe(first);
    }
  });

  it("sends each reply back to the same model part for part", () => {
    for (const response of [withCall, withText]) {
      const reply = only<AssistantMessage>(fromGemini(response));
      const { contents } = toGemini(context([user("Go."), reply], ""), model);
      const candidate = (response.candidates as Array<{ content: unknown }>)[0]?.content;
      expect(contents[1]).toEqual(candidate);
    }
  });

  it("pairs function responses without ids with the waiting calls by name, in order", () => {
    const reply = only<AssistantMessage>(
      fromGemini({
        role: "model",
        parts: [
          { functionCall: { name: "weather", args: { city: "Paris" } } },
          { functionCall: { name: "weather", args: { city: "Tokyo" } } },
        ],
      }),
    );
    const results = fromGemini(
      {
        role: "user",
        parts: [
          { functionResponse: { name: "weather", response: { output: "sunny" } } },
          { functionResponse: { name: "weather", response: { error: "no data" } } },
        ],
      },
      { history: [user("Weather?"), reply] },
    ) as ToolResultMessage[];
    expect(results.map((r) => r.toolCallId)).toEqual(
      reply.content.map((block) => (block as { id: string }).id),
    );
    expect(results.map((r) => [r.content, r.isError])).toEqual([
      [[{ type: "text", text: "sunny" }], false],
      [[{ type: "text", text: "no data" }], true],
    ]);
  });

  it("pairs function responses with the calls of a turn stored as one reply per call", () => {
    const first = assistant([call("g1", "read")], GEMINI);
    const second = assistant([call("g2", "read")], GEMINI);
    const results = fromGemini(
      {
        role: "user",
        parts: [
          { functionResponse: { name: "read", response: { output: "a" } } },
          { functionResponse: { name: "read", response: { output: "b" } } },
        ],
      },
      { history: [user("Read both."), first, second] },
    ) as ToolResultMessage[];
    expect(results.map((r) => r.toolCallId)).toEqual(["g1", "g2"]);
    // An earlier turn, answered, is not waiting.
    const later = fromGemini(
      { role: "user", parts: [{ functionResponse: { name: "read", response: { output: "c" } } }] },
      { history: [user("Read both."), first, results[0] as ToolResultMessage, second] },
    ) as ToolResultMessage[];
    expect(later.map((r) => r.toolCallId)).toEqual(["g2"]);
  });

  it("reads a blocked prompt as an errored reply", () => {
    expect(only<AssistantMessage>(fromGemini({ promptFeedback: { blockReason: "SAFETY" } }))).toMatchObject({
      content: [],
      stopReason: "error",
      errorMessage: "prompt blocked: SAFETY",
    });
  });

  it("refuses an invalid part naming the field", () => {
    expectInvalid(
      () => fromGemini({ role: "model", parts: [{ functionCall: { name: 3 } }] }),
      "message.parts.0.functionCall.name",
    );
  });
});

describe("convertProviderMessage", () => {
  it("reads each format", () => {
    expect(convertProviderMessage("anthropic", { role: "user", content: "hi" }, { timestamp: 1 })).toEqual([
      { role: "user", content: "hi", timestamp: 1 },
    ]);
    expect(
      convertProviderMessage("gemini", { role: "user", parts: [{ text: "hi" }] }, { timestamp: 1 }),
    ).toEqual([{ role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 }]);
    expect(convertProviderMessage("ai-sdk", { role: "user", content: "hi" }, { timestamp: 1 })).toEqual([
      { role: "user", content: "hi", timestamp: 1 },
    ]);
    expect(
      convertProviderMessage("openai-responses", { role: "user", content: "hi" }, { timestamp: 1 }),
    ).toEqual([{ role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 }]);
  });

  it("records the model the caller names", () => {
    const reply = only<AssistantMessage>(
      convertProviderMessage("gemini", fixture("gemini-3-text-signature.json"), {
        model: { provider: "google-vertex", api: "google-vertex", modelId: "gemini-3-pro" },
      }),
    );
    expect([reply.provider, reply.api, reply.model]).toEqual([
      "google-vertex",
      "google-vertex",
      "gemini-3-pro",
    ]);
  });

  it("refuses an unknown format", () => {
    try {
      convertProviderMessage("cohere", {});
      throw new Error("expected a refusal");
    } catch (error) {
      expect((error as SessionError).code).toBe("unsupported_format");
    }
  });

  it("refuses a message that is not an object", () => {
    expectInvalid(() => convertProviderMessage("anthropic", "hello"), "message");
  });

  it("keeps a replayed reply of the target model valid: a GEMINI source stays Gemini", () => {
    const reply = assistant([{ type: "text", text: "x", textSignature: "QUJD" }], GEMINI);
    const { contents } = toGemini(context([user("Go."), reply], ""), {
      provider: "google",
      modelId: GEMINI.model,
    });
    expect(contents[1]?.parts).toEqual([{ text: "x", thoughtSignature: "QUJD" }]);
  });
});

describe("LangChain messages", () => {
  const read = (kind: "ai" | "tool", kwargs: Record<string, unknown>, history: AgentMessage[] = []) =>
    fromLangChain({ id: "", kind, kwargs }, { history, timestamp: 1 });

  it("keeps an answer's text blocks apart, around its tool call, and joins a tool result's by a line", () => {
    const answer = read("ai", {
      content: [
        { type: "text", text: "Reading a first." },
        { type: "tool_use", id: "call_1", name: "read", input: { path: "a" } },
        { type: "text", text: "Then b." },
      ],
      tool_calls: [{ id: "call_1", name: "read", args: { path: "a" } }],
    }) as AssistantMessage;
    expect(answer.content.filter((part) => part.type === "text")).toEqual([
      { type: "text", text: "Reading a first." },
      { type: "text", text: "Then b." },
    ]);
    const result = read(
      "tool",
      {
        tool_call_id: "call_1",
        content: [
          { type: "text", text: "line 1" },
          { type: "text", text: "line 2" },
        ],
      },
      [answer],
    ) as ToolResultMessage;
    expect(result.content).toEqual([{ type: "text", text: "line 1\nline 2" }]);
  });
});
