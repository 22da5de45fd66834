import type { ProjectedEntry } from "../../core/context";
import { projectEntries } from "../../core/context";
import type { StoredEntry } from "../../core/entries";
import type { AgentMessage } from "../../core/messages";
import { contentText } from "../../core/messages";
import type { SearchHit, TenantSearchResult } from "../../core/search";
import type { SessionInfo } from "../../core/session-schemas";
import { MAX_ENTRY_CHARS } from "./entry-places";
import { shortName } from "./session-summary";

/*
 * What a model reads from a tool: short lines led by the ids it can pass to the next tool. The
 * structured content beside it carries the same answer whole.
 */

/**
 * At most this many characters of one message's text; the rest is named, never dropped silently,
 * with the ways to read the entry whole: read_entries carries an entry alone whole up to the size
 * it carries entries whole at, HTTP any entry.
 */
export const MAX_MESSAGE_CHARS = 4000;

function clip(text: string, max = MAX_MESSAGE_CHARS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)} […${text.length - max} more characters: read_entries with its entryId and around 0 gives the entry whole in structuredContent up to ${MAX_ENTRY_CHARS} characters of JSON, else GET /v1/sessions/<sessionId>/entries/<entryId>]`;
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

function messageLine(entryId: string, message: AgentMessage): string {
  return `[${entryId}] ${speaker(message)}: ${clip(messageText(message))}`;
}

/** A context as lines: each message it holds, led by the id of the entry it came from. */
export function contextLines(context: readonly ProjectedEntry[]): string[] {
  return context.flatMap(({ entry, messages }) => messages.map((message) => messageLine(entry.id, message)));
}

/** A stored entry as lines: the messages it stands for, or what it records. */
export function entryLines(entry: StoredEntry): string[] {
  const head = `[${entry.id}]`;
  switch (entry.type) {
    case "message":
    case "custom_message":
      return projectEntries([entry], undefined).map((message) => messageLine(entry.id, message));
    case "compaction":
      return [`${head} summary of what came before: ${clip(entry.summary)}`];
    case "branch_summary":
      return [`${head} summary of a branch left: ${clip(entry.summary)}`];
    case "label":
      return [`${head} label on ${entry.targetId}: ${entry.label ? clip(entry.label) : "(cleared)"}`];
    case "session_info":
      return [`${head} named: ${entry.name ? clip(entry.name) : "(cleared)"}`];
    case "model_change":
      return [`${head} model: ${entry.provider}/${entry.modelId}`];
    case "thinking_level_change":
      return [`${head} thinking level: ${entry.thinkingLevel}`];
    case "context_edit":
      return [`${head} edits ${entry.targetId} in the context`];
    default:
      return [`${head} ${entry.type}`];
  }
}

/** Text on one line: a listing's lines stay one per session, a snippet one per field. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** What a session's line shows of it. */
type ListedSession = Pick<SessionInfo, "id" | "name" | "updatedAt" | "entryCount" | "preview">;

export function sessionLine(info: ListedSession): string {
  const name = info.name ? ` "${oneLine(shortName(info.name))}"` : "";
  const preview = info.preview ? ` — ${oneLine(info.preview)}` : "";
  return `${info.id}${name} (updated ${info.updatedAt}, ${info.entryCount} entries)${preview}`;
}

export function searchResultLine(result: {
  session: ListedSession;
  matches: TenantSearchResult["matches"];
}): string {
  const matches = result.matches.map((match) => `  ${match.field}: ${oneLine(match.snippet)}`).join("\n");
  return `${sessionLine(result.session)}\n${matches}`;
}

export function hitLine(hit: SearchHit): string {
  const where = `${hit.role ?? hit.type}${hit.field === "thinking" ? " (thinking)" : ""}${hit.onBranch ? "" : ", off the current branch"}`;
  return `match in [${hit.entryId}] ${where}: ${oneLine(hit.snippet)}`;
}
