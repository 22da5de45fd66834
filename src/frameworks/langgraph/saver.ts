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
import {
  BaseCheckpointSaver,
  maxChannelVersion,
  TASKS,
  WRITES_IDX_MAP,
} from "@langchain/langgraph-checkpoint";
import type * as z from "zod";
import type { AppendEntryInput, EntryInput, Session, SessionRepo, StoredEntry } from "../../core";
import { Id, SessionError } from "../../core";
import { canonicalJson } from "../../core/json";
import { isRecord } from "../../core/providers/incoming";
import { AnsweredCallIds, PORTABLE_IDS } from "../../core/providers/tool-call-ids";
import { keyedId } from "../keys";
import { isMissingSession, SessionHandles } from "../session-handles";
import { CheckpointArrivals } from "./checkpoint-arrivals";
import type { CheckpointData, WritesData } from "./entries";
import { CHECKPOINT, CheckpointInput, Configurable, ThreadMetadata, WRITES } from "./entries";
import { headCheckpointId, headEntry, isHeadCheckpointId } from "./head-ids";
import type { ListedMessage, MessageRef } from "./messages";
import { changesBetween, listedMessage, MESSAGES_CHANNEL, planMessages } from "./messages";
import { pendingWrites } from "./pending-writes";
import { deserialize, type Serialized, serialize } from "./serialized";
import { sessionMessages } from "./session-messages";
import type { StoredCheckpoint, ThreadReader } from "./thread-reader";
import {
  checkpointOf,
  isWrites,
  newestCheckpointAfter,
  refsOnPath,
  sessionReader,
  wholeThread,
} from "./thread-reader";

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

/** A thread in one checkpoint namespace, and the session that keeps it. */
interface Thread {
  threadId: string;
  checkpointNs: string;
  sessionId: string;
}

/**
 * What `put` needs of the checkpoint it builds on: its entry, its channel versions and who holds
 * each value.
 */
interface KnownCheckpoint {
  entryId: string;
  versions: ChannelVersions;
  holders: Record<string, string>;
  /**
   * For a session's head: the messages channel as the checkpoints on its path leave it (none on a
   * path without checkpoints), what the next checkpoint's changes start from.
   */
  pathRefs?: MessageRef[];
}

/** Checkpoints remembered to build on without reading them back (the ones last put or read). */
const KEPT_CHECKPOINTS = 256;

/** Reads of a session whose call ids are remembered, so that a graph's results pair with the calls. */
const KEPT_READS = 8;

const MISSING_THREAD =
  'The passed RunnableConfig is missing a required "thread_id" field in its "configurable" property. ' +
  "When using a checkpointer, you must pass a thread_id, e.g. " +
  'graph.invoke(input, { configurable: { thread_id: "my-thread-id" } })';

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

/** The entry id of a checkpoint (its id as it is when it fits the id syntax). */
function checkpointEntryId(checkpointId: string): Promise<string> {
  return keyedId("", [checkpointId]);
}

/** Whether `actual` holds everything of `expected` (objects by key, anything else equal). */
function contains(actual: unknown, expected: unknown): boolean {
  if (!isRecord(expected)) return canonicalJson(actual) === canonicalJson(expected);
  return isRecord(actual) && Object.entries(expected).every(([key, value]) => contains(actual[key], value));
}

