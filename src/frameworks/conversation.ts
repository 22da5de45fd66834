import type { AgentMessage, EntryInput, StoredEntry, TreeEntry } from "../core";
import { projectContext } from "../core/context";
import { latestEdits } from "../core/context-edits";

/*
 * What the adapters share. A framework's records become first-class entries (messages, tool
 * calls and results, compactions) through the core's readers, and the last entry a record (or a
 * run of them) became keeps it exactly, beside the entry, in `original`, so the framework reads
 * it back deep-equal. Any session, whoever wrote it, reads back as the pieces of its context: a
 * framework's own records where entries it wrote are in the context as they were written, and
 * otherwise the messages each entry contributes, for the adapter to turn into its records.
 */

/** What a framework gave, kept on the last of the entries it became. */
export interface Original {
  /** The adapter that wrote it: `openai-agents`, `ai-sdk`, `langgraph`. */
  framework: string;
  /** The framework's records, exactly as given. */
  records: unknown[];
  /** How many entries, chained and ending with this one, the records became. */
  entries: number;
}

/** `entries` (a chain) with the records they stand for kept on the last of them. */
export function keepOriginal<E extends EntryInput>(
  entries: readonly E[],
  framework: string,
  records: unknown[],
): E[] {
  const original: Original = { framework, records, entries: entries.length };
  return entries.map((entry, index) => (index === entries.length - 1 ? { ...entry, original } : entry));
}

export function originalOf(entry: TreeEntry, framework: string): Original | undefined {
  const original = (entry as { original?: Partial<Original> }).original;
  return original?.framework === framework && Array.isArray(original.records)
    ? { framework, records: original.records, entries: Math.max(1, Number(original.entries) || 1) }
    : undefined;
}

/** A part of a session's context: entries in context order, with the framework's records or their messages. */
export interface Piece {
  entries: StoredEntry<TreeEntry>[];
  /** The messages these entries contribute to the context. */
  messages: AgentMessage[];
  /** The framework's own records, where it wrote these entries and the context holds them as written. */
  records?: unknown[];
}

/**
 * The context of `path` (a branch, root first) as pieces, in order: runs of entries `framework`
 * wrote, holding their records, and each other entry with its messages. `recordsOf` names the
 * records an entry holds in a shape of its own (a custom entry, a session written by an earlier
 * release). A context edit on an entry, or a compaction that kept only part of a run, makes its
 * entries read as their messages.
 */
export function conversationPieces(
  path: readonly StoredEntry<TreeEntry>[],
  framework: string,
  recordsOf: (entry: StoredEntry<TreeEntry>) => unknown[] | undefined = () => undefined,
): Piece[] {
  const projected = projectContext(path);
  const edits = latestEdits(projected.map(({ entry }) => entry));
  const pieces: Piece[] = [];
  for (const { entry, messages } of projected) {
    const stored = entry as StoredEntry<TreeEntry>;
    const edited = edits.has(entry.id);
    const own = edited ? undefined : recordsOf(stored);
    if (own) {
      pieces.push({ entries: [stored], messages, records: own });
      continue;
    }
    const original = edited ? undefined : originalOf(entry, framework);
    const before = original ? pieces.slice(pieces.length - (original.entries - 1)) : [];
    const whole =
      original !== undefined &&
      before.length === original.entries - 1 &&
      [...before.map((piece) => piece.entries[0]), stored].every(
        (link, index, chain) =>
          link !== undefined &&
          !edits.has(link.id) &&
          (index === 0 || link.parentId === chain[index - 1]?.id),
      ) &&
      before.every((piece) => piece.entries.length === 1 && piece.records === undefined);
    if (!original || !whole) {
      pieces.push({ entries: [stored], messages });
      continue;
    }
    pieces.splice(pieces.length - before.length);
    pieces.push({
      entries: [...before.flatMap((piece) => piece.entries), stored],
      messages: [...before.flatMap((piece) => piece.messages), ...messages],
      records: original.records,
    });
  }
  return pieces;
}
