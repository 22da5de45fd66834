import type { AgentInputItem } from "@openai/agents-core";
import { protocol } from "@openai/agents-core";
import type {
  AgentMessage,
  AssistantMessage,
  EntryInput,
  ModelRef,
  StoredEntry,
  TreeEntry,
} from "../../core";
import { SessionError } from "../../core";
import { OPENAI_AGENTS_ITEM } from "../../core/framework-custom-messages";
import { fromOpenAIAgents } from "../../core/providers/from-openai-agents";
import { isRecord } from "../../core/providers/incoming";
import { toModelMessage } from "../../core/providers/pi-messages";
import { messageIdentity } from "../../core/providers/responses-signatures";
import { dataUrl } from "../../core/providers/text";
import { reasoningItem } from "../../core/providers/to-openai-responses";
import { callIdPart, itemIdPart } from "../../core/providers/tool-call-ids";
import type { SystemMessage } from "../../core/system-messages";
import { systemMessageText } from "../../core/system-messages";
import type { Piece } from "../conversation";
import { conversationPieces, isIncomplete, keepOriginal, pairedPieces } from "../conversation";

/*
 * Agents SDK items as the session model: each run of model output an assistant message, each
 * function result a tool result, each user or system message one of ours, read by the core's
 * Agents reader; the items themselves kept on the entry they became. An item with no place in
 * the model (a hosted or computer tool call, a shell call) is a `custom` entry holding it, which
 * contexts skip. Read back, the entries the adapter wrote give their items exactly, and any other
 * message of the context becomes the items it stands for.
 */

export const FRAMEWORK = "openai-agents";
/** The compaction of cf-sessions 0.1's adapter: the replacing items in its `details`. */
const EARLIER_COMPACTION = "openai-agents:compaction";

/** Checks items at the edge: each must be an item of the SDK's protocol (plain JSON). */
export function checkItems(items: unknown): AgentInputItem[] {
  if (!Array.isArray(items)) throw new SessionError("invalid_request", "items must be an array of items");
  items.forEach((item, index) => {
    const parsed = protocol.ModelItem.safeParse(item);
    if (!parsed.success || !isRecord(item)) {
      throw new SessionError("invalid_request", `item ${index} is not an Agents SDK item`, {
        index,
        issues: parsed.success ? [] : parsed.error.issues,
      });
    }
  });
  return items as AgentInputItem[];
}

/**
 * What `items` read as, answered by `model` (default: OpenAI, the model unnamed), going on from
 * `history` (the conversation's last turn: the calls their results answer).
 */
export function readItems(
  items: readonly AgentInputItem[],
  model: ModelRef | undefined,
  history: readonly AgentMessage[] = [],
) {
  return fromOpenAIAgents(items, { history, ...(model ? { model } : {}) });
}

/** The messages `items` read as (see `readItems`), leaving out those with no place in the model. */
export function readMessages(items: readonly AgentInputItem[], model: ModelRef | undefined): AgentMessage[] {
  return readItems(items, model).flatMap(({ message }) => (message ? [message] : []));
}

/** The entries for `items`, chained in order, going on from `history` (see `readItems`). */
export function itemEntries(
  items: readonly AgentInputItem[],
  model: ModelRef | undefined,
  history: readonly AgentMessage[] = [],
): EntryInput[] {
  return readItems(items, model, history).flatMap(({ items: records, message }): EntryInput[] =>
    message
      ? keepOriginal([{ type: "message", message }], FRAMEWORK, records)
      : [{ type: "custom", customType: OPENAI_AGENTS_ITEM, data: records[0] }],
  );
}

/** The items an entry holds in a shape of its own: a custom entry, or one of cf-sessions 0.1. */
function ownItems(entry: StoredEntry<TreeEntry>): unknown[] | undefined {
  if (entry.type === "custom" && entry.customType === OPENAI_AGENTS_ITEM && isRecord(entry.data)) {
    return [entry.data];
  }
  if (entry.type === "custom_message" && entry.customType === OPENAI_AGENTS_ITEM && isRecord(entry.details)) {
    return [entry.details];
  }
  if (
    entry.type === "compaction" &&
    isRecord(entry.details) &&
    entry.details.customType === EARLIER_COMPACTION
  ) {
    return Array.isArray(entry.details.items) ? entry.details.items : undefined;
  }
  return undefined;
}

const text = (value: string) => ({ type: "input_text" as const, text: value });

function imageUrl(part: { data: string; mimeType: string }): string {
  return dataUrl(part.mimeType, part.data);
}

