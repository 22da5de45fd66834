import type { EntryRef } from "../../core/append";
import { headFor } from "../../core/append";
import type { StoredEntry } from "../../core/entries";
import type { ForkPathEntry } from "../../core/fork";
import { newId } from "../../core/ids";
import { nonBlank } from "../../core/info";
import { PREVIEW_CHARS } from "../../core/limits";
import { contentText } from "../../core/messages";
import type { LeafOptions } from "../../core/storage";
import { refsInJson } from "../blobs/blob-text";
import type { Sql } from "../sql";
import type { CopiedRow, CopiedRows, ForkStart, PathFigures } from "../types";
import type { EntryRows, Node } from "./entry-rows";
import { CopyNeeded } from "./entry-rows";
import type { PathReads } from "./path-reads";
import {
  CHUNK_BYTES,
  ENTRY_COLUMN_LIST,
  ENTRY_COLUMNS,
  ENTRY_VALUES,
  hasSchema,
  insertRows,
  readChunked,
  rowValues,
  writeChunks,
} from "./schema";

/*
 * The source side of a fork. A fork is answered from what costs the same however long the path:
 * the head's row (which carries what the path holds, see entry-rows.ts), the path's first page
 * from the head up, and what `forkExtras` needs to make labels and the name read as in the source
 * (found through the type and label indexes; the path is walked only as far up as the highest of
 * them). The rest of the path crosses later, a page at a time from where the last one ended
 * (`readPathPage`), while the fork copies it in the background.
 * Below: the rows as they cross, and the holds by which the source keeps the path for each fork
 * still copying it.
 */

type Step = { seq: number; id: string; type: string; parent_id: string | null; depth: number };

export function forkStart(
  rows: EntryRows,
  paths: PathReads,
  storage: SqlStorage,
  sql: Sql,
  targetId: string,
  position: LeafOptions["position"],
  pageBytes: number,
): Omit<ForkStart, "header" | "name"> {
  const target = rows.node(targetId);
  const [targetEntry] = target ? rows.entries([target.seq]) : [];
  const leafId = headFor(targetId, targetEntry, position);
  if (leafId === null) {
    return {
      leafId,
      figures: { entries: 0, messages: 0, bytes: 0, blobBytes: 0 },
      ...NO_SHAPING,
      page: null,
    };
  }
  const head = paths.treeNode(leafId);
  const { entryName, ...shaped } = shaping(rows, paths, sql, head);
  const figures = pathFigures(rows, paths, sql, head);
  return {
    leafId,
    figures: entryName ? { ...figures, entryName } : figures,
    ...shaped,
    page: readPathPage(rows, storage, sql, head.seq, pageBytes),
  };
}

/** Which of `ids` are entries on the path root → `from` (the row of seq `from`), as the planner sees them. */
export function refsOnPath(
  rows: EntryRows,
  paths: PathReads,
  sql: Sql,
  from: number,
  ids: readonly string[],
): Record<string, EntryRef> {
  const bound = rows.nodeAt(from)?.depth ?? 0;
  const found = sql<Step>`SELECT seq, id, type, parent_id, depth FROM entries
    WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)})) AND depth <= ${bound}`.toArray();
  return Object.fromEntries(
    onPath(paths, from, found).map((step) => [
      step.id,
      { type: step.type, parentId: step.parent_id } as EntryRef,
    ]),
  );
}

const NO_SHAPING = { labels: {}, path: [], sourceLabels: {}, refs: {} };

/** Those of `steps` on the path root → `from`: walked from `from` up to the highest of them. */
function onPath(paths: PathReads, from: number, steps: readonly Step[]): Step[] {
  if (steps.length === 0) return [];
  const walked = new Set(paths.ancestors(from, Math.min(...steps.map((s) => s.depth))));
  return steps.filter((step) => walked.has(step.seq));
}

/**
 * What the path holds (its entries, messages, bytes and preview), from the head's row; a path of
 * rows stored before paths were counted is counted here, once.
 */
function pathFigures(rows: EntryRows, paths: PathReads, sql: Sql, head: Node): PathFigures {
  const preview = (seq: number | null) => {
    if (seq === null) return undefined;
    const [entry] = rows.entries([seq]);
    const text = entry?.type === "message" ? contentText(entry.message.content) : "";
    return text ? text.slice(0, PREVIEW_CHARS) : undefined;
  };
  if (head.path_bytes !== null && head.depth !== null) {
    const figures: PathFigures = {
      entries: head.depth + 1,
      messages: head.path_messages ?? 0,
      bytes: head.path_bytes,
      blobBytes: head.path_blob_bytes ?? 0,
    };
    const text = preview(head.path_preview);
    if (text !== undefined) figures.preview = text;
    return figures;
  }
  const seqs = paths.ancestors(head.seq).reverse();
  const all = JSON.stringify(seqs);
  const counts = sql<{ entries: number; messages: number; blob_bytes: number }>`
    SELECT count(*) AS entries, total(type = 'message') AS messages, total(blob_bytes) AS blob_bytes
    FROM entries WHERE seq IN (SELECT value FROM json_each(${all}))`.one();
  const figures: PathFigures = {
    entries: counts.entries,
    messages: counts.messages,
    bytes: rows.storedBytes(seqs),
    blobBytes: counts.blob_bytes,
  };
  const users = sql<{ seq: number }>`SELECT seq FROM entries
    WHERE seq IN (SELECT value FROM json_each(${all})) AND type = 'message' AND role = 'user' ORDER BY seq`;
  for (const { seq } of users) {
    const text = preview(seq);
    if (text !== undefined) {
      figures.preview = text;
      break;
    }
  }
  return figures;
}

