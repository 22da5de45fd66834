import { keptFrom, latestCompaction } from "./context";
import type { CompactionEntry, EntryInput, TreeEntry } from "./entries";
import { newId } from "./ids";
import { canonicalJson } from "./json";
import type { AgentMessage } from "./messages";

/*
 * Going back on a compacted branch (undoing the last messages, regenerating an answer, a chat cut
 * short) to a point inside what the latest compaction kept, whether entries before it or messages
 * of its retained tail. Moving the head there would leave the compaction off the branch, and every
 * door would be sent the whole history again instead of its summary. So the branch goes on under a
 * new compaction with the same summary that keeps what lies up to that point. A point after the
 * compaction, or on a branch without one, is a plain head move.
 */

/** Where a branch goes back to. */
export interface RewindPoint {
  /** Just after this entry of the branch (null: before its first). */
  entryId: string | null;
  /**
   * With `entryId` the branch's latest compaction: the messages of what it kept that stay (its
   * retained tail, or none of the entries before it), in place of all it kept.
   */
  retainedTail?: AgentMessage[];
}

export interface Rewind {
  /** Where the history goes on: the point itself, or the compaction `entries` end with. */
  parentId: string | null;
  /** What to append first; none when the head only moves to `parentId`. */
  entries: EntryInput[];
}

/** A compaction with `compaction`'s summary, keeping `kept`, under `parentId`. */
export function repeatCompaction(
  compaction: CompactionEntry,
  parentId: string | null,
  kept: Pick<CompactionEntry, "firstKeptEntryId" | "retainedTail">,
): Rewind {
  const { summary, tokensBefore, details, fromHook, systemMessage } = compaction;
  const entry: EntryInput = {
    type: "compaction",
    id: newId(),
    parentId,
    summary,
    tokensBefore,
    ...kept,
    ...(details !== undefined ? { details } : {}),
    ...(fromHook !== undefined ? { fromHook } : {}),
    ...(systemMessage !== undefined ? { systemMessage } : {}),
  };
  return { parentId: entry.id as string, entries: [entry] };
}

/**
 * How `branch` (root first) goes back to `point`: a head move, or a compaction repeating the
 * latest one's summary that keeps what the compaction kept up to the point (for a retained tail,
 * the part given, under the compaction's parent; for entries kept before it, from the same first
 * kept entry, under the point, or nothing before it when the point is just before that entry).
 */
export function rewindTo(branch: readonly TreeEntry[], point: RewindPoint): Rewind {
  const plain: Rewind = { parentId: point.entryId, entries: [] };
  const compaction = latestCompaction(branch);
  if (!compaction) return plain;
  const at = branch.lastIndexOf(compaction);
  const from = keptFrom(
    branch.map((entry) => entry.id),
    at,
    compaction,
  );
  if (point.retainedTail !== undefined) {
    if (point.entryId !== compaction.id) return plain;
    const all = compaction.retainedTail ?? (from === at ? [] : undefined);
    if (all !== undefined && canonicalJson(point.retainedTail) === canonicalJson(all)) return plain;
    return repeatCompaction(compaction, compaction.parentId, { retainedTail: point.retainedTail });
  }
  const index = point.entryId === null ? -1 : branch.findIndex((entry) => entry.id === point.entryId);
  if (point.entryId !== null && index < 0) return plain;
  // At or after the compaction, or just before it (where it was appended): it stays on the branch.
  if (index >= at) return plain;
  if (index === at - 1) return { parentId: compaction.id, entries: [] };
  // Before what it kept: the summary tells of what follows the point, so the whole history is back.
  if (index < from - 1) return plain;
  const kept = index < from ? {} : { firstKeptEntryId: compaction.firstKeptEntryId };
  return repeatCompaction(compaction, point.entryId, kept);
}
