import { SessionError } from "../../core/errors";
import { MAX_INDEXED_CHARS } from "../../core/search-text";
import type { DurableEnv } from "../env";
import { numberSetting } from "../settings";
import type { Sql } from "../sql";
import { jsonRuns, migrate } from "../sql";

/*
 * The tables of one session. Entries are rows keyed by `seq`; a row keeps, beside the entry's
 * JSON, what walking the tree needs without payloads: its parent's seq, its depth, and the seq of
 * the latest compaction, thinking-level, model and active-tools entry on its path. With those,
 * a context on a compacted session reads only the kept part of the path plus three entries,
 * however long the history. `MIGRATIONS[i]` takes the schema from version i to i + 1.
 * Below: how an entry row is laid out, and the ceiling on what the database may hold.
 */

/** A row's payload as SQL reads it in a migration: inline, or its chunks joined in order. */
const STORED_JSON = `coalesce(body, (SELECT group_concat(CAST(data AS TEXT), '')
  FROM (SELECT data FROM entry_chunks WHERE entry_chunks.seq = entries.seq ORDER BY n)))`;

/**
 * Makes the assistant replies stored in the row that `replies` matches set no model: each such row
 * took itself for the latest model on its path, and it and every row below it point at the setter
 * above it instead (none: NULL). Replies stored in chunks (over 512 KiB) are left as they were.
 */
function unsetReplyModels(replies: string): string {
  return `
  WITH RECURSIVE
    unset(seq, parent_seq) AS (
      SELECT seq, parent_seq FROM entries
      WHERE type = 'message' AND role = 'assistant' AND last_model = seq AND body IS NOT NULL
        AND ${replies}
    ),
    above(unset_seq, last_model) AS (
      SELECT unset.seq, parent.last_model FROM unset LEFT JOIN entries AS parent ON parent.seq = unset.parent_seq
      UNION ALL
      SELECT above.unset_seq, parent.last_model FROM above
        JOIN unset ON unset.seq = above.last_model
        JOIN entries AS parent ON parent.seq = unset.parent_seq
    ),
    setter(unset_seq, last_model) AS (
      SELECT unset_seq, last_model FROM above
      WHERE last_model IS NULL OR last_model NOT IN (SELECT seq FROM unset)
    )
  UPDATE entries SET last_model = setter.last_model FROM setter WHERE entries.last_model = setter.unset_seq
  `;
}

