import type { SessionContext } from "../context";
import type { ImageContent, TextContent } from "../messages";
import type { ChatReasoningField } from "./chat-reasoning-fields";
import { CHAT_REASONING_FIELDS } from "./chat-reasoning-fields";
import type { NormalAssistant, NormalToolResults, NormalUser } from "./normalize";
import { normalizeContext, resultParts, TOOL_IMAGE_PLACEHOLDER } from "./normalize";
import type { TargetModel } from "./target";
import { dataUrl } from "./text";
import { OPENAI_CHAT_IDS } from "./tool-call-ids";

/*
 * OpenAI Chat Completions: `messages` with the system prompt first, developer messages in their
 * place. Tool results are one `tool` message per call; a tool message carries text only, so a
 * result's images follow all the tool messages of the turn in one user message.
 */

export type OpenAIChatContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } };

export interface OpenAIChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface OpenAIChatAssistantMessage extends Partial<Record<ChatReasoningField, string>> {
  role: "assistant";
  /** null when the turn holds only tool calls. */
  content: string | null;
  tool_calls?: OpenAIChatToolCall[];
}

export type OpenAIChatMessage =
  | { role: "system"; content: string }
  | { role: "developer"; content: string }
  | { role: "user"; content: string | OpenAIChatContentPart[] }
  | OpenAIChatAssistantMessage
  | { role: "tool"; tool_call_id: string; content: string };

export interface OpenAIChatRequest {
  messages: OpenAIChatMessage[];
}

export interface OpenAIChatOptions {
  /** Role of the system prompt: "system" (default) or "developer" (OpenAI's reasoning models). */
  systemRole?: "system" | "developer";
}

export const OPENAI_CHAT_TOOL_IMAGES_INTRO = "Attached image(s) from tool result:";

function part(content: TextContent | ImageContent): OpenAIChatContentPart {
  return content.type === "text"
    ? { type: "text", text: content.text }
    : { type: "image_url", image_url: { url: dataUrl(content.mimeType, content.data) } };
}

function userMessage(message: NormalUser): OpenAIChatMessage {
  const [first] = message.content;
  if (message.content.length === 1 && first?.type === "text") return { role: "user", content: first.text };
  return { role: "user", content: message.content.map(part) };
}

function isReasoningField(value: unknown): value is ChatReasoningField {
  return (CHAT_REASONING_FIELDS as readonly unknown[]).includes(value);
}

function assistantMessage(message: NormalAssistant): OpenAIChatAssistantMessage {
  const texts: string[] = [];
  const toolCalls: OpenAIChatToolCall[] = [];
  const reasoning = new Map<ChatReasoningField, string[]>();
  for (const block of message.content) {
    if (block.type === "text") texts.push(block.text);
    else if (block.type === "toolCall") {
      toolCalls.push({
        id: block.id,
        type: "function",
        function: { name: block.name, arguments: JSON.stringify(block.arguments) },
      });
    } else if (isReasoningField(block.thinkingSignature) && !block.redacted && block.thinking) {
      const parts = reasoning.get(block.thinkingSignature);
      if (parts) parts.push(block.thinking);
      else reasoning.set(block.thinkingSignature, [block.thinking]);
    }
  }
  const out: OpenAIChatAssistantMessage = {
    role: "assistant",
    content: texts.length > 0 ? texts.join("\n\n") : null,
  };
  for (const [field, parts] of reasoning) out[field] = parts.join("\n");
  if (toolCalls.length > 0) out.tool_calls = toolCalls;
  return out;
}

function toolMessages(turn: NormalToolResults): OpenAIChatMessage[] {
  const out: OpenAIChatMessage[] = [];
  const images: OpenAIChatContentPart[] = [];
  for (const result of turn.results) {
    const { text, images: attached } = resultParts(result.content);
    out.push({
      role: "tool",
      tool_call_id: result.toolCallId,
      content: text || (attached.length > 0 ? TOOL_IMAGE_PLACEHOLDER : ""),
    });
    for (const image of attached) images.push(part(image));
  }
  if (images.length > 0)
    out.push({ role: "user", content: [{ type: "text", text: OPENAI_CHAT_TOOL_IMAGES_INTRO }, ...images] });
  return out;
}

/** The `messages` of a Chat Completions request for `context`, sent to `model`. */
export function toOpenAIChat(
  context: SessionContext,
  model: TargetModel,
  options: OpenAIChatOptions = {},
): OpenAIChatRequest {
  const normal = normalizeContext(context, "openai-chat", model, { ids: OPENAI_CHAT_IDS });
  const messages: OpenAIChatMessage[] = [];
  if (normal.system) messages.push({ role: options.systemRole ?? "system", content: normal.system });
  for (const message of normal.messages) {
    if (message.role === "user") messages.push(userMessage(message));
    else if (message.role === "developer") messages.push({ role: "developer", content: message.text });
    else if (message.role === "assistant") {
      // A reply with neither text nor calls (only reasoning, or thinking the API cannot take) is
      // left out: it has no results after it.
      const assistant = assistantMessage(message);
      if (assistant.content !== null || assistant.tool_calls) messages.push(assistant);
    } else for (const tool of toolMessages(message)) messages.push(tool);
  }
  return { messages };
}
