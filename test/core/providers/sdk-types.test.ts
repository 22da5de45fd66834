import type Anthropic from "@anthropic-ai/sdk";
import type { Content, ContentUnion, GenerateContentParameters } from "@google/genai";
import type { ModelMessage, UIMessage } from "ai";
import type { ModelMessage as ModelMessageV5, UIMessage as UIMessageV5 } from "ai-v5";
import type OpenAI from "openai";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { AISDKRequest } from "../../../src/core/providers/to-ai-sdk";
import { toAISDK } from "../../../src/core/providers/to-ai-sdk";
import type { AISDKUIRequest } from "../../../src/core/providers/to-ai-sdk-ui";
import { toAISDKUIMessages } from "../../../src/core/providers/to-ai-sdk-ui";
import type { AnthropicRequest } from "../../../src/core/providers/to-anthropic";
import { toAnthropic } from "../../../src/core/providers/to-anthropic";
import type { GeminiRequest } from "../../../src/core/providers/to-gemini";
import { toGemini } from "../../../src/core/providers/to-gemini";
import type { OpenAIChatRequest } from "../../../src/core/providers/to-openai-chat";
import { toOpenAIChat } from "../../../src/core/providers/to-openai-chat";
import type { OpenAIResponsesRequest } from "../../../src/core/providers/to-openai-responses";
import { toOpenAIResponses } from "../../../src/core/providers/to-openai-responses";
import { assistant, call, context, result, user } from "./support";

/*
 * Every output type is assignable to the official SDKs' request types (checked by `tsc` in
 * `npm run check`; the assertions below are compile-time). The SDKs are devDependencies only: the
 * library declares its own types and imports none of them.
 */

const ctx = context([user("Hi."), assistant([call("c1", "read")]), result("c1", "read", "ok")]);

describe("outputs fit the official SDKs' request types", () => {
  it("OpenAI Chat Completions", () => {
    expectTypeOf<OpenAIChatRequest["messages"]>().toExtend<OpenAI.Chat.ChatCompletionMessageParam[]>();
    const params: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming = {
      model: "gpt-4o",
      ...toOpenAIChat(ctx, { provider: "openai", modelId: "gpt-4o" }),
    };
    expect(params.messages).toHaveLength(4);
  });

  it("OpenAI Responses", () => {
    expectTypeOf<OpenAIResponsesRequest["input"]>().toExtend<OpenAI.Responses.ResponseInput>();
    expectTypeOf<OpenAIResponsesRequest["instructions"]>().toExtend<
      OpenAI.Responses.ResponseCreateParamsNonStreaming["instructions"]
    >();
    const params: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
      model: "gpt-5",
      ...toOpenAIResponses(ctx, { provider: "openai", modelId: "gpt-5" }),
    };
    expect(params.instructions).toBe("You are terse.");
  });

  it("Anthropic Messages", () => {
    expectTypeOf<AnthropicRequest["messages"]>().toExtend<Anthropic.MessageParam[]>();
    expectTypeOf<AnthropicRequest["system"]>().toExtend<
      Anthropic.MessageCreateParamsNonStreaming["system"]
    >();
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      ...toAnthropic(ctx, { provider: "anthropic", modelId: "claude-sonnet-4-5" }),
    };
    expect(params.system).toBe("You are terse.");
  });

  it("Gemini generateContent", () => {
    expectTypeOf<GeminiRequest["contents"]>().toExtend<Content[]>();
    expectTypeOf<NonNullable<GeminiRequest["systemInstruction"]>>().toExtend<ContentUnion>();
    const { contents, systemInstruction } = toGemini(ctx, {
      provider: "google",
      modelId: "gemini-2.5-flash",
    });
    const params: GenerateContentParameters = {
      model: "gemini-2.5-flash",
      contents,
      config: { systemInstruction },
    };
    expect(params.contents).toHaveLength(3);
  });

  it("AI SDK 6 and 5 model messages, which differ in images inside tool results", () => {
    expectTypeOf<AISDKRequest<6>["messages"]>().toExtend<ModelMessage[]>();
    expectTypeOf<AISDKRequest<5>["messages"]>().toExtend<ModelMessageV5[]>();
    // Asked of one message: whether TypeScript finds an array of them assignable depends on what it
    // compared before, and the two versions' messages differ only deep inside tool results.
    expectTypeOf<AISDKRequest<6>["messages"][number]>().not.toExtend<ModelMessageV5>();
    const v6: ModelMessage[] = toAISDK(ctx, { provider: "anthropic", modelId: "m" }).messages;
    const v5: ModelMessageV5[] = toAISDK(
      ctx,
      { provider: "anthropic", modelId: "m" },
      { version: 5 },
    ).messages;
    expect([v6.length, v5.length]).toEqual([3, 3]);
  });

  it("AI SDK UI messages, 6 and 5", () => {
    expectTypeOf<AISDKUIRequest["messages"]>().toExtend<UIMessage[]>();
    expectTypeOf<AISDKUIRequest["messages"]>().toExtend<UIMessageV5[]>();
    const messages: UIMessage[] = toAISDKUIMessages(ctx).messages;
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });
});
