import type { AgentMessage, ImageContent, ThinkingContent, ToolResultMessage } from "../messages";
import { isAssistantMessage, isToolResultMessage } from "../messages";
import { anthropicAssistantBlock } from "./from-anthropic";
import { fromOpenAIChat } from "./from-openai-chat";
import { isRecord } from "./incoming";
import { parseDataUrl } from "./text";

/*
 * LangChain messages in, as LangChain's serializer writes them (`{lc: 1, type: "constructor", id:
 * [..., "AIMessage"], kwargs}`, what LangGraph checkpoints hold): read through the Chat Completions
 * reader (text, images, tool calls and their results), with their reasoning blocks as thinking and
 * the model their metadata names. A message with no place in a context (a function or chat
 * message) reads as none.
 */

/** A serialized LangChain message recognized: its id ("" without one), its kind, its fields. */
export interface LangChainMessage {
  id: string;
  kind: "human" | "ai" | "tool" | "system" | "other";
  kwargs: Record<string, unknown>;
}

const KINDS: Record<string, LangChainMessage["kind"]> = {
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

/** The LangChain message a serialized value is, if it is one. */
export function readLangChainMessage(value: unknown): LangChainMessage | undefined {
  if (!isRecord(value)) return undefined;
  const { lc, type, id, kwargs } = value;
  if (lc !== 1 || type !== "constructor" || !Array.isArray(id) || !isRecord(kwargs)) return undefined;
  if (id[0] !== "langchain_core" || id[1] !== "messages") return undefined;
  const kind = KINDS[String(id[id.length - 1])];
  if (kind === undefined) return undefined;
  return { id: typeof kwargs.id === "string" ? kwargs.id : "", kind, kwargs };
}

type ChatPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

/**
 * LangChain content (a string, or blocks) as Chat Completions parts: text and images, nothing else.
 * An image given by any URL but a `data:` one is left out (no session stores it), as the other
 * frameworks' readers leave it out: the rest of the message stays.
 */
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
      if (typeof url === "string" && parseDataUrl(url)) parts.push({ type: "image_url", image_url: { url } });
    } else if (
      block.type === "image" &&
      typeof block.data === "string" &&
      typeof block.mime_type === "string"
    ) {
      parts.push({ type: "image_url", image_url: { url: `data:${block.mime_type};base64,${block.data}` } });
    } else if (block.type === "image" && typeof block.url === "string" && parseDataUrl(block.url)) {
      parts.push({ type: "image_url", image_url: { url: block.url } });
    }
  }
  return parts;
}

/**
 * The text blocks of a message, each its own part: an answer's stay apart (text around a tool call
 * is not run together), a tool result's are joined by a line, as Chat Completions reads them.
 */
const textParts = (parts: ChatPart[]) =>
  parts.filter((part): part is { type: "text"; text: string } => part.type === "text");

/**
 * A LangChain message as a session's message, given the messages before it (where a tool result
 * finds its call's name); undefined: no place in a context.
 */
export function fromLangChain(
  message: LangChainMessage,
  options: { history: readonly AgentMessage[]; timestamp: number },
): AgentMessage | undefined {
  const { kind, kwargs } = message;
  const parts = chatParts(kwargs.content);
  let chat: unknown;
  if (kind === "human") chat = { role: "user", content: parts.length === 0 ? "" : parts };
  else if (kind === "tool" && typeof kwargs.tool_call_id === "string")
    chat = { role: "tool", tool_call_id: kwargs.tool_call_id, content: textParts(parts) };
  else if (kind === "ai") {
    const calls = Array.isArray(kwargs.tool_calls) ? kwargs.tool_calls.filter(isRecord) : [];
    const extra = isRecord(kwargs.additional_kwargs) ? kwargs.additional_kwargs.reasoning_content : undefined;
    chat = {
      role: "assistant",
      content: textParts(parts),
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
    read = fromOpenAIChat(chat, { ...options, model: modelOf(kwargs) })[0];
  } catch {
    return undefined;
  }
  if (read && isToolResultMessage(read)) return toolResult(read, kwargs, parts);
  const thinking = reasoningBlocks(kwargs.content);
  return read && isAssistantMessage(read) && thinking.length > 0
    ? { ...read, content: [...thinking, ...read.content] }
    : read;
}

/**
 * A ToolMessage's result as read, with what a Chat Completions tool message cannot say: its
 * images (after its text) and whether the tool failed (`status: "error"`).
 */
function toolResult(
  read: ToolResultMessage,
  kwargs: Record<string, unknown>,
  parts: ChatPart[],
): ToolResultMessage {
  const images = parts.flatMap((part): ImageContent[] => {
    const image = part.type === "image_url" ? parseDataUrl(part.image_url.url) : undefined;
    return image ? [{ type: "image", data: image.data, mimeType: image.mimeType }] : [];
  });
  const text = read.content.filter((part) => part.type !== "text" || part.text !== "");
  return {
    ...read,
    content: images.length > 0 ? [...text, ...images] : read.content,
    isError: kwargs.status === "error",
  };
}

/**
 * The reasoning blocks of an AI message's content as thinking: LangChain's standard `reasoning`
 * with the signature Anthropic's beside it, Anthropic's own `thinking` and `redacted_thinking`
 * (`anthropicAssistantBlock`), and redacted thinking as LangChain's standard blocks hold it (a
 * `non_standard` block's `value`).
 */
function reasoningBlocks(content: unknown): ThinkingContent[] {
  const blocks = Array.isArray(content) ? content.filter(isRecord) : [];
  return blocks.flatMap((block): ThinkingContent[] => {
    const anthropic = block.type === "non_standard" && isRecord(block.value) ? block.value : block;
    if (anthropic.type === "thinking" || anthropic.type === "redacted_thinking") {
      const thinking = anthropicAssistantBlock(anthropic);
      return thinking?.type === "thinking" ? [thinking] : [];
    }
    const text = block.reasoning ?? block.text;
    if (block.type !== "reasoning" || typeof text !== "string") return [];
    const signature = typeof block.signature === "string" ? { thinkingSignature: block.signature } : {};
    return [{ type: "thinking", thinking: text, ...signature }];
  });
}

/**
 * The model that answered, as the chat model recorded it (`model_provider`, `model_name`); an
 * empty model id when it did not, a reply naming no model (it leaves the session's model as it was).
 */
function modelOf(kwargs: Record<string, unknown>): { provider: string; modelId: string } {
  const metadata = isRecord(kwargs.response_metadata) ? kwargs.response_metadata : {};
  const provider = typeof metadata.model_provider === "string" ? metadata.model_provider : "unknown";
  const modelId = typeof metadata.model_name === "string" ? metadata.model_name : "";
  return { provider, modelId };
}

/**
 * A list of serialized LangChain messages as a session's messages, in order (those with no place
 * in a context left out); undefined when anything in it is not a LangChain message.
 */
export function fromLangChainList(values: readonly unknown[], timestamp: number): AgentMessage[] | undefined {
  const read: AgentMessage[] = [];
  for (const value of values) {
    const message = readLangChainMessage(value);
    if (!message) return undefined;
    const core = fromLangChain(message, { history: read, timestamp });
    if (core) read.push(core);
  }
  return read;
}