/**
 * What makes the fork's labels and name read as the source's: the label index its path's label
 * entries make, its name, and what `forkExtras` reads (label and name entries on the path, the
 * entries the source labels or a label on the path names, and the head).
 */
function shaping(
  rows: EntryRows,
  paths: PathReads,
  sql: Sql,
  head: Node,
): Pick<ForkStart, "labels" | "path" | "sourceLabels" | "refs"> & Pick<PathFigures, "entryName"> {
  const depth = head.depth ?? 0;
  // CROSS JOIN keeps the label index the outer loop: joined the other way, SQLite read every entry
  // of the session on every fork (a fork of a 1,000,000-entry path took half a second).
  const candidates = sql<Step>`
    SELECT seq, id, type, parent_id, depth FROM entries
    WHERE type IN ('label', 'session_info') AND depth <= ${depth}
    UNION
    SELECT e.seq, e.id, e.type, e.parent_id, e.depth FROM labels l CROSS JOIN entries e ON e.id = l.target_id
    WHERE e.depth <= ${depth}`.toArray();
  const shaping = onPath(paths, head.seq, candidates);
  const payloads = new Map<number, StoredEntry>(
    rows
      .entries(
        shaping
          .filter((s) => s.type === "label" || s.type === "session_info")
          .map((s) => s.seq)
          .sort((a, b) => a - b),
      )
      .map((entry) => [entry.seq, entry]),
  );
  // The entries a label on the path names (its label may have been cleared off the path).
  const named = [...payloads.values()].flatMap((e) => (e.type === "label" ? [e.targetId] : []));
  const targets = onPath(
    paths,
    head.seq,
    sql<Step>`SELECT seq, id, type, parent_id, depth FROM entries
      WHERE id IN (SELECT value FROM json_each(${JSON.stringify(named)})) AND depth <= ${depth}`.toArray(),
  );
  const steps = new Map<number, Step>();
  for (const step of [...shaping, ...targets, { ...head, depth } as Step]) steps.set(step.seq, step);
  const sourceLabels = rows.labels();
  // Maps, not assignments: an entry may be named `__proto__`.
  const labels = new Map<string, string>();
  const refs = new Map<string, EntryRef>();
  const labelled = new Map<string, string>();
  const path: ForkPathEntry[] = [];
  let entryName: PathFigures["entryName"];
  for (const step of [...steps.values()].sort((a, b) => a.seq - b.seq)) {
    refs.set(step.id, { type: step.type, parentId: step.parent_id } as EntryRef);
    if (Object.hasOwn(sourceLabels, step.id)) labelled.set(step.id, sourceLabels[step.id] as string);
    const entry = payloads.get(step.seq);
    if (entry?.type === "label") {
      path.push({ id: step.id, type: step.type, targetId: entry.targetId, label: entry.label });
      const label = nonBlank(entry.label);
      if (label === undefined) labels.delete(entry.targetId);
      else labels.set(entry.targetId, label);
    } else if (entry?.type === "session_info") {
      path.push({ id: step.id, type: step.type, name: entry.name });
      const name = nonBlank(entry.name);
      entryName = name === undefined ? {} : { name };
    } else {
      path.push({ id: step.id, type: step.type });
    }
  }
  return {
    labels: Object.fromEntries(labels),
    path,
    sourceLabels: Object.fromEntries(labelled),
    refs: Object.fromEntries(refs),
    ...(entryName ? { entryName } : {}),
  };
}

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

/*
 * The forks still copying from a session (its `fork_holds` table), each by a hold of its own: a
 * fork is answered before its path is copied, and until it says it has copied it all (releasing
 * its hold), the source keeps what it reads. Deleted, expired or purged, the session leaves every
 * route at once, but its purge waits for the last hold (session-life.ts).
 */

export interface Hold {
  hold: string;
  forkId: string;
  /** When it was taken (milliseconds). */
  since: number;
}

export class ForkHolds {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** Takes a hold for the fork `forkId`; answers it. */
  add(forkId: string): string {
    const hold = newId();
    this.#sql`INSERT INTO fork_holds (hold, fork_id, since) VALUES (${hold}, ${forkId}, ${Date.now()})`;
    return hold;
  }

  has(hold: string): boolean {
    return (
      hasSchema(this.#sql) && this.#sql`SELECT 1 FROM fork_holds WHERE hold = ${hold}`.toArray().length > 0
    );
  }

  remove(hold: string): void {
    if (hasSchema(this.#sql)) this.#sql`DELETE FROM fork_holds WHERE hold = ${hold}`;
  }

  /** The holds on the session, oldest first. */
  list(): Hold[] {
    if (!hasSchema(this.#sql)) return [];
    return this.#sql<{ hold: string; fork_id: string; since: number }>`
      SELECT hold, fork_id, since FROM fork_holds ORDER BY since`
      .toArray()
      .map((row) => ({ hold: row.hold, forkId: row.fork_id, since: row.since }));
  }
}
