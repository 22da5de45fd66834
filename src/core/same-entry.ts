import { EXPORT_RECORD } from "./codex-items";
import type { SessionEntry } from "./entries";
import { canonicalJson } from "./json";
import { isRecord } from "./providers/incoming";

/*
 * Whether an entry read from an agent's file is one the session stored: what `pull` rewrites to put
 * the file in a checkout, and what an export records of how it was made, are not compared. And
 * which stored entries no agent's file holds, being written here about the conversation.
 */

/**
 * A Claude Code or Codex line without what `pull` rewrites to put the file in a checkout: the
 * line's working folder (`cwd`), and in Codex's `session_meta` its `cwd` and `model_provider`, in
 * its `turn_context` its `cwd`; nor what an export records there of how it was made.
 */
function unplacedLine(line: unknown): unknown {
  if (!isRecord(line)) return line;
  const { cwd: _cwd, ...rest } = line;
  if (!isRecord(rest.payload)) return rest;
  const { cwd: _payloadCwd, model_provider: provider, ...payload } = rest.payload;
  if (rest.type === "session_meta") {
    const { [EXPORT_RECORD]: _record, ...meta } = payload;
    return { ...rest, payload: meta };
  }
  if (rest.type === "turn_context") return { ...rest, payload: { ...payload, model_provider: provider } };
  return rest;
}

/** An entry without what `pull` rewrites in the agent's lines it holds. */
function unplaced(entry: Record<string, unknown>): Record<string, unknown> {
  const unplacedEntry = { ...entry };
  if (Array.isArray(entry.sourceLines)) unplacedEntry.sourceLines = entry.sourceLines.map(unplacedLine);
  if (Object.hasOwn(entry, "line")) unplacedEntry.line = unplacedLine(entry.line);
  const customType = typeof entry.customType === "string" ? entry.customType : "";
  if (customType.startsWith("claude-code:") || customType.startsWith("codex:"))
    unplacedEntry.data = unplacedLine(entry.data);
  return unplacedEntry;
}

/**
 * Whether a stored entry is the file's. What `pull` rewrites to put the file in a checkout, and what
 * an export records of how it was made, are not compared (the stored values stay). An entry
 * imported before imports recorded where each of its lines stood (`sourceLineNumbers`) kept less of
 * them: it is compared without what it kept of them.
 */
export function sameEntry(stored: Record<string, unknown>, expected: SessionEntry): boolean {
  if (canonicalJson(stored) === canonicalJson(expected)) return true;
  const [ours, theirs] = [unplaced(stored), unplaced(expected)];
  if (canonicalJson(ours) === canonicalJson(theirs)) return true;
  if (Object.hasOwn(stored, "sourceLineNumbers") || !Object.hasOwn(expected, "sourceLineNumbers"))
    return false;
  const bare = ({ sourceLines: _lines, sourceLineNumbers: _numbers, ...entry }: Record<string, unknown>) =>
    entry;
  return canonicalJson(bare(ours)) === canonicalJson(bare(theirs));
}

/**
 * An entry as its lines say it, wherever they stand in the file: without its id and parent (an
 * agent's line that names neither is read under an id made from its place) and its lines' places,
 * and without what `pull` rewrites or an export records of itself.
 */
export function entryContent(entry: Record<string, unknown>): string {
  const { id: _id, parentId: _parentId, sourceLineNumbers: _numbers, ...content } = unplaced(entry);
  return canonicalJson(content);
}

/**
 * Whether a stored entry was written here about the conversation, not in it, so no agent's file
 * holds it: a name (`session_info`, over HTTP or by a sync from a rename line), a label, a note
 * (`custom_message` of type `note`, as MCP's `append_note` writes). The file's next entries go on
 * from its own, so a note at the head is left on a branch of its own, kept in the tree.
 */
export function writtenHere(entry: { type: string; customType?: unknown }): boolean {
  return (
    entry.type === "session_info" ||
    entry.type === "label" ||
    (entry.type === "custom_message" && entry.customType === "note")
  );
}
