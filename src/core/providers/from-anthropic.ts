import * as z from "zod";
import type { AgentMessage, AssistantMessage, ImageContent, TextContent, Usage } from "../messages";
import { usage } from "../messages";
import type { ReadOptions, StopReason } from "./incoming";
import {
  assistantMessage,
  byKind,
  historyReply,
  isRecord,
  objectOf,
  readWith,
  replySource,
  WaitingCalls,
} from "./incoming";
import { FORMAT_API } from "./target";

/*
 * Anthropic Messages in: a `message` response, or a message param as a caller sends it (a user
 * turn of text, images and `tool_result` blocks, or an assistant turn). Thinking keeps its
 * signature; redacted thinking keeps its data as the signature (pi-ai's convention). Blocks of
 * server tools (web search, code execution) have no place in a session and are skipped.
 */

const TextBlock = z.looseObject({ type: z.literal("text"), text: z.string() });
const ThinkingBlock = z.looseObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  signature: z.string(),
});
const RedactedThinkingBlock = z.looseObject({ type: z.literal("redacted_thinking"), data: z.string() });
const ToolUseBlock = z.looseObject({
  type: z.literal("tool_use"),
  id: z.string(),
  name: z.string(),
  input: z.record(z.string(), z.unknown()),
});

const AssistantBlock = byKind(z.looseObject({ type: z.string() }), "type", {
  text: TextBlock,
  thinking: ThinkingBlock,
  redacted_thinking: RedactedThinkingBlock,
  tool_use: ToolUseBlock,
});

const ImageBlock = z.looseObject({
  type: z.literal("image"),
  source: z.looseObject({ type: z.literal("base64"), media_type: z.string(), data: z.string() }),
});

const ToolResultBlock = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string(),
  content: z.union([z.string(), z.array(z.discriminatedUnion("type", [TextBlock, ImageBlock]))]).optional(),
  is_error: z.boolean().optional(),
});

export const AnthropicResponseInput = z.looseObject({
  type: z.literal("message"),
  id: z.string(),
  role: z.literal("assistant"),
  model: z.string(),
  content: z.array(AssistantBlock),
  stop_reason: z.string().nullable(),
  usage: z.looseObject({
    input_tokens: z.number(),
    output_tokens: z.number(),
    cache_read_input_tokens: z.number().nullish(),
    cache_creation_input_tokens: z.number().nullish(),
  }),
});

export const AnthropicMessageInput = z.discriminatedUnion("role", [
  z.looseObject({
    role: z.literal("user"),
    content: z.union([
      z.string(),
      z.array(z.discriminatedUnion("type", [TextBlock, ImageBlock, ToolResultBlock])),
    ]),
  }),
  z.looseObject({ role: z.literal("assistant"), content: z.union([z.string(), z.array(AssistantBlock)]) }),
]);

/*
 * The readers below take blocks as the API wrote them, checked or not: Claude Code's logs hold
 * the same blocks unchecked, and a block ours has no place for reads as undefined.
 */

const STOP_REASONS = new Map<unknown, string>(
  Object.entries({
    tool_use: "toolUse",
    max_tokens: "length",
    model_context_window_exceeded: "length",
    end_turn: "stop",
    stop_sequence: "stop",
    // pause_turn asks for a resubmit to continue: the turn itself ended normally.
    pause_turn: "stop",
  }),
);

/** Our stop reason (and error) for Anthropic's; one it does not give reads as tool use when the turn calls tools. */
export function anthropicStopReason(reason: unknown, hasToolCall = false): StopReason {
  if (reason === "refusal") return { stopReason: "error", errorMessage: "refusal" };
  return { stopReason: STOP_REASONS.get(reason) ?? (hasToolCall ? "toolUse" : "stop") };
}

export function anthropicUsage(value: unknown): Usage {
  const u = isRecord(value) ? value : {};
  // usage() counts what is not a finite, positive number as 0.
  const n = (key: string) => u[key] as number;
  return usage(
    n("input_tokens"),
    n("output_tokens"),
    n("cache_read_input_tokens"),
    n("cache_creation_input_tokens"),
  );
}

