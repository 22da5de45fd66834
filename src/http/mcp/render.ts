import type { TextLine } from "../../core/entry-text";
import type { HeaderMatch, SearchHit, TenantSearchResult } from "../../core/search";
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

/** A line an entry shows, led by the entry's id, its cut text followed by what was left out. */
export function shownLine(entryId: string, line: TextLine): string {
  const more =
    line.chars > line.text.length
      ? ` […${line.chars - line.text.length} more characters: read_entries with its entryId and around 0 gives the entry whole in structuredContent up to ${MAX_ENTRY_CHARS} characters of JSON, else GET /v1/sessions/<sessionId>/entries/<entryId>]`
      : "";
  return `[${entryId}] ${line.head}${line.text}${more}`;
}

/** Entries' lines, each led by its entry's id. */
export function shownLines(entries: readonly { id: string; lines: readonly TextLine[] }[]): string[] {
  return entries.flatMap((entry) => entry.lines.map((line) => shownLine(entry.id, line)));
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

export function headerMatchLine(match: HeaderMatch): string {
  return `match in the session's ${match.field === "name" ? "name" : "system prompt"}: ${oneLine(match.snippet)}`;
}

export function hitLine(hit: SearchHit): string {
  const where = `${hit.role ?? hit.type}${hit.field === "thinking" ? " (thinking)" : ""}${hit.onBranch ? "" : ", off the current branch"}`;
  return `match in [${hit.entryId}] ${where}: ${oneLine(hit.snippet)}`;
}
