import type { SessionContext } from "../context";
import type { ImageContent, TextContent } from "../messages";
import { ANTHROPIC_IMAGE_TYPES, imageTypeFor, unsupportedImageNote } from "./image-types";
import type { NormalAssistant, NormalToolResults } from "./normalize";
import { normalizeContext, resultParts } from "./normalize";
import type { TargetModel } from "./target";
import { ANTHROPIC_IDS } from "./tool-call-ids";

/*
 * Anthropic Messages: top-level `system` and `messages` that alternate user / assistant. Tool
 * results are `tool_result` blocks of one user turn, first in it (a user message after them joins
 * the same turn); images in tool results go inside the `tool_result`. Thinking goes back with its
 * signature to the model that wrote it, redacted thinking as `redacted_thinking`.
 */

export type AnthropicImageType = (typeof ANTHROPIC_IMAGE_TYPES)[number];

export type AnthropicTextBlock = { type: "text"; text: string };
export type AnthropicImageBlock = {
  type: "image";
  source: { type: "base64"; media_type: AnthropicImageType; data: string };
};
export type AnthropicToolResultBlock = {
  type: "tool_result";
  tool_use_id: string;
  content?: string | Array<AnthropicTextBlock | AnthropicImageBlock>;
  is_error: boolean;
};
export type AnthropicAssistantBlock =
  | AnthropicTextBlock
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

export type AnthropicMessage =
  | { role: "user"; content: Array<AnthropicTextBlock | AnthropicImageBlock | AnthropicToolResultBlock> }
  | { role: "assistant"; content: AnthropicAssistantBlock[] };

export interface AnthropicRequest {
  /** The system prompt, when there is one. */
  system?: string;
  messages: AnthropicMessage[];
}

/** Anthropic reads four image types; any other becomes a note rather than a refused request. */
function block(part: TextContent | ImageContent): AnthropicTextBlock | AnthropicImageBlock {
  if (part.type === "text") return { type: "text", text: part.text };
  const mediaType = imageTypeFor(part.mimeType, ANTHROPIC_IMAGE_TYPES);
  if (!mediaType) return { type: "text", text: unsupportedImageNote(part.mimeType) };
  return { type: "image", source: { type: "base64", media_type: mediaType, data: part.data } };
}

function toolResultBlocks(turn: NormalToolResults): AnthropicToolResultBlock[] {
  return turn.results.map((result) => {
    const out: AnthropicToolResultBlock = {
      type: "tool_result",
      tool_use_id: result.toolCallId,
      is_error: result.isError,
    };
    const { text, images } = resultParts(result.content);
    if (images.length > 0) out.content = result.content.map(block);
    else if (text) out.content = text;
    return out;
  });
}

function assistantBlocks(message: NormalAssistant): AnthropicAssistantBlock[] {
  const blocks: AnthropicAssistantBlock[] = [];
  for (const part of message.content) {
    if (part.type === "text") blocks.push({ type: "text", text: part.text });
    else if (part.type === "toolCall") {
      blocks.push({ type: "tool_use", id: part.id, name: part.name, input: part.arguments });
    } else if (part.redacted) {
      if (part.thinkingSignature) blocks.push({ type: "redacted_thinking", data: part.thinkingSignature });
    } else if (part.thinkingSignature) {
      blocks.push({ type: "thinking", thinking: part.thinking, signature: part.thinkingSignature });
    } else if (part.thinking.trim()) {
      // Thinking without a signature (a stream cut short) is refused as thinking: it goes as text.
      blocks.push({ type: "text", text: part.thinking });
    }
  }
  return blocks;
}

/** `system` and `messages` of a Messages request for `context`, sent to `model`. */
export function toAnthropic(context: SessionContext, model: TargetModel): AnthropicRequest {
  const normal = normalizeContext(context, "anthropic", model, { ids: ANTHROPIC_IDS });
  const messages: AnthropicMessage[] = [];
  const push = (message: AnthropicMessage) => {
    if (message.content.length === 0) return;
    const last = messages[messages.length - 1];
    // Turns of one role in a row become one turn, so roles alternate.
    if (last?.role === message.role) {
      for (const part of message.content) (last.content as unknown[]).push(part);
    } else messages.push(message);
  };
  for (const message of normal.messages) {
    if (message.role === "user") push({ role: "user", content: message.content.map(block) });
    else if (message.role === "assistant") push({ role: "assistant", content: assistantBlocks(message) });
    else push({ role: "user", content: toolResultBlocks(message) });
  }
  return normal.system ? { system: normal.system, messages } : { messages };
}
