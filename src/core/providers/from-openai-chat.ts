import * as z from "zod";
import type { AgentMessage, AssistantMessage, ImageContent, TextContent, UserMessage } from "../messages";
import { NO_USAGE, UnixSeconds, usage } from "../messages";
import { CHAT_REASONING_FIELDS } from "./chat-reasoning-fields";
import type { ReadOptions, StopReason } from "./incoming";
import {
  assistantMessage,
  dataUrlImage,
  historyReply,
  objectOf,
  parseArguments,
  readWith,
  replySource,
  WaitingCalls,
} from "./incoming";
import { FORMAT_API } from "./target";

/*
 * OpenAI Chat Completions in: a `chat.completion` response (its first choice), an assistant
 * message as the API returns it, a `tool` message holding a result, or a user message.
 */

const TextPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const RefusalPart = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });
const ImagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.looseObject({ url: z.string() }),
});

const ChatToolCall = z.looseObject({
  id: z.string(),
  type: z.literal("function").optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

/** A call of a custom (free-text) tool: no place in a session's tool calls, so it is skipped. */
const CustomToolCall = z.looseObject({ type: z.literal("custom") });

export const OpenAIChatAssistantInput = z.looseObject({
  role: z.literal("assistant"),
  content: z.union([z.string(), z.array(z.discriminatedUnion("type", [TextPart, RefusalPart]))]).nullish(),
  refusal: z.string().nullish(),
  tool_calls: z.array(z.union([ChatToolCall, CustomToolCall])).nullish(),
  reasoning_content: z.string().nullish(),
  reasoning: z.string().nullish(),
  reasoning_text: z.string().nullish(),
});

export const OpenAIChatToolInput = z.looseObject({
  role: z.literal("tool"),
  tool_call_id: z.string(),
  content: z.union([z.string(), z.array(TextPart)]),
});

export const OpenAIChatUserInput = z.looseObject({
  role: z.literal("user"),
  content: z.union([z.string(), z.array(z.discriminatedUnion("type", [TextPart, ImagePart]))]),
});

const ChatUsage = z.looseObject({
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number().optional(),
  prompt_tokens_details: z
    .looseObject({ cached_tokens: z.number().nullish(), cache_write_tokens: z.number().nullish() })
    .nullish(),
});

export const OpenAIChatCompletionInput = z.looseObject({
  object: z.literal("chat.completion"),
  id: z.string(),
  created: UnixSeconds,
  model: z.string(),
  choices: z
    .array(z.looseObject({ message: OpenAIChatAssistantInput, finish_reason: z.string().nullable() }))
    .min(1),
  usage: ChatUsage.nullish(),
});

export const OpenAIChatMessageInput = z.discriminatedUnion("role", [
  OpenAIChatAssistantInput,
  OpenAIChatToolInput,
  OpenAIChatUserInput,
]);

const STOP_REASONS = new Map(
  Object.entries({ stop: "stop", length: "length", tool_calls: "toolUse", function_call: "toolUse" }),
);

function stopReason(finish: string | null): StopReason {
  const known = STOP_REASONS.get(finish ?? "stop");
  return known ? { stopReason: known } : { stopReason: "error", errorMessage: `finish_reason: ${finish}` };
}

function assistantContent(message: z.output<typeof OpenAIChatAssistantInput>): AssistantMessage["content"] {
  const content: AssistantMessage["content"] = [];
  // The first reasoning field a server filled; pi-ai keeps its name to send it back there.
  const field = CHAT_REASONING_FIELDS.find((name) => message[name]);
  if (field) content.push({ type: "thinking", thinking: message[field] as string, thinkingSignature: field });
  const texts =
    typeof message.content === "string"
      ? [message.content]
      : (message.content ?? []).map((part) => (part.type === "text" ? part.text : part.refusal));
  for (const text of [...texts, message.refusal]) if (text) content.push({ type: "text", text });
  for (const call of message.tool_calls ?? []) {
    if (call.type === "custom") continue;
    content.push({
      type: "toolCall",
      id: call.id,
      name: call.function.name,
      arguments: parseArguments(call.function.arguments),
    });
  }
  return content;
}

function userContent(content: z.output<typeof OpenAIChatUserInput>["content"]): UserMessage["content"] {
  if (typeof content === "string") return content;
  return content.map((part, index): TextContent | ImageContent =>
    part.type === "text"
      ? { type: "text", text: part.text }
      : dataUrlImage("openai-chat", part.image_url.url, ["content", index, "image_url", "url"]),
  );
}

/** The messages a Chat Completions response or message stands for. */
export function fromOpenAIChat(input: unknown, options: ReadOptions = {}): AgentMessage[] {
  const raw = objectOf("openai-chat", input);
  if (raw.object === "chat.completion" || raw.choices !== undefined) {
    const completion = readWith("openai-chat", OpenAIChatCompletionInput, input);
    const choice = completion.choices[0] as (typeof completion.choices)[number];
    const u = completion.usage;
    const cacheRead = u?.prompt_tokens_details?.cached_tokens ?? 0;
    const cacheWrite = u?.prompt_tokens_details?.cache_write_tokens ?? 0;
    return [
      assistantMessage({
        content: assistantContent(choice.message),
        ...replySource(options, FORMAT_API["openai-chat"], "openai", completion.model),
        usage: u
          ? usage(u.prompt_tokens - cacheRead - cacheWrite, u.completion_tokens, cacheRead, cacheWrite)
          : NO_USAGE,
        ...stopReason(choice.finish_reason),
        timestamp: options.timestamp ?? completion.created * 1000,
        responseId: completion.id,
      }),
    ];
  }
  const message = readWith("openai-chat", OpenAIChatMessageInput, input);
  const timestamp = options.timestamp ?? Date.now();
  if (message.role === "assistant") {
    const content = assistantContent(message);
    return [historyReply(content, FORMAT_API["openai-chat"], "openai", options, timestamp)];
  }
  if (message.role === "tool") {
    const text =
      typeof message.content === "string"
        ? message.content
        : message.content.map((part) => part.text).join("\n");
    const waiting = new WaitingCalls(options.history);
    return [waiting.result(message.tool_call_id, [{ type: "text", text }], false, timestamp)];
  }
  return [{ role: "user", content: userContent(message.content), timestamp }];
}
