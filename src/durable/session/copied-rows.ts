import { refsInJson } from "../blobs/blob-text";
import type { Sql } from "../sql";
import type { CopiedRow, CopiedRows } from "../types";
import { CopyNeeded } from "./copy-state";
import {
  CHUNK_BYTES,
  ENTRY_COLUMN_LIST,
  ENTRY_COLUMNS,
  ENTRY_VALUES,
  insertRows,
  readChunked,
  rowValues,
  writeChunks,
} from "./entry-layout";
import type { EntryRows } from "./entry-rows";

/*
 * A fork's rows on their way from the source's object to the fork's: a page of the path read as
 * the source stored it, from a row up towards the root, and written in the fork as it came, seqs
 * included. Rows with their payload inline cross as JSON that SQLite writes on one side and reads
 * on the other: no entry is parsed, and no row becomes an object on the way.
 */

/**
 * UTF-8 bytes of payloads one INSERT of a fork's copy takes as JSON: escaping at most doubles a
 * payload's bytes (a stored payload is JSON, its control characters already escaped), so the
 * statement's value stays under SQLite's 2 MB for a string.
 */
const BATCH_BYTES = 512 * 1024;
/** Rows one page takes at most, however small: the seqs it names cross as one JSON list. */
const PAGE_ROWS = 20_000;

/** An inline row's columns as `insertCopiedRows` reads them: ENTRY_COLUMN_LIST, no chunks. */
const COPIED_COLUMNS = ENTRY_COLUMN_LIST.map((c) => (c === "chunks" ? "0" : c)).join(", ");

const encoder = new TextEncoder();

/**
 * The rows of a path from the row `from` up towards the root, as a fork copies them: as many as
 * about `budget` bytes of payloads take (at least one), and where the path goes on above them.
 */
export function readPathPage(
  rows: EntryRows,
  storage: SqlStorage,
  sql: Sql,
  from: number,
  budget: number,
): CopiedRows {
  // Sizes are read without payloads: an inline one's from the row, a chunked one's at most its chunks.
  const steps = sql<{ seq: number; parent_seq: number | null; depth: number; chunks: number; bytes: number }>`
    WITH RECURSIVE up(seq, parent_seq, depth, chunks, bytes, size, n) AS (
      SELECT seq, parent_seq, depth, chunks, coalesce(octet_length(body), 0),
        coalesce(octet_length(body), chunks * ${CHUNK_BYTES}), 1
      FROM entries WHERE seq = ${from}
      UNION ALL
      SELECT e.seq, e.parent_seq, e.depth, e.chunks, coalesce(octet_length(e.body), 0),
        up.size + coalesce(octet_length(e.body), e.chunks * ${CHUNK_BYTES}), up.n + 1
      FROM up JOIN entries e ON e.seq = up.parent_seq
      WHERE up.size < ${budget} AND up.n < ${PAGE_ROWS}
    )
    SELECT seq, parent_seq, depth, chunks, bytes FROM up`.toArray();
  const top = steps.at(-1);
  // Only a session still copying its own path (a fork of a fork) lacks the row: it copies it first.
  if (!top) throw new CopyNeeded();
  const page: CopiedRows = {
    batches: [],
    chunked: [],
    blobRefs: [],
    rows: steps.length,
    next: top.parent_seq === null ? null : { seq: top.parent_seq, depth: top.depth - 1 },
  };
  let run: number[] = [];
  let runBytes = 0;
  const endRun = () => {
    if (run.length === 0) return;
    page.batches.push(
      storage
        .exec<{ rows: string }>(
          `SELECT json_group_array(json_array(${COPIED_COLUMNS})) AS rows
          FROM entries WHERE seq IN (SELECT value FROM json_each(?))`,
          JSON.stringify(run),
        )
        .one().rows,
    );
    run = [];
    runBytes = 0;
  };
  // Root first, as the fork writes them.
  for (const step of steps.reverse()) {
    if (step.chunks > 0) {
      endRun();
      const body = readChunked(sql, step.seq);
      page.chunked.push({
        ...storage.exec<CopiedRow>(`SELECT ${ENTRY_COLUMNS} FROM entries WHERE seq = ?`, step.seq).one(),
        body,
        bytes: encoder.encode(body).byteLength,
      });
    } else {
      if (runBytes + step.bytes > BATCH_BYTES) endRun();
      run.push(step.seq);
      runBytes += step.bytes;
    }
  }
  endRun();
  const holding = sql<{ seq: number }>`SELECT seq FROM entries
    WHERE blob_bytes > 0 AND seq IN (SELECT value FROM json_each(${JSON.stringify(steps.map((s) => s.seq))}))`
    .toArray()
    .map((row) => row.seq);
  for (const body of rows.bodies(holding)) page.blobRefs.push(...refsInJson(body));
  return page;
}

/** Writes a page a fork copied (inside the caller's transaction), as `readPathPage` made it. */
export function insertCopiedRows(storage: SqlStorage, sql: Sql, page: CopiedRows): void {
  for (const batch of page.batches) {
    storage.exec(`INSERT INTO entries (${ENTRY_COLUMNS}) SELECT ${ENTRY_VALUES} FROM json_each(?)`, batch);
  }
  const values: SqlStorageValue[][] = [];
  for (const row of page.chunked) {
    const chunks = Math.ceil(row.bytes / CHUNK_BYTES);
    values.push(rowValues({ ...row, body: null, chunks }));
    writeChunks(sql, row.seq, row.body, chunks);
  }
  insertRows(storage, values);
}
