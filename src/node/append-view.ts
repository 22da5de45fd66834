import type { AppendView } from "../core/append";
import { branchRows, onBranch } from "../core/branch";
import type { SessionEntry, StoredEntry, TreeEntry } from "../core/entries";
import type { Conversation } from "../core/providers/provider-entries";
import { conversationOf, isProviderEntry, NO_CONVERSATION } from "../core/providers/provider-entries";
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

/**
 * The planner's view of a JSONL session. Its `load` and `conversationAt` are synchronous, so what
 * they will ask for is read beforehand: the entries `ids` names (ids the inputs name, a leaf
 * target), and, for a batch with a provider's message, the conversations it may continue (at the
 * leaf, and at the entries it names and their parents). Anything else is read synchronously.
 */
export async function appendView(
  log: EntryLog,
  index: EntryIndex,
  leafId: string | null,
  ids: readonly (string | null)[],
  inputs: readonly unknown[] = [],
): Promise<AppendView> {
  const conversations = new Map<string, Conversation>();
  if (inputs.some(isProviderEntry)) {
    const named = ids.filter((id) => id !== null);
    for (const id of new Set([leafId, ...named, ...named.map((id) => index.get(id)?.parentId)])) {
      const row = typeof id === "string" ? index.get(id) : undefined;
      if (!row || row.type === "leaf") continue;
      const path = branchRows(id as string, (at) => index.get(at));
      conversations.set(id as string, conversationOf((await readRows(log, path)) as TreeEntry[]));
    }
  }
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
      return row && parseRow(log.readNow(row), row);
    },
    onPath: (ancestorId, fromId) => onBranch(ancestorId, fromId, (id) => index.get(id)),
    conversationAt: (id) => conversations.get(id) ?? NO_CONVERSATION,
  };
}
