import { SessionError } from "../../core/errors";
import type { AnswerSource } from "../../core/generations/answer-fold";
import { answerFold, givenAnswer } from "../../core/generations/answer-fold";
import { AnswerSize, checkStoredSize } from "../../core/generations/answer-size";
import type { GenerationFormat, GenerationState, StoppedBy } from "../../core/generations/generation-schemas";
import type { Shortfall as MessageShortfall } from "../../core/generations/short-answer";
import { shortAnswer, shortAnswerBytes } from "../../core/generations/short-answer";
import { newId } from "../../core/ids";
import { utf8Length } from "../../core/json";
import type { AgentMessage } from "../../core/messages";
import type { AppendEntryInput } from "../../core/providers/entry-input";
import type { Sql } from "../sql";
import { LazyTables, sqlOf } from "../sql";
import { formatOffset } from "../stream/offsets";
import { READ_PAGE_BYTES } from "../stream/protocol";
import type { StreamSources } from "../stream/sources";
import type { StreamState } from "../stream/store";
import { StreamStore } from "../stream/store";
import { DurableStreams } from "../stream/streams";
import type { Reloadable } from "../transaction";

/*
 * A session's generations in its object's SQLite: one row each, from the moment it opens until its
 * stream's retention window closes. The tables are versioned apart (`generation_schema_version`)
 * and made by the first generation, so a session that never had one stores nothing for them.
 * Their chunks are a stream of the object's stream store, under `generation/<id>`, counted in the
 * session's bytes (generations.ts says how much).
 * Below the rows: a generation's answer as entries, and where the generations of one life of the
 * session are kept (`GenerationParts`).
 */

const MIGRATIONS = [
  `
  CREATE TABLE generations (
    id TEXT PRIMARY KEY,
    parent_id TEXT,
    format TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    api TEXT,
    state TEXT NOT NULL,
    opened_at INTEGER NOT NULL,
    abandon_ms INTEGER NOT NULL,
    retain_ms INTEGER NOT NULL,
    finished_at INTEGER,
    stopped_by TEXT,
    entry_ids TEXT
  )
  `,
  // Chunks counted in the session's bytes (rows from before count nothing), and what an ended
  // generation's stream still counts while it is kept.
  [
    "ALTER TABLE generations ADD COLUMN counted INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE generations ADD COLUMN held_bytes INTEGER NOT NULL DEFAULT 0",
  ],
  // A listing's pages, of every generation or of those in one state, in the order they opened.
  [
    "CREATE INDEX generations_by_opening ON generations (opened_at, id)",
    "CREATE INDEX generations_by_state ON generations (state, opened_at, id)",
  ],
  // Where the head stood when it opened (null for rows from before, read as a head at no entry).
  "ALTER TABLE generations ADD COLUMN opened_head TEXT",
];

const VERSION_TABLE = "generation_schema_version";

/** Where a generation stands in a listing: when it opened, then its id. */
export interface GenerationPlace {
  openedAt: number;
  id: string;
}

export interface GenerationRow {
  id: string;
  parentId: string | null;
  format: GenerationFormat;
  model: { provider: string; modelId: string } | undefined;
  api: string | undefined;
  state: GenerationState;
  openedAt: number;
  abandonMs: number;
  retainMs: number;
  finishedAt: number | null;
  stoppedBy: StoppedBy | null;
  entryIds: string[];
  /** Whether its chunks count in the session's bytes (those of generations opened before did not). */
  counted: boolean;
  /** Once it ended: the bytes its stream still counts while it is kept. */
  heldBytes: number;
  /** The session's head when it opened: its answer moves the head only from there or from its parent. */
  openedHead: string | null;
}

type Row = {
  id: string;
  parent_id: string | null;
  format: string;
  provider: string | null;
  model: string | null;
  api: string | null;
  state: string;
  opened_at: number;
  abandon_ms: number;
  retain_ms: number;
  finished_at: number | null;
  stopped_by: string | null;
  entry_ids: string | null;
  counted: number;
  held_bytes: number;
  opened_head: string | null;
};

