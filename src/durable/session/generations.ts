import type { StoredEntry } from "../../core/entries";
import type { Result } from "../../core/errors";
import { capture, SessionError, unwrap } from "../../core/errors";
import { checkChunk, generationStreamPath } from "../../core/generations/chunks";
import type {
  GenerationInfo,
  GenerationPage,
  GenerationState,
  ListGenerationsQuery,
  OpenGenerationBody,
} from "../../core/generations/generation-schemas";
import {
  DEFAULT_ABANDON_SECONDS,
  DEFAULT_RETAIN_SECONDS,
  GENERATION_FORMATS,
  generationContentType,
  MAX_GENERATION_BYTES,
} from "../../core/generations/generation-schemas";
import { newId } from "../../core/ids";
import { cursorValues, encodeCursor } from "../../core/info";
import { tryParseJson } from "../../core/json";
import { MAX_BATCH_ENTRIES } from "../../core/limits";
import type { AppendEntryInput } from "../../core/providers/entry-input";
import { errorSummary, logLine } from "../log-line";
import { numberSetting } from "../settings";
import { errorAnswer } from "../stream/answers";
import type { AppendHook } from "../stream/append-hook";
import { readBody } from "../stream/body";
import type { Position } from "../stream/offsets";
import { formatOffset } from "../stream/offsets";
import { isDuplicate } from "../stream/producers";
import { HEADER, MAX_APPEND_BYTES, mediaType, readAppendRequest } from "../stream/protocol";
import type { StreamState } from "../stream/store";
import { transaction } from "../transaction";
import { transientError } from "../transient";
import type {
  AnswerWriting,
  GenerationEnd,
  GenerationPlace,
  GenerationRow,
  Shortfall,
} from "./generation-rows";
import {
  answerEntries,
  GenerationParts,
  generationStreamKey,
  shortAnswerEntryBytes,
} from "./generation-rows";
import type { SessionObjectState } from "./object-state";
import type { SessionCalls } from "./session-calls";
import type { SessionStore } from "./session-store";
import type { ByteLimit, PreparedBlobs } from "./session-writes";

/*
 * A session's generations: answers being written, each a Durable Streams stream hosted in the
 * session's own object (`generation/<id>` in its stream store), so that the answer's entry and the
 * stream's close are one transaction: the entry exists exactly when the stream says it is closed.
 * Writers append chunks through the protocol; complete and stop turn what was written (or the
 * message given) into entries under the generation's parent; the alarm stops a generation left
 * without appends and removes a finished one's stream after its retention window. Here: their
 * lifecycle (open, end, the alarm), what they say of themselves, and their streams' requests; their
 * rows and answers are in generation-rows.ts.
 */

/** Where a listing's cursor goes on from; `invalid_request` for a cursor of another listing or state. */
function listingPlace(cursor: string, state: GenerationState | undefined): GenerationPlace {
  const [openedAt, id, given, ...rest] = cursorValues(cursor);
  const opened = Number(openedAt);
  if (
    rest.length > 0 ||
    !Number.isSafeInteger(opened) ||
    typeof id !== "string" ||
    given !== (state ?? null)
  ) {
    throw new SessionError(
      "invalid_request",
      "the cursor is not of this listing (a cursor goes on only with the state it came with)",
      { cursor },
    );
  }
  return { openedAt: opened, id };
}

/** What complete and stop answer: the generation as it ended and the entries it became. */
export interface GenerationOutcome {
  generation: GenerationInfo;
  entries: StoredEntry[];
  /** False for a repeat of the request that ended it (nothing new was written). */
  created: boolean;
}

/**
 * A generation's answer made before the write that ends it, its blobs prepared as an append's are
 * (session-blobs.ts): what it is made of is the stream up to `tail`.
 */
interface PreparedAnswer {
  inputs: AppendEntryInput[];
  blobs: PreparedBlobs | undefined;
  tail: Position;
}

/** The header that hands the session's object a request for a generation's stream (its id, URI-encoded). */
export const GENERATION_ID_HEADER = "x-generation-id";