function userItem(message: Extract<AgentMessage, { role: "user" }>): AgentInputItem {
  const content =
    typeof message.content === "string"
      ? message.content
      : message.content.map((part) =>
          part.type === "text" ? text(part.text) : { type: "input_image" as const, image: imageUrl(part) },
        );
  return { type: "message", role: "user", content };
}

/**
 * The item a block of a reply stands for, if any. Thinking is a reasoning item only when it holds a
 * Responses reasoning item, whose id the API asks of one sent back; other readable thinking goes
 * as the assistant's text, as the model APIs' shapes send another model's thinking, and redacted
 * thinking, which only its own provider reads, is left out.
 */
function blockItem(block: AssistantMessage["content"][number]): AgentInputItem | undefined {
  const say = (value: string, signature?: string): AgentInputItem => {
    const identity = messageIdentity(signature);
    return {
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: value }],
      ...(identity ? { id: identity.id } : {}),
      ...(identity?.phase ? { phase: identity.phase } : {}),
    };
  };
  if (block.type === "thinking") {
    const responses = reasoningItem(block.thinkingSignature);
    if (responses) {
      const item: AgentInputItem = {
        type: "reasoning",
        id: responses.id,
        content: block.thinking ? [text(block.thinking)] : [],
      };
      if (typeof responses.encrypted_content === "string") {
        item.providerData = { encryptedContent: responses.encrypted_content };
      }
      return item;
    }
    return !block.redacted && block.thinking.trim() ? say(block.thinking) : undefined;
  }
  if (block.type === "text") return say(block.text, block.textSignature);
  if (block.type === "toolCall") {
    const itemId = itemIdPart(block.id);
    return {
      type: "function_call",
      callId: callIdPart(block.id),
      name: block.name,
      arguments: JSON.stringify(block.arguments ?? {}),
      status: "completed",
      ...(itemId ? { id: itemId } : {}),
    };
  }
  return undefined;
}

/** The items of a reply, a block's item each (see `blockItem`). */
function assistantItems(message: AssistantMessage): AgentInputItem[] {
  return message.content.flatMap((block) => blockItem(block) ?? []);
}

function resultItem(message: Extract<AgentMessage, { role: "toolResult" }>): AgentInputItem {
  const images = message.content.some((part) => part.type === "image");
  const texts = message.content.flatMap((part) => (part.type === "text" ? [part.text] : []));
  const output = images
    ? message.content.map((part) =>
        part.type === "text" ? text(part.text) : { type: "input_image" as const, image: imageUrl(part) },
      )
    : { type: "text" as const, text: texts.join("\n") };
  return {
    type: "function_call_result",
    callId: callIdPart(message.toolCallId),
    name: message.toolName,
    status: "completed",
    output,
  };
}

/**
 * The items a message stands for: user, assistant and tool results as the SDK has them, a system
 * message as its text, pi's summaries and custom messages as the user messages a model is sent for
 * them. An errored or aborted reply is left out (the model goes on from the last whole answer).
 */
export function messageItems(message: AgentMessage): AgentInputItem[] {
  if (message.role === "system") {
    const content = systemMessageText(message as SystemMessage);
    return content ? [{ type: "message", role: "system", content }] : [];
  }
  const model = toModelMessage(message);
  if (!model) return [];
  if (model.role === "user") return [userItem(model as Extract<AgentMessage, { role: "user" }>)];
  if (model.role === "toolResult")
    return [resultItem(model as Extract<AgentMessage, { role: "toolResult" }>)];
  const reply = model as AssistantMessage;
  return isIncomplete(reply) ? [] : assistantItems(reply);
}

/**
 * A message of another door without the block its last item stands for, kept otherwise as it is
 * (provider, model, usage, signatures); undefined when that item is all it stands for.
 */
export function withoutLastItem(message: AgentMessage): AgentMessage | undefined {
  if (message.role !== "assistant" || isIncomplete(message)) return undefined;
  const reply = message as AssistantMessage;
  const last = reply.content.findLastIndex((block) => blockItem(block) !== undefined);
  const content = reply.content.filter((_, index) => index !== last);
  return content.some((block) => blockItem(block) !== undefined) ? { ...reply, content } : undefined;
}

/** The items of a piece of the context: its own, or those its messages stand for. */
export function pieceItems(piece: Piece): AgentInputItem[] {
  return (piece.records as AgentInputItem[] | undefined) ?? piece.messages.flatMap(messageItems);
}

/**
 * The conversation on a branch as pieces, with the Agents SDK's own items where it wrote them, and
 * every call the conversation went on from answered (see `pairedPieces`), its own calls too when
 * another door went on past them.
 */
export function itemPieces(branch: readonly StoredEntry<TreeEntry>[]): Piece[] {
  return pairedPieces(conversationPieces(branch, FRAMEWORK, ownItems), true, true);
}
