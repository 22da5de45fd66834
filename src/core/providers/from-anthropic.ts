import * as z from "zod";
import type { AgentMessage, AssistantMessage, ImageContent, TextContent } from "../messages";
import { usage } from "../messages";
import type { ReadOptions } from "./incoming";
import {
  assistantMessage,
  byKind,
  historyReply,
  objectOf,
  readWith,
  toolResultMessage,
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

function stopReason(reason: string | null): { stopReason: string; errorMessage?: string } {
  switch (reason) {
    case "tool_use":
      return { stopReason: "toolUse" };
    case "max_tokens":
    case "model_context_window_exceeded":
      return { stopReason: "length" };
    case "refusal":
      return { stopReason: "error", errorMessage: "refusal" };
    default:
      // end_turn, stop_sequence, pause_turn (resubmit to continue): the turn ended normally.
      return { stopReason: "stop" };
  }
}

function assistantContent(blocks: ReadonlyArray<{ type: string }>): AssistantMessage["content"] {
  const content: AssistantMessage["content"] = [];
  for (const raw of blocks) {
    if (raw.type === "text") content.push({ type: "text", text: (raw as z.output<typeof TextBlock>).text });
    else if (raw.type === "thinking") {
      const block = raw as z.output<typeof ThinkingBlock>;
      content.push({ type: "thinking", thinking: block.thinking, thinkingSignature: block.signature });
    } else if (raw.type === "redacted_thinking") {
      const block = raw as z.output<typeof RedactedThinkingBlock>;
      content.push({
        type: "thinking",
        thinking: "[Reasoning redacted]",
        thinkingSignature: block.data,
        redacted: true,
      });
    } else if (raw.type === "tool_use") {
      const block = raw as z.output<typeof ToolUseBlock>;
      content.push({ type: "toolCall", id: block.id, name: block.name, arguments: block.input });
    }
  }
  return content;
}

function parts(
  content: string | ReadonlyArray<z.output<typeof TextBlock> | z.output<typeof ImageBlock>>,
): Array<TextContent | ImageContent> {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.map((block) =>
    block.type === "text"
      ? { type: "text", text: block.text }
      : { type: "image", data: block.source.data, mimeType: block.source.media_type },
  );
}

/** The messages an Anthropic response or message param stands for. */
export function fromAnthropic(input: unknown, options: ReadOptions = {}): AgentMessage[] {
  const raw = objectOf("anthropic", input);
  const api = options.model?.api ?? FORMAT_API.anthropic;
  const provider = options.model?.provider ?? "anthropic";
  if (raw.type === "message") {
    const response = readWith("anthropic", AnthropicResponseInput, input);
    const u = response.usage;
    return [
      assistantMessage({
        content: assistantContent(response.content),
        api,
        provider,
        model: options.model?.modelId ?? response.model,
        usage: usage(
          u.input_tokens,
          u.output_tokens,
          u.cache_read_input_tokens ?? 0,
          u.cache_creation_input_tokens ?? 0,
        ),
        ...stopReason(response.stop_reason),
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
    return [historyReply(content, api, provider, options, timestamp)];
  }
  if (typeof message.content === "string") return [{ role: "user", content: message.content, timestamp }];
  // Results first, as the API orders them; the rest of the turn is the user's own message.
  const waiting = new WaitingCalls(options.history);
  const out: AgentMessage[] = [];
  const rest: Array<TextContent | ImageContent> = [];
  for (const block of message.content) {
    if (block.type === "tool_result") {
      const call = waiting.answer(block.tool_use_id);
      out.push(
        toolResultMessage(
          call?.id ?? block.tool_use_id,
          call?.name ?? "",
          block.content === undefined ? [] : parts(block.content),
          block.is_error === true,
          timestamp,
        ),
      );
    } else rest.push(...parts([block]));
  }
  if (rest.length > 0) out.push({ role: "user", content: rest, timestamp });
  return out;
}