const MIGRATIONS = [
  `
  CREATE TABLE session (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    tenant TEXT NOT NULL,
    incarnation TEXT NOT NULL,
    header TEXT NOT NULL,
    leaf_id TEXT,
    stats TEXT NOT NULL,
    version INTEGER NOT NULL
  );
  CREATE TABLE entries (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    parent_id TEXT,
    parent_seq INTEGER,
    type TEXT NOT NULL,
    role TEXT,
    timestamp TEXT NOT NULL,
    depth INTEGER,
    last_compaction INTEGER,
    last_thinking INTEGER,
    last_model INTEGER,
    last_tools INTEGER,
    body TEXT,
    chunks INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX entries_by_type ON entries (type, seq);
  CREATE TABLE entry_chunks (
    seq INTEGER NOT NULL,
    n INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (seq, n)
  );
  CREATE TABLE labels (target_id TEXT PRIMARY KEY, label TEXT NOT NULL)
  `,
  `ALTER TABLE session ADD COLUMN auto_compaction TEXT`,
  // Where the session reports, whether it is complete, deleted or due to be purged (object-state.ts);
  // the full-text index of its entries (search-index.ts), and how much of a session written before
  // the index existed is still to be indexed.
  `
  CREATE TABLE lifecycle (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    directory_shard INTEGER NOT NULL DEFAULT 0,
    pending_since INTEGER,
    deleted_at INTEGER,
    purge_at INTEGER
  );
  CREATE VIRTUAL TABLE entry_text USING fts5(text, thinking, tokenize='porter unicode61');
  CREATE TABLE search_backfill (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    next_seq INTEGER NOT NULL,
    end_seq INTEGER NOT NULL
  );
  INSERT INTO search_backfill (singleton, next_seq, end_seq) SELECT 1, 1, seq + 1 FROM entries ORDER BY seq DESC LIMIT 1
  `,
  // Where the leaf stood after each write, and when (session-state.ts): what `asOf` reads. A
  // session stored before has its history from its last write before then.
  `
  CREATE TABLE leaf_history (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    leaf_seq INTEGER
  );
  CREATE INDEX leaf_history_by_at ON leaf_history (at, seq);
  INSERT INTO leaf_history (seq, at, leaf_seq)
    SELECT (SELECT coalesce(max(seq), 0) FROM entries),
      coalesce(CAST(unixepoch(stats->>'updatedAt', 'subsec') * 1000 AS INTEGER), 0),
      (SELECT seq FROM entries WHERE id = session.leaf_id)
    FROM session
  `,
  // Blobs (session-blobs.ts): what the values of a row's blobs add to its payload, and the blobs
  // the session claimed in its tenant's ledger, with their sizes in an entry.
  `
  ALTER TABLE entries ADD COLUMN blob_bytes INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE session_blobs (ref TEXT PRIMARY KEY, json_bytes INTEGER NOT NULL)
  `,
  // Forks (fork-source.ts, fork-copy.ts): what the path root → a row holds (its bytes, blob bytes,
  // messages and first user message with text), so that a fork knows its figures at once; the
  // forks still copying from this session; and, in a fork, where its copy stands. Rows stored
  // before have no path figures (NULL): a fork of them counts its path when it is made.
  `
  ALTER TABLE entries ADD COLUMN path_bytes INTEGER;
  ALTER TABLE entries ADD COLUMN path_blob_bytes INTEGER;
  ALTER TABLE entries ADD COLUMN path_messages INTEGER;
  ALTER TABLE entries ADD COLUMN path_preview INTEGER;
  CREATE TABLE fork_holds (hold TEXT PRIMARY KEY, fork_id TEXT NOT NULL, since INTEGER NOT NULL);
  CREATE TABLE fork_copy (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    source_id TEXT NOT NULL,
    hold TEXT NOT NULL,
    fork_seq INTEGER NOT NULL,
    entries INTEGER NOT NULL,
    next_seq INTEGER,
    next_depth INTEGER,
    release_owed INTEGER NOT NULL DEFAULT 0
  )
  `,
  // The messages a LangGraph checkpoint of cf-sessions 0.1 holds are text (search-text.ts): a
  // session stored before indexes again the part of it from its first such checkpoint on.
  `
  INSERT INTO search_backfill (singleton, next_seq, end_seq)
    SELECT 1, min(seq), max(seq) + 1 FROM entries
    WHERE type = 'custom' AND (body IS NULL OR (body->>'customType' = 'langgraph:checkpoint'
      AND body->'data'->'values'->'messages' IS NOT NULL))
    GROUP BY type
  ON CONFLICT (singleton) DO UPDATE SET
    next_seq = min(next_seq, excluded.next_seq), end_seq = max(end_seq, excluded.end_seq)
  `,
  // What a context asks of custom entries and context edits, each indexed so that it is found
  // without reading payloads (path-reads.ts): how a LangGraph checkpoint holds its messages channel
  // (core's `langGraphMessagesHeld`), and the entry an edit names. Rows stored before are read for
  // it once, payloads stored in chunks whole.
  `
  ALTER TABLE entries ADD COLUMN messages_held TEXT;
  ALTER TABLE entries ADD COLUMN edit_target TEXT;
  UPDATE entries SET messages_held = CASE
      WHEN json_type(payload.json, '$.data.messages') IS NOT NULL THEN 'changes'
      WHEN json_type(payload.json, '$.data.values') = 'object'
        AND json_type(payload.json, '$.data.values.messages') IS NOT NULL THEN 'value'
    END
    FROM (SELECT seq, ${STORED_JSON} AS json FROM entries WHERE type = 'custom') AS payload
    WHERE entries.seq = payload.seq AND payload.json->>'customType' = 'langgraph:checkpoint'
      AND json_type(payload.json, '$.data') = 'object';
  UPDATE entries SET edit_target = ${STORED_JSON}->>'targetId' WHERE type = 'context_edit';
  CREATE INDEX entries_holding_messages ON entries (messages_held, seq) WHERE messages_held IS NOT NULL;
  CREATE INDEX entries_by_edit_target ON entries (edit_target) WHERE edit_target IS NOT NULL
  `,
  // A reply naming no model (one a framework's store wrote, `ai-sdk` or an empty model) sets no
  // model (core's `modelSetBy`); rows stored before took it for the latest model on their path.
  unsetReplyModels(
    `(instr(body, '"model":""') > 0 OR instr(body, '"provider":"ai-sdk"') > 0)
      AND (coalesce(body->>'$.message.model', '') = '' OR body->>'$.message.provider' = 'ai-sdk')`,
  ),
  // The header's name (while no session_info entry has named the session) and system prompt are
  // text, in rows of their own (search-index.ts, core's `headerSearchText`): a session stored
  // before has them indexed, cut and cleaned as text is.
  `
  INSERT OR REPLACE INTO entry_text (rowid, text, thinking)
    SELECT 0, replace(replace(substr(header->>'name', 1, ${MAX_INDEXED_CHARS}), char(1), ' '), char(2), ' '), ''
    FROM session WHERE trim(coalesce(header->>'name', '')) != '' AND stats->'entryName' IS NULL;
  INSERT OR REPLACE INTO entry_text (rowid, text, thinking)
    SELECT -1, replace(replace(substr(header->>'systemPrompt', 1, ${MAX_INDEXED_CHARS}), char(1), ' '), char(2), ' '), ''
    FROM session WHERE trim(coalesce(header->>'systemPrompt', '')) != ''
  `,
  // Nor does a LangGraph message naming no model, stored before as of model `unknown` by provider
  // `unknown`.
  unsetReplyModels(
    `instr(body, '"model":"unknown"') > 0
      AND body->>'$.message.provider' = 'unknown' AND body->>'$.message.model' = 'unknown'`,
  ),
];

