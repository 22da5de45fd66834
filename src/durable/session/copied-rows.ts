import type { EntryType } from "../../core/internal";
import { refsInJson } from "../blobs/blob-text";
import type { Sql } from "../sql";
import type { CopiedRow, CopiedRows } from "../types";
import {
  CHUNK_BYTES,
  ENTRY_COLUMN_LIST,
  ENTRY_COLUMNS,
  ENTRY_VALUES,
  insertRows,
  PAGE_CHARS,
  READ_BATCH,
  readChunked,
  rowValues,
  writeChunks,
} from "./entry-layout";
import type { EntryRows } from "./entry-rows";

/*
 * A fork's rows on their way from the source's object to the copy's: read as the source stored
 * them, a page at a time, and written in the copy as they came, seqs included. Rows with their
 * payload inline cross as JSON that SQLite writes on one side and reads on the other: no entry is
 * parsed, and no row becomes an object on the way.
 */

/**
 * UTF-8 bytes of payloads one INSERT of a fork's copy takes as JSON: escaping at most doubles a
 * payload's bytes (a stored payload is JSON, its control characters already escaped), so the
 * statement's value stays under SQLite's 2 MB for a string.
 */
const BATCH_BYTES = 512 * 1024;

/** An inline row's columns as `insertCopiedRows` reads them: ENTRY_COLUMN_LIST, no chunks. */
const COPIED_COLUMNS = ENTRY_COLUMN_LIST.map((c) => (c === "chunks" ? "0" : c)).join(", ");

const encoder = new TextEncoder();

/** Rows of a path (`seqs`, root first) as a fork copies them, a page at a time. */
export function readPathRows(
  rows: EntryRows,
  storage: SqlStorage,
  sql: Sql,
  seqs: readonly number[],
): CopiedRows {
  const page: CopiedRows = { batches: [], chunked: [], figures: [], blobRefs: [], rest: [] };
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
  let size = 0;
  let taken = 0;
  for (let i = 0; i < seqs.length && size < PAGE_CHARS; i += READ_BATCH) {
    const batch = JSON.stringify(seqs.slice(i, i + READ_BATCH));
    for (const row of sql<{
      seq: number;
      id: string;
      type: EntryType;
      role: string | null;
      shaping: string | null;
      chunks: number;
      bytes: number;
      blob_bytes: number;
    }>`
      SELECT seq, id, type, role, CASE WHEN type IN ('label', 'session_info') THEN body END AS shaping,
        chunks, coalesce(octet_length(body), 0) AS bytes, blob_bytes
      FROM entries WHERE seq IN (SELECT value FROM json_each(${batch})) ORDER BY seq`) {
      if (size >= PAGE_CHARS) break;
      let body: string | undefined;
      let bytes = row.bytes;
      if (row.chunks > 0) {
        endRun();
        body = readChunked(sql, row.seq);
        const copied = {
          ...storage.exec<CopiedRow>(`SELECT ${ENTRY_COLUMNS} FROM entries WHERE seq = ?`, row.seq).one(),
          body,
          bytes: encoder.encode(body).byteLength,
        };
        page.chunked.push(copied);
        bytes = copied.bytes;
        size += body.length;
      } else {
        // A payload's UTF-8 bytes bound its characters, and are known without reading it.
        if (runBytes + row.bytes > BATCH_BYTES) endRun();
        run.push(row.seq);
        runBytes += row.bytes;
        size += row.bytes;
      }
      page.figures.push({
        seq: row.seq,
        type: row.type,
        role: row.role,
        body: row.shaping,
        bytes,
        blob_bytes: row.blob_bytes,
      });
      if (row.blob_bytes > 0) page.blobRefs.push(...refsInJson(body ?? rows.bodies([row.seq])[0] ?? ""));
      page.last = { seq: row.seq, id: row.id };
      page.first ??= row.seq;
      taken++;
    }
  }
  endRun();
  page.rest = seqs.slice(taken);
  return page;
}

/** Writes a page a fork copied (inside the caller's transaction), as `readPathRows` made it. */
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
