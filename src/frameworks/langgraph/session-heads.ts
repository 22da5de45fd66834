import type {
  Checkpoint,
  CheckpointMetadata,
  CheckpointTuple,
  SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { Session, StoredEntry } from "../../core";
import type { CheckpointTuples, NextVersion } from "./checkpoint-tuples";
import type { Thread } from "./entries";
import { headCheckpointId } from "./head-ids";
import type { MessageRef } from "./messages";
import { MESSAGES_CHANNEL } from "./messages";
import { pendingWrites } from "./pending-writes";
import type { KnownCheckpoint, SaverMemory } from "./saver-memory";
import { deserialize } from "./serialized";
import { sessionMessages, withoutCompactions } from "./session-messages";
import { checkpointOf, isWrites, refsOnPath, sessionReader } from "./thread-reader";

/*
 * A session's head as a checkpoint: where no checkpoint of the thread was put (a conversation
 * written over HTTP, by an import, by another framework, or messages another door appended after
 * the graph's last checkpoint), the state a graph goes on from is the session's messages in the
 * messages channel. Such a checkpoint is never stored; its id (head-ids.ts) names the entry.
 */

/** A session head's checkpoint, and what `put` needs to build on it. */
export interface SessionHead {
  tuple: CheckpointTuple;
  known: KnownCheckpoint;
}

export class SessionHeads {
  readonly #serde: SerializerProtocol;
  readonly #nextVersion: NextVersion;
  readonly #memory: SaverMemory;
  readonly #tuples: CheckpointTuples;

  constructor(
    serde: SerializerProtocol,
    nextVersion: NextVersion,
    memory: SaverMemory,
    tuples: CheckpointTuples,
  ) {
    this.#serde = serde;
    this.#nextVersion = nextVersion;
    this.#memory = memory;
    this.#tuples = tuples;
  }

  /**
   * The checkpoint a session's context at `leaf` stands for, when no checkpoint of the thread was
   * put there: its messages (session-messages.ts) in the messages channel. On a path without
   * checkpoints that is the whole state, at version 1. After the path's last checkpoint (messages
   * another door appended to the thread), it is that checkpoint's state with those messages after
   * its own, the channel at its next version; undefined when that checkpoint holds its messages as
   * one value, which the appended ones cannot follow. Its references are kept for the first `put`
   * made from it.
   */
  async at(thread: Thread, session: Session, leaf: string): Promise<SessionHead | undefined> {
    const branch = await session.getBranch(leaf);
    if (branch.at(-1)?.id !== leaf) return undefined;
    // The writes of a task run from a head hang under its entry: the head is the last entry no writes.
    const path = branch.slice(0, branch.findLastIndex((entry) => !isWrites(entry)) + 1);
    const head = path.at(-1);
    if (!head) return undefined;
    const at = path.findLastIndex((entry) => checkpointOf(entry) !== undefined);
    const after = new Set(path.slice(at + 1).map((entry) => entry.id));
    // After a checkpoint, the messages the graph does not hold yet, whatever compaction came since;
    // on a session no graph wrote, its context as a model is sent it.
    const read = at === -1 ? path : withoutCompactions(path);
    const found = sessionMessages(read, this.#memory.shownCallIds(session.id)).filter(({ entry }) =>
      after.has(entry.id),
    );
    if (found.length === 0) return undefined;
    const below = at === -1 ? undefined : await this.#below(thread, session, path[at]);
    if (at !== -1 && !below) return undefined;
    const messages = await Promise.all(found.map(({ value }) => deserialize(this.#serde, value)));
    const id = await headCheckpointId(head);
    const refs: MessageRef[] = await Promise.all(
      found.map(async ({ value, entry, editable }, index) => {
        const messageId = String((value as { json: { kwargs: { id: unknown } } }).json.kwargs.id);
        const { print } = await this.#memory.listed(messages[index]);
        return { id: messageId, entry: entry.id, holder: entry.id, print, editable };
      }),
    );
    const version = below
      ? this.#nextVersion(below.known.versions[MESSAGES_CHANNEL] as number | undefined)
      : 1;
    const known: KnownCheckpoint = {
      entryId: head.id,
      seq: head.seq,
      versions: { ...below?.known.versions, [MESSAGES_CHANNEL]: version },
      holders: { ...below?.known.holders, [MESSAGES_CHANNEL]: id },
      pathRefs: below?.refs ?? [],
    };
    this.#memory.keepRefs(session.id, id, [...(below?.refs ?? []), ...refs]);
    this.#memory.remember(session.id, id, known);
    const values = below?.tuple.checkpoint.channel_values ?? {};
    const earlier = values[MESSAGES_CHANNEL];
    const checkpoint: Checkpoint = {
      ...(below?.tuple.checkpoint ?? { v: 4, versions_seen: {} }),
      id,
      ts: head.timestamp,
      channel_values: {
        ...values,
        [MESSAGES_CHANNEL]: [...(Array.isArray(earlier) ? earlier : []), ...messages],
      },
      channel_versions: { ...known.versions },
    };
    const ids = { thread_id: thread.threadId, checkpoint_ns: thread.checkpointNs };
    const metadata =
      below?.tuple.metadata ?? ({ source: "input", step: -1, parents: {} } as CheckpointMetadata);
    const tuple: CheckpointTuple = {
      config: { configurable: { ...ids, checkpoint_id: id } },
      checkpoint,
      metadata,
      // The writes of the checkpoint below (an interrupt a graph waits at), then the head's own.
      pendingWrites: [
        ...(below?.tuple.pendingWrites ?? []),
        ...(await pendingWrites(
          this.#serde,
          await sessionReader(session).writes({ entryId: head.id, seq: head.seq }),
        )),
      ],
    };
    if (below) tuple.parentConfig = below.tuple.config;
    return { tuple, known };
  }

  /**
   * The messages channel at a checkpoint as references (none: the channel is not set); undefined
   * when it is held as a value (a list the references could not follow, or written before them).
   */
  async refsAt(session: Session, known: KnownCheckpoint): Promise<MessageRef[] | undefined> {
    const holder = known.holders[MESSAGES_CHANNEL];
    if (holder === undefined) return [];
    const kept = this.#memory.refs(session.id, holder);
    if (kept) return kept;
    const stored = checkpointOf(await session.getEntry(holder));
    if (stored?.data.messages) {
      // Not put here: the changes of the checkpoints on its path, read once.
      const refs = refsOnPath(await session.getBranch(holder));
      if (refs) this.#memory.keepRefs(session.id, holder, refs);
      return refs;
    }
    const value = stored?.data.values[MESSAGES_CHANNEL];
    return value && "json" in value && Array.isArray(value.json) && value.json.length === 0 ? [] : undefined;
  }

  /**
   * The checkpoint a session's head goes on from, and its messages channel as references;
   * undefined when it holds the channel as one value.
   */
  async #below(
    thread: Thread,
    session: Session,
    entry: StoredEntry | undefined,
  ): Promise<(SessionHead & { refs: MessageRef[] }) | undefined> {
    const stored = checkpointOf(entry);
    if (!stored) return undefined;
    const known = this.#memory.rememberStored(session.id, stored);
    const refs = await this.refsAt(session, known);
    if (!refs) return undefined;
    return { tuple: await this.#tuples.of(thread, this.#memory.reader(session), stored), known, refs };
  }
}