/**
 * Whether this object ever held a session. An object that never did has no tables at all, so
 * probing unknown ids stores nothing.
 */
export function hasSchema(sql: Sql): boolean {
  return (
    sql`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`.toArray().length > 0
  );
}

/** Creates the tables, or brings them to the current version. */
export function updateSchema(storage: SqlStorage): void {
  migrate(storage, MIGRATIONS);
}

/*
 * How an entry is stored in a session's SQLite: the `entries` table's columns in one order (every
 * INSERT and every row that crosses as JSON follows it), payloads up to INLINE_BYTES in the row
 * and larger ones in `entry_chunks`, and the sizes rows are read and written in.
 */

/** Payloads up to this many UTF-8 bytes sit in the row; larger ones in chunks (SQLite rows cap at 2 MB). */
export const INLINE_BYTES = 512 * 1024;
export const CHUNK_BYTES = 1024 * 1024;
/**
 * Characters of entry JSON one page carries: RPC values are capped at 32 MiB, so long paths and
 * large entries cross in several pages (a page always holds at least one entry). A page is held
 * several times over while it crosses (the rows read, the entries parsed, the message that carries
 * them, the lines written from them), within an isolate's 128 MB: a few MiB, not more.
 */
export const PAGE_CHARS = 2 * 1024 * 1024;
/** Entries of a tree's shape one page carries: two numbers each, about a megabyte as it crosses. */
export const SHAPE_ROWS = 100_000;
/** Entries whose payloads one query reads. */
export const READ_BATCH = 256;
/** Rows one multi-row INSERT writes. */
const INSERT_BATCH = 500;

export const ENTRY_COLUMN_LIST = [
  "seq",
  "id",
  "parent_id",
  "parent_seq",
  "type",
  "role",
  "timestamp",
  "depth",
  "last_compaction",
  "last_thinking",
  "last_model",
  "last_tools",
  "body",
  "chunks",
  "blob_bytes",
  "path_bytes",
  "path_blob_bytes",
  "path_messages",
  "path_preview",
  "messages_held",
  "edit_target",
] as const;
export const ENTRY_COLUMNS = ENTRY_COLUMN_LIST.join(", ");
/** A row's columns read from a JSON array of them, in ENTRY_COLUMN_LIST's order. */
export const ENTRY_VALUES = ENTRY_COLUMN_LIST.map((_, n) => `value->>${n}`).join(", ");

