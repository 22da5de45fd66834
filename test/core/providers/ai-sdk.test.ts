import {
  convertToModelMessages,
  generateText,
  jsonSchema,
  type ModelMessage,
  tool,
  type UIMessage,
  validateUIMessages,
} from "ai";
import { MockLanguageModelV3 } from "ai/test";
import {
  convertToModelMessages as convertToModelMessagesV5,
  generateText as generateTextV5,
  validateUIMessages as validateUIMessagesV5,
} from "ai-v5";
import { MockLanguageModelV2 } from "ai-v5/test";
import { describe, expect, it } from "vitest";
import type { AgentMessage, AssistantMessage } from "../../../src/core/messages";
import { fromAISDK } from "../../../src/core/providers/from-ai-sdk";
import { toAISDK } from "../../../src/core/providers/to-ai-sdk";
import { toAISDKUIMessages } from "../../../src/core/providers/to-ai-sdk-ui";
import { toAnthropic } from "../../../src/core/providers/to-anthropic";
import {
  ANTHROPIC,
  assistant,
  call,
  context,
  image,
  PNG,
  result,
  type Source,
  text,
  thinking,
  user,
} from "./support";

/*
 * The AI SDK itself as the client: `generateText` validates the messages against its own schema
 * and hands them to a model; a mock model records what it was given (the provider-facing prompt)
 * and answers like a provider would. Versions 6 (`ai`) and 5 (`ai-v5`) are both run.
 */

const MODEL = { provider: "anthropic", modelId: ANTHROPIC.model };
const FOREIGN: Source = { provider: "openai", api: "openai-responses", model: "gpt-5" };

function conversation(): AgentMessage[] {
  return [
    user("Look at the screen."),
    assistant(
      [thinking("Mine, signed.", "SIG-OWN"), text("Taking a screenshot."), call("shot|fc_9", "screenshot")],
      ANTHROPIC,
    ),
    result("shot|fc_9", "screenshot", [text("Captured."), image()]),
    assistant([thinking("Foreign thought."), text("Looks fine."), call("x:1", "read")], FOREIGN),
    user("Read b."),
  ];
}

const readTool = {
  read: tool({
    inputSchema: jsonSchema<{ path: string }>({ type: "object", properties: { path: { type: "string" } } }),
    execute: async () => "sunny",
  }),
};

describe("AI SDK 6 generateText", () => {
  it("takes the messages as built, and its answer goes back out as it came", async () => {
    const request = toAISDK(context(conversation()), MODEL);
    const model = new MockLanguageModelV3({
      doGenerate: {
        content: [
          { type: "reasoning", text: "Plan.", providerMetadata: { anthropic: { signature: "SIG-NEW" } } },
          { type: "text", text: "Reading b." },
          { type: "tool-call", toolCallId: "toolu_new", toolName: "read", input: '{"path":"b"}' },
        ],
        finishReason: { unified: "tool-calls", raw: "tool_use" },
        usage: {
          inputTokens: { total: 100, noCache: 80, cacheRead: 20, cacheWrite: 0 },
          outputTokens: { total: 30, text: 20, reasoning: 10 },
        },
        warnings: [],
      },
    });
    const answer = await generateText({ model, ...request, tools: readTool });

    const prompt = model.doGenerateCalls[0]?.prompt ?? [];
    expect(prompt.map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "user",
    ]);
    const own = prompt[2] as Extract<(typeof prompt)[number], { role: "assistant" }>;
    expect(own.content[0]).toMatchObject({
      type: "reasoning",
      text: "Mine, signed.",
      providerOptions: { anthropic: { signature: "SIG-OWN" } },
    });
    const shot = prompt[3] as Extract<(typeof prompt)[number], { role: "tool" }>;
    expect(JSON.stringify(shot.content)).toContain(PNG);
    const foreign = prompt[4] as Extract<(typeof prompt)[number], { role: "assistant" }>;
    expect(foreign.content.map((p) => p.type)).toEqual(["text", "text", "tool-call"]);

    const read = fromAISDK(
      { response: answer.response, usage: answer.usage, finishReason: answer.finishReason },
      { model: MODEL },
    );
    expect(read.map((m) => m.role)).toEqual(["assistant", "toolResult"]);
    expect(read[0]).toMatchObject({
      content: [
        { type: "thinking", thinking: "Plan.", thinkingSignature: "SIG-NEW" },
        { type: "text", text: "Reading b." },
        { type: "toolCall", id: "toolu_new", name: "read", arguments: { path: "b" } },
      ],
      api: "anthropic-messages",
      provider: "anthropic",
      model: ANTHROPIC.model,
      usage: { input: 80, output: 30, cacheRead: 20, cacheWrite: 0, totalTokens: 130 },
      stopReason: "toolUse",
    });
    expect(read[1]).toMatchObject({
      toolCallId: "toolu_new",
      toolName: "read",
      content: [{ type: "text", text: "sunny" }],
    });

    const replay = toAISDK(context([...conversation(), ...read]), MODEL).messages.slice(-2);
    expect(replay).toEqual(JSON.parse(JSON.stringify(answer.response.messages)));

    // The signature read through the AI SDK also goes back to Anthropic's own API.
    const native = toAnthropic(context([...conversation(), ...read]), MODEL).messages.at(-2);
    expect(native?.content[0]).toEqual({ type: "thinking", thinking: "Plan.", signature: "SIG-NEW" });
  });

  it("refuses version 5's image parts in tool results, which is why version 5 gets its own shape", async () => {
    const v5 = toAISDK(context(conversation()), MODEL, { version: 5 });
    const v6 = toAISDK(context(conversation()), MODEL);
    expect(JSON.stringify(v5)).toContain('"type":"media"');
    expect(JSON.stringify(v6)).toContain('"type":"image-data"');
    const model = new MockLanguageModelV2({
      doGenerate: {
        content: [{ type: "text", text: "ok" }],
        finishReason: "stop",
        usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
        warnings: [],
      },
    });
    await expect(generateTextV5({ model, ...(v6 as unknown as typeof v5) })).rejects.toThrow();
  });
});

