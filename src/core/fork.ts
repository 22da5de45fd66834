import { headFor } from "./append";
import type { EntryInput, StoredEntry, TreeEntry } from "./entries";
import { withoutSeq } from "./entries";
import { checkForkRequest } from "./given-input";
import { nonBlank } from "./info";
import type { ForkOptions, ParentSession, SessionHeader } from "./session-schemas";
import type { SessionStorage } from "./storage";

/** Entries per `importEntries` call when copying a path, so no single call grows with the path. */
export const COPY_BATCH = 500;

/** What `forkExtras` reads of a path entry: labels, names and ids, no payloads. */
export interface ForkPathEntry {
  id: string;
  type: string;
  targetId?: string;
  label?: string;
  name?: string;
}

/**
 * What a fork appends after copying the path so that labels and the name read as in the source:
 * a `label` for every path entry whose label the copied path alone would get wrong (labels set off
 * the path), and a `session_info` when the path's own name differs from the one wanted. They are
 * chained under the target; the caller then moves the head back to the target.
 */
export function forkExtras(
  path: readonly ForkPathEntry[],
  sourceLabels: Readonly<Record<string, string>>,
  name: string | undefined,
): EntryInput[] {
  const pathLabels = new Map<string, string>();
  let pathName: { name?: string } | undefined;
  for (const entry of path) {
    if (entry.type === "label" && entry.targetId !== undefined) {
      const label = nonBlank(entry.label);
      if (label === undefined) pathLabels.delete(entry.targetId);
      else pathLabels.set(entry.targetId, label);
    }
    if (entry.type === "session_info") pathName = { name: nonBlank(entry.name) };
  }
  const extras: EntryInput[] = [];
  for (const entry of path) {
    const wanted = Object.hasOwn(sourceLabels, entry.id) ? sourceLabels[entry.id] : undefined;
    if (wanted === pathLabels.get(entry.id)) continue;
    extras.push(
      wanted === undefined
        ? { type: "label", targetId: entry.id }
        : { type: "label", targetId: entry.id, label: wanted },
    );
  }
  if (pathName && pathName.name !== name) {
    extras.push(name === undefined ? { type: "session_info" } : { type: "session_info", name });
  }
  const target = path[path.length - 1];
  if (target && extras[0]) extras[0].parentId = target.id;
  return extras;
}

export interface ForkTargetHeader {
  id?: string;
  name?: string;
  systemPrompt?: string;
  metadata: Record<string, unknown>;
  parentSession: ParentSession;
}

/**
 * Fork for storages that can read the source path in one call (memory, files): a new session
 * holding exactly root → target, its labels and name as in the source, and the head at the target.
 */
export async function forkStorage<Target extends SessionStorage>(
  source: SessionStorage,
  targetId: string,
  options: ForkOptions,
  create: (header: ForkTargetHeader) => Promise<Target>,
): Promise<Target> {
  checkForkRequest(targetId, options);
  const resolved = headFor(targetId, await source.getEntry(targetId), options.position);
  const path: StoredEntry<TreeEntry>[] = resolved === null ? [] : await source.getBranch(resolved);
  const header: SessionHeader = await source.getHeader();
  const name = options.name ?? (await source.getInfo()).name;
  const forkHeader: ForkTargetHeader = {
    metadata: header.metadata,
    parentSession: { id: source.id, entryId: resolved ?? targetId },
  };
  if (options.id !== undefined) forkHeader.id = options.id;
  if (name !== undefined) forkHeader.name = name;
  if (header.systemPrompt !== undefined) forkHeader.systemPrompt = header.systemPrompt;
  const labels = await source.getLabels();
  const fork = await create(forkHeader);
  try {
    for (let i = 0; i < path.length; i += COPY_BATCH) {
      await fork.importEntries(
        path.slice(i, i + COPY_BATCH).map((entry) => withoutSeq(entry)),
        { validated: true },
      );
    }
    const extras = forkExtras(path, labels, name);
    if (extras.length > 0 && resolved !== null) {
      await fork.appendEntries(extras);
      await fork.setLeafId(resolved);
    }
    return fork;
  } catch (error) {
    // A fork is all or nothing: never leave a partial copy behind.
    await fork.delete().catch(() => undefined);
    throw error;
  }
}
