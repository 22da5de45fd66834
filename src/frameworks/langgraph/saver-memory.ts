import type { ChannelVersions, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { Session } from "../../core";
import { AnsweredCallIds, PORTABLE_IDS } from "../../core/providers/tool-call-ids";
import type { CheckpointData } from "./entries";
import type { ListedMessage, MessageRef } from "./messages";
import { listedMessage, MESSAGES_CHANNEL } from "./messages";
import { serialize } from "./serialized";
import type { StoredCheckpoint, ThreadReader } from "./thread-reader";
import { sessionReader } from "./thread-reader";

/*
 * What a saver remembers between its calls, so that a graph's next step is written without
 * reading back what the last one wrote: the checkpoints last put or read, the message references
 * of the checkpoints that changed the messages channel, the call ids the last reads of a session
 * showed a graph, and each message object as serialized, and the head a checkpoint was last read
 * at when another door appended what is no message after it. Every kind is bounded, newest kept.
 */

/**
 * What `put` needs of the checkpoint it builds on: its entry, its channel versions and who holds
 * each value.
 */
export interface KnownCheckpoint {
  entryId: string;
  /** Its entry's seq: what another door appended after it comes after that. */
  seq: number;
  versions: ChannelVersions;
  holders: Record<string, string>;
  /**
   * For a session's head: the messages channel as the checkpoints on its path leave it (none on a
   * path without checkpoints), what the next checkpoint's changes start from.
   */
  pathRefs?: MessageRef[];
}

/** Checkpoints (and their references) remembered, the ones last put or read. */
const KEPT_CHECKPOINTS = 256;

/** Reads of a session whose call ids are remembered, so that a graph's results pair with the calls. */
const KEPT_READS = 8;

/** How a checkpoint (or an entry of one) of a session is known in a saver's maps. */
export function checkpointKey(sessionId: string, id: string): string {
  return `${sessionId}\n${id}`;
}

/** Sets `key` as the newest of `map`, dropping the oldest past `kept`. */
function keepNewest<T>(map: Map<string, T>, key: string, value: T, kept: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > kept) map.delete(map.keys().next().value as string);
}

/** Who holds each channel's value at a checkpoint: its own entry for the values it stores. */
export function holders(
  held: Record<string, string>,
  data: Pick<CheckpointData, "values" | "messages">,
  entryId: string,
): Record<string, string> {
  const all = { ...held };
  for (const channel of Object.keys(data.values)) all[channel] = entryId;
  if (data.messages) all[MESSAGES_CHANNEL] = entryId;
  return all;
}

export class SaverMemory {
  readonly #serde: SerializerProtocol;
  readonly #known = new Map<string, KnownCheckpoint>();
  /** The message references of checkpoints that changed the messages channel, by session and entry. */
  readonly #refs = new Map<string, MessageRef[]>();
  /** The call ids the last reads of each session's context showed a graph, newest last. */
  readonly #callIdReads = new Map<string, AnsweredCallIds[]>();
  /**
   * The session's head a checkpoint was read at, as the latest, when only entries no graph's state
   * holds stand after it (see `takeHeadOver`), by session and checkpoint id.
   */
  readonly #headsOver = new Map<string, string>();
  /** Messages of messages channels as serialized, by the message object (see `listed`). */
  readonly #listedMessages = new WeakMap<object, { id: unknown; listed: ListedMessage }>();

  /** The checkpoint each session's last put wrote, by session id: a put from it goes on, it travels nowhere. */
  readonly #lastPut = new Map<string, string>();

  constructor(serde: SerializerProtocol) {
    this.#serde = serde;
  }

  /** Whether the checkpoint of a `checkpointKey` is known to be stored. */
  has(key: string): boolean {
    return this.#known.has(key);
  }

  known(sessionId: string, checkpointId: string): KnownCheckpoint | undefined {
    return this.#known.get(checkpointKey(sessionId, checkpointId));
  }

