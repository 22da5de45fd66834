import type {
  AgentMessage,
  AnswerSource,
  AppendEntryInput,
  GenerationInfo,
  OpenGenerationBody,
  Result,
  StoppedBy,
  StoredEntry,
} from "../../core/internal";
import {
  answerFold,
  checkChunk,
  GENERATION_FORMATS,
  generationContentType,
  generationStreamPath,
  givenAnswer,
  MAX_GENERATION_BYTES,
  newId,
  SessionError,
  unwrap,
} from "../../core/internal";
import { errorSummary, logLine } from "../log-line";
import { sqlOf } from "../sql";
import { errorAnswer } from "../stream/answers";
import { readBody } from "../stream/body";
import { formatOffset } from "../stream/offsets";
import { HEADER, MAX_APPEND_BYTES, mediaType, READ_PAGE_BYTES } from "../stream/protocol";
import type { StreamSources } from "../stream/sources";
import type { StreamState } from "../stream/store";
import { StreamStore } from "../stream/store";
import { DurableStreams } from "../stream/streams";
import type { GenerationRow } from "./generation-rows";
import { GenerationRows } from "./generation-rows";
import type { ByteLimit } from "./room";
import type { SessionStore } from "./session-store";
import { transaction } from "./transaction";

/*
 * A session's generations: answers being written, each a Durable Streams stream hosted in the
 * session's own object (`generation/<id>` in its stream store), so that the answer's entry and the
 * stream's close are one transaction: the entry exists exactly when the stream says it is closed.
 * Writers append chunks through the protocol; complete and stop turn what was written (or the
 * message given) into entries under the generation's parent; the alarm stops a generation left
 * without appends and removes a finished one's stream after its retention window.
 */

/** What the generations need of their session's object. */
export interface GenerationHost {
  readonly storage: DurableObjectStorage;
  readonly session: SessionStore;
  /** Seconds without an append before the alarm stops a generation, and its stream's retention. */
  readonly defaults: { abandonSeconds: number; retainSeconds: number };
  /** A write that stores entries, within the session's room (its quotas). */
  write<T>(run: (session: SessionStore, room: ByteLimit | undefined) => T): Promise<Result<T>>;
  /** A generation opened, finished or stopped (for the session's watchers). */
  changed(info: GenerationInfo): void;
  /** Throws when the session is not there for its routes (deleted). */
  checkListed(): void;
}

/** What complete and stop answer: the generation as it ended and the entries it became. */
export interface GenerationOutcome {
  generation: GenerationInfo;
  entries: StoredEntry[];
  /** False for a repeat of the request that ended it (nothing new was written). */
  created: boolean;
}

/** How a generation ends: completed (with the message, or assembled), or stopped. */
export type GenerationEnd = { kind: "complete"; message?: unknown } | { kind: "stop"; by: StoppedBy };

/** The header that hands the session's object a request for a generation's stream (its id, URI-encoded). */
export const GENERATION_ID_HEADER = "x-generation-id";

/** How soon the alarm looks again after a generation it could not stop (a failure is logged). */
const RETRY_MS = 30_000;

const keyOf = (id: string) => `generation/${id}`;

/** A generation's stream is made and removed by the generation alone: nothing forks from it. */
const NO_SOURCES: StreamSources = {
  keyOf: () => {
    throw new SessionError("invalid_request", "a generation's stream cannot be forked");
  },
  forkPoint: async () => ({ ok: false, error: { code: "not_found", message: "no such stream" } }),
  read: async () => ({ ok: false, error: { code: "not_found", message: "no such stream" } }),
  release: async () => undefined,
};

/** What an unknown generation id gets. */
function unknown(id: string): SessionError {
  return new SessionError("not_found", `generation ${id} does not exist`, { generationId: id });
}

const iso = (ms: number) => new Date(ms).toISOString();

export class Generations {
  readonly #host: GenerationHost;
  /**
   * The tables and streams of the session's current life: a session deleted and made again (a
   * new incarnation) starts with none, so they are opened again.
   */
  #open: { incarnation: string; rows: GenerationRows; streams: DurableStreams } | undefined;

  constructor(host: GenerationHost) {
    this.#host = host;
  }

  get #parts(): { rows: GenerationRows; streams: DurableStreams } {
    const { incarnation } = this.#host.session.state;
    if (this.#open?.incarnation === incarnation) return this.#open;
    const { storage } = this.#host;
    const [rows, store] = storage.transactionSync(() => [
      new GenerationRows(storage.sql, sqlOf(storage.sql)),
      new StreamStore(storage.sql),
    ]);
    const streams = new DurableStreams({
      storage,
      store,
      sources: () => NO_SOURCES,
      // Generation streams have no TTL: the generations' own alarm removes them (`alarm`).
      scheduleAlarm: () => undefined,
    });
    this.#open = { incarnation, rows, streams };
    return this.#open;
  }

