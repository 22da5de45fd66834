import { projectEntries } from "./context";
import type { StoredEntry } from "./entries";
import { checkpointMessages, langGraphMessagesHeld } from "./framework-custom-messages";
import type { AgentMessage } from "./messages";
import { contentText } from "./messages";

/*
 * What an entry says, as short lines of text for a reader (a model reading a session): a line per
 * message it stands for, or one for what it records, each cut to a length with the length of the
 * whole. Where the entries are, each line is made from one entry at a time, so a reader of a page
 * of large entries holds the lines only.
 */

/** A line of text an entry shows: what leads it, its text's start, and the whole text's length. */
export interface TextLine {
  head: string;
  /** At most the length the line was cut to. */
  text: string;
  /** Characters of the whole text: more than `text` holds when it was cut. */
  chars: number;
}

function cut(head: string, text: string, max: number): TextLine {
  return { head, text: text.length <= max ? text : text.slice(0, max), chars: text.length };
}

/** A content block as text: text as it is, a tool call with its arguments, anything else named. */
function blockText(block: { type?: string; text?: string; name?: string; arguments?: unknown }): string {
  if (block.type === "text") return block.text ?? "";
  // The model's thinking is not the conversation's text.
  if (block.type === "thinking") return "";
  if (block.type === "toolCall") return `[tool call ${block.name}: ${JSON.stringify(block.arguments ?? {})}]`;
  return `[${block.type}]`;
}

/** What a message says: its content, or the fields that roles agents add carry their text in. */
function messageText(message: AgentMessage): string {
  const fields = message as { content?: unknown; summary?: unknown; command?: unknown; output?: unknown };
  const parts = Array.isArray(fields.content) ? fields.content.map(blockText) : [contentText(fields.content)];
  for (const extra of [fields.summary, fields.command, fields.output])
    if (typeof extra === "string") parts.push(extra);
  return parts.filter((part) => part !== "").join("\n");
}

function speaker(message: AgentMessage): string {
  if (message.role === "toolResult") return `tool result (${String(message.toolName ?? "tool")})`;
  if (message.role === "custom") return String((message as { customType?: unknown }).customType ?? "custom");
  return message.role;
}

/** A message as a line: who speaks, and what they say cut to `max` characters. */
export function messageLine(message: AgentMessage, max: number): TextLine {
  return cut(`${speaker(message)}: `, messageText(message), max);
}

/** A stored entry as lines: the messages it stands for, or what it records. */
export function entryTextLines(entry: StoredEntry, max: number): TextLine[] {
  const line = (head: string, text = "") => cut(head, text, max);
  switch (entry.type) {
    case "message":
    case "custom_message":
      return projectEntries([entry], undefined).map((message) => messageLine(message, max));
    case "compaction":
      return [line("summary of what came before: ", entry.summary)];
    case "branch_summary":
      return [line("summary of a branch left: ", entry.summary)];
    case "label":
      return [line(`label on ${entry.targetId}: `, entry.label || "(cleared)")];
    case "session_info":
      return [line("named: ", entry.name || "(cleared)")];
    case "model_change":
      return [line(`model: ${entry.provider}/${entry.modelId}`)];
    case "thinking_level_change":
      return [line(`thinking level: ${entry.thinkingLevel}`)];
    case "context_edit":
      return [line(`edits ${entry.targetId} in the context`)];
    case "custom": {
      // A LangGraph checkpoint holding its messages as a value stands for them, as in a context.
      const messages = langGraphMessagesHeld(entry) === "value" ? checkpointMessages(entry) : [];
      if (messages.length > 0) return messages.map((message) => messageLine(message, max));
      return [line(entry.type)];
    }
    default:
      return [line(entry.type)];
  }
}
