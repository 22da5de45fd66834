import { LazyTables } from "../sql";

/*
 * The tables of a stream store. They may share an object's database with other tables (a session
 * object holding its generations' streams), so every name starts with `stream` and the version
 * is kept in `stream_schema_version`. `MIGRATIONS[i]` takes the schema from version i to i + 1.
 *
 * A stream's data is its records, numbered from 0: a binary stream's appends, a JSON stream's
 * messages, packed into blocks of consecutive records (blocks.ts). A fork reads records before
 * `fork_records` from its source and keeps its own after.
 */
const MIGRATIONS = [
  `
  CREATE TABLE streams (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    incarnation TEXT NOT NULL,
    content_type TEXT NOT NULL,
    ttl_seconds INTEGER,
    expires_at INTEGER,
    renewed_at INTEGER NOT NULL,
    closed INTEGER NOT NULL DEFAULT 0,
    closed_by TEXT,
    tail_records INTEGER NOT NULL,
    tail_bytes INTEGER NOT NULL,
    last_seq TEXT,
    fork_source TEXT,
    fork_offset TEXT,
    fork_sub_offset INTEGER,
    fork_records INTEGER,
    fork_bytes INTEGER,
    forks INTEGER NOT NULL DEFAULT 0,
    deleted_at INTEGER
  );
  CREATE TABLE stream_blocks (
    stream_id INTEGER NOT NULL,
    first INTEGER NOT NULL,
    start INTEGER NOT NULL,
    ends BLOB NOT NULL,
    batch_ends BLOB NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (stream_id, first)
  );
  CREATE TABLE stream_producers (
    stream_id INTEGER NOT NULL,
    producer TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    PRIMARY KEY (stream_id, producer)
  );
  CREATE TABLE stream_releases (id INTEGER PRIMARY KEY, source TEXT NOT NULL)
  `,
  // How many forks lie between a stream and the first of its sources that is no fork.
  `ALTER TABLE streams ADD COLUMN fork_depth INTEGER NOT NULL DEFAULT 0`,
  // A block's record count, kept since its row stores only the ends it must (blocks.ts); null in
  // rows written before, which store an end and an append end per record.
  `ALTER TABLE stream_blocks ADD COLUMN records INTEGER`,
  // Forks by token (fork-source.ts): a fork's token on its source, the token a release gives back
  // (null in rows written before, which count and release a fork without one), and the tokens a
  // source counts.
  `
  ALTER TABLE streams ADD COLUMN fork_token TEXT;
  ALTER TABLE stream_releases ADD COLUMN token TEXT;
  CREATE TABLE stream_fork_tokens (
    stream_id INTEGER NOT NULL,
    token TEXT NOT NULL,
    PRIMARY KEY (stream_id, token)
  )
  `,
];

const VERSION_TABLE = "stream_schema_version";

/** The stream tables of a database (made by its first stream). */
export function streamTables(storage: SqlStorage): LazyTables {
  return new LazyTables(storage, MIGRATIONS, VERSION_TABLE);
}
