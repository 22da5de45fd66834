import type { EntryRef, PlannedWrite } from "../../core/append";
import { modelSetBy } from "../../core/context";
import type { EntryType, StoredEntry } from "../../core/entries";
import type { EntrySummary } from "../../core/events";
import { langGraphMessagesHeld } from "../../core/framework-custom-messages";
import { nonBlank } from "../../core/info";
import { contentText } from "../../core/messages";
import { entryPage } from "../../core/paging";
import type { EntryQuery } from "../../core/session-schemas";
import type { TreeNodeFields } from "../../core/tree";
import type { Sql } from "../sql";
import type { EntryPage } from "../types";
import {
  CHUNK_BYTES,
  hasSchema,
  INLINE_BYTES,
  insertRows,
  PAGE_CHARS,
  READ_BATCH,
  readChunked,
  rowValues,
  writeChunks,
} from "./schema";

/*
 * Entry rows of a session's SQLite: writing them (with their path indexes, payloads over
 * INLINE_BYTES in chunks, and the label index) and reading payloads back by seq in bounded batches
 * (schema.ts says how a row is stored; fork-source.ts moves a fork's rows as they are).
 * A row whose entry holds blobs (session-blobs.ts) keeps references in its payload, and in
 * `blob_bytes` what the values add to it: sizes and pages count the entry as it is read back.
 * Below: in a fork still copying its path, which rows it still lacks (`CopyState`), which a read
 * that reaches them learns (`CopyNeeded`).
 */

/** An entry's summary as its row is read. */
interface SummaryRow {
  seq: number;
  id: string;
  parent_id: string | null;
  type: string;
  timestamp: string;
  role: string | null;
  [key: string]: SqlStorageValue;
}

/** A node of the tree as its row is read: its summary and its label. */
interface TreeNodeRow extends SummaryRow {
  label: string | null;
}

/** Characters of a node's JSON beside its values: the names, quotes and brackets. */
const NODE_JSON_CHARS = 80;

/** A planned write as stored: its payload with references to blobs, and what their values add. */
export type StoredWrite = PlannedWrite & { blobBytes?: number };

/**
 * A row without its payload: where it sits in the tree, the latest settings on its path, and what
 * the path root → it holds (null for rows stored before paths were counted; and for `leaf` records,
 * which are on no path).
 */
export interface Node {
  seq: number;
  id: string;
  type: EntryType;
  parent_id: string | null;
  depth: number | null;
  last_compaction: number | null;
  last_thinking: number | null;
  last_model: number | null;
  last_tools: number | null;
  /** UTF-8 bytes of the path's entries as stored, their blobs' values included. */
  path_bytes: number | null;
  /** Of them, what blobs' values add. */
  path_blob_bytes: number | null;
  path_messages: number | null;
  /** The seq of the path's first user message with text (what a session's preview shows); null: none. */
  path_preview: number | null;
  [key: string]: SqlStorageValue;
}

const NODE_COLUMNS = `seq, id, type, parent_id, depth, last_compaction, last_thinking, last_model, last_tools,
  path_bytes, path_blob_bytes, path_messages, path_preview`;

/** A path's figures continued by `parent` (none: a root) and an entry of `bytes`, `blobBytes` and `preview`. */
function pathFigures(
  parent: Node | undefined,
  entry: { seq: number; bytes: number; blobBytes: number; message: boolean; preview: boolean },
): Pick<Node, "path_bytes" | "path_blob_bytes" | "path_messages" | "path_preview"> {
  // A parent stored before paths were counted leaves the path uncounted.
  if (parent && parent.path_bytes === null) {
    return { path_bytes: null, path_blob_bytes: null, path_messages: null, path_preview: null };
  }
  return {
    path_bytes: (parent?.path_bytes ?? 0) + entry.bytes + entry.blobBytes,
    path_blob_bytes: (parent?.path_blob_bytes ?? 0) + entry.blobBytes,
    path_messages: (parent?.path_messages ?? 0) + (entry.message ? 1 : 0),
    path_preview: parent?.path_preview ?? (entry.preview ? entry.seq : null),
  };
}

