import { parseBlobRef } from "./blob-refs";
import type { SessionEntry } from "./entries";
import { checkpointMessages, langGraphMessagesHeld } from "./framework-custom-messages";
import { contentText } from "./messages";
import type { SessionHeader } from "./session-schemas";
import type { SystemMessage } from "./system-messages";
import { systemSections } from "./system-messages";

/*
 * What an entry contributes to search: the text people look for (what was said, what tools
 * answered, summaries, custom messages, system prompts, the text a context edit puts in place of
 * a message, labels, the session's name, the messages a LangGraph checkpoint of cf-sessions 0.1
 * holds), and apart from it the model's thinking, which is searched only when asked for. The
 * session's header adds its name and system prompt.
 */

/** Characters of one entry's text (and of its thinking) that are indexed; the rest is not searched. */
export const MAX_INDEXED_CHARS = 256 * 1024;

export interface EntryText {
  text: string;
  thinking: string;
}

/**
 * Text as an index holds it: snippets come back from SQLite with U+0001 and U+0002 around each
 * match, so those two characters never reach an index from the text itself.
 */
export function indexedText(text: string): string {
  return text.replaceAll("\u0001", " ").replaceAll("\u0002", " ");
}

function clean(parts: readonly string[]): string {
  const joined = parts.filter((part) => part.length > 0).join("\n");
  return indexedText(joined.slice(0, MAX_INDEXED_CHARS));
}

function stringField(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The text parts of a message, and apart the thinking it shows (redacted thinking is no text). */
function messageText(message: Record<string, unknown>): { text: string[]; thinking: string[] } {
  const text: string[] = [];
  const thinking: string[] = [];
  const content = message.content;
  if (Array.isArray(content)) {
    for (const part of content) {
      if (!part || typeof part !== "object") continue;
      // A tool output stored as a blob is not searched (docs/placement.md, "Blobs in R2").
      if (part.type === "text" && typeof part.text === "string" && !parseBlobRef(part.text))
        text.push(part.text);
      else if (part.type === "thinking" && typeof part.thinking === "string" && part.redacted !== true)
        thinking.push(part.thinking);
    }
  } else text.push(contentText(content));
  // Roles agents add carry their text in fields of their own (summaries, shell commands and output).
  if (message.role !== "user" && message.role !== "assistant" && message.role !== "toolResult") {
    for (const key of ["summary", "command", "output"]) text.push(stringField(message[key]));
  }
  if (message.role === "system") {
    for (const [, section] of systemSections(message as SystemMessage)) if (section) text.push(section);
  }
  return { text, thinking };
}

/**
 * What a session's header gives search: its system prompt, and its name while no `session_info`
 * entry has named the session (`namedByEntry`: the session's name is that entry's then, found as
 * an entry). Blank when there is none.
 */
export function headerSearchText(
  header: Pick<SessionHeader, "name" | "systemPrompt">,
  namedByEntry: boolean,
): { name: string; systemPrompt: string } {
  const name = namedByEntry ? "" : clean([header.name ?? ""]);
  const systemPrompt = clean([header.systemPrompt ?? ""]);
  return { name: name.trim() ? name : "", systemPrompt: systemPrompt.trim() ? systemPrompt : "" };
}

/** The searchable text of an entry, or undefined when it has none. */
export function entrySearchText(entry: SessionEntry): EntryText | undefined {
  let text: string[] = [];
  let thinking: string[] = [];
  switch (entry.type) {
    case "message":
      ({ text, thinking } = messageText(entry.message as unknown as Record<string, unknown>));
      break;
    case "compaction":
    case "branch_summary":
      text = [entry.summary];
      break;
    case "custom_message":
      text = [contentText(entry.content)];
      break;
    case "custom":
      // A LangGraph checkpoint of cf-sessions 0.1 holds its messages itself (see framework-custom-messages.ts).
      if (langGraphMessagesHeld(entry) !== "value") return undefined;
      for (const message of checkpointMessages(entry)) {
        const parts = messageText(message as unknown as Record<string, unknown>);
        text.push(...parts.text);
        thinking.push(...parts.thinking);
      }
      break;
    case "context_edit":
      // What the context shows from here on in place of the target's text; the target keeps its own.
      if (entry.replacement)
        ({ text, thinking } = messageText({ role: "edit", content: entry.replacement.content }));
      break;
    case "usage":
      text = [stringField(entry.note)];
      break;
    case "label":
      text = [stringField(entry.label)];
      break;
    case "session_info":
      text = [stringField(entry.name)];
      break;
    default:
      return undefined;
  }
  const result = { text: clean(text), thinking: clean(thinking) };
  return result.text.trim() || result.thinking.trim() ? result : undefined;
}

/**
 * The most characters of a snippet, besides the ellipses that mark a cut: SQLite counts a snippet
 * in words, and one word may be thousands of characters long (a hash, base64, a minified line).
 */
export const MAX_SNIPPET_CHARS = 1000;

type Highlights = [number, number][];

/**
 * A snippet as SQLite marks it (U+0001 before a match, U+0002 after) as plain text and the
 * [start, end) offsets of its matches, so no client has to trust markup inside the text. One
 * longer than `MAX_SNIPPET_CHARS` keeps that many around its first match, "…" where it was cut.
 */
export function readSnippet(marked: string): { snippet: string; highlights: Highlights } {
  let snippet = "";
  const highlights: Highlights = [];
  let start = -1;
  for (const char of marked) {
    if (char === "\u0001") start = snippet.length;
    else if (char === "\u0002") {
      if (start >= 0 && snippet.length > start) highlights.push([start, snippet.length]);
      start = -1;
    } else snippet += char;
  }
  return snippet.length > MAX_SNIPPET_CHARS ? clipped(snippet, highlights) : { snippet, highlights };
}

const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** `MAX_SNIPPET_CHARS` of a snippet from a quarter of them before its first match, never halving a character. */
function clipped(snippet: string, highlights: Highlights): { snippet: string; highlights: Highlights } {
  const first = highlights[0]?.[0] ?? 0;
  const before = Math.floor(MAX_SNIPPET_CHARS / 4);
  let from = Math.max(0, Math.min(first - before, snippet.length - MAX_SNIPPET_CHARS));
  let to = from + MAX_SNIPPET_CHARS;
  if (isLowSurrogate(snippet.charCodeAt(from))) from++;
  if (isLowSurrogate(snippet.charCodeAt(to))) to--;
  const lead = from > 0 ? "…" : "";
  const shift = lead.length - from;
  return {
    snippet: lead + snippet.slice(from, to) + (to < snippet.length ? "…" : ""),
    highlights: highlights
      .filter(([a, b]) => b > from && a < to)
      .map(([a, b]): [number, number] => [Math.max(a, from) + shift, Math.min(b, to) + shift]),
  };
}