/**
 * Failures after which an ending does not write the answer another way (`end`): a passing one of
 * storage or of the service's settings (the ending fails, and is tried again), no such session or
 * generation, or one ended meanwhile. Any other refusal of the answer as it is would meet it again
 * the same way.
 */
const NOT_THE_ANSWERS: ReadonlySet<string> = new Set([
  "unavailable",
  "misconfigured",
  "not_found",
  "stream_closed",
]);

/**
 * How soon, at most, the alarm looks again after a generation it could not stop (a failure is
 * logged); sooner for one abandoned sooner, within its own abandon window.
 */
const RETRY_MS = 30_000;

const iso = (ms: number) => new Date(ms).toISOString();

export class Generations {
  readonly #object: SessionObjectState;
  /** The object's calls: whether the session is there for its routes, and writes within its room. */
  readonly #calls: SessionCalls;
  /** A generation opened, finished or stopped (for the session's watchers). */
  readonly #changed: (info: GenerationInfo) => void;
  /**
   * The tables and streams of the session's current life: a session deleted and made again (a
   * new incarnation) starts with none, so they are opened again.
   */
  #open: { incarnation: string; parts: GenerationParts } | undefined;
  /** Generations whose stop failed (a failure of storage), and when the alarm tries again. */
  readonly #retries = new Map<string, number>();

  constructor(object: SessionObjectState, calls: SessionCalls, changed: (info: GenerationInfo) => void) {
    this.#object = object;
    this.#calls = calls;
    this.#changed = changed;
  }

