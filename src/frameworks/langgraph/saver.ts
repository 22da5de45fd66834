import type { RunnableConfig } from "@langchain/core/runnables";
import type {
  ChannelVersions,
  Checkpoint,
  CheckpointListOptions,
  CheckpointMetadata,
  CheckpointTuple,
  PendingWrite,
  SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { BaseCheckpointSaver, WRITES_IDX_MAP } from "@langchain/langgraph-checkpoint";
import type * as z from "zod";
import type { AppendEntryInput, EntryInput, EntryType, Session, SessionRepo, StoredEntry } from "../../core";
import { Id, SessionError } from "../../core";
import { canonicalJson } from "../../core/json";
import { isRecord } from "../../core/providers/incoming";
import { type Rewind, rewindTo } from "../../core/rewind";
import { keyedId } from "../keys";
import { isMissingSession, SessionHandles } from "../session-handles";
import { CheckpointArrivals } from "./checkpoint-arrivals";
import { CheckpointTuples } from "./checkpoint-tuples";
import type { CheckpointData, Thread, WritesData } from "./entries";
import {
  CHECKPOINT,
  CheckpointInput,
  Configurable,
  checkpointEntryId,
  ThreadMetadata,
  WRITES,
} from "./entries";
import { headEntry, isHeadCheckpointId } from "./head-ids";
import type { ListedMessage } from "./messages";
import { changesBetween, MESSAGES_CHANNEL, planMessages } from "./messages";
import type { KnownCheckpoint } from "./saver-memory";
import { checkpointKey, holders, SaverMemory } from "./saver-memory";
import { deserialize, type Serialized, serialize } from "./serialized";
import { SessionHeads } from "./session-heads";
import type { StoredCheckpoint } from "./thread-reader";
import { checkpointOf, isWrites, newestCheckpointAfter, wholeThread } from "./thread-reader";

export interface CfSessionsSaverOptions {
  /** Where threads are kept: a `RemoteRepo` (the service) or any of the library's repos. */
  repo: SessionRepo;
  /**
   * What the ids of this saver's sessions start with (default `langgraph:`): a saver lists and
   * deletes only its own, so several graphs can share a tenant.
   */
  sessionPrefix?: string;
  /**
   * A thread id is the id of its session, any session of the tenant (written over HTTP, by an
   * import, by another framework): the graph goes on from its conversation. A thread in a
   * checkpoint namespace is the session `<thread id>:<namespace, escaped>`. `list` without a
   * thread then reads the tenant's whole listing for the sessions a graph wrote.
   */
  threadIdIsSessionId?: boolean;
  serde?: SerializerProtocol;
}

const MISSING_THREAD =
  'The passed RunnableConfig is missing a required "thread_id" field in its "configurable" property. ' +
  "When using a checkpointer, you must pass a thread_id, e.g. " +
  'graph.invoke(input, { configurable: { thread_id: "my-thread-id" } })';

/** What another door appends that a graph's state holds: its messages go on from a head after them. */
const APPENDED = new Set<EntryType>(["message", "custom_message", "branch_summary"]);

/**
 * What another door appends that is none of a graph's state, which the next checkpoint goes on
 * under (see `#latest`). A context edit is not among them: the graph's state would not honour it
 * while every other door did, so it stays off the thread's path.
 */
const HEAD_OVER = new Set<EntryType>([
  "model_change",
  "thinking_level_change",
  "active_tools_change",
  "compaction",
  "label",
  "session_info",
  "usage",
  "custom",
]);

function invalid(message: string, error?: z.ZodError): SessionError {
  return new SessionError("invalid_request", message, error ? { issues: error.issues } : undefined);
}

/** The thread, namespace and checkpoint a config names. */
function configurable(config: RunnableConfig | undefined) {
  const parsed = Configurable.safeParse(config?.configurable ?? {});
  const message = "invalid configurable: thread_id, checkpoint_ns and checkpoint_id are strings";
  if (!parsed.success) throw invalid(message, parsed.error);
  const { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } = parsed.data;
  return { threadId, checkpointNs, checkpointId };
}

/** Whether `actual` holds everything of `expected` (objects by key, anything else equal). */
function contains(actual: unknown, expected: unknown): boolean {
  if (!isRecord(expected)) return canonicalJson(actual) === canonicalJson(expected);
  return isRecord(actual) && Object.entries(expected).every(([key, value]) => contains(actual[key], value));
}

/**
 * A LangGraph checkpointer over cf-sessions: each thread (in each checkpoint namespace) is a
 * session, each checkpoint a `custom` entry under the checkpoint it was made from, so a run
 * resumed or forked from an older checkpoint (time travel) is a branch of the session's tree; each
 * task's pending writes are a `custom` entry under their checkpoint. `put` and `putWrites` are one
 * append each.
 */
export class CfSessionsSaver extends BaseCheckpointSaver {
  readonly #handles: SessionHandles;
  readonly #prefix: string;
  readonly #threadIdIsSessionId: boolean;
  readonly #memory: SaverMemory;
  readonly #tuples: CheckpointTuples;
  readonly #heads: SessionHeads;
  readonly #arrivals: CheckpointArrivals;

  constructor(options: CfSessionsSaverOptions) {
    super(options.serde);
    this.#handles = new SessionHandles(options.repo);
    this.#threadIdIsSessionId = options.threadIdIsSessionId === true;
    this.#prefix = this.#threadIdIsSessionId ? "" : (options.sessionPrefix ?? "langgraph:");
    const nextVersion = (current: number | undefined) => this.getNextVersion(current);
    this.#memory = new SaverMemory(this.serde);
    this.#tuples = new CheckpointTuples(this.serde, nextVersion);
    this.#heads = new SessionHeads(this.serde, nextVersion, this.#memory, this.#tuples);
    this.#arrivals = new CheckpointArrivals((key) => this.#memory.has(key));
  }

  /**
   * The session id of a thread in a namespace: the prefix, then the thread id and (outside the
   * root namespace) the namespace, escaped (`encodeKey`); a digest when that is too long. With
   * `threadIdIsSessionId`, the thread id itself (then the namespace).
   */
  async sessionIdFor(threadId: string, checkpointNs = ""): Promise<string> {
    if (this.#threadIdIsSessionId) {
      const id = Id.safeParse(threadId);
      if (!id.success)
        throw invalid("thread_id must be a session id: 1-128 of A-Z a-z 0-9 . _ : -", id.error);
      return checkpointNs === "" ? id.data : keyedId(`${id.data}:`, [checkpointNs]);
    }
    return keyedId(this.#prefix, checkpointNs === "" ? [threadId] : [threadId, checkpointNs]);
  }

  async #thread(threadId: string, checkpointNs: string): Promise<Thread> {
    return { threadId, checkpointNs, sessionId: await this.sessionIdFor(threadId, checkpointNs) };
  }

  #write<T>(thread: Thread, write: (session: Session) => Promise<T>): Promise<T> {
    const metadata: ThreadMetadata = { threadId: thread.threadId, checkpointNs: thread.checkpointNs };
    const name = thread.checkpointNs === "" ? thread.threadId : `${thread.threadId} (${thread.checkpointNs})`;
    return this.#handles.write({ id: thread.sessionId, name, metadata: { langgraph: metadata } }, write);
  }

  /** The checkpoint `put` builds on: remembered, or read (once, when another process wrote it). */
  async #parent(session: Session, checkpointId: string): Promise<KnownCheckpoint | undefined> {
    const known = this.#memory.known(session.id, checkpointId);
    if (known) return known;
    if (isHeadCheckpointId(checkpointId)) {
      const head = await headEntry(session, checkpointId);
      const thread = { threadId: "", checkpointNs: "", sessionId: session.id };
      return head && (await this.#heads.at(thread, session, head.id))?.known;
    }
    const stored = checkpointOf(await session.getEntry(await checkpointEntryId(checkpointId)));
    return stored && this.#memory.rememberStored(session.id, stored);
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    if (config.configurable === undefined) throw invalid(`Failed to put checkpoint. ${MISSING_THREAD}`);
    const { threadId, checkpointNs = "", checkpointId: parentId } = configurable(config);
    if (threadId === undefined) throw invalid(`Failed to put checkpoint. ${MISSING_THREAD}`);
    const input = CheckpointInput.safeParse(checkpoint);
    if (!input.success) throw invalid("Failed to put checkpoint: the checkpoint is malformed", input.error);
    const thread = await this.#thread(threadId, checkpointNs);
    const entryId = await checkpointEntryId(checkpoint.id);
    const fromSession = parentId !== undefined && isHeadCheckpointId(parentId);

    // Every value is serialized before anything is written; a messages list message by message.
    const { channel_values: channelValues, ...bare } = checkpoint;
    const values: Record<string, Serialized> = {};
    let listed: ListedMessage[] | undefined;
    // The first checkpoint after a session's head holds the messages itself: that head is no entry.
    const changed = new Set(Object.keys(newVersions));
    if (fromSession) changed.add(MESSAGES_CHANNEL);
    for (const channel of changed) {
      if (!Object.hasOwn(channelValues, channel)) continue;
      const value = channelValues[channel];
      if (channel === MESSAGES_CHANNEL && Array.isArray(value) && value.length > 0) {
        listed = await Promise.all(value.map((message) => this.#memory.listed(message)));
      } else values[channel] = await serialize(this.serde, value);
    }
    const data: CheckpointData = {
      checkpoint: JSON.parse(JSON.stringify(bare)),
      values,
      held: {},
      metadata: await serialize(this.serde, metadata),
      ...(parentId === undefined ? {} : { parent: parentId }),
    };

    // A head is never put: the entry it stands at is stored already.
    const written = this.#afterParent(thread, fromSession ? undefined : parentId, () =>
      this.#write(thread, async (session) => {
        const parent = parentId === undefined ? undefined : await this.#parent(session, parentId);
        // A channel the checkpoint did not change has the value its parent had at the same version.
        const held: Record<string, string> = {};
        for (const [channel, version] of Object.entries(checkpoint.channel_versions)) {
          const holder = parent?.holders[channel];
          const unchanged = !Object.hasOwn(newVersions, channel) && parent?.versions[channel] === version;
          if (unchanged && holder !== undefined) held[channel] = holder;
        }
        // The messages become entries on the checkpoint's path, when references can follow them.
        // A parent holding the channel as a value (a checkpoint of cf-sessions 0.1, or a list of
        // other things) has no message entries: the messages are all written from here.
        const parentRefs = listed && (parent ? ((await this.#heads.refsAt(session, parent)) ?? []) : []);
        const plan =
          listed &&
          parentRefs &&
          (await planMessages(listed, parentRefs, checkpoint.id, (wireId) =>
            this.#memory.storedCallId(session.id, wireId),
          ));
        const stored: CheckpointData = plan
          ? // After a session's head, the changes are from the checkpoints on its path (none: all added).
            {
              ...data,
              held,
              messages: changesBetween(
                fromSession ? (parent?.pathRefs ?? []) : (parentRefs ?? []),
                plan.refs,
              ),
            }
          : {
              ...data,
              held,
              values: listed ? { ...values, [MESSAGES_CHANNEL]: await this.#whole(listed) } : values,
            };
        const chain: EntryInput[] = [
          ...(plan?.entries ?? []),
          { type: "custom", id: entryId, customType: CHECKPOINT, data: stored },
        ];
        const headOver = parentId === undefined ? undefined : this.#memory.takeHeadOver(session.id, parentId);
        // A run going on from its last checkpoint needs no look back: only time travel can go back
        // into what a compaction kept.
        const travels =
          headOver === undefined && parent && !this.#memory.goesOn(session.id, parentId as string);
        const rewind = travels && parent ? await this.#goOnFrom(session, parent) : undefined;
        let above: string | null = headOver ?? rewind?.parentId ?? parent?.entryId ?? null;
        for (const entry of chain) {
          entry.parentId = above;
          above = entry.id as string;
        }
        const { entries } = await session.appendEntries([
          ...(rewind?.entries ?? []),
          ...chain,
        ] as AppendEntryInput[]);
        if (plan) this.#memory.keepRefs(thread.sessionId, entryId, plan.refs);
        this.#memory.put(session.id, checkpoint.id);
        this.#memory.remember(thread.sessionId, checkpoint.id, {
          entryId,
          seq: (entries.at(-1) as StoredEntry).seq,
          versions: { ...checkpoint.channel_versions },
          holders: holders(held, stored, entryId),
        });
      }),
    );
    await this.#arrivals.put(checkpointKey(thread.sessionId, checkpoint.id), written);
    return {
      configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id },
    };
  }

  /**
   * Where a checkpoint put from `parent` goes on: under it, or, when a compaction on the head's
   * branch came after it and kept it (time travel back into what a compaction kept), under a
   * compaction repeating its summary (`rewindTo`), so that every door is still sent the summary.
   */
  async #goOnFrom(session: Session, parent: KnownCheckpoint): Promise<Rewind> {
    // Only a compaction appended after the parent's entry can stand after it on a branch.
    const later = await session.getEntries({ type: "compaction", after: parent.seq, limit: 1 });
    if (later.length === 0) return { parentId: parent.entryId, entries: [] };
    return rewindTo(await session.getBranch(), { entryId: parent.entryId });
  }

  override async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath?: string,
  ): Promise<void> {
    const { threadId, checkpointNs = "", checkpointId } = configurable(config);
    if (threadId === undefined) throw invalid(`Failed to put writes. ${MISSING_THREAD}`);
    if (checkpointId === undefined) {
      throw invalid(
        'Failed to put writes. The passed RunnableConfig is missing a required "checkpoint_id" field in its "configurable" property.',
      );
    }
    if (typeof taskId !== "string" || taskId === "")
      throw invalid("Failed to put writes: taskId must be a string");
    if (!Array.isArray(writes) || !writes.every((w) => Array.isArray(w) && typeof w[0] === "string")) {
      throw invalid("Failed to put writes: writes must be [channel, value] pairs");
    }
    if (writes.length === 0) return;
    const data: WritesData = {
      checkpointId,
      taskId,
      ...(taskPath === undefined ? {} : { taskPath }),
      writes: await Promise.all(
        writes.map(async ([channel, value], idx) => ({
          channel,
          idx: WRITES_IDX_MAP[channel] ?? idx,
          value: await serialize(this.serde, value),
        })),
      ),
    };
    const thread = await this.#thread(threadId, checkpointNs);
    // A head's writes hang under the entry it stands at, stored already (a head is never put):
    // known from the read that gave the head, so they are written as soon as a checkpoint's.
    const head = isHeadCheckpointId(checkpointId);
    const parentId = head
      ? (this.#memory.known(thread.sessionId, checkpointId)?.entryId ??
        (await this.#read(
          thread,
          undefined,
          async (session) => (await headEntry(session, checkpointId))?.id,
        )))
      : await checkpointEntryId(checkpointId);
    if (parentId === undefined) {
      throw new SessionError("parent_not_found", `checkpoint ${checkpointId} is not in the thread`, {
        checkpointId,
      });
    }
    await this.#afterParent(thread, head ? undefined : checkpointId, () =>
      this.#write(thread, (session) =>
        session.appendEntry({ type: "custom", parentId, customType: WRITES, data }),
      ),
    );
  }

  /** A messages list that references cannot follow, as one value (what its messages serialized to). */
  async #whole(listed: ListedMessage[]): Promise<Serialized> {
    const messages = await Promise.all(listed.map(({ value }) => deserialize(this.serde, value)));
    return serialize(this.serde, messages);
  }

  /** Runs a write that hangs under checkpoint `parentId` once that checkpoint is stored. */
  #afterParent<T>(thread: Thread, parentId: string | undefined, write: () => Promise<T>): Promise<T> {
    const key = parentId === undefined ? undefined : checkpointKey(thread.sessionId, parentId);
    return this.#arrivals.after(key, write);
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const { threadId, checkpointNs = "", checkpointId } = configurable(config);
    if (threadId === undefined) return undefined;
    const thread = await this.#thread(threadId, checkpointNs);
    return this.#read(thread, undefined, async (session) => {
      if (checkpointId !== undefined && isHeadCheckpointId(checkpointId)) {
        const head = await headEntry(session, checkpointId);
        return head && (await this.#heads.at(thread, session, head.id))?.tuple;
      }
      const latest = checkpointId === undefined ? await this.#latest(session) : undefined;
      if (latest?.stored)
        this.#memory.readAtHead(session.id, latest.stored.data.checkpoint.id, latest.headOver);
      else if (checkpointId !== undefined) this.#memory.readAtHead(session.id, checkpointId, undefined);
      const stored =
        checkpointId === undefined
          ? latest?.stored
          : checkpointOf(await session.getEntry(await checkpointEntryId(checkpointId)));
      // A session no checkpoint was put in (written over HTTP, by an import, another framework), or
      // messages another door appended after the last one: the conversation, as the state a graph
      // goes on from.
      if (latest !== undefined && (!stored || latest.appended)) {
        const leaf = await session.getLeafId();
        const head = leaf === null ? undefined : await this.#heads.at(thread, session, leaf);
        if (head || !stored) return head?.tuple;
      }
      if (!stored || (checkpointId !== undefined && stored.data.checkpoint.id !== checkpointId))
        return undefined;
      this.#memory.rememberStored(session.id, stored);
      return this.#tuples.of(thread, this.#memory.reader(session), stored);
    });
  }

  /** Reads the thread's session; `none` when there is no such session (or it was deleted meanwhile). */
  async #read<T>(thread: Thread, none: T, read: (session: Session) => Promise<T>): Promise<T> {
    const session = await this.#handles.find(thread.sessionId);
    if (!session) return none;
    try {
      return await read(session);
    } catch (error) {
      if (!isMissingSession(error)) throw error;
      this.#handles.forget(thread.sessionId);
      return none;
    }
  }

  /**
   * The checkpoint at the session's head: the last one put, or, when the head was moved (in the
   * viewer, say), the checkpoint it was moved to, so the graph resumes from there. `appended`: the
   * head is messages another door added after that checkpoint. `headOver`: the head, when what
   * stands after the checkpoint is none of a graph's state (a model change, a compaction): the
   * next checkpoint goes on under it.
   */
  async #latest(
    session: Session,
  ): Promise<{ stored?: StoredCheckpoint; appended: boolean; headOver?: string }> {
    const leaf = await session.getLeafId();
    let id = leaf;
    let afterWrites = false;
    let appended = false;
    let stateless = true;
    while (id !== null) {
      const entry = await session.getEntry(id);
      if (!entry) return { appended: false };
      const stored = checkpointOf(entry);
      // A task's writes may be stored after the next checkpoint (LangGraph puts them apart), and
      // then stand at the head: the latest checkpoint is the newest put after theirs. Messages
      // appended under writes (a graph waiting at an interrupt) follow their checkpoint when it is
      // the latest.
      if (stored && afterWrites) {
        const newer = await newestCheckpointAfter(session, stored);
        return newer ? { stored: newer, appended: false } : { stored, appended };
      }
      if (stored)
        return { stored, appended, headOver: stateless && id !== leaf ? (leaf ?? undefined) : undefined };
      afterWrites ||= isWrites(entry);
      appended ||= APPENDED.has(entry.type);
      stateless &&= !afterWrites && HEAD_OVER.has(entry.type);
      id = entry.parentId;
    }
    return { appended: false };
  }

  override async *list(
    config: RunnableConfig,
    options: CheckpointListOptions = {},
  ): AsyncGenerator<CheckpointTuple> {
    const { threadId, checkpointNs, checkpointId } = configurable(config);
    const { limit, before, filter } = options;
    const beforeId = configurable(before).checkpointId;
    if (limit !== undefined && !Number.isInteger(limit)) throw invalid("list: limit must be an integer");

    const threads: Thread[] = [];
    if (threadId !== undefined && checkpointNs !== undefined) {
      threads.push(await this.#thread(threadId, checkpointNs));
    } else {
      // A thread's root namespace is its session whatever that session's metadata says (a
      // session a graph started on, with `threadIdIsSessionId`, keeps its own).
      if (threadId !== undefined && (checkpointNs === undefined || checkpointNs === "")) {
        threads.push(await this.#thread(threadId, ""));
      }
      for await (const info of this.#handles.scan(this.#prefix)) {
        const thread = ThreadMetadata.safeParse(info.metadata.langgraph);
        if (!thread.success || threads.some((known) => known.sessionId === info.id)) continue;
        if (threadId !== undefined && thread.data.threadId !== threadId) continue;
        if (checkpointNs !== undefined && thread.data.checkpointNs !== checkpointNs) continue;
        threads.push({ ...thread.data, sessionId: info.id });
      }
    }

    const found: CheckpointTuple[] = [];
    for (const thread of threads) {
      const whole = await this.#read(thread, undefined, wholeThread);
      if (!whole) continue;
      const { checkpoints, reader } = whole;
      for (const stored of checkpoints) {
        const id = stored.data.checkpoint.id;
        if (checkpointId !== undefined && id !== checkpointId) continue;
        if (beforeId !== undefined && !(id < beforeId)) continue;
        const metadata = await deserialize(this.serde, stored.data.metadata);
        if (filter && !contains(metadata, filter)) continue;
        found.push(await this.#tuples.of(thread, reader, stored, metadata as CheckpointMetadata));
      }
    }
    // Newest first, as LangGraph's own savers list (checkpoint ids sort by time).
    found.sort((a, b) =>
      a.checkpoint.id < b.checkpoint.id ? 1 : a.checkpoint.id > b.checkpoint.id ? -1 : 0,
    );
    yield* limit === undefined ? found : found.slice(0, Math.max(0, limit));
  }

  override async deleteThread(threadId: string): Promise<void> {
    if (typeof threadId !== "string" || threadId === "")
      throw invalid("deleteThread: the thread id must be a string");
    const ids = new Set([(await this.#thread(threadId, "")).sessionId]);
    for await (const info of this.#handles.scan(this.#prefix)) {
      if (ThreadMetadata.safeParse(info.metadata.langgraph).data?.threadId === threadId) ids.add(info.id);
    }
    for (const id of ids) {
      await this.#handles.delete(id);
      this.#memory.forget(id);
    }
  }
}