describe("AI SDK 5 generateText", () => {
  it("takes version 5 messages, images in tool results as media parts", async () => {
    const request = toAISDK(context(conversation()), MODEL, { version: 5 });
    const model = new MockLanguageModelV2({
      doGenerate: {
        content: [{ type: "text", text: "Done." }],
        finishReason: "stop",
        usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12, cachedInputTokens: 4 },
        warnings: [],
      },
    });
    const answer = await generateTextV5({ model, ...request });
    const prompt = model.doGenerateCalls[0]?.prompt ?? [];
    expect(prompt.map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "user",
    ]);
    const shot = prompt[3] as Extract<(typeof prompt)[number], { role: "tool" }>;
    expect(shot.content[0]?.output).toEqual({
      type: "content",
      value: [
        { type: "text", text: "Captured." },
        { type: "media", data: PNG, mediaType: "image/png" },
      ],
    });
    const [reply] = fromAISDK(
      { response: answer.response, usage: answer.usage, finishReason: answer.finishReason },
      {
        model: MODEL,
      },
    ) as AssistantMessage[];
    expect(reply?.usage).toMatchObject({ input: 6, output: 2, cacheRead: 4, totalTokens: 12 });
    expect(reply?.stopReason).toBe("stop");
  });
});

describe("AI SDK UI messages", () => {
  const ctx = context(conversation());

  it("pass the AI SDK's own validation and convert back to model messages, in 6 and in 5", async () => {
    const { messages } = toAISDKUIMessages(ctx, MODEL);
    const valid6 = await validateUIMessages({ messages });
    const valid5 = await validateUIMessagesV5({ messages });
    expect(valid6).toHaveLength(3);
    expect(valid5).toHaveLength(3);

    const model: ModelMessage[] = await convertToModelMessages(valid6 as UIMessage[]);
    expect(model.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "user"]);
    const calls = model.flatMap((m) =>
      m.role === "assistant" && Array.isArray(m.content)
        ? m.content.filter((p) => p.type === "tool-call")
        : [],
    );
    const results = model.flatMap((m) =>
      m.role === "tool" ? m.content.filter((p) => p.type === "tool-result") : [],
    );
    expect(results.map((r) => r.toolCallId)).toEqual(calls.map((c) => c.toolCallId));
    const v5 = convertToModelMessagesV5(valid5);
    expect(v5.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "user"]);
  });

  it("show each step, thinking as reasoning, and each call with its result", () => {
    const { messages } = toAISDKUIMessages(ctx, MODEL);
    expect(messages[1]?.parts).toEqual([
      { type: "step-start" },
      {
        type: "reasoning",
        text: "Mine, signed.",
        state: "done",
        providerMetadata: { anthropic: { signature: "SIG-OWN" } },
      },
      { type: "text", text: "Taking a screenshot.", state: "done" },
      {
        type: "tool-screenshot",
        toolCallId: "shot",
        input: {},
        state: "output-available",
        output: [
          { type: "text", text: "Captured." },
          { type: "image", data: PNG, mimeType: "image/png" },
        ],
      },
      { type: "step-start" },
      { type: "reasoning", text: "Foreign thought.", state: "done" },
      { type: "text", text: "Looks fine.", state: "done" },
      {
        type: "tool-read",
        toolCallId: "x_1",
        input: {},
        state: "output-error",
        errorText: "No result provided",
      },
    ]);
  });
});