export class EntryRows {
  readonly #storage: SqlStorage;
  readonly #sql: Sql;

  constructor(storage: SqlStorage, sql: Sql) {
    this.#storage = storage;
    this.#sql = sql;
  }

  node(id: string): Node | undefined {
    return this.#storage.exec<Node>(`SELECT ${NODE_COLUMNS} FROM entries WHERE id = ?`, id).toArray()[0];
  }

  nodeAt(seq: number): Node | undefined {
    return this.#storage.exec<Node>(`SELECT ${NODE_COLUMNS} FROM entries WHERE seq = ?`, seq).toArray()[0];
  }

  /** Type and parent of each id that names an entry, in one query. */
  refs(ids: readonly string[]): Map<string, EntryRef> {
    const refs = new Map<string, EntryRef>();
    if (ids.length === 0) return refs;
    for (const row of this.#sql<{ id: string; type: EntryType; parent_id: string | null }>`
      SELECT id, type, parent_id FROM entries WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`) {
      refs.set(row.id, { type: row.type, parentId: row.parent_id });
    }
    return refs;
  }

  lastSeq(): number {
    return this.#sql<{ seq: number | null }>`SELECT max(seq) AS seq FROM entries`.one().seq ?? 0;
  }

  /**
   * UTF-8 bytes of the entries' JSON as stored (inline in the row, or in chunks): all entries, or
   * those of `seqs`. What a session's `bytes` counts, read back from the rows.
   */
  storedBytes(seqs?: readonly number[]): number {
    if (seqs === undefined) {
      const inline = this.#sql<{ bytes: number }>`
        SELECT total(octet_length(body)) + total(blob_bytes) AS bytes FROM entries`.one().bytes;
      const chunked = this.#sql<{ bytes: number }>`
        SELECT total(length(data)) AS bytes FROM entry_chunks`.one().bytes;
      return inline + chunked;
    }
    // Sums read no payload into memory: one query each, however many seqs.
    const all = JSON.stringify(seqs);
    const inline = this.#sql<{ bytes: number }>`
      SELECT total(octet_length(body)) + total(blob_bytes) AS bytes FROM entries
      WHERE seq IN (SELECT value FROM json_each(${all}))`.one().bytes;
    const chunked = this.#sql<{ bytes: number }>`
      SELECT total(length(data)) AS bytes FROM entry_chunks
      WHERE seq IN (SELECT value FROM json_each(${all}))`.one().bytes;
    return inline + chunked;
  }

  /** Payload JSON of each seq, in the order asked, read in bounded batches until `budget` characters. */
  bodies(seqs: readonly number[], budget = Number.POSITIVE_INFINITY): string[] {
    const out: string[] = [];
    let size = 0;
    for (let i = 0; i < seqs.length && size < budget; i += READ_BATCH) {
      const batch = seqs.slice(i, i + READ_BATCH);
      const rows = new Map<number, { body: string | null; chunks: number; blob_bytes: number }>();
      for (const row of this.#sql<{ seq: number; body: string | null; chunks: number; blob_bytes: number }>`
        SELECT seq, body, chunks, blob_bytes FROM entries
        WHERE seq IN (SELECT value FROM json_each(${JSON.stringify(batch)}))`) {
        rows.set(row.seq, row);
      }
      for (const seq of batch) {
        const row = rows.get(seq);
        // Only a fork still copying its path lacks a row a read names: that read waits for it.
        if (!row) throw new CopyNeeded();
        if (size >= budget) break;
        const body = row.body ?? readChunked(this.#sql, seq);
        // A page is as large as it will be once its blobs' values are back in it.
        size += body.length + row.blob_bytes;
        out.push(body);
      }
    }
    return out;
  }

  /** The entries of these seqs, in order, until `budget` characters of payload (at least one). */
  entries(seqs: readonly number[], budget?: number): StoredEntry[] {
    return this.bodies(seqs, budget).map((body, i) => {
      const entry = JSON.parse(body) as StoredEntry;
      entry.seq = seqs[i] as number;
      return entry;
    });
  }

  /** A page of the entries with these seqs, in order. */
  page(seqs: readonly number[]): EntryPage {
    const entries = this.entries(seqs, PAGE_CHARS);
    return { entries, rest: seqs.slice(entries.length) };
  }

  /** Seqs of the entries of these ids whose payloads hold blobs. */
  seqsHoldingBlobs(ids: readonly string[]): number[] {
    if (ids.length === 0) return [];
    return this.#sql<{ seq: number }>`SELECT seq FROM entries
      WHERE blob_bytes > 0 AND id IN (SELECT value FROM json_each(${JSON.stringify(ids)})) ORDER BY seq`
      .toArray()
      .map((row) => row.seq);
  }

  /** Entries with `after < seq <= bound` in append order, at most `limit` (and a page's size). */
  after(after: number, bound: number, limit: number): StoredEntry[] {
    const seqs = this.#sql<{ seq: number }>`SELECT seq FROM entries
      WHERE seq > ${after} AND seq <= ${bound} ORDER BY seq LIMIT ${limit}`
      .toArray()
      .map((row) => row.seq);
    return this.page(seqs).entries;
  }

  /**
   * Summaries of the entries with `after < seq <= bound` in append order, at most `limit`: what a
   * watcher without payloads is sent, read from the rows' first columns, never their payloads.
   */
  summariesAfter(after: number, bound: number, limit: number): EntrySummary[] {
    return this.#sql<SummaryRow>`SELECT seq, id, parent_id, type, timestamp, role FROM entries
      WHERE seq > ${after} AND seq <= ${bound} ORDER BY seq LIMIT ${limit}`
      .toArray()
      .map((row) => {
        const summary: EntrySummary = {
          id: row.id,
          parentId: row.parent_id,
          type: row.type as EntryType,
          seq: row.seq,
          timestamp: row.timestamp,
        };
        if (row.role !== null) summary.role = row.role;
        return summary;
      });
  }

  /** Seqs of a page of entries in append order. */
  seqs(query: EntryQuery = {}): number[] {
    const { after, limit, types } = entryPage(query);
    const rows = types
      ? this.#sql<{ seq: number }>`SELECT seq FROM entries
          WHERE seq > ${after} AND type IN (SELECT value FROM json_each(${JSON.stringify([...types])}))
          ORDER BY seq LIMIT ${limit}`
      : this.#sql<{ seq: number }>`SELECT seq FROM entries WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`;
    return rows.toArray().map((r) => r.seq);
  }

  /**
   * Seqs of the last `count` tree entries up to seq `at`, in append order: counted, never taken as a
   * range of seqs, for seqs are not dense (a head move's record takes one, a fork keeps its
   * source's gaps).
   */
  treeSeqsUpTo(at: number, count: number): number[] {
    return this.#sql<{ seq: number }>`SELECT seq FROM entries WHERE seq <= ${at} AND type != 'leaf'
      ORDER BY seq DESC LIMIT ${count}`
      .toArray()
      .map((row) => row.seq)
      .reverse();
  }

  /**
   * The tree's shape after `after` up to `bound`: each tree entry's seq in append order and its
   * parent's (0: a root), at most `limit`. Read from the rows' first columns, never their payloads.
   */
  treeShape(after: number, bound: number, limit: number): { seqs: number[]; parents: number[] } {
    const seqs: number[] = [];
    const parents: number[] = [];
    for (const row of this.#sql<{ seq: number; parent_seq: number | null }>`
      SELECT seq, parent_seq FROM entries WHERE seq > ${after} AND seq <= ${bound} AND type != 'leaf'
      ORDER BY seq LIMIT ${limit}`) {
      seqs.push(row.seq);
      parents.push(row.parent_seq ?? 0);
    }
    return { seqs, parents };
  }

  /**
   * The tree's nodes of these seqs (no payload but the message role; each with its label), in
   * order, read in bounded batches until `budget` characters (at least one).
   */
  treeNodes(seqs: readonly number[], budget: number): TreeNodeFields[] {
    const out: TreeNodeFields[] = [];
    let size = 0;
    for (let i = 0; i < seqs.length && size < budget; i += READ_BATCH) {
      const batch = seqs.slice(i, i + READ_BATCH);
      const rows = new Map<number, TreeNodeRow>();
      for (const row of this.#sql<TreeNodeRow>`
        SELECT e.seq, e.id, e.parent_id, e.type, e.timestamp, e.role, l.label
        FROM entries e LEFT JOIN labels l ON l.target_id = e.id
        WHERE e.seq IN (SELECT value FROM json_each(${JSON.stringify(batch)}))`) {
        rows.set(row.seq, row);
      }
      for (const seq of batch) {
        const row = rows.get(seq);
        // The shape named it: only a fork still copying its path lacks it.
        if (!row) throw new CopyNeeded();
        if (size >= budget) break;
        const node: TreeNodeFields = {
          id: row.id,
          parentId: row.parent_id,
          type: row.type as TreeNodeFields["type"],
          timestamp: row.timestamp,
        };
        if (row.role !== null) node.role = row.role;
        if (row.label !== null) node.label = row.label;
        size +=
          NODE_JSON_CHARS +
          row.id.length +
          (row.parent_id?.length ?? 0) +
          row.type.length +
          row.timestamp.length +
          (row.role?.length ?? 0) +
          (row.label?.length ?? 0);
        out.push(node);
      }
    }
    return out;
  }

  labels(): Record<string, string> {
    // Entries, not assignments: an entry may be named `__proto__`.
    return Object.fromEntries(
      this.#sql<{ target_id: string; label: string }>`SELECT target_id, label FROM labels`
        .toArray()
        .map((row) => [row.target_id, row.label]),
    );
  }

  /** Writes planned entries (inside the caller's transaction), each parent before its children. */
  insert(writes: readonly StoredWrite[]): void {
    const pending = new Map<string, Node>();
    const rows: SqlStorageValue[][] = [];
    for (const write of writes) pending.set(write.entry.id, this.#row(write, pending, rows));
    insertRows(this.#storage, rows);
  }

  #row(
    { entry, json, bytes, blobBytes }: StoredWrite,
    pending: ReadonlyMap<string, Node>,
    rows: SqlStorageValue[][],
  ): Node {
    const seq = entry.seq;
    const parent =
      entry.parentId === null ? undefined : (pending.get(entry.parentId) ?? this.node(entry.parentId));
    // A parent the plan found that has no row: one of the path a fork is still copying.
    if (entry.parentId !== null && !parent) throw new CopyNeeded({ ids: [entry.parentId] });
    let node: Node;
    if (entry.type === "leaf") {
      node = {
        seq,
        id: entry.id,
        type: "leaf",
        parent_id: null,
        depth: null,
        last_compaction: null,
        last_thinking: null,
        last_model: null,
        last_tools: null,
        path_bytes: null,
        path_blob_bytes: null,
        path_messages: null,
        path_preview: null,
      };
    } else {
      const isModel = modelSetBy(entry) !== undefined;
      const isUser = entry.type === "message" && entry.message.role === "user";
      node = {
        seq,
        id: entry.id,
        type: entry.type,
        parent_id: entry.parentId,
        depth: parent ? (parent.depth ?? 0) + 1 : 0,
        last_compaction: entry.type === "compaction" ? seq : (parent?.last_compaction ?? null),
        last_thinking: entry.type === "thinking_level_change" ? seq : (parent?.last_thinking ?? null),
        last_model: isModel ? seq : (parent?.last_model ?? null),
        last_tools: entry.type === "active_tools_change" ? seq : (parent?.last_tools ?? null),
        ...pathFigures(parent, {
          seq,
          bytes,
          blobBytes: blobBytes ?? 0,
          message: entry.type === "message",
          preview: isUser && contentText(entry.message.content) !== "",
        }),
      };
    }
    const role = entry.type === "message" ? entry.message.role : null;
    const inline = bytes <= INLINE_BYTES;
    const chunks = inline ? 0 : Math.ceil(bytes / CHUNK_BYTES);
    const stored = {
      ...node,
      parent_seq: parent?.seq ?? null,
      role,
      timestamp: entry.timestamp,
      messages_held: entry.type === "leaf" ? null : (langGraphMessagesHeld(entry) ?? null),
      edit_target: entry.type === "context_edit" ? entry.targetId : null,
    };
    rows.push(rowValues({ ...stored, body: inline ? json : null, chunks, blob_bytes: blobBytes ?? 0 }));
    if (!inline) writeChunks(this.#sql, seq, json, chunks);
    if (entry.type === "label") this.setLabel(entry.targetId, entry.label);
    return node;
  }

  /** A label entry's effect on the label index: the latest label of its target (blank clears). */
  setLabel(targetId: string, text: string | undefined): void {
    const label = nonBlank(text);
    if (label === undefined) this.#sql`DELETE FROM labels WHERE target_id = ${targetId}`;
    else this.#sql`INSERT OR REPLACE INTO labels (target_id, label) VALUES (${targetId}, ${label})`;
  }
}

/*
 * Where a fork's copy stands (the `fork_copy` row): the session it copies from, its head's seq
 * there, and the next row of the path to copy. The copy goes from the head up towards the root,
 * so what is still to copy is always the source's path root → that row: the entries with the
 * lowest seqs, every one an ancestor of what the fork holds. Once the root is copied the source
 * is told (`releaseOwed` until it has heard), then the row goes.
 *
 * Beside it, in memory only, what the source said of ids the fork was asked about: whether each
 * is an entry of the path still to copy (its type and parent) or not (null). That path never
 * changes, so what is learnt holds until the copy ends.
 */

/** Ids the state remembers the source's answer about, at most. */
const LEARNT_IDS = 100_000;

export interface CopyPosition {
  sourceId: string;
  /** What the source keeps the path by for this fork (fork-source.ts). */
  hold: string;
  /** The seq of the fork's head in the source (and in the fork). */
  forkSeq: number;
  /** Entries of the path root → head. */
  entries: number;
  /** The next row to copy, and its depth; null: all copied. */
  next: { seq: number; depth: number } | null;
  /** The copy is done, and the source has not heard yet. */
  releaseOwed: boolean;
}

/**
 * A read or a write needs entries the fork's copy has not brought yet: the ids it looked for
 * (which the source is asked about), the entry of the path it reads up to (`reach`: the copy goes
 * on until that entry is copied), or neither when it needs the whole path. The object learns about
 * them, or copies what is needed, and runs it again (fork-copy.ts); nothing was written.
 */
export class CopyNeeded extends Error {
  readonly ids: readonly string[];
  readonly reach: string | undefined;

  constructor(need: { ids?: readonly string[]; reach?: string } = {}) {
    super(
      need.ids?.length
        ? `entries ${need.ids.join(", ")} may be on the path still to copy`
        : need.reach === undefined
          ? "the path is still to copy"
          : `the path is still to copy up to ${need.reach}`,
    );
    this.ids = need.ids ?? [];
    this.reach = need.reach;
  }
}

/** What a read that `PathReads.readsAfter` judged needs: nothing, the path copied up to an entry, or all of it. */
export function readsAfterCopy(readable: boolean | string): void {
  if (readable === true) return;
  throw new CopyNeeded(readable === false ? {} : { reach: readable });
}

export class CopyState {
  readonly #sql: Sql;
  /** The row as stored (undefined: not read yet; null: no copy). */
  #stored: CopyPosition | null | undefined;
  readonly #refs = new Map<string, EntryRef | null>();

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  get state(): Readonly<CopyPosition> | null {
    if (this.#stored === undefined) this.#stored = this.#load();
    return this.#stored;
  }

  /** Whether part of the path is still to copy. */
  get copying(): boolean {
    return this.state?.next != null;
  }

  #load(): CopyPosition | null {
    if (!hasSchema(this.#sql)) return null;
    const row = this.#sql<{
      source_id: string;
      hold: string;
      fork_seq: number;
      entries: number;
      next_seq: number | null;
      next_depth: number | null;
      release_owed: number;
    }>`SELECT source_id, hold, fork_seq, entries, next_seq, next_depth, release_owed FROM fork_copy`.toArray()[0];
    if (!row) return null;
    return {
      sourceId: row.source_id,
      hold: row.hold,
      forkSeq: row.fork_seq,
      entries: row.entries,
      next: row.next_seq === null ? null : { seq: row.next_seq, depth: row.next_depth ?? 0 },
      releaseOwed: row.release_owed === 1,
    };
  }

  /** Reads the row again (a transaction that wrote it rolled back). */
  reload(): void {
    this.#stored = undefined;
  }

  /** Forgets everything (the object's storage was dropped). */
  reset(): void {
    this.#stored = null;
    this.#refs.clear();
  }

  /** A new fork's copy: its head's row and those above it are written; `next` goes on from there. */
  begin(
    position: Omit<CopyPosition, "releaseOwed" | "next"> & { next: { seq: number; depth: number } },
  ): void {
    const { sourceId, hold, forkSeq, entries, next } = position;
    this
      .#sql`INSERT INTO fork_copy (singleton, source_id, hold, fork_seq, entries, next_seq, next_depth, release_owed)
      VALUES (1, ${sourceId}, ${hold}, ${forkSeq}, ${entries}, ${next.seq}, ${next.depth}, 0)`;
    this.#stored = { ...position, releaseOwed: false };
  }

  /** A page was written (inside its transaction): the copy goes on at `next`, or is done. */
  advance(next: CopyPosition["next"]): void {
    const state = this.state;
    if (!state) throw new Error("no copy to advance");
    this.#sql`UPDATE fork_copy SET next_seq = ${next?.seq ?? null}, next_depth = ${next?.depth ?? null},
      release_owed = ${next === null ? 1 : 0}`;
    this.#stored = { ...state, next, releaseOwed: next === null };
    if (next === null) this.#refs.clear();
  }

  /** The source heard that the copy is done: nothing of it is left. */
  released(): void {
    this.#sql`DELETE FROM fork_copy`;
    this.#stored = null;
  }

  /** What the source said of `id`: a path entry still to copy, not one (null), or not asked (undefined). */
  refOf(id: string): EntryRef | null | undefined {
    return this.#refs.get(id);
  }

  /** What the source said of `asked`: those of `found` are entries of the path still to copy, the rest not. */
  learn(asked: readonly string[], found: Readonly<Record<string, EntryRef>>): void {
    if (!this.copying) return;
    // What is learnt is only saved asking again: bounded, it is forgotten at once when too much.
    if (this.#refs.size > LEARNT_IDS) this.#refs.clear();
    for (const id of asked) this.#refs.set(id, Object.hasOwn(found, id) ? (found[id] as EntryRef) : null);
  }

  /** How far the copy is: entries of the path, and of them those copied. */
  progress(): { entries: number; copied: number } | undefined {
    const state = this.state;
    if (!state?.next) return undefined;
    return { entries: state.entries, copied: state.entries - (state.next.depth + 1) };
  }
}