  /** Seconds without an append before the alarm stops a generation, and its stream's retention. */
  get #defaults(): { abandonSeconds: number; retainSeconds: number } {
    const { env } = this.#object;
    return {
      abandonSeconds: numberSetting(env.GENERATION_ABANDON_SECONDS, DEFAULT_ABANDON_SECONDS),
      retainSeconds: numberSetting(env.GENERATION_RETAIN_SECONDS, DEFAULT_RETAIN_SECONDS),
    };
  }

  get #parts(): GenerationParts {
    const { session, storage } = this.#object;
    const { incarnation } = session.state;
    if (this.#open?.incarnation === incarnation) return this.#open.parts;
    // Its streams are there while this life of the session is listed.
    const present = () => this.#calls.listed && session.state.incarnation === incarnation;
    this.#open = { incarnation, parts: new GenerationParts(storage, present) };
    return this.#open.parts;
  }

  /**
   * The session was deleted (or purged): the readers following its generations' streams end, as
   * a deleted stream's do, and its tables are opened again should it come back.
   */
  gone(): void {
    const open = this.#open;
    this.#open = undefined;
    open?.parts.streams.wakeAll();
  }

  #info(row: GenerationRow, stream = this.#parts.stream(row.id)): GenerationInfo {
    const lastAppend = stream?.renewedAt ?? row.openedAt;
    const info: GenerationInfo = {
      id: row.id,
      parentId: row.parentId,
      format: row.format,
      state: row.state,
      stream: generationStreamPath(this.#object.session.state.header.id, row.id),
      offset: formatOffset(stream?.tail ?? { records: 0, bytes: 0 }),
      openedAt: iso(row.openedAt),
      lastAppendAt: iso(lastAppend),
      abandonAfterSeconds: row.abandonMs / 1000,
      retainSeconds: row.retainMs / 1000,
    };
    if (row.finishedAt !== null) info.finishedAt = iso(row.finishedAt);
    if (row.stoppedBy !== null) info.stoppedBy = row.stoppedBy;
    if (row.state !== "open") info.entryIds = row.entryIds;
    if (row.model) info.model = row.model;
    if (row.api !== undefined) info.api = row.api;
    return info;
  }

  get(id: string): GenerationInfo {
    return this.#info(this.#parts.row(id));
  }

  /**
   * A page of the generations still kept (open ones, and ended ones within their retention window),
   * oldest first; with `state`, only those in it.
   */
  list(query: ListGenerationsQuery): GenerationPage {
    if (!this.#object.session.exists) throw new SessionError("not_found", "session does not exist");
    const { state, limit = 50, cursor } = query;
    const after = cursor === undefined ? undefined : listingPlace(cursor, state);
    const rows = this.#parts.rows.page({ state, after, limit: limit + 1 });
    const generations = rows.slice(0, limit).map((row) => this.#info(row));
    const last = rows.length > limit ? rows[limit - 1] : undefined;
    return {
      generations,
      nextCursor: last ? encodeCursor(String(last.openedAt), last.id, state ?? null) : null,
    };
  }

  /** Open generations: what a watcher that joins is told of. */
  openOnes(): GenerationInfo[] {
    if (!this.#object.session.exists) return [];
    return this.#parts.rows.open().map((row) => this.#info(row));
  }

  /** The id of the generation open longest, if one is open. */
  oldestOpenId(): string | undefined {
    return this.#object.session.exists ? this.#parts.rows.open()[0]?.id : undefined;
  }

  /** Whether a generation is open: its answer is still to be written under the parent it opened on. */
  anyOpen(): boolean {
    return this.#object.session.exists && this.#parts.rows.open().length > 0;
  }

  /** Opens a generation under `parentId` (default: the leaf), with its stream. */
  open(input: OpenGenerationBody): GenerationInfo {
    const { session, storage } = this.#object;
    const defaults = this.#defaults;
    const format = input.format ?? "text";
    if (!GENERATION_FORMATS.includes(format)) {
      throw new SessionError("unsupported_format", `unknown chunk format "${format}"`, {
        formats: [...GENERATION_FORMATS],
      });
    }
    const parentId = input.parentId === undefined ? session.state.leafId : input.parentId;
    let model = input.model === undefined ? undefined : splitModel(input.model);
    if (parentId !== null) {
      const parent = session.reads.getEntry(parentId);
      if (!parent || parent.type === "leaf") {
        throw new SessionError("parent_not_found", `parent ${parentId} does not exist`, { parentId });
      }
      model ??= session.contexts.modelAt(parentId) ?? undefined;
    }
    const { rows, streams } = this.#parts;
    const open = rows.open().length;
    this.#object.quotas.checkOpenGenerations(session.state.tenant, open);
    const now = Date.now();
    const row: GenerationRow = {
      id: newId(),
      parentId,
      format,
      model,
      api: input.api,
      state: "open",
      openedAt: now,
      abandonMs: (input.abandonAfterSeconds ?? defaults.abandonSeconds) * 1000,
      retainMs: (input.retainSeconds ?? defaults.retainSeconds) * 1000,
      finishedAt: null,
      stoppedBy: null,
      entryIds: [],
      counted: true,
      heldBytes: 0,
      openedHead: session.state.leafId,
    };
    const stream = transaction(storage, [rows, streams.store], () => {
      rows.insert(row);
      return streams.store.create(
        generationStreamKey(row.id),
        {
          contentType: generationContentType(format),
          expiry: { ttlSeconds: null, expiresAt: null },
          closed: false,
          fork: null,
          now,
        },
        [],
      );
    });
    const info = this.#info(row, stream);
    this.#changed(info);
    return info;
  }

  /**
   * An append of chunks to generation `row`: its bytes counted in the session's, within its room,
   * in the append's transaction (a session that needs more of the tenant's room asks for it, and
   * the append runs again).
   */
  async #stored(row: GenerationRow, append: (hook: AppendHook | undefined) => Promise<Response>) {
    const { session } = this.#object;
    const calls = this.#calls;
    if (!row.counted) return append(undefined);
    return unwrap(
      await calls.limitedStore((room) =>
        append({ appended: (bytes) => session.writes.holdGenerationBytes(bytes, room), held: [session] }),
      ),
    );
  }

  /**
   * A Durable Streams request for a generation's stream: reads (GET, HEAD) as for any stream;
   * appends (POST) while it is open, within MAX_GENERATION_BYTES (its chunks, and the answer they
   * make as it will be stored), each chunk checked for its format. It is closed by complete or stop
   * only, and removed by the alarm. A refusal is the protocol's error answer.
   */
  async handle(id: string, request: Request, requestId: string | null): Promise<Response> {
    try {
      this.#calls.checkListed();
      const parts = this.#parts;
      const row = parts.row(id);
      if (request.method === "GET" || request.method === "HEAD") {
        return await parts.streams.handle(request, generationStreamKey(id), requestId);
      }
      if (request.method !== "POST") {
        throw new SessionError(
          "invalid_request",
          "a generation's stream is made by POST …/generations and removed after its retention window",
          { method: request.method },
        );
      }
      return await this.#append(row, request, requestId);
    } catch (error) {
      if (!(error instanceof SessionError)) throw error;
      const failed = errorAnswer(error, requestId);
      return request.method === "HEAD" ? new Response(null, failed) : failed;
    }
  }

  async #append(row: GenerationRow, request: Request, requestId: string | null): Promise<Response> {
    if (request.headers.get(HEADER.closed)?.toLowerCase() === "true") {
      throw new SessionError(
        "invalid_request",
        "a generation's stream is closed by POST …/complete or …/stop, which write its answer",
      );
    }
    const parts = this.#parts;
    parts.checkOpen(row);
    const body = await readBody(request, MAX_APPEND_BYTES);
    // The body was read: what came meanwhile counts (a stop, another append).
    const current = parts.row(row.id);
    parts.checkOpen(current);
    const stream = parts.stream(row.id) as StreamState;
    // A producer's retry of a chunk already written writes nothing: the limits are not its to pass.
    const named = readAppendRequest(request.headers).producer;
    const duplicate = named !== null && isDuplicate(parts.streams.store.producer(stream, named.id), named);
    if (!duplicate && stream.tail.bytes + body.byteLength > MAX_GENERATION_BYTES) {
      throw new SessionError(
        "payload_too_large",
        `a generation's stream holds at most ${MAX_GENERATION_BYTES} bytes; complete it, or open another`,
        { limit: MAX_GENERATION_BYTES, holds: stream.tail.bytes },
      );
    }
    // Chunks of the stream's own type are checked here; any other type is the protocol's to refuse.
    if (!duplicate && mediaType(request.headers.get("Content-Type")) === mediaType(stream.contentType)) {
      const chunks = checkedChunks(current, body);
      // Counted before it is written, so that appends at the same time count each other.
      const size = parts.answerSize(current);
      const holds = size.bytes;
      let adds = 0;
      for (const chunk of chunks) adds += size.add(chunk);
      if (holds + adds > MAX_GENERATION_BYTES) {
        parts.recountAnswer(row.id);
        throw new SessionError(
          "payload_too_large",
          `a generation's answer takes at most ${MAX_GENERATION_BYTES} bytes stored (its text with its escapes); complete it, or open another`,
          { limit: MAX_GENERATION_BYTES, answerBytes: holds, adds },
        );
      }
    }
    // A refused append, or a producer's duplicate (200 is a producer's new data), added nothing.
    const producer = request.headers.has(HEADER.producerId);
    try {
      // A new request each time it runs: one that needed more room runs again.
      const answer = await this.#stored(current, (hook) => {
        const forwarded = new Request(request.url, { method: "POST", headers: request.headers, body });
        return parts.streams.handle(forwarded, generationStreamKey(row.id), requestId, hook);
      });
      if (!answer.ok || (producer && answer.status !== 200)) parts.recountAnswer(row.id);
      return answer;
    } catch (error) {
      parts.recountAnswer(row.id);
      throw error;
    }
  }

  /**
   * Ends a generation: its answer (the message given, or what its chunks make) appended under its
   * parent, and its stream closed, in one transaction. Repeating the request that ended it answers
   * the same outcome; completing a stopped one, or stopping a completed one, is `stream_closed`.
   *
   * The answer is stored as an append through the entries door would store it: its large values as
   * blobs, a reference to a blob the tenant holds as that blob's value, and one to a blob it does
   * not (or a malformed one) refused, `invalid_request`.
   *
   * An ending always succeeds but for a passing failure of storage, and a complete whose given
   * message cannot be stored (the client's to change): an answer refused as it is (too large, past
   * the session's or the tenant's quota, an id another entry took, a reference the tenant cannot
   * read, or chunks it cannot be made of) is written under ids of its own, or cut short
   * (short-answer.ts) to what the session's room takes once its chunks give their bytes back; and
   * when even that is refused (the session's storage full, or no room at all), with nothing of its
   * text, whatever the quota.
   */
  async end(id: string, how: GenerationEnd): Promise<GenerationOutcome> {
    const given = how.kind === "complete" && how.message !== undefined;
    const refused = (result: Result<GenerationOutcome>) =>
      !result.ok && !given && !NOT_THE_ANSWERS.has(result.error.code) ? result.error : undefined;
    let ended = await this.#ending(id, how, true);
    const first = refused(ended);
    if (first && first.code !== "session_full") {
      // Its own ids, for an answer whose id another entry took; else its text alone, cut to fit
      // (past a quota, to the room the quotas leave).
      const why: Shortfall = { keeps: "text", code: first.code, message: first.message };
      const writing: Result<AnswerWriting> =
        first.code === "already_exists"
          ? { ok: true, value: { ids: "own" } }
          : first.code === "quota_exceeded"
            ? await this.#answerRoom(id, how, why)
            : { ok: true, value: { ids: "own", shortfall: why } };
      ended = writing.ok ? await this.#ending(id, how, true, writing.value) : writing;
    }
    const last = refused(ended);
    if (last) {
      // A few hundred bytes, past the quota if need be: no generation is left unable to end.
      const writing: AnswerWriting = {
        ids: "own",
        shortfall: { keeps: "nothing", code: last.code, message: last.message },
      };
      ended = await this.#ending(id, how, false, writing);
    }
    const outcome = unwrap(ended);
    if (outcome.created) {
      this.#retries.delete(id);
      this.#parts.recountAnswer(id);
      this.#parts.streams.written(generationStreamKey(id));
      this.#changed(outcome.generation);
    }
    // A repeat answers the entries as stored: with their blobs' values.
    return { ...outcome, entries: await this.#object.blobs.fill(outcome.entries) };
  }

  /**
   * One way of ending generation `id` (see `end`): its answer made, then written within the
   * session's room (`limited`) or past it. Chunks appended while its blobs were prepared make it
   * again; a stream takes at most MAX_GENERATION_BYTES, so this ends. The blobs of an answer not
   * written are given back (see `SessionBlobs.ended`): those of one made again once the next is
   * prepared, so that the blobs both hold stay claimed.
   */
  async #ending(
    id: string,
    how: GenerationEnd,
    limited: boolean,
    writing?: AnswerWriting,
  ): Promise<Result<GenerationOutcome>> {
    const { blobs } = this.#object;
    let unwritten: PreparedAnswer | undefined;
    for (;;) {
      const made = await capture(() => this.#answer(id, how, writing));
      await blobs.ended(unwritten?.blobs, false);
      if (!made.ok) return made;
      const answer = made.value;
      const ended = limited
        ? await this.#calls.limitedWrite((session, room) => this.#end(session, id, how, room, answer))
        : await this.#calls.write((session) => this.#end(session, id, how, undefined, answer));
      const created = ended.ok && ended.value?.created === true;
      if (created || !ended.ok || ended.value) await blobs.ended(answer?.blobs, created);
      if (!ended.ok) return ended;
      if (ended.value) return { ok: true, value: ended.value };
      unwritten = answer;
    }
  }

  /**
   * How generation `id`'s answer (ending as `how`) is written cut short past a quota (`why`): within
   * the most room the session can have for it once its chunks give back the bytes they hold, which
   * is no more than its entry takes keeping all the text it can.
   */
  async #answerRoom(id: string, how: GenerationEnd, why: Shortfall): Promise<Result<AnswerWriting>> {
    const { session, quotas } = this.#object;
    const short: AnswerWriting = { ids: "own", shortfall: why };
    /** What the session holds besides the chunks of generation `id`, while it is open. */
    const holdsBesides = () => {
      const row = this.#parts.row(id);
      const stream = this.#parts.stream(id);
      if (row.state !== "open" || !stream) return undefined;
      return { row, stream, holds: session.state.stats.bytes - (row.counted ? stream.tail.bytes : 0) };
    };
    const needs = await capture(() => {
      const open = holdsBesides();
      if (!open) return undefined;
      const { row, stream, holds } = open;
      return holds + shortAnswerEntryBytes(this.#parts.streams.store, row, stream, how, Date.now(), why);
    });
    if (!needs.ok) return needs;
    if (needs.value === undefined) return { ok: true, value: short };
    const room = await quotas.mostRoom(session, needs.value);
    if (!room.ok) return room;
    return capture(() => {
      const open = holdsBesides();
      if (!room.value || !open) return short;
      return { ids: "own", shortfall: { ...why, entryBytes: room.value.maxBytes - open.holds } };
    });
  }

  /**
   * The answer ending generation `id` would write, its blobs prepared (uploaded before the write,
   * as an append's); none for a generation that ended already.
   */
  async #answer(
    id: string,
    how: GenerationEnd,
    writing?: AnswerWriting,
  ): Promise<PreparedAnswer | undefined> {
    this.#calls.checkListed();
    const row = this.#parts.row(id);
    if (row.state !== "open") return undefined;
    const stream = this.#parts.stream(id) as StreamState;
    const inputs = made(() =>
      answerEntries(this.#parts.streams.store, row, stream, how, Date.now(), writing),
    );
    const { blobs } = this.#object;
    // The answer's entries are messages as they are stored (none a provider's to convert): the
    // values its blob slots hold are its inputs' own.
    // Its room is the write's to check (an answer past it may end cut short instead).
    const prepared = await blobs.prepare(inputs, blobs.policy, (planned) => planned as StoredEntry[]);
    return { inputs, blobs: prepared, tail: stream.tail };
  }

  /** Writes the answer made for generation `id`; undefined when chunks came after it was made. */
  #end(
    session: SessionStore,
    id: string,
    how: GenerationEnd,
    room: ByteLimit | undefined,
    answer: PreparedAnswer | undefined,
  ): GenerationOutcome | undefined {
    const row = this.#parts.row(id);
    const state = how.kind === "complete" ? "finished" : "stopped";
    if (row.state !== "open") {
      if (row.state !== state)
        this.#parts.checkOpen(row, how.kind === "complete" ? "no complete" : "no stop");
      const entries = row.entryIds
        .map((entryId) => session.reads.getEntry(entryId))
        .filter((e) => e !== undefined);
      return { generation: this.#info(row), entries, created: false };
    }
    const { rows, streams } = this.#parts;
    const stream = this.#parts.stream(id) as StreamState;
    const { tail } = stream;
    if (!answer || answer.tail.records !== tail.records || answer.tail.bytes !== tail.bytes) return undefined;
    const { blobs } = answer;
    // References read back into values: what the write plans with.
    const inputs = blobs?.inputs ?? answer.inputs;
    const now = Date.now();
    const ids = answer.inputs.map((input) => input.id as string);
    const chunks = row.counted ? stream.tail.bytes : 0;
    // The answer goes on from the head only while the head is where the generation left it (its
    // parent, or where it stood when it opened); once the conversation went on, it is a branch.
    const { leafId } = session.state;
    const keepLeaf = leafId !== row.parentId && leafId !== row.openedHead;
    const entries = transaction(this.#object.storage, [session, streams.store, rows], () => {
      streams.store.append(stream, { records: [], close: true, producer: null, streamSeq: null, now });
      // The chunks become the answer: it takes the room they held, and they hold what they exceed it by.
      session.writes.holdGenerationBytes(-chunks, room);
      const before = session.state.stats.bytes;
      // Should the entries be refused, nothing of this transaction stays. A long answer (an agent's
      // many steps) takes as many batches as it needs.
      const written: StoredEntry[] = [];
      for (let from = 0; from < inputs.length; from += MAX_BATCH_ENTRIES) {
        const batch = inputs.slice(from, from + MAX_BATCH_ENTRIES);
        written.push(
          ...session.writes.appendEntries(batch, { keepLeaf }, room, blobs && { ...blobs, inputs: batch })
            .entries,
        );
      }
      const held = Math.max(0, chunks - (session.state.stats.bytes - before));
      session.writes.holdGenerationBytes(held, undefined);
      rows.end(id, state, now, how.kind === "stop" ? how.by : null, ids, held);
      return written;
    });
    return { generation: this.#info(this.#parts.row(id)), entries, created: true };
  }

  /**
   * The alarm's work: generations without an append for their abandon time are stopped (as a
   * client's stop would), ended ones past their retention window lose their stream and row.
   */
  async alarm(): Promise<void> {
    if (!this.#object.session.exists) return;
    const now = Date.now();
    // Read first: one stopped below is removed by a later alarm, as its retention window says.
    const pastRetention = this.#parts.rows.pastRetention(now);
    for (const row of this.#parts.rows.open()) {
      const last = this.#parts.stream(row.id)?.renewedAt ?? row.openedAt;
      if (last + row.abandonMs > now) {
        // Its writer went on: a stop that failed before is no longer owed.
        this.#retries.delete(row.id);
        continue;
      }
      try {
        await this.end(row.id, { kind: "stop", by: "abandoned" });
        this.#retries.delete(row.id);
      } catch (error) {
        // Tried again by a later alarm; the chunks stay meanwhile.
        this.#retries.set(row.id, now + Math.min(RETRY_MS, row.abandonMs));
        logLine(
          { type: "background", task: "stop_abandoned_generation", error: errorSummary(error) },
          "error",
        );
      }
    }
    for (const row of pastRetention) {
      // A write: the directory hears of the bytes its stream no longer holds.
      unwrap(await this.#calls.write(() => this.#remove(row)));
    }
  }

  /**
   * When an open generation is to be stopped: its abandon time, or the retry of a stop that failed
   * (later, should its writer have gone on meanwhile).
   */
  #stopDue(row: GenerationRow): number {
    const abandoned = (this.#parts.stream(row.id)?.renewedAt ?? row.openedAt) + row.abandonMs;
    return Math.max(this.#retries.get(row.id) ?? abandoned, abandoned);
  }

  #remove(row: GenerationRow): void {
    const { id } = row;
    const { rows, streams } = this.#parts;
    const { session, storage } = this.#object;
    const stream = this.#parts.stream(id);
    transaction(storage, [session, streams.store, rows], () => {
      if (stream) streams.store.remove(stream);
      rows.remove(id);
      // Its stream no longer counts.
      if (row.counted) session.writes.holdGenerationBytes(-row.heldBytes, undefined);
    });
    // Readers still following it end.
    if (stream) streams.written(generationStreamKey(id));
  }

  /** When the alarm must next come for the generations, if ever (a deleted session's wait for its restore). */
  nextDue(): number | undefined {
    if (!this.#calls.listed) return undefined;
    let next = this.#parts.rows.retentionDue();
    for (const row of this.#parts.rows.open()) {
      const due = this.#stopDue(row);
      next = next === undefined ? due : Math.min(next, due);
    }
    return next;
  }
}

function splitModel(ref: string): { provider: string; modelId: string } {
  const slash = ref.indexOf("/");
  return { provider: ref.slice(0, slash), modelId: ref.slice(slash + 1) };
}

/**
 * An answer made from what a generation holds: a failure that is not a refusal (nor a passing one
 * of storage) would meet it again each time, so it is refused, and the ending keeps less of it.
 */
function made<T>(make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof SessionError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw transientError(error) ?? new SessionError("internal", `the answer could not be made: ${reason}`);
  }
}

const strictText = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The chunks of an append: its text (text), or its events (pi-ai, ai-sdk-ui), each checked. */
function checkedChunks(row: GenerationRow, body: Uint8Array): unknown[] {
  if (body.byteLength === 0) return [];
  let text: string;
  try {
    text = strictText.decode(body);
  } catch {
    throw new SessionError("invalid_request", "a chunk must be UTF-8 text");
  }
  if (row.format === "text") return [text];
  const value = tryParseJson(text);
  if (value === undefined) throw new SessionError("invalid_request", "the body is not valid JSON");
  const events = Array.isArray(value) ? value : [value];
  for (const [index, event] of events.entries()) checkChunk(row.format, event, index);
  return events;
}
