import type { EntryType, Session, StoredEntry, TreeEntry } from "../../core";
import { CHECKPOINT, CheckpointData, WRITES, WritesData } from "./entries";
import type { MessageRef } from "./messages";
import { keptMessage } from "./messages";
import type { Serialized } from "./serialized";
import { sessionMessages } from "./session-messages";

/** A checkpoint entry as read: its id, where it stands in append order, and what it holds. */
export interface StoredCheckpoint {
  entryId: string;
  seq: number;
  data: CheckpointData;
}

/** The entries a tuple is built from: checkpoints by entry id, and the writes under a checkpoint. */
export interface ThreadReader {
  checkpoint(entryId: string): Promise<StoredCheckpoint | undefined>;
  /** The writes entries under the checkpoint, in append order. */
  writes(checkpoint: StoredCheckpoint): Promise<WritesData[]>;
  /** The messages `refs` name, as kept on the entries of the checkpoint's path; undefined if one is gone. */
  messages(refs: readonly MessageRef[], checkpoint: StoredCheckpoint): Promise<Serialized[] | undefined>;
}

/**
 * The messages `refs` name: kept on their entries by this saver, or read from the context of the
 * checkpoint's path (`path`, read only when needed) for those a thread started from a session
 * holds.
 */
async function keptMessages(
  refs: readonly MessageRef[],
  entry: (id: string) => StoredEntry | undefined,
  path: () => Promise<StoredEntry<TreeEntry>[]>,
): Promise<Serialized[] | undefined> {
  const messages: Serialized[] = [];
  let fromSession: Map<string, Serialized> | undefined;
  for (const ref of refs) {
    let message = keptMessage(entry(ref.holder));
    if (!message) {
      fromSession ??= new Map(
        sessionMessages(await path()).map(({ value }) => [
          String((value as { json: { kwargs: { id: unknown } } }).json.kwargs.id),
          value,
        ]),
      );
      message = fromSession.get(ref.id);
    }
    if (!message) return undefined;
    messages.push(message);
  }
  return messages;
}

/** The checkpoint an entry holds, or undefined for any other entry (one a person added, say). */
export function checkpointOf(entry: StoredEntry | undefined): StoredCheckpoint | undefined {
  if (entry?.type !== "custom" || entry.customType !== CHECKPOINT) return undefined;
  const data = CheckpointData.safeParse(entry.data);
  return data.success ? { entryId: entry.id, seq: entry.seq, data: data.data } : undefined;
}

function writesOf(entry: StoredEntry): { parentId: string; data: WritesData } | undefined {
  if (entry.type !== "custom" || entry.customType !== WRITES || entry.parentId === null) return undefined;
  const data = WritesData.safeParse(entry.data);
  return data.success ? { parentId: entry.parentId, data: data.data } : undefined;
}

/** Entries per page when a session is read whole or from a checkpoint on. */
const PAGE = 1000;

/** Entries of the session of these types appended after `after`, page by page. */
async function* entriesAfter(
  session: Session,
  after: number,
  type: EntryType | readonly EntryType[] = "custom",
): AsyncGenerator<StoredEntry> {
  for (let cursor = after; ; ) {
    const page = await session.getEntries({ after: cursor, limit: PAGE, type });
    yield* page;
    const last = page[page.length - 1];
    if (!last || page.length < PAGE) return;
    cursor = last.seq;
  }
}

/**
 * A thread read entry by entry from its session: a checkpoint by its id, and its writes from the
 * entries appended after it (a checkpoint's writes come after it; for the latest checkpoint, where
 * a graph resumes, that is the end of the session).
 */
export function sessionReader(session: Session): ThreadReader {
  return {
    async checkpoint(entryId) {
      return checkpointOf(await session.getEntry(entryId));
    },
    async writes(checkpoint) {
      const found: WritesData[] = [];
      for await (const entry of entriesAfter(session, checkpoint.seq)) {
        const writes = writesOf(entry);
        if (writes?.parentId === checkpoint.entryId) found.push(writes.data);
      }
      return found;
    },
    async messages(refs, checkpoint) {
      if (refs.length === 0) return [];
      const path = await session.getBranch(checkpoint.entryId);
      const byId = new Map(path.map((entry) => [entry.id, entry]));
      return keptMessages(
        refs,
        (id) => byId.get(id),
        async () => path,
      );
    },
  };
}

/** A whole thread read at once (to list it): every checkpoint and every write, in one pass. */
export async function wholeThread(
  session: Session,
): Promise<{ checkpoints: StoredCheckpoint[]; reader: ThreadReader }> {
  const checkpoints = new Map<string, StoredCheckpoint>();
  const writes = new Map<string, WritesData[]>();
  const messages = new Map<string, StoredEntry>();
  for await (const entry of entriesAfter(session, 0, ["custom", "message", "context_edit"])) {
    if (entry.type !== "custom") {
      if (keptMessage(entry)) messages.set(entry.id, entry);
      continue;
    }
    const checkpoint = checkpointOf(entry);
    if (checkpoint) checkpoints.set(checkpoint.entryId, checkpoint);
    const written = writesOf(entry);
    if (written) writes.set(written.parentId, [...(writes.get(written.parentId) ?? []), written.data]);
    // A message with no place in a context is a custom entry too.
    if (keptMessage(entry)) messages.set(entry.id, entry);
  }
  return {
    checkpoints: [...checkpoints.values()],
    reader: {
      checkpoint: async (entryId) => checkpoints.get(entryId),
      writes: async (checkpoint) => writes.get(checkpoint.entryId) ?? [],
      messages: (refs, checkpoint) =>
        keptMessages(
          refs,
          (id) => messages.get(id),
          () => session.getBranch(checkpoint.entryId),
        ),
    },
  };
}