/** A row's values in ENTRY_COLUMN_LIST's order, as every INSERT of `entries` takes them. */
export function rowValues(
  row: Record<(typeof ENTRY_COLUMN_LIST)[number], SqlStorageValue>,
): SqlStorageValue[] {
  return ENTRY_COLUMN_LIST.map((column) => row[column]);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The payload of a row stored in chunks, whole. */
export function readChunked(sql: Sql, seq: number): string {
  const parts = sql<{
    data: ArrayBuffer;
  }>`SELECT data FROM entry_chunks WHERE seq = ${seq} ORDER BY n`.toArray();
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.data.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    bytes.set(new Uint8Array(part.data), offset);
    offset += part.data.byteLength;
  }
  return decoder.decode(bytes);
}

/** Writes a payload as `chunks` chunks of CHUNK_BYTES. */
export function writeChunks(sql: Sql, seq: number, json: string, chunks: number): void {
  const data = encoder.encode(json);
  for (let n = 0; n < chunks; n++) {
    const part = data.slice(n * CHUNK_BYTES, (n + 1) * CHUNK_BYTES);
    sql`INSERT INTO entry_chunks (seq, n, data) VALUES (${seq}, ${n}, ${part.buffer})`;
  }
}

function insertRow(storage: SqlStorage, row: readonly SqlStorageValue[]): void {
  storage.exec(
    `INSERT INTO entries (${ENTRY_COLUMNS}) VALUES (${ENTRY_COLUMN_LIST.map(() => "?").join(",")})`,
    ...row,
  );
}

/**
 * Inserts rows of ENTRY_COLUMN_LIST's values, in order: one statement a row for a few rows, else
 * runs of up to INSERT_BATCH rows passed as one JSON parameter (statements take at most 100 bound
 * parameters, and the per-statement cost dominates a batch of small entries), each within the
 * size of one value (`jsonRuns`).
 */
export function insertRows(storage: SqlStorage, rows: readonly SqlStorageValue[][]): void {
  if (rows.length < 8) {
    for (const row of rows) insertRow(storage, row);
    return;
  }
  for (const run of jsonRuns(rows, INSERT_BATCH)) {
    if ("row" in run) insertRow(storage, run.row);
    else
      storage.exec(
        `INSERT INTO entries (${ENTRY_COLUMNS}) SELECT ${ENTRY_VALUES} FROM json_each(?)`,
        run.json,
      );
  }
}

/*
 * The most a session's object stores before it refuses new entries (`session_full`): a ceiling
 * below the platform's own limit per object (10 GB of SQLite), so the session never meets that
 * limit in the middle of a write and what lies between the two keeps it working: it is read,
 * exported, forked, compacted (a compaction's entry is small and always written), navigated and
 * deleted like any other. Measured on the database itself (rows, indexes, search index), not on
 * the entries' bytes alone.
 */

/** Bytes of SQLite at which a session is full, unless SESSION_FULL_BYTES says otherwise. */
export const DEFAULT_SESSION_FULL_BYTES = 9_000_000_000;

export function sessionFullBytes(env: Pick<DurableEnv, "SESSION_FULL_BYTES">): number {
  return numberSetting(env.SESSION_FULL_BYTES, DEFAULT_SESSION_FULL_BYTES, { min: 1 });
}

/**
 * Refuses a write (`session_full`) once the session's database has reached its ceiling. One write
 * below it adds at most a request's worth (32 MiB, with its indexes), far less than the room left
 * under the platform's limit.
 */
export function checkNotFull(sql: SqlStorage, env: Pick<DurableEnv, "SESSION_FULL_BYTES">): void {
  const ceiling = sessionFullBytes(env);
  const size = sql.databaseSize;
  if (size < ceiling) return;
  throw new SessionError(
    "session_full",
    `the session's storage reached its ceiling of ${ceiling} bytes: it takes no more entries, and can still be read, exported, forked and compacted`,
    { ceiling, size },
  );
}