  remember(sessionId: string, checkpointId: string, known: KnownCheckpoint): void {
    keepNewest(this.#known, checkpointKey(sessionId, checkpointId), known, KEPT_CHECKPOINTS);
  }

  rememberStored(sessionId: string, { entryId, seq, data }: StoredCheckpoint): KnownCheckpoint {
    const known = {
      entryId,
      seq,
      versions: data.checkpoint.channel_versions,
      holders: holders(data.held, data, entryId),
    };
    this.remember(sessionId, data.checkpoint.id, known);
    return known;
  }

  /** Whether a put from `checkpointId` goes on from the checkpoint this saver last put in the session. */
  goesOn(sessionId: string, checkpointId: string): boolean {
    return this.#lastPut.get(sessionId) === checkpointId;
  }

  /** Records `checkpointId` as the last put in the session. */
  put(sessionId: string, checkpointId: string): void {
    keepNewest(this.#lastPut, sessionId, checkpointId, KEPT_CHECKPOINTS);
  }

  /**
   * Where the next checkpoint put from `checkpointId` hangs instead of under its entry: the head it
   * was read at, when entries another door appended after it are none of a graph's state (a model
   * or thinking level change, a compaction, a label), so that they stay on the thread's path.
   * Once: a later `put` from the same checkpoint (time travel) hangs under its entry.
   */
  takeHeadOver(sessionId: string, checkpointId: string): string | undefined {
    const key = checkpointKey(sessionId, checkpointId);
    const head = this.#headsOver.get(key);
    this.#headsOver.delete(key);
    return head;
  }

  /** Records (or, with no head, forgets) the head `checkpointId` was read at as the latest. */
  readAtHead(sessionId: string, checkpointId: string, head: string | undefined): void {
    const key = checkpointKey(sessionId, checkpointId);
    if (head === undefined) this.#headsOver.delete(key);
    else keepNewest(this.#headsOver, key, head, KEPT_CHECKPOINTS);
  }

  refs(sessionId: string, entryId: string): MessageRef[] | undefined {
    return this.#refs.get(checkpointKey(sessionId, entryId));
  }

  keepRefs(sessionId: string, entryId: string, refs: MessageRef[]): void {
    keepNewest(this.#refs, checkpointKey(sessionId, entryId), refs, KEPT_CHECKPOINTS);
  }

  /**
   * Call ids for a read of the session's context: ids every model API takes, remembered so that a
   * result the graph answers one by is stored under the id of the call the session holds.
   */
  shownCallIds(sessionId: string): AnsweredCallIds {
    const ids = new AnsweredCallIds(PORTABLE_IDS);
    const reads = [...(this.#callIdReads.get(sessionId) ?? []), ids].slice(-KEPT_READS);
    keepNewest(this.#callIdReads, sessionId, reads, KEPT_CHECKPOINTS);
    return ids;
  }

  /** The stored id of the call a graph answers by `wireId`, as the newest read that showed it names it. */
  storedCallId(sessionId: string, wireId: string): string {
    for (const ids of (this.#callIdReads.get(sessionId) ?? []).toReversed()) {
      const stored = ids.storedOf(wireId);
      if (stored !== wireId) return stored;
    }
    return wireId;
  }

  /** The thread read entry by entry, its calls shown as `shownCallIds` remembers them. */
  reader(session: Session): ThreadReader {
    return sessionReader(session, () => this.shownCallIds(session.id));
  }

  /**
   * A message of a messages channel as serialized, with its digest: once per message object, for a
   * graph's state holds the same messages from step to step (so each `put` serializes only the new
   * ones); again if its id changed since (LangGraph gives a message without one an id).
   */
  async listed(message: unknown): Promise<ListedMessage> {
    const object = typeof message === "object" && message !== null ? message : undefined;
    const id = (object as { id?: unknown } | undefined)?.id;
    const known = object && this.#listedMessages.get(object);
    if (known && known.id === id) return known.listed;
    const listed = await listedMessage(await serialize(this.#serde, message));
    if (object) this.#listedMessages.set(object, { id, listed });
    return listed;
  }

  /** Forgets what it knows of a session (deleted). */
  forget(sessionId: string): void {
    const prefix = checkpointKey(sessionId, "");
    for (const key of this.#known.keys()) if (key.startsWith(prefix)) this.#known.delete(key);
    for (const key of this.#refs.keys()) if (key.startsWith(prefix)) this.#refs.delete(key);
    for (const key of this.#headsOver.keys()) if (key.startsWith(prefix)) this.#headsOver.delete(key);
    this.#callIdReads.delete(sessionId);
  }
}