/** Who holds each channel's value at a checkpoint: its own entry for the values it stores. */
function holders(
  held: Record<string, string>,
  data: Pick<CheckpointData, "values" | "messages">,
  entryId: string,
) {
  const all = { ...held };
  for (const channel of Object.keys(data.values)) all[channel] = entryId;
  if (data.messages) all[MESSAGES_CHANNEL] = entryId;
  return all;
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
  readonly #known = new Map<string, KnownCheckpoint>();
  /** Messages of messages channels as serialized, by the message object (see `#listed`). */
  readonly #listedMessages = new WeakMap<object, { id: unknown; listed: ListedMessage }>();
  /** The message references of checkpoints that changed the messages channel, by session and entry. */
  readonly #refs = new Map<string, MessageRef[]>();
  readonly #arrivals = new CheckpointArrivals((key) => this.#known.has(key));
  /** The call ids the last reads of each session's context showed a graph, newest last (see `#shownCallIds`). */
  readonly #callIdReads = new Map<string, AnsweredCallIds[]>();

  constructor(options: CfSessionsSaverOptions) {
    super(options.serde);
    this.#handles = new SessionHandles(options.repo);
    this.#threadIdIsSessionId = options.threadIdIsSessionId === true;
    this.#prefix = this.#threadIdIsSessionId ? "" : (options.sessionPrefix ?? "langgraph:");
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

  #remember(sessionId: string, checkpointId: string, known: KnownCheckpoint): void {
    const key = `${sessionId}\n${checkpointId}`;
    this.#known.delete(key);
    this.#known.set(key, known);
    if (this.#known.size > KEPT_CHECKPOINTS) this.#known.delete(this.#known.keys().next().value as string);
  }

  #rememberStored(sessionId: string, { entryId, data }: StoredCheckpoint): KnownCheckpoint {
    const known = {
      entryId,
      versions: data.checkpoint.channel_versions,
      holders: holders(data.held, data, entryId),
    };
    this.#remember(sessionId, data.checkpoint.id, known);
    return known;
  }

  #keepRefs(sessionId: string, entryId: string, refs: MessageRef[]): void {
    const key = `${sessionId}\n${entryId}`;
    this.#refs.delete(key);
    this.#refs.set(key, refs);
    if (this.#refs.size > KEPT_CHECKPOINTS) this.#refs.delete(this.#refs.keys().next().value as string);
  }

  /**
   * Call ids for a read of the session's context: ids every model API takes, remembered so that a
   * result the graph answers one by is stored under the id of the call the session holds.
   */
  #shownCallIds(sessionId: string): AnsweredCallIds {
    const ids = new AnsweredCallIds(PORTABLE_IDS);
    const reads = [...(this.#callIdReads.get(sessionId) ?? []), ids].slice(-KEPT_READS);
    this.#callIdReads.delete(sessionId);
    this.#callIdReads.set(sessionId, reads);
    if (this.#callIdReads.size > KEPT_CHECKPOINTS)
      this.#callIdReads.delete(this.#callIdReads.keys().next().value as string);
    return ids;
  }

  /** The stored id of the call a graph answers by `wireId`, as the newest read that showed it names it. */
  #storedCallId(sessionId: string, wireId: string): string {
    for (const ids of (this.#callIdReads.get(sessionId) ?? []).toReversed()) {
      const stored = ids.storedOf(wireId);
      if (stored !== wireId) return stored;
    }
    return wireId;
  }

  /** The thread read entry by entry, its calls shown as `#shownCallIds` remembers them. */
  #reader(session: Session): ThreadReader {
    return sessionReader(session, () => this.#shownCallIds(session.id));
  }

  /**
   * The messages channel at a checkpoint as references (none: the channel is not set); undefined
   * when it is held as a value (a list the references could not follow, or written before them).
   */
  async #refsAt(session: Session, known: KnownCheckpoint): Promise<MessageRef[] | undefined> {
    const holder = known.holders[MESSAGES_CHANNEL];
    if (holder === undefined) return [];
    const kept = this.#refs.get(`${session.id}\n${holder}`);
    if (kept) return kept;
    const stored = checkpointOf(await session.getEntry(holder));
    if (stored?.data.messages) {
      // Not put here: the changes of the checkpoints on its path, read once.
      const refs = refsOnPath(await session.getBranch(holder));
      if (refs) this.#keepRefs(session.id, holder, refs);
      return refs;
    }
    const value = stored?.data.values[MESSAGES_CHANNEL];
    return value && "json" in value && Array.isArray(value.json) && value.json.length === 0 ? [] : undefined;
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
  async #sessionHead(
    thread: Thread,
    session: Session,
    leaf: string,
  ): Promise<{ tuple: CheckpointTuple; known: KnownCheckpoint } | undefined> {
    const branch = await session.getBranch(leaf);
    if (branch.at(-1)?.id !== leaf) return undefined;
    // The writes of a task run from a head hang under its entry: the head is the last entry no writes.
    const path = branch.slice(0, branch.findLastIndex((entry) => !isWrites(entry)) + 1);
    const head = path.at(-1);
    if (!head) return undefined;
    const at = path.findLastIndex((entry) => checkpointOf(entry) !== undefined);
    const after = new Set(path.slice(at + 1).map((entry) => entry.id));
    const found = sessionMessages(path, this.#shownCallIds(session.id)).filter(({ entry }) =>
      after.has(entry.id),
    );
    if (found.length === 0) return undefined;
    const below = at === -1 ? undefined : await this.#below(thread, session, path[at]);
    if (at !== -1 && !below) return undefined;
    const messages = await Promise.all(found.map(({ value }) => deserialize(this.serde, value)));
    const id = await headCheckpointId(head);
    const refs: MessageRef[] = await Promise.all(
      found.map(async ({ value, entry, editable }, index) => {
        const messageId = String((value as { json: { kwargs: { id: unknown } } }).json.kwargs.id);
        const { print } = await this.#listed(messages[index]);
        return { id: messageId, entry: entry.id, holder: entry.id, print, editable };
      }),
    );
    const version = below
      ? this.getNextVersion(below.known.versions[MESSAGES_CHANNEL] as number | undefined)
      : 1;
    const known: KnownCheckpoint = {
      entryId: head.id,
      versions: { ...below?.known.versions, [MESSAGES_CHANNEL]: version },
      holders: { ...below?.known.holders, [MESSAGES_CHANNEL]: id },
      pathRefs: below?.refs ?? [],
    };
    this.#keepRefs(session.id, id, [...(below?.refs ?? []), ...refs]);
    this.#remember(session.id, id, known);
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
          this.serde,
          await sessionReader(session).writes({ entryId: head.id, seq: head.seq }),
        )),
      ],
    };
    if (below) tuple.parentConfig = below.tuple.config;
    return { tuple, known };
  }

  /**
   * The checkpoint a session's head goes on from, and its messages channel as references;
   * undefined when it holds the channel as one value.
   */
  async #below(
    thread: Thread,
    session: Session,
    entry: StoredEntry | undefined,
  ): Promise<{ tuple: CheckpointTuple; known: KnownCheckpoint; refs: MessageRef[] } | undefined> {
    const stored = checkpointOf(entry);
    if (!stored) return undefined;
    const known = this.#rememberStored(session.id, stored);
    const refs = await this.#refsAt(session, known);
    if (!refs) return undefined;
    return { tuple: await this.#tuple(thread, this.#reader(session), stored), known, refs };
  }

  /** The checkpoint `put` builds on: remembered, or read (once, when another process wrote it). */
  async #parent(session: Session, checkpointId: string): Promise<KnownCheckpoint | undefined> {
    const known = this.#known.get(`${session.id}\n${checkpointId}`);
    if (known) return known;
    if (isHeadCheckpointId(checkpointId)) {
      const head = await headEntry(session, checkpointId);
      const thread = { threadId: "", checkpointNs: "", sessionId: session.id };
      return head && (await this.#sessionHead(thread, session, head.id))?.known;
    }
    const stored = checkpointOf(await session.getEntry(await checkpointEntryId(checkpointId)));
    return stored && this.#rememberStored(session.id, stored);
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
        listed = await Promise.all(value.map((message) => this.#listed(message)));
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
        const parentRefs = listed && (parent ? ((await this.#refsAt(session, parent)) ?? []) : []);
        const plan =
          listed &&
          parentRefs &&
          (await planMessages(listed, parentRefs, checkpoint.id, (wireId) =>
            this.#storedCallId(session.id, wireId),
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
        let above: string | null = parent?.entryId ?? null;
        for (const entry of chain) {
          entry.parentId = above;
          above = entry.id as string;
        }
        await session.appendEntries(chain as AppendEntryInput[]);
        if (plan) this.#keepRefs(thread.sessionId, entryId, plan.refs);
        this.#remember(thread.sessionId, checkpoint.id, {
          entryId,
          versions: { ...checkpoint.channel_versions },
          holders: holders(held, stored, entryId),
        });
      }),
    );
    await this.#arrivals.put(`${thread.sessionId}\n${checkpoint.id}`, written);
    return {
      configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id },
    };
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
      ? (this.#known.get(`${thread.sessionId}\n${checkpointId}`)?.entryId ??
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

  /**
   * A message of a messages channel as serialized, with its digest: once per message object, for a
   * graph's state holds the same messages from step to step (so each `put` serializes only the new
   * ones); again if its id changed since (LangGraph gives a message without one an id).
   */
  async #listed(message: unknown): Promise<ListedMessage> {
    const object = typeof message === "object" && message !== null ? message : undefined;
    const id = (object as { id?: unknown } | undefined)?.id;
    const known = object && this.#listedMessages.get(object);
    if (known && known.id === id) return known.listed;
    const listed = await listedMessage(await serialize(this.serde, message));
    if (object) this.#listedMessages.set(object, { id, listed });
    return listed;
  }

  /** Runs a write that hangs under checkpoint `parentId` once that checkpoint is stored. */
  #afterParent<T>(thread: Thread, parentId: string | undefined, write: () => Promise<T>): Promise<T> {
    const key = parentId === undefined ? undefined : `${thread.sessionId}\n${parentId}`;
    return this.#arrivals.after(key, write);
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const { threadId, checkpointNs = "", checkpointId } = configurable(config);
    if (threadId === undefined) return undefined;
    const thread = await this.#thread(threadId, checkpointNs);
    return this.#read(thread, undefined, async (session) => {
      if (checkpointId !== undefined && isHeadCheckpointId(checkpointId)) {
        const head = await headEntry(session, checkpointId);
        return head && (await this.#sessionHead(thread, session, head.id))?.tuple;
      }
      const latest = checkpointId === undefined ? await this.#latest(session) : undefined;
      const stored =
        checkpointId === undefined
          ? latest?.stored
          : checkpointOf(await session.getEntry(await checkpointEntryId(checkpointId)));
      // A session no checkpoint was put in (written over HTTP, by an import, another framework), or
      // messages another door appended after the last one: the conversation, as the state a graph
      // goes on from.
      if (latest !== undefined && (!stored || latest.appended)) {
        const leaf = await session.getLeafId();
        const head = leaf === null ? undefined : await this.#sessionHead(thread, session, leaf);
        if (head || !stored) return head?.tuple;
      }
      if (!stored || (checkpointId !== undefined && stored.data.checkpoint.id !== checkpointId))
        return undefined;
      this.#rememberStored(session.id, stored);
      return this.#tuple(thread, this.#reader(session), stored);
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
   * head is messages another door added after that checkpoint.
   */
  async #latest(session: Session): Promise<{ stored?: StoredCheckpoint; appended: boolean }> {
    let id = await session.getLeafId();
    let afterWrites = false;
    let appended = false;
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
      if (stored) return { stored, appended };
      afterWrites ||= isWrites(entry);
      appended ||= entry.type === "message" || entry.type === "custom_message";
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
        found.push(await this.#tuple(thread, reader, stored, metadata as CheckpointMetadata));
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
      for (const key of this.#known.keys()) if (key.startsWith(`${id}\n`)) this.#known.delete(key);
      this.#callIdReads.delete(id);
    }
  }

  async #tuple(
    thread: Thread,
    reader: ThreadReader,
    stored: StoredCheckpoint,
    metadata?: CheckpointMetadata,
  ): Promise<CheckpointTuple> {
    const { data } = stored;
    const channelValues: Record<string, unknown> = {};
    for (const [channel, value] of Object.entries(data.values)) {
      channelValues[channel] = await deserialize(this.serde, value);
    }
    const byHolder = new Map<string, string[]>();
    for (const [channel, holder] of Object.entries(data.held)) {
      byHolder.set(holder, [...(byHolder.get(holder) ?? []), channel]);
    }
    // The messages channel as references: the checkpoint changed it, or holds it as one that did.
    let referenced = data.messages !== undefined;
    await Promise.all(
      [...byHolder].map(async ([holder, channels]) => {
        const held = await reader.checkpoint(holder);
        for (const channel of channels) {
          if (channel === MESSAGES_CHANNEL && held?.data.messages) referenced = true;
          const value = held?.data.values[channel];
          if (value !== undefined) channelValues[channel] = await deserialize(this.serde, value);
        }
      }),
    );
    if (referenced) {
      const messages = await reader.messages(stored);
      if (messages)
        channelValues[MESSAGES_CHANNEL] = await Promise.all(messages.map((m) => deserialize(this.serde, m)));
    }
    const checkpoint = { ...data.checkpoint, channel_values: channelValues } as Checkpoint;
    if (checkpoint.v < 4 && data.parent !== undefined)
      await this.#migratePendingSends(reader, checkpoint, data.parent);

    const ids = { thread_id: thread.threadId, checkpoint_ns: thread.checkpointNs };
    const tuple: CheckpointTuple = {
      config: { configurable: { ...ids, checkpoint_id: data.checkpoint.id } },
      checkpoint,
      metadata: metadata ?? ((await deserialize(this.serde, data.metadata)) as CheckpointMetadata),
      pendingWrites: await pendingWrites(this.serde, await reader.writes(stored)),
    };
    if (data.parent !== undefined)
      tuple.parentConfig = { configurable: { ...ids, checkpoint_id: data.parent } };
    return tuple;
  }

  /**
   * Checkpoints of format 3 and before kept the `Send`s of a step as their parent's writes to the
   * tasks channel; LangGraph now reads them from the checkpoint's own values (as its savers do).
   */
  async #migratePendingSends(reader: ThreadReader, checkpoint: Checkpoint, parentId: string): Promise<void> {
    const parent = await reader.checkpoint(await checkpointEntryId(parentId));
    if (!parent) return;
    const writes = await pendingWrites(this.serde, await reader.writes(parent));
    checkpoint.channel_values[TASKS] = writes
      .filter(([, channel]) => channel === TASKS)
      .map(([, , value]) => value);
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] =
      versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }
}
