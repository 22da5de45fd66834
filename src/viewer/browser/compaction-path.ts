import { keptFrom } from "../../core/context";
import type { StoredEntry, TreeEntry } from "../../core/entries";
import { MAX_ENTRIES_PAGE } from "../../core/limits";
import { session } from "./api";
import { view } from "./view-state";

/*
 * What the Compact dialog plans over: the current branch from where its context starts to the
 * leaf. On a compacted branch that is the latest compaction's first kept entry (the compaction
 * itself when it keeps nothing before it, or carries its tail: core's `keptFrom`); projected, that
 * part gives the same context and the same plan as the whole branch, without reading what the
 * compaction summarized. It is read as the entries appended since it starts, a page at a time, and
 * walked from the leaf. Without a compaction on the branch, or when the walk does not get there
 * (the tree shown is behind the session), the whole branch is read.
 */

/** The branch at the leaf shown, from the first entry its context projects. */
export async function readCompactionPath(sessionId: string): Promise<TreeEntry[]> {
  const storage = session(sessionId);
  const leafId = view.info?.leafId ?? null;
  const compactionId = latestCompactionShown(leafId);
  if (leafId === null || compactionId === undefined) return storage.getBranch(leafId);
  const compaction = await storage.getEntry(compactionId);
  if (compaction?.type !== "compaction") return storage.getBranch(leafId);
  const ids = pathIdsTo(compactionId);
  const startId = ids[keptFrom(ids, ids.length - 1, compaction)] as string;
  const start = startId === compaction.id ? compaction : await storage.getEntry(startId);
  if (!start) return storage.getBranch(leafId);
  const byId = new Map<string, StoredEntry>();
  for (let after = start.seq - 1; ; ) {
    const page = await storage.getEntries({ after, limit: MAX_ENTRIES_PAGE });
    for (const entry of page) byId.set(entry.id, entry);
    const last = page[page.length - 1];
    if (!last || page.length < MAX_ENTRIES_PAGE) break;
    after = last.seq;
  }
  const path: TreeEntry[] = [];
  for (let id: string | null = leafId; ; ) {
    const entry: StoredEntry | undefined = id === null ? undefined : byId.get(id);
    if (!entry || entry.type === "leaf") return storage.getBranch(leafId);
    path.push(entry);
    if (entry.id === startId) return path.reverse();
    id = entry.parentId;
  }
}

/** The latest compaction on the branch the tree shows, from its leaf up. */
function latestCompactionShown(leafId: string | null): string | undefined {
  for (let node = leafId === null ? undefined : view.nodes.get(leafId); node; ) {
    if (node.type === "compaction") return node.id;
    node = node.parentId === null ? undefined : view.nodes.get(node.parentId);
  }
  return undefined;
}

/** Ids of the branch the tree shows, root first, down to `id`. */
function pathIdsTo(id: string): string[] {
  const ids: string[] = [];
  for (
    let node = view.nodes.get(id);
    node;
    node = node.parentId === null ? undefined : view.nodes.get(node.parentId)
  )
    ids.push(node.id);
  return ids.reverse();
}
