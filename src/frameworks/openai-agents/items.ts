import type { AgentInputItem } from "@openai/agents-core";
import { protocol } from "@openai/agents-core";
import type { EntryInput, StoredEntry } from "../../core";
import { isRecord, SessionError } from "../../core/internal";

/*
 * An Agents SDK item is a `custom_message` entry: the item itself, exactly, in `details`, and its
 * text in `content` (what search finds and the viewer shows). A compaction is our `compaction`
 * entry, holding the items that replace the history before it.
 */

const ITEM = "openai-agents:item";
export const COMPACTION = "openai-agents:compaction";

const record = (value: unknown) => (isRecord(value) ? value : undefined);

/** The text parts of a content list (`input_text`, `output_text`, `refusal`, plain `text`). */
function partsText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => {
      const p = record(part);
      if (typeof p?.text === "string") return p.text;
      if (typeof p?.refusal === "string") return p.refusal;
      return "";
    })
    .filter((text) => text !== "")
    .join("\n");
}

/** What an item says, as text: a message's words, a call with its arguments, a tool's output. */
function itemText(item: AgentInputItem): string {
  const value = item as Record<string, unknown>;
  switch (value.type) {
    case "function_call":
      return `${String(value.name)}(${typeof value.arguments === "string" ? value.arguments : ""})`;
    case "function_call_result":
      return partsText(typeof value.output === "string" ? value.output : [value.output].flat());
    default:
      return partsText(value.content);
  }
}

/** Checks items at the edge: each must be an item of the SDK's protocol (plain JSON). */
export function checkItems(items: unknown): AgentInputItem[] {
  if (!Array.isArray(items)) throw new SessionError("invalid_request", "items must be an array of items");
  items.forEach((item, index) => {
    const parsed = protocol.ModelItem.safeParse(item);
    if (!parsed.success || record(item) === undefined) {
      throw new SessionError("invalid_request", `item ${index} is not an Agents SDK item`, {
        index,
        issues: parsed.success ? [] : parsed.error.issues,
      });
    }
  });
  return items as AgentInputItem[];
}

export function itemEntry(item: AgentInputItem): EntryInput {
  return { type: "custom_message", customType: ITEM, content: itemText(item), display: true, details: item };
}

/** The item an entry holds, or undefined for any other entry. */
export function itemOf(entry: StoredEntry): AgentInputItem | undefined {
  return entry.type === "custom_message" && entry.customType === ITEM && record(entry.details)
    ? (entry.details as AgentInputItem)
    : undefined;
}

/** The items a compaction of ours replaced the history with, or undefined for any other entry. */
export function compactedItems(entry: StoredEntry): AgentInputItem[] | undefined {
  if (entry.type !== "compaction") return undefined;
  const details = record(entry.details);
  return details?.customType === COMPACTION && Array.isArray(details.items)
    ? (details.items as AgentInputItem[])
    : undefined;
}
