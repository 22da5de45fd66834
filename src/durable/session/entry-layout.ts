import type { Sql } from "../sql";

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

/**
 * Inserts rows of ENTRY_COLUMN_LIST's values: one statement a row for a few rows, else one
 * statement for up to INSERT_BATCH rows passed as one JSON parameter (statements take at most 100
 * bound parameters, and the per-statement cost dominates a batch of small entries).
 */
export function insertRows(storage: SqlStorage, rows: readonly SqlStorageValue[][]): void {
  if (rows.length < 8) {
    for (const row of rows) {
      storage.exec(
        `INSERT INTO entries (${ENTRY_COLUMNS}) VALUES (${ENTRY_COLUMN_LIST.map(() => "?").join(",")})`,
        ...row,
      );
    }
    return;
  }
  for (let i = 0; i < rows.length; i += INSERT_BATCH) {
    storage.exec(
      `INSERT INTO entries (${ENTRY_COLUMNS}) SELECT ${ENTRY_VALUES} FROM json_each(?)`,
      JSON.stringify(rows.slice(i, i + INSERT_BATCH)),
    );
  }
}
