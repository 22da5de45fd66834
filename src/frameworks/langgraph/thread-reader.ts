import type { EntryType, Session, StoredEntry, TreeEntry } from "../../core";
import type { AnsweredCallIds } from "../../core/providers/tool-call-ids";
import { CHECKPOINT, CheckpointData, WRITES, WritesData } from "./entries";
import type { MessageRef } from "./messages";
import { applyChanges, keptMessage, MESSAGES_CHANNEL } from "./messages";
import type { Serialized } from "./serialized";
import { sessionMessages, withoutCompactions } from "./session-messages";

/** A checkpoint entry as read: its id, where it stands in append order, and what it holds. */
export interface StoredCheckpoint {
  entryId: string;
  seq: number;
  data: CheckpointData;
}

/** The entries a tuple is built from: checkpoints by entry id, and the writes under a checkpoint. */
export interface ThreadReader {
  checkpoint(entryId: string): Promise<StoredCheckpoint | undefined>;
  /** The writes entries under the checkpoint (or a session head's entry), in append order. */
  writes(checkpoint: Pick<StoredCheckpoint, "entryId" | "seq">): Promise<WritesData[]>;
  /** The checkpoint's messages channel, from the entries of its path; undefined if one is gone. */
  messages(checkpoint: StoredCheckpoint): Promise<Serialized[] | undefined>;
}

/** The references after `entry` when it is a checkpoint: changed, or unknown where it holds the channel as a value. */
function refsAfter(refs: MessageRef[] | undefined, entry: StoredEntry): MessageRef[] | undefined {
  const checkpoint = checkpointOf(entry);
  if (!checkpoint) return refs;
  const { messages, values } = checkpoint.data;
  // After a checkpoint holding the channel as a value, the changes of the next add every message.
  if (messages) return applyChanges(refs ?? [], messages);
  return values[MESSAGES_CHANNEL] === undefined ? refs : undefined;
}

/**
 * The messages channel at the end of a path (root first) as references: the changes of its
 * checkpoints applied in order; undefined when a checkpoint on it holds the channel as a value.
 */
export function refsOnPath(path: readonly StoredEntry[]): MessageRef[] | undefined {
  let refs: MessageRef[] | undefined = [];
  for (const entry of path) refs = refsAfter(refs, entry);
  return refs;
}

/**
 * The messages `refs` name: kept on their entries by this saver, or read from the checkpoint's
 * path (`path`, read only when needed) for those a thread started from a session holds, their
 * calls shown by the ids `callIds` hands out: from its context as a model is sent it (which held a
 * compaction's summary when the thread started), else from its whole conversation (which holds
 * what a compaction made since left out).
 */
async function keptMessages(
  refs: readonly MessageRef[],
  entry: (id: string) => StoredEntry | undefined,
  path: () => Promise<StoredEntry<TreeEntry>[]>,
  callIds?: () => AnsweredCallIds,
): Promise<Serialized[] | undefined> {
  const messages: Serialized[] = [];
  const byId = (path: readonly StoredEntry<TreeEntry>[]) =>
    new Map(
      sessionMessages(path, callIds?.()).map(({ value }) => [
        String((value as { json: { kwargs: { id: unknown } } }).json.kwargs.id),
        value,
      ]),
    );
  // The whole conversation, and the summary of each compaction on the path (the one a thread
  // started from when it was the latest).
  const wholeById = (path: readonly StoredEntry<TreeEntry>[]) => {
    const found = byId(withoutCompactions(path));
    path.forEach((entry, index) => {
      if (entry.type !== "compaction") return;
      for (const [id, value] of byId(path.slice(0, index + 1))) if (!found.has(id)) found.set(id, value);
    });
    return found;
  };
  let read: Promise<StoredEntry<TreeEntry>[]> | undefined;
  let inContext: Map<string, Serialized> | undefined;
  let inWhole: Map<string, Serialized> | undefined;
  for (const ref of refs) {
    let message = keptMessage(entry(ref.holder));
    if (!message) {
      read ??= path();
      inContext ??= byId(await read);
      message = inContext.get(ref.id);
    }
    if (!message) {
      inWhole ??= wholeById(await (read as Promise<StoredEntry<TreeEntry>[]>));
      message = inWhole.get(ref.id);
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

/** Whether an entry holds a task's writes. */
export function isWrites(entry: StoredEntry): boolean {
  return entry.type === "custom" && entry.customType === WRITES;
}

/** The checkpoint appended last after `checkpoint`, if any. */
export async function newestCheckpointAfter(
  session: Session,
  checkpoint: StoredCheckpoint,
): Promise<StoredCheckpoint | undefined> {
  let newest: StoredCheckpoint | undefined;
  for await (const entry of entriesAfter(session, checkpoint.seq)) newest = checkpointOf(entry) ?? newest;
  return newest;
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
 * a graph resumes, that is the end of the session). The calls of messages read from the session's
 * context are shown by the ids `callIds` hands out.
 */
export function sessionReader(session: Session, callIds?: () => AnsweredCallIds): ThreadReader {
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
    async messages(checkpoint) {
      const path = await session.getBranch(checkpoint.entryId);
      const refs = refsOnPath(path);
      if (!refs) return undefined;
      const byId = new Map(path.map((entry) => [entry.id, entry]));
      return keptMessages(
        refs,
        (id) => byId.get(id),
        async () => path,
        callIds,
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
  const entries = new Map<string, StoredEntry>();
  for await (const entry of entriesAfter(session, 0, ["custom", "message", "context_edit"])) {
    entries.set(entry.id, entry);
    const checkpoint = checkpointOf(entry);
    if (checkpoint) checkpoints.set(checkpoint.entryId, checkpoint);
    const written = writesOf(entry);
    if (written) writes.set(written.parentId, [...(writes.get(written.parentId) ?? []), written.data]);
  }
  // The references at each checkpoint, from those at the checkpoint above it (each computed once).
  const refsAt = new Map<string, MessageRef[] | undefined>();
  const refsOf = (entryId: string): MessageRef[] | undefined => {
    const above: StoredEntry[] = [];
    let refs: MessageRef[] | undefined = [];
    for (let id: string | null = entryId; id !== null; ) {
      if (refsAt.has(id)) {
        refs = refsAt.get(id);
        break;
      }
      const entry = entries.get(id);
      if (!entry) break;
      above.push(entry);
      id = entry.parentId;
    }
    for (const entry of above.reverse()) {
      refs = refsAfter(refs, entry);
      if (checkpoints.has(entry.id)) refsAt.set(entry.id, refs);
    }
    return refs;
  };
  return {
    checkpoints: [...checkpoints.values()],
    reader: {
      checkpoint: async (entryId) => checkpoints.get(entryId),
      writes: async (checkpoint) => writes.get(checkpoint.entryId) ?? [],
      messages: async (checkpoint) => {
        const refs = refsOf(checkpoint.entryId);
        return (
          refs &&
          keptMessages(
            refs,
            (id) => entries.get(id),
            () => session.getBranch(checkpoint.entryId),
          )
        );
      },
    },
  };
}