  #row(id: string): GenerationRow {
    const row = this.#parts.rows.get(id);
    if (!row) throw unknown(id);
    return row;
  }

  #stream(id: string): StreamState | undefined {
    return this.#parts.streams.store.get(keyOf(id));
  }

  #info(row: GenerationRow, stream = this.#stream(row.id)): GenerationInfo {
    const lastAppend = stream?.renewedAt ?? row.openedAt;
    const info: GenerationInfo = {
      id: row.id,
      parentId: row.parentId,
      format: row.format,
      state: row.state,
      stream: generationStreamPath(this.#host.session.state.header.id, row.id),
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
    return this.#info(this.#row(id));
  }

  /** Generations still kept: open ones, and ended ones within their retention window. */
  list(): GenerationInfo[] {
    if (!this.#host.session.exists) return [];
    return this.#parts.rows.all().map((row) => this.#info(row));
  }

  /** Open generations: what a watcher that joins is told of. */
  openOnes(): GenerationInfo[] {
    return this.list().filter((info) => info.state === "open");
  }

  /** Opens a generation under `parentId` (default: the leaf), with its stream. */
  open(input: OpenGenerationBody): GenerationInfo {
    const { session, storage, defaults } = this.#host;
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
    };
    const stream = storage.transactionSync(() => {
      rows.insert(row);
      return streams.store.create(
        keyOf(row.id),
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
    this.#host.changed(info);
    return info;
  }

  /**
   * A Durable Streams request for a generation's stream: reads (GET, HEAD) as for any stream;
   * appends (POST) while it is open, within MAX_GENERATION_BYTES, each chunk checked for its
   * format. It is closed by complete or stop only, and removed by the alarm.
   */
  async handle(id: string, request: Request, requestId: string | null): Promise<Response> {
    try {
      this.#host.checkListed();
      const row = this.#row(id);
      const { streams } = this.#parts;
      if (request.method === "GET" || request.method === "HEAD") {
        return await streams.handle(request, keyOf(id), requestId);
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
    this.#checkOpen(row);
    const body = await readBody(request, MAX_APPEND_BYTES);
    // The body was read: what came meanwhile counts (a stop, another append).
    const current = this.#row(row.id);
    this.#checkOpen(current);
    const stream = this.#stream(row.id) as StreamState;
    if (stream.tail.bytes + body.byteLength > MAX_GENERATION_BYTES) {
      throw new SessionError(
        "payload_too_large",
        `a generation's stream holds at most ${MAX_GENERATION_BYTES} bytes; complete it, or open another`,
        { limit: MAX_GENERATION_BYTES, holds: stream.tail.bytes },
      );
    }
    // Chunks of the stream's own type are checked here; any other type is the protocol's to refuse.
    if (mediaType(request.headers.get("Content-Type")) === mediaType(stream.contentType)) {
      checkChunks(current, body);
    }
    const forwarded = new Request(request.url, { method: "POST", headers: request.headers, body });
    return this.#parts.streams.handle(forwarded, keyOf(row.id), requestId);
  }

  /** Refuses what only an open generation takes (`what`: more chunks, a complete, a stop). */
  #checkOpen(row: GenerationRow, what = "no more chunks"): void {
    if (row.state === "open") return;
    const stream = this.#stream(row.id);
    const how =
      row.state === "stopped"
        ? `stopped (${row.stoppedBy === "abandoned" ? "abandoned" : "by a client"})`
        : "completed";
    throw new SessionError("stream_closed", `generation ${row.id} was ${how}: it takes ${what}`, {
      generationId: row.id,
      state: row.state,
      ...(row.stoppedBy ? { stoppedBy: row.stoppedBy } : {}),
      entryIds: row.entryIds,
      nextOffset: formatOffset(stream?.tail ?? { records: 0, bytes: 0 }),
    });
  }

  /**
   * Ends a generation: its answer (the message given, or what its chunks make) appended under its
   * parent, and its stream closed, in one transaction. Repeating the request that ended it answers
   * the same outcome; completing a stopped one, or stopping a completed one, is `stream_closed`.
   */
  async end(id: string, how: GenerationEnd): Promise<GenerationOutcome> {
    const outcome = unwrap(await this.#host.write((session, room) => this.#end(session, id, how, room)));
    if (outcome.created) {
      this.#parts.streams.written(keyOf(id));
      this.#host.changed(outcome.generation);
    }
    return outcome;
  }

  #end(
    session: SessionStore,
    id: string,
    how: GenerationEnd,
    room: ByteLimit | undefined,
  ): GenerationOutcome {
    const row = this.#row(id);
    const state = how.kind === "complete" ? "finished" : "stopped";
    if (row.state !== "open") {
      if (row.state !== state) this.#checkOpen(row, how.kind === "complete" ? "no complete" : "no stop");
      const entries = row.entryIds
        .map((entryId) => session.reads.getEntry(entryId))
        .filter((e) => e !== undefined);
      return { generation: this.#info(row), entries, created: false };
    }
    const { rows, streams } = this.#parts;
    const stream = this.#stream(id) as StreamState;
    const now = Date.now();
    const source: AnswerSource = {
      provider: row.model?.provider ?? "unknown",
      model: row.model?.modelId ?? "unknown",
      api: row.api ?? "unknown",
    };
    const messages =
      how.kind === "complete" && how.message !== undefined
        ? givenAnswer(row.format, how.message, source, now)
        : this.#assemble(row, stream, source, how.kind === "stop", now);
    const inputs = answerEntries(row, messages);
    const ids = inputs.map((input) => input.id as string);
    const appended = transaction(this.#host.storage, [session], () => {
      streams.store.append(stream, { records: [], close: true, producer: null, streamSeq: null, now });
      rows.end(id, state, now, how.kind === "stop" ? how.by : null, ids);
      // Last: should the entries be refused, nothing of this transaction stays.
      return session.writes.appendEntries(inputs, {}, room);
    });
    return { generation: this.#info(this.#row(id)), entries: appended.entries, created: true };
  }

  /** What a generation's chunks make, read from its stream a page at a time. */
  #assemble(
    row: GenerationRow,
    stream: StreamState,
    source: AnswerSource,
    stopped: boolean,
    timestamp: number,
  ): AgentMessage[] {
    const fold = answerFold(row.format, source);
    const { store } = this.#parts.streams;
    const decoder = new TextDecoder();
    for (let from = 0; from < stream.tail.records; ) {
      const page = store.page(stream, from, stream.tail.records, READ_PAGE_BYTES);
      if (!page) break;
      for (const piece of page.pieces) {
        if (row.format === "text") fold.add(decoder.decode(piece, { stream: true }));
        else for (const event of JSON.parse(`[${decoder.decode(piece)}]`) as unknown[]) fold.add(event);
      }
      from = page.end.records;
    }
    if (row.format === "text") fold.add(decoder.decode());
    return fold.finish({ stopped, timestamp });
  }

  /**
   * The alarm's work: generations without an append for their abandon time are stopped (as a
   * client's stop would), ended ones past their retention window lose their stream and row.
   */
  async alarm(): Promise<void> {
    if (!this.#host.session.exists) return;
    const now = Date.now();
    for (const row of this.#parts.rows.all()) {
      if (row.state === "open") {
        const last = this.#stream(row.id)?.renewedAt ?? row.openedAt;
        if (last + row.abandonMs > now) continue;
        try {
          await this.end(row.id, { kind: "stop", by: "abandoned" });
        } catch (error) {
          // Tried again by a later alarm; the chunks stay meanwhile.
          logLine(
            { type: "background", task: "stop_abandoned_generation", error: errorSummary(error) },
            "error",
          );
        }
      } else if ((row.finishedAt ?? now) + row.retainMs <= now) {
        this.#remove(row.id);
      }
    }
    await this.arm();
  }

  #remove(id: string): void {
    const { rows, streams } = this.#parts;
    const stream = this.#stream(id);
    this.#host.storage.transactionSync(() => {
      if (stream) streams.store.remove(stream);
      rows.remove(id);
    });
    // Readers still following it end.
    if (stream) streams.written(keyOf(id));
  }

  /** When the alarm must next come for the generations, if ever. */
  #nextDue(): number | undefined {
    if (!this.#host.session.exists) return undefined;
    const now = Date.now();
    let next: number | undefined;
    for (const row of this.#parts.rows.all()) {
      let due =
        row.state === "open"
          ? (this.#stream(row.id)?.renewedAt ?? row.openedAt) + row.abandonMs
          : (row.finishedAt ?? now) + row.retainMs;
      // Past due after the alarm's work: its stop failed, and is tried again later, not at once.
      if (due <= now) due = now + RETRY_MS;
      next = next === undefined ? due : Math.min(next, due);
    }
    return next;
  }

  /** Makes sure the object's alarm comes by the next generation's due time (never later than set). */
  async arm(): Promise<void> {
    const at = this.#nextDue();
    if (at === undefined) return;
    const { storage } = this.#host;
    const current = await storage.getAlarm();
    if (current === null || current > at) await storage.setAlarm(at);
  }
}

function splitModel(ref: string): { provider: string; modelId: string } {
  const slash = ref.indexOf("/");
  return { provider: ref.slice(0, slash), modelId: ref.slice(slash + 1) };
}

/** The answer's entries: the first takes the generation's id, the rest `<id>:1`, `<id>:2`, …, each under the one before. */
function answerEntries(row: GenerationRow, messages: AgentMessage[]): AppendEntryInput[] {
  let parentId = row.parentId;
  return messages.map((message, index) => {
    const id = index === 0 ? row.id : `${row.id}:${index}`;
    const entry: AppendEntryInput = { type: "message", id, parentId, message };
    parentId = id;
    return entry;
  });
}

const strictText = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Refuses an append that is not text (text) or not events (pi-ai, ai-sdk-ui). */
function checkChunks(row: GenerationRow, body: Uint8Array): void {
  if (body.byteLength === 0) return;
  let text: string;
  try {
    text = strictText.decode(body);
  } catch {
    throw new SessionError("invalid_request", "a chunk must be UTF-8 text");
  }
  if (row.format === "text") return;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new SessionError("invalid_request", "the body is not valid JSON");
  }
  const events = Array.isArray(value) ? value : [value];
  for (const [index, event] of events.entries()) checkChunk(row.format, event, index);
}
