import type { AppendView } from "../core/append";
import { branchRows, onBranch } from "../core/branch";
import type { SessionEntry, StoredEntry, TreeEntry } from "../core/entries";
import type { PathStep } from "../core/providers/conversation-from-end";
import { conversationFromEnd } from "../core/providers/conversation-from-end";
import type { Conversation } from "../core/providers/provider-entries";
import { NO_CONVERSATION } from "../core/providers/provider-entries";
import type { EntryIndex, IndexedEntry } from "./entry-index";
import type { EntryLog } from "./entry-log";

function parseRow(text: string, row: IndexedEntry): StoredEntry {
  return { ...(JSON.parse(text) as SessionEntry), seq: row.seq };
}

/** The entries of `rows`, read back from the log. */
export async function readRows(log: EntryLog, rows: readonly IndexedEntry[]): Promise<StoredEntry[]> {
  const texts = await log.read(rows);
  return texts.map((text, i) => parseRow(text, rows[i] as IndexedEntry));
}

/** The entries of `rows`, read back from the log synchronously. */
function readRowsNow(log: EntryLog, rows: readonly IndexedEntry[]): StoredEntry[] {
  const texts = log.readNow(rows);
  return texts.map((text, i) => parseRow(text, rows[i] as IndexedEntry));
}

/**
 * The conversation a provider's message appended under `id` continues, read from the end of its
 * path as far as its last turn and its model reach (see `conversationFromEnd`).
 */
function conversationAt(log: EntryLog, index: EntryIndex, id: string): Conversation {
  const row = index.get(id);
  if (!row || row.type === "leaf") return NO_CONVERSATION;
  const rows = branchRows(id, (at) => index.get(at));
  // A row knows its parent's id, not its own: the path's ids are read from the end.
  const steps = new Array<PathStep>(rows.length);
  for (let i = rows.length - 1, stepId = id; i >= 0; i--) {
    const step = rows[i] as IndexedEntry;
    steps[i] = { id: stepId, type: step.type };
    stepId = step.parentId as string;
  }
  return conversationFromEnd(
    steps,
    (positions) =>
      readRowsNow(
        log,
        positions.map((at) => rows[at] as IndexedEntry),
      ) as TreeEntry[],
  );
}

/**
 * The planner's view of a JSONL session. Its `load` and `conversationAt` are synchronous, so the
 * entries `ids` names (ids the inputs name, a leaf target) are read beforehand; anything else,
 * such as the part of a conversation a provider's message is read against, is read
 * synchronously when the planner asks for it.
 */
export async function appendView(
  log: EntryLog,
  index: EntryIndex,
  leafId: string | null,
  ids: readonly (string | null)[],
): Promise<AppendView> {
  const rows = new Set<IndexedEntry>();
  for (const id of ids) {
    const row = id === null ? undefined : index.get(id);
    if (row) rows.add(row);
  }
  const read = await readRows(
    log,
    [...rows].sort((a, b) => a.seq - b.seq),
  );
  const loaded = new Map(read.map((entry) => [entry.id, entry]));
  return {
    leafId,
    nextSeq: index.nextSeq,
    ref: (id) => index.get(id),
    load: (id) => {
      const early = loaded.get(id);
      if (early) return early;
      const row = index.get(id);
      return row && readRowsNow(log, [row])[0];
    },
    onPath: (ancestorId, fromId) => onBranch(ancestorId, fromId, (id) => index.get(id)),
    conversationAt: (id) => conversationAt(log, index, id),
  };
}
