import type { AgentMessage, ThinkingContent } from "../../core";
import { fromOpenAIChat, isAssistantMessage, isRecord } from "../../core/internal";
import type { Serialized } from "./serialized";

/*
 * A LangChain message as the session reads it: the serializer's form of a message recognized, and
 * read through the core's Chat Completions reader (text, images, tool calls and their results),
 * with its reasoning blocks as thinking and the model its metadata names. The other way, a
 * session's message as LangChain's, is session-messages.ts.
 */

/** A LangChain message as the serializer writes it: `{lc: 1, type: "constructor", id: [..., "AIMessage"], kwargs}`. */
export interface SerializedMessage {
  id: string;
  kind: "human" | "ai" | "tool" | "system" | "other";
  kwargs: Record<string, unknown>;
}

const KINDS: Record<string, SerializedMessage["kind"]> = {
  HumanMessage: "human",
  HumanMessageChunk: "human",
  AIMessage: "ai",
  AIMessageChunk: "ai",
  ToolMessage: "tool",
  ToolMessageChunk: "tool",
  SystemMessage: "system",
  SystemMessageChunk: "system",
  ChatMessage: "other",
  FunctionMessage: "other",
};

/** The message a serialized value is, when it is a LangChain message with an id. */
export function serializedMessage(value: Serialized): SerializedMessage | undefined {
  if (!("json" in value) || !isRecord(value.json)) return undefined;
  const { lc, type, id, kwargs } = value.json;
  if (lc !== 1 || type !== "constructor" || !Array.isArray(id) || !isRecord(kwargs)) return undefined;
  if (id[0] !== "langchain_core" || id[1] !== "messages") return undefined;
  const kind = KINDS[String(id[id.length - 1])];
  if (kind === undefined) return undefined;
  return { id: typeof kwargs.id === "string" ? kwargs.id : "", kind, kwargs };
}

type ChatPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

/** LangChain content (a string, or blocks) as Chat Completions parts: text and images, nothing else. */
function chatParts(content: unknown): ChatPart[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (!Array.isArray(content)) return [];
  const parts: ChatPart[] = [];
  for (const block of content) {
    if (typeof block === "string") parts.push({ type: "text", text: block });
    else if (!isRecord(block)) continue;
    else if (block.type === "text" && typeof block.text === "string")
      parts.push({ type: "text", text: block.text });
    else if (block.type === "image_url") {
      const url = isRecord(block.image_url) ? block.image_url.url : block.image_url;
      if (typeof url === "string") parts.push({ type: "image_url", image_url: { url } });
    } else if (
      block.type === "image" &&
      typeof block.data === "string" &&
      typeof block.mime_type === "string"
    ) {
      parts.push({ type: "image_url", image_url: { url: `data:${block.mime_type};base64,${block.data}` } });
    } else if (block.type === "image" && typeof block.url === "string") {
      parts.push({ type: "image_url", image_url: { url: block.url } });
    }
  }
  return parts;
}

const textOf = (parts: ChatPart[]) =>
  parts
    .filter((part): part is { type: "text"; text: string } => part.type === "text")
    .map((part) => part.text)
    .join("");

/** The message as the core reads it, through the Chat Completions reader; undefined: no place in a context. */
export function messageOf(
  message: SerializedMessage,
  history: readonly AgentMessage[],
): AgentMessage | undefined {
  const { kind, kwargs } = message;
  const parts = chatParts(kwargs.content);
  let chat: unknown;
  if (kind === "human") chat = { role: "user", content: parts.length === 0 ? "" : parts };
  else if (kind === "tool" && typeof kwargs.tool_call_id === "string")
    chat = { role: "tool", tool_call_id: kwargs.tool_call_id, content: textOf(parts) };
  else if (kind === "ai") {
    const calls = Array.isArray(kwargs.tool_calls) ? kwargs.tool_calls.filter(isRecord) : [];
    const extra = isRecord(kwargs.additional_kwargs) ? kwargs.additional_kwargs.reasoning_content : undefined;
    chat = {
      role: "assistant",
      content: textOf(parts),
      tool_calls: calls.map((call) => ({
        id: String(call.id ?? ""),
        type: "function",
        function: { name: String(call.name ?? ""), arguments: JSON.stringify(call.args ?? {}) },
      })),
      // A server's own reasoning field (DeepSeek's, through LangChain) goes back there, as pi-ai's does.
      ...(typeof extra === "string" && extra !== "" ? { reasoning_content: extra } : {}),
    };
  } else return undefined;
  let read: AgentMessage | undefined;
  try {
    read = fromOpenAIChat(chat, { history, timestamp: Date.now(), model: modelOf(kwargs) })[0];
  } catch {
    return undefined;
  }
  const thinking = reasoningBlocks(kwargs.content);
  return read && isAssistantMessage(read) && thinking.length > 0
    ? { ...read, content: [...thinking, ...read.content] }
    : read;
}

/**
 * The reasoning blocks of an AI message's content (LangChain's `reasoning`, Anthropic's `thinking`
 * with its signature), as thinking.
 */
function reasoningBlocks(content: unknown): ThinkingContent[] {
  const blocks = Array.isArray(content) ? content.filter(isRecord) : [];
  return blocks.flatMap((block): ThinkingContent[] => {
    if (block.type === "thinking" && typeof block.thinking === "string") {
      const signature = typeof block.signature === "string" ? { thinkingSignature: block.signature } : {};
      return [{ type: "thinking", thinking: block.thinking, ...signature }];
    }
    const text = block.reasoning ?? block.text;
    return block.type === "reasoning" && typeof text === "string"
      ? [{ type: "thinking", thinking: text }]
      : [];
  });
}

/** The model that answered, as the chat model recorded it (`model_provider`, `model_name`). */
function modelOf(kwargs: Record<string, unknown>): { provider: string; modelId: string } {
  const metadata = isRecord(kwargs.response_metadata) ? kwargs.response_metadata : {};
  const provider = typeof metadata.model_provider === "string" ? metadata.model_provider : "unknown";
  const modelId = typeof metadata.model_name === "string" ? metadata.model_name : "unknown";
  return { provider, modelId };
}
