import type { Sql } from "../sql";
import { migrate } from "../sql";

/*
 * The tables of one session. Entries are rows keyed by `seq`; a row keeps, beside the entry's
 * JSON, what walking the tree needs without payloads: its parent's seq, its depth, and the seq of
 * the latest compaction, thinking-level, model and active-tools entry on its path. With those,
 * a context on a compacted session reads only the kept part of the path plus three entries,
 * however long the history. `MIGRATIONS[i]` takes the schema from version i to i + 1.
 */
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
  // Where the session reports, whether it is complete, deleted or due to be purged (lifecycle.ts);
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
  // Where the leaf stood after each write, and when (leaf-history.ts): what `asOf` reads. A
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
