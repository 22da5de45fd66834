import type { StoredEntry } from "../../core/entries";
import type { EntryPlace } from "../../durable/internal";
import { MAX_PAGE_CHARS } from "./tool-kit";

/*
 * Entries as a tool's structured content carries them: whole while they are small and fit in the
 * answer, else by their place and size, for GET /v1/sessions/:sid/entries/:id to read whole.
 */

/** An entry whose JSON is longer comes as its place and size only. */
export const MAX_ENTRY_CHARS = 16_000;
/** Characters of whole entries one answer carries at most; those past it come as their place and size. */
export const MAX_ENTRIES_CHARS = MAX_PAGE_CHARS;

/** Entries for the structured content: whole while they fit in what is `left`, else their places. */
export function carried(
  entries: readonly StoredEntry[],
  left: { chars: number } = { chars: MAX_ENTRIES_CHARS },
): (StoredEntry | EntryPlace)[] {
  return entries.map((entry) => {
    const chars = JSON.stringify(entry).length;
    if (chars <= MAX_ENTRY_CHARS && chars <= left.chars) {
      left.chars -= chars;
      return entry;
    }
    return placeOf(entry, chars);
  });
}

/** An entry by its place and its size (`chars` of JSON), for GET /v1/sessions/:sid/entries/:id to read whole. */
export function placeOf(entry: StoredEntry, chars: number): EntryPlace {
  const { id, seq, type, parentId, timestamp } = entry;
  return { id, seq, type, parentId, timestamp, omitted: { chars } };
}
