import type { ContextEditEntry, SessionEntry } from "../../core/entries";
import type { AgentMessage } from "../../core/messages";
import { isObject } from "./dom";

/* Entries in a few words: the name of their kind and one line about what they hold. */

const KIND_NAMES: Readonly<Record<string, string>> = {
  compaction: "compaction",
  branch_summary: "branch summary",
  model_change: "model",
  thinking_level_change: "thinking",
  active_tools_change: "tools",
  session_info: "name",
  label: "label",
  custom: "custom",
  custom_message: "custom message",
  context_edit: "context edit",
  usage: "usage",
};

/** What a tree row and the context pane call an entry that is not a message. */
export function kindName(type: string): string {
  return Object.hasOwn(KIND_NAMES, type) ? (KIND_NAMES[type] as string) : type;
}

/** One line about an entry, for its tree row. */
export function describeEntry(entry: SessionEntry): string {
  switch (entry.type) {
    case "message":
      return describeMessage(entry.message);
    case "model_change":
      return `${entry.provider}/${entry.modelId}`;
    case "thinking_level_change":
      return `thinking ${entry.thinkingLevel}`;
    case "active_tools_change":
      return `tools ${entry.activeToolNames.join(", ")}`;
    case "compaction":
    case "branch_summary":
      return entry.summary;
    case "custom_message":
      return `${entry.customType}: ${firstText(entry.content)}`;
    case "custom":
      return entry.customType;
    case "label":
      return entry.label ? `${entry.targetId} ← “${entry.label}”` : `cleared the label of ${entry.targetId}`;
    case "session_info":
      return entry.name ? `renamed “${entry.name}”` : "name cleared";
    case "context_edit":
      return `${entry.targetId}: ${editedText(entry)}`;
    case "usage":
      return `${entry.kind} · ${entry.provider}/${entry.model}${entry.note ? ` · ${entry.note}` : ""}`;
    default:
      return "";
  }
}

/** What a context edit puts in place of its target, in a few words. */
export function editedText(entry: ContextEditEntry): string {
  if (entry.replacement === null) return "left out of the context";
  return `now “${firstText(entry.replacement.content)}”`;
}

/** The first text of a message's content; "[image]" when it holds only images. */
function firstText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  for (const part of content) {
    if (isObject(part) && part.type === "text" && typeof part.text === "string" && part.text)
      return part.text;
  }
  return content.some((part) => isObject(part) && part.type === "image") ? "[image]" : "";
}

function describeMessage(message: AgentMessage): string {
  const content: unknown = message.content;
  if (message.role === "toolResult") return `${String(message.toolName ?? "")}: ${firstText(content)}`;
  if (message.role === "assistant" && Array.isArray(content)) {
    const text = firstText(content);
    if (text) return text;
    const calls = content.filter((part) => isObject(part) && part.type === "toolCall");
    if (calls.length > 0) return calls.map((call) => `${String(call.name)}(…)`).join(", ");
    return content.some((part) => isObject(part) && part.type === "thinking") ? "[thinking]" : "";
  }
  if (message.role === "bashExecution") return `$ ${String(message.command ?? "")}`;
  if (message.role === "system" && !firstText(content)) return "prompt sections and tools";
  return firstText(content);
}