function rowOf(row: Row): GenerationRow {
  return {
    id: row.id,
    parentId: row.parent_id,
    format: row.format as GenerationFormat,
    model:
      row.provider === null || row.model === null
        ? undefined
        : { provider: row.provider, modelId: row.model },
    api: row.api ?? undefined,
    state: row.state as GenerationState,
    openedAt: row.opened_at,
    abandonMs: row.abandon_ms,
    retainMs: row.retain_ms,
    finishedAt: row.finished_at,
    stoppedBy: row.stopped_by as StoppedBy | null,
    entryIds: row.entry_ids === null ? [] : (JSON.parse(row.entry_ids) as string[]),
    counted: row.counted === 1,
    heldBytes: row.held_bytes,
    openedHead: row.opened_head,
  };
}

export class GenerationRows implements Reloadable {
  readonly #sql: Sql;
  readonly #tables: LazyTables;

  constructor(storage: SqlStorage, sql: Sql) {
    this.#sql = sql;
    this.#tables = new LazyTables(storage, MIGRATIONS, VERSION_TABLE);
  }

  reload(): void {
    this.#tables.reload();
  }

  get(id: string): GenerationRow | undefined {
    if (!this.#tables.exist()) return undefined;
    const row = this.#sql<Row>`SELECT * FROM generations WHERE id = ${id}`.toArray()[0];
    return row && rowOf(row);
  }

  /**
   * Up to `limit` generations still kept (those in `state`, when given) that opened after `after`,
   * oldest first.
   */
  page(options: { state?: GenerationState; after?: GenerationPlace; limit: number }): GenerationRow[] {
    if (!this.#tables.exist()) return [];
    const { state, limit } = options;
    const { openedAt, id } = options.after ?? { openedAt: -1, id: "" };
    const rows =
      state === undefined
        ? this.#sql<Row>`SELECT * FROM generations WHERE (opened_at, id) > (${openedAt}, ${id})
            ORDER BY opened_at, id LIMIT ${limit}`
        : this
            .#sql<Row>`SELECT * FROM generations WHERE state = ${state} AND (opened_at, id) > (${openedAt}, ${id})
            ORDER BY opened_at, id LIMIT ${limit}`;
    return rows.toArray().map(rowOf);
  }

  /** The generations still open, oldest first. */
  open(): GenerationRow[] {
    if (!this.#tables.exist()) return [];
    return this.#sql<Row>`SELECT * FROM generations WHERE state = 'open' ORDER BY opened_at, id`
      .toArray()
      .map(rowOf);
  }

  /** Ended generations whose retention window closed by `now`, oldest first. */
  pastRetention(now: number): GenerationRow[] {
    if (!this.#tables.exist()) return [];
    return this.#sql<Row>`SELECT * FROM generations
      WHERE state != 'open' AND finished_at + retain_ms <= ${now} ORDER BY opened_at, id`
      .toArray()
      .map(rowOf);
  }

  /** When the first ended generation's retention window closes, if any ended one is kept. */
  retentionDue(): number | undefined {
    if (!this.#tables.exist()) return undefined;
    return (
      this.#sql<{ due: number | null }>`SELECT min(coalesce(finished_at, opened_at) + retain_ms) AS due
        FROM generations WHERE state != 'open'`.one().due ?? undefined
    );
  }

  insert(row: GenerationRow): void {
    this.#tables.make();
    this.#sql`INSERT INTO generations (id, parent_id, format, provider, model, api, state, opened_at,
        abandon_ms, retain_ms, counted, opened_head)
      VALUES (${row.id}, ${row.parentId}, ${row.format}, ${row.model?.provider ?? null},
        ${row.model?.modelId ?? null}, ${row.api ?? null}, ${row.state}, ${row.openedAt}, ${row.abandonMs},
        ${row.retainMs}, ${row.counted ? 1 : 0}, ${row.openedHead})`;
  }

  /**
   * The generation is over: finished or stopped, at `at`, its answer the entries `entryIds`; its
   * stream counts `heldBytes` while it is kept.
   */
  end(
    id: string,
    state: Exclude<GenerationState, "open">,
    at: number,
    stoppedBy: StoppedBy | null,
    entryIds: string[],
    heldBytes: number,
  ): void {
    this.#sql`UPDATE generations SET state = ${state}, finished_at = ${at}, stopped_by = ${stoppedBy},
        entry_ids = ${JSON.stringify(entryIds)}, held_bytes = ${heldBytes}
      WHERE id = ${id}`;
  }

  remove(id: string): void {
    this.#sql`DELETE FROM generations WHERE id = ${id}`;
  }
}

/*
 * A generation's answer as entries: the message a complete gave, or what its chunks make (read
 * from its stream a page at a time and folded by its format), each message an entry under the one
 * before, the first under the generation's parent; or, when it could not be stored whole, the one
 * message its ending keeps (short-answer.ts).
 */

/** How a generation ends: completed (with the message, or assembled), or stopped. */
export type GenerationEnd = { kind: "complete"; message?: unknown } | { kind: "stop"; by: StoppedBy };

/** What the entries of an answer are called: the generation's id and `<id>:1`, …, or ids of their own. */
export type AnswerIds = "generation" | "own";

/** How an answer is written: under which ids, and, when it could not be stored whole, what is kept. */
export interface AnswerWriting {
  ids: AnswerIds;
  shortfall?: Shortfall;
}

/** What an ending keeps of an answer, and why; past a quota, the most bytes its entry may take. */
export type Shortfall = Omit<MessageShortfall, "maxBytes"> & { entryBytes?: number };

/**
 * The entries ending generation `row` the way `how` says, stamped `now`; with a `shortfall`, the
 * one entry its ending keeps of an answer that could not be stored whole.
 */
export function answerEntries(
  store: StreamStore,
  row: GenerationRow,
  stream: StreamState,
  how: GenerationEnd,
  now: number,
  writing: AnswerWriting = { ids: "generation" },
): AppendEntryInput[] {
  const source = sourceOf(row);
  const { ids, shortfall } = writing;
  if (!shortfall) {
    const messages = answerMessages(store, row, stream, how, source, now);
    checkStoredSize(messages);
    return chained(row, messages, ids);
  }
  let messages: AgentMessage[] = [];
  try {
    messages = answerMessages(store, row, stream, how, source, now);
  } catch (error) {
    // Kept to none of its text, an answer needs nothing of its chunks: it ends whatever they make.
    if (shortfall.keeps !== "nothing") throw error;
  }
  const { entryBytes, ...why } = shortfall;
  const kept: MessageShortfall =
    entryBytes === undefined ? why : { ...why, maxBytes: entryBytes - envelopeBytes(row, now) };
  return chained(row, [shortAnswer(messages, kept, source, now)], ids);
}

/**
 * The `entryBytes` with which the entry ending generation `row` cut short (`shortfall`, keeping its
 * text) keeps all the text it can: the most that entry takes stored.
 */
export function shortAnswerEntryBytes(
  store: StreamStore,
  row: GenerationRow,
  stream: StreamState,
  how: GenerationEnd,
  now: number,
  shortfall: Omit<Shortfall, "entryBytes">,
): number {
  const source = sourceOf(row);
  const messages = answerMessages(store, row, stream, how, source, now);
  return envelopeBytes(row, now) + shortAnswerBytes(messages, shortfall, source, now);
}

/** Who made generation `row`'s answer, as its messages say. */
function sourceOf(row: GenerationRow): AnswerSource {
  return {
    provider: row.model?.provider ?? "unknown",
    model: row.model?.modelId ?? "unknown",
    api: row.api ?? "unknown",
  };
}

/** The messages of generation `row`'s answer: the one a complete gave, or what its chunks make. */
function answerMessages(
  store: StreamStore,
  row: GenerationRow,
  stream: StreamState,
  how: GenerationEnd,
  source: AnswerSource,
  now: number,
): AgentMessage[] {
  return how.kind === "complete" && how.message !== undefined
    ? givenAnswer(row.format, how.message, source, now)
    : assemble(store, row, stream, source, how.kind === "stop", now);
}

/**
 * Bytes the entry of a generation's one message takes stored besides the message: its type, id
 * (the generation's, or one of its own as long), parent, and timestamp.
 */
function envelopeBytes(row: GenerationRow, now: number): number {
  const timestamp = new Date(now).toISOString();
  const envelope = { type: "message", id: row.id, parentId: row.parentId, timestamp };
  return utf8Length(JSON.stringify({ ...envelope, message: 0 })) - 1;
}

/** A generation's chunks as its stream holds them, read a page at a time: text, or events. */
export function* storedChunks(store: StreamStore, format: GenerationFormat, stream: StreamState) {
  // The answer is the text the stream holds, a U+FEFF it starts with included.
  const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  for (let from = 0; from < stream.tail.records; ) {
    const page = store.page(stream, from, stream.tail.records, READ_PAGE_BYTES);
    if (!page) break;
    for (const piece of page.pieces) {
      if (format === "text") yield decoder.decode(piece, { stream: true });
      else yield* JSON.parse(`[${decoder.decode(piece)}]`) as unknown[];
    }
    from = page.end.records;
  }
  if (format === "text") yield decoder.decode();
}

/** What a generation's chunks make. */
function assemble(
  store: StreamStore,
  row: GenerationRow,
  stream: StreamState,
  source: AnswerSource,
  stopped: boolean,
  timestamp: number,
): AgentMessage[] {
  const fold = answerFold(row.format, source);
  for (const chunk of storedChunks(store, row.format, stream)) fold.add(chunk);
  return fold.finish({ stopped, timestamp });
}

/**
 * Each message an entry under the one before, the first under the generation's parent: the first
 * takes the generation's id, the rest `<id>:1`, `<id>:2`, …; or each an id of its own.
 */
function chained(row: GenerationRow, messages: AgentMessage[], ids: AnswerIds): AppendEntryInput[] {
  let parentId = row.parentId;
  return messages.map((message, index) => {
    const id = ids === "own" ? newId() : index === 0 ? row.id : `${row.id}:${index}`;
    const entry: AppendEntryInput = { type: "message", id, parentId, message };
    parentId = id;
    return entry;
  });
}

/*
 * Where a session's generations are kept during one life of the session: their rows
 * (above) and their streams, each `generation/<id>` in the object's stream store.
 * A generation is found here by id, and here refuses what only an open generation takes.
 */

/** The key of a generation's stream in the object's stream store. */
export const generationStreamKey = (id: string) => `generation/${id}`;

/** A generation's stream is made and removed by the generation alone: nothing forks from it. */
const NO_SOURCES: StreamSources = {
  keyOf: () => {
    throw new SessionError("invalid_request", "a generation's stream cannot be forked");
  },
  forkPoint: async () => {
    throw new SessionError("not_found", "no such stream");
  },
  read: async () => {
    throw new SessionError("not_found", "no such stream");
  },
  appends: async () => {
    throw new SessionError("not_found", "no such stream");
  },
  release: async () => undefined,
};

/** What an unknown generation id gets. */
function unknown(id: string): SessionError {
  return new SessionError("not_found", `generation ${id} does not exist`, { generationId: id });
}

export class GenerationParts {
  readonly rows: GenerationRows;
  readonly streams: DurableStreams;
  /** What each open generation's answer takes so far, as its chunks were appended (answer-size.ts). */
  readonly #answerSizes = new Map<string, AnswerSize>();

  /**
   * Opens the tables in `storage` (updating them if they exist); `present` says whether they are
   * still the session's (its streams' readers find them gone once it is deleted).
   */
  constructor(storage: DurableObjectStorage, present: () => boolean) {
    const [rows, store] = storage.transactionSync(() => [
      new GenerationRows(storage.sql, sqlOf(storage.sql)),
      new StreamStore(storage.sql),
    ]);
    this.rows = rows;
    this.streams = new DurableStreams({
      storage,
      store,
      sources: () => NO_SOURCES,
      // Generation streams have no TTL: the generations' own alarm removes them.
      scheduleAlarm: () => undefined,
      present,
    });
  }

  /** The generation `id`; `not_found` when there is none. */
  row(id: string): GenerationRow {
    const row = this.rows.get(id);
    if (!row) throw unknown(id);
    return row;
  }

  stream(id: string): StreamState | undefined {
    return this.streams.store.get(generationStreamKey(id));
  }

  /**
   * What generation `row`'s answer takes so far: counted from its stream once, then as chunks are
   * appended (each counted before it is written, so that appends at the same time count each other).
   */
  answerSize(row: GenerationRow): AnswerSize {
    let size = this.#answerSizes.get(row.id);
    if (size === undefined) {
      size = new AnswerSize(row.format);
      const stream = this.stream(row.id);
      if (stream) for (const chunk of storedChunks(this.streams.store, row.format, stream)) size.add(chunk);
      this.#answerSizes.set(row.id, size);
    }
    return size;
  }

  /** What was counted of the answer may not stand (an append refused): counted again when next asked. */
  recountAnswer(id: string): void {
    this.#answerSizes.delete(id);
  }

  /** Refuses what only an open generation takes (`what`: more chunks, a complete, a stop). */
  checkOpen(row: GenerationRow, what = "no more chunks"): void {
    if (row.state === "open") return;
    const stream = this.stream(row.id);
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
}
