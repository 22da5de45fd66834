import type { CustomEntry, CustomMessageEntry, TreeEntry } from "./entries";
import type { AgentMessage } from "./messages";
import { fromAISDKUI } from "./providers/from-ai-sdk-ui";
import { fromLangChainList } from "./providers/from-langchain";
import { fromOpenAIAgents } from "./providers/from-openai-agents";
import { isRecord } from "./providers/incoming";

/*
 * The framework adapters of cf-sessions 0.1 kept each OpenAI Agents SDK item and each AI SDK UI
 * message as a custom message holding it in `details`, and each LangGraph checkpoint as a custom
 * entry holding its whole messages channel as a value (no message entries). Such sessions read as
 * the messages those records stand for (the same readers the adapters now write with), so every
 * door sees their conversation; the entries themselves stay as they were written.
 *
 * A LangGraph checkpoint now holds how it changed the channel, as references to message entries
 * on its path. Of the checkpoints on a context's path, the latest that holds the channel decides:
 * when it holds it as a value (a list of LangChain messages), the context has those messages at
 * that checkpoint, and no other checkpoint projects any; otherwise the message entries are the
 * messages. A thread of 0.1 continued by the adapter writes its messages as entries from there.
 */

export const OPENAI_AGENTS_ITEM = "openai-agents:item";
export const AI_SDK_UI_MESSAGE = "ai-sdk:ui-message";
export const LANGGRAPH_CHECKPOINT = "langgraph:checkpoint";

/** The messages a framework's custom message reads as, or undefined for any other custom message. */
export function frameworkMessages(entry: CustomMessageEntry): AgentMessage[] | undefined {
  const timestamp = Date.parse(entry.timestamp);
  try {
    if (entry.customType === OPENAI_AGENTS_ITEM) {
      return fromOpenAIAgents([entry.details], { timestamp }).flatMap((group) =>
        group.message ? [group.message] : [],
      );
    }
    if (entry.customType === AI_SDK_UI_MESSAGE) return fromAISDKUI(entry.details, { timestamp });
  } catch {
    // A record the reader refuses (written by hand, say) is shown as the custom message it is.
  }
  return undefined;
}

/**
 * How a LangGraph checkpoint holds its messages channel: as a `value` (0.1, or a list of anything
 * but messages), as `changes` to message entries, or not at all (undefined; another checkpoint
 * holds it, or the entry is no checkpoint).
 */
export function langGraphMessagesHeld(entry: TreeEntry): "value" | "changes" | undefined {
  if (entry.type !== "custom" || entry.customType !== LANGGRAPH_CHECKPOINT || !isRecord(entry.data))
    return undefined;
  const { values, messages } = entry.data;
  if (messages !== undefined) return "changes";
  return isRecord(values) && values.messages !== undefined ? "value" : undefined;
}

/**
 * The checkpoint whose messages value the context of `entries` (a path, or the part of it a
 * context is made of) holds: the latest checkpoint holding the channel, when it holds it as a
 * value. Undefined when there is none.
 */
export function messagesCheckpoint(entries: readonly TreeEntry[]): string | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i] as TreeEntry;
    const held = langGraphMessagesHeld(entry);
    if (held !== undefined) return held === "value" ? entry.id : undefined;
  }
  return undefined;
}

/** The messages a LangGraph checkpoint holds as a value, when they are LangChain messages; else none. */
export function checkpointMessages(entry: CustomEntry): AgentMessage[] {
  const values = isRecord(entry.data) && isRecord(entry.data.values) ? entry.data.values : {};
  const value = values.messages;
  if (!isRecord(value) || !Array.isArray(value.json)) return [];
  return fromLangChainList(value.json, Date.parse(entry.timestamp)) ?? [];
}