/** A user or tool-result block (text, or a base64 image) as ours. */
export function anthropicUserBlock(block: unknown): TextContent | ImageContent | undefined {
  if (!isRecord(block)) return undefined;
  if (block.type === "text" && typeof block.text === "string") return { type: "text", text: block.text };
  const source = block.source;
  if (block.type !== "image" || !isRecord(source) || source.type !== "base64") return undefined;
  if (typeof source.data !== "string") return undefined;
  const mimeType = typeof source.media_type === "string" ? source.media_type : "image/png";
  return { type: "image", data: source.data, mimeType };
}

/**
 * A block of the model's reply as ours. Thinking keeps its signature; redacted thinking keeps its
 * opaque payload as the signature (pi-ai's convention), to be sent back as it came.
 */
export function anthropicAssistantBlock(block: unknown): AssistantMessage["content"][number] | undefined {
  if (!isRecord(block)) return undefined;
  switch (block.type) {
    case "text":
      return typeof block.text === "string" ? { type: "text", text: block.text } : undefined;
    case "thinking":
      if (typeof block.thinking !== "string") return undefined;
      return typeof block.signature === "string"
        ? { type: "thinking", thinking: block.thinking, thinkingSignature: block.signature }
        : { type: "thinking", thinking: block.thinking };
    case "redacted_thinking":
      if (typeof block.data !== "string") return undefined;
      return {
        type: "thinking",
        thinking: "[Reasoning redacted]",
        thinkingSignature: block.data,
        redacted: true,
      };
    case "tool_use":
      if (typeof block.id !== "string" || typeof block.name !== "string") return undefined;
      return {
        type: "toolCall",
        id: block.id,
        name: block.name,
        arguments: isRecord(block.input) ? block.input : {},
      };
    default:
      return undefined;
  }
}

function assistantContent(blocks: readonly unknown[]): AssistantMessage["content"] {
  return blocks.flatMap((block) => anthropicAssistantBlock(block) ?? []);
}

function parts(content: string | readonly unknown[]): Array<TextContent | ImageContent> {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.flatMap((block) => anthropicUserBlock(block) ?? []);
}

/** The messages an Anthropic response or message param stands for. */
export function fromAnthropic(input: unknown, options: ReadOptions = {}): AgentMessage[] {
  const raw = objectOf("anthropic", input);
  if (raw.type === "message") {
    const response = readWith("anthropic", AnthropicResponseInput, input);
    return [
      assistantMessage({
        content: assistantContent(response.content),
        ...replySource(options, FORMAT_API.anthropic, "anthropic", response.model),
        usage: anthropicUsage(response.usage),
        ...anthropicStopReason(response.stop_reason),
        timestamp: options.timestamp ?? Date.now(),
        responseId: response.id,
      }),
    ];
  }
  const message = readWith("anthropic", AnthropicMessageInput, input);
  const timestamp = options.timestamp ?? Date.now();
  if (message.role === "assistant") {
    const content =
      typeof message.content === "string"
        ? [{ type: "text" as const, text: message.content }]
        : assistantContent(message.content);
    return [historyReply(content, FORMAT_API.anthropic, "anthropic", options, timestamp)];
  }
  if (typeof message.content === "string") return [{ role: "user", content: message.content, timestamp }];
  // Results first, as the API orders them; the rest of the turn is the user's own message.
  const waiting = new WaitingCalls(options.history);
  const out: AgentMessage[] = [];
  const rest: Array<TextContent | ImageContent> = [];
  for (const block of message.content) {
    if (block.type === "tool_result") {
      const content = block.content === undefined ? [] : parts(block.content);
      out.push(waiting.result(block.tool_use_id, content, block.is_error === true, timestamp));
    } else rest.push(...parts([block]));
  }
  if (rest.length > 0) out.push({ role: "user", content: rest, timestamp });
  return out;
}
