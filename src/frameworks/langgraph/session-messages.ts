import type {
  AgentMessage,
  ImageContent,
  StoredEntry,
  TextContent,
  ThinkingContent,
  TreeEntry,
} from "../../core";
import { isAssistantMessage, isToolResultMessage, isUserMessage } from "../../core";
import { isRecord } from "../../core/providers/incoming";
import { toModelMessage } from "../../core/providers/pi-messages";
import { dataUrl } from "../../core/providers/text";
import { AnsweredCallIds, PORTABLE_IDS } from "../../core/providers/tool-call-ids";
import { isSystemMessage, systemMessageText } from "../../core/system-messages";
import { conversationPieces, messageIdOf, pairedPieces } from "../conversation";
import { FRAMEWORK } from "./messages";
import type { Serialized } from "./serialized";

/*
 * Any session as a graph's messages: its context at an entry, each message as LangChain's
 * serializer writes a message (so the saver's serializer makes `SystemMessage`, `HumanMessage`,
 * `AIMessage` and `ToolMessage` of them), named by the entry it came from. Messages this saver wrote
 * come back as they were kept; others are read from their entries: the prompt, text and images,
 * reasoning, tool calls and results, pi's summaries and commands, with a reply cut short or failed
 * left out and every call the conversation went on from answered, as a model is sent them. This is
 * how a graph starts a thread on a session it did not write.
 */

/** A message of a session's context, as a graph's messages channel holds it, and the entry it came from. */
export interface SessionMessage {
  value: Serialized;
  entry: StoredEntry<TreeEntry>;
  /** Whether it is the entry's only message, a message a context edit may name. */
  editable: boolean;
}

function lcMessage(name: string, kwargs: Record<string, unknown>): Serialized {
  return {
    type: "json",
    json: { lc: 1, type: "constructor", id: ["langchain_core", "messages", name], kwargs },
  };
}

const textOf = (blocks: readonly unknown[]) =>
  blocks
    .filter(isRecord)
    .filter((block) => block.type === "text" && typeof block.text === "string")
    .map((block) => block.text as string)
    .join("");

/** Text and images as LangChain's content blocks. */
function contentBlocks(content: readonly (TextContent | ImageContent)[]): Record<string, unknown>[] {
  return content.map((part) =>
    part.type === "text"
      ? { type: "text", text: part.text }
      : { type: "image_url", image_url: { url: dataUrl(part.mimeType, part.data) } },
  );
}

/**
 * Thinking as LangChain's standard content blocks (what `contentBlocks` makes of Anthropic's): a
 * `reasoning` block, with the signature when Anthropic signed it, and Anthropic's redacted thinking
 * as the `non_standard` block holding it. Other redacted reasoning is left out: no model takes it
 * but the one that wrote it.
 */
function reasoningBlock(block: ThinkingContent, signed: boolean): Record<string, unknown>[] {
  const signature = signed ? block.thinkingSignature : undefined;
  if (block.redacted)
    return signature ? [{ type: "non_standard", value: { type: "redacted_thinking", data: signature } }] : [];
  return [{ type: "reasoning", reasoning: block.thinking, ...(signature ? { signature } : {}) }];
}

/**
 * A core message as LangChain's serialized message of the same role (named `id`): a system message
 * as a `SystemMessage` of its prompt; pi's summaries, custom messages and `!` commands as the user
 * messages a model is sent for them; undefined for what a model is not sent.
 */
function serializedMessage(
  original: AgentMessage,
  id: string,
  callIds: AnsweredCallIds,
): Serialized | undefined {
  const base = { id, additional_kwargs: {}, response_metadata: {} };
  if (isSystemMessage(original)) {
    const content = systemMessageText(original);
    return content ? lcMessage("SystemMessage", { ...base, content }) : undefined;
  }
  const message = toModelMessage(original);
  if (!message) return undefined;
  if (isUserMessage(message)) {
    const content = typeof message.content === "string" ? message.content : contentBlocks(message.content);
    return lcMessage("HumanMessage", { ...base, content });
  }
  if (isAssistantMessage(message)) {
    const reasoning = message.content.flatMap((block) =>
      block.type === "thinking" ? reasoningBlock(block, message.provider === "anthropic") : [],
    );
    const text = textOf(message.content);
    const tool_calls = message.content.flatMap((block) =>
      block.type === "toolCall"
        ? [{ id: callIds.allocate(block.id), name: block.name, args: block.arguments, type: "tool_call" }]
        : [],
    );
    const content = reasoning.length > 0 ? [...reasoning, ...(text ? [{ type: "text", text }] : [])] : text;
    return lcMessage("AIMessage", { ...base, content, tool_calls, invalid_tool_calls: [] });
  }
  if (isToolResultMessage(message)) {
    const images = message.content.some((part) => part.type === "image");
    return lcMessage("ToolMessage", {
      ...base,
      content: images ? contentBlocks(message.content) : textOf(message.content),
      // A result of a call this read does not hold (a graph's own message) keeps its id.
      tool_call_id: callIds.result(message.toolCallId) ?? message.toolCallId,
      name: message.toolName,
      status: message.isError ? "error" : "success",
    });
  }
  return undefined;
}

/**
 * A path with its compactions left out: its whole conversation, as a graph that went on from a
 * checkpoint holds it (a compaction another door made after that shortens only what a model is
 * sent through the other doors).
 */
export function withoutCompactions(path: readonly StoredEntry<TreeEntry>[]): StoredEntry<TreeEntry>[] {
  return path.filter((entry) => entry.type !== "compaction");
}

/**
 * The messages of a path's context (root first), as a graph's messages channel holds them; the
 * ids its calls are shown by are handed out by `callIds`, which maps them back.
 */
export function sessionMessages(
  path: readonly StoredEntry<TreeEntry>[],
  callIds = new AnsweredCallIds(PORTABLE_IDS),
): SessionMessage[] {
  const messages: SessionMessage[] = [];
  for (const piece of pairedPieces(conversationPieces(path, FRAMEWORK), true)) {
    const entry = piece.entries.at(-1) as StoredEntry<TreeEntry>;
    const single = piece.entries.length === 1 && entry.type === "message";
    if (piece.records) {
      const editable = single && piece.messages.length === 1;
      for (const record of piece.records) messages.push({ value: record as Serialized, entry, editable });
      continue;
    }
    // A message entry's own message comes first; results added for its calls follow it.
    piece.messages.forEach((message, index) => {
      const value = serializedMessage(message, messageIdOf(entry.id, index), callIds);
      if (value) messages.push({ value, entry, editable: single && index === 0 });
    });
  }
  return messages;
}
