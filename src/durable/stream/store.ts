import { randomHex } from "../../core/bytes";
import type { LazyTables, Sql } from "../sql";
import { sqlOf } from "../sql";
import type { Block, StoredBlock } from "./blocks";
import {
  BLOCK_BYTES,
  bytesOf,
  packed,
  recordBytes,
  recordCount,
  recordStart,
  separatorOf,
  sliceRecords,
  stored,
  storedBytes,
  unpacked,
} from "./blocks";
import type { Position } from "./offsets";
import { formatOffset } from "./offsets";
import type { Expiry, Producer } from "./protocol";
import { isJsonType } from "./protocol";
import { streamTables } from "./schema";
import type { AppendData, RecordPage } from "./sources";

/*
 * Streams in an object's SQLite, by key: one stream in a stream's own object, several in an object
 * that hosts them beside its own data. Every method is synchronous and writes through the object's
 * storage, so a caller may group several (append the last data, close the stream, and write its
 * own rows) in one `ctx.storage.transactionSync`. Data is read a page at a time, never whole.
 */

/** Where a fork's inherited data comes from. */
export interface ForkLink {
  /** The source stream's key, as the host resolves it. */
  source: string;
  /** The offset the fork was asked for (or the source's tail when none was given). */
  offset: string;
  subOffset: number;
  /** Records before this position are the source's. */
  inherited: Position;
  /** Forks between this one and its first source that is no fork, this one counted (1 for a fork of one). */
  depth: number;
  /** What the source counts the fork by (fork-source.ts); null for a fork made before tokens. */
  token: string | null;
}

export interface StreamState {
  id: number;
  key: string;
  /** Random per stream: a stream made again under a deleted one's key never looks like it. */
  incarnation: string;
  contentType: string;
  json: boolean;
  expiry: Expiry;
  /** When a read or write last renewed a sliding expiry. */
  renewedAt: number;
  closed: boolean;
  /** The producer append that closed the stream: its retry is a duplicate, not a conflict. */
  closedBy: Producer | null;
  tail: Position;
  /** The highest `Stream-Seq` appended. */
  lastSeq: string | null;
  fork: ForkLink | null;
  /** Forks reading this stream's data. */
  forks: number;
  /** Deleted while forks still read it: kept for them, gone for everyone else. */
  deleted: boolean;
}

/** Part of a block in a planned page: its data from `from` to `to`, whole records. */
export interface PagePart {
  first: number;
  from: number;
  to: number;
}

/** A page planned, not yet read: where it begins and ends, and the parts of blocks it is made of. */
export interface PagePlan {
  /** Bytes of the stream before its first record. */
  start: number;
  end: Position;
  parts: PagePart[];
}

export interface NewStream {
  contentType: string;
  expiry: Expiry;
  closed: boolean;
  fork: ForkLink | null;
  now: number;
}

export interface AppendWrite {
  /** Records to add, each with the end of its append's batch. */
  records: readonly Uint8Array[];
  close: boolean;
  /** The producer whose append this is, recorded with its sequence number. */
  producer: Producer | null;
  streamSeq: string | null;
  now: number;
}

type StreamRow = {
  id: number;
  key: string;
  incarnation: string;
  content_type: string;
  ttl_seconds: number | null;
  expires_at: number | null;
  renewed_at: number;
  closed: number;
  closed_by: string | null;
  tail_records: number;
  tail_bytes: number;
  last_seq: string | null;
  fork_source: string | null;
  fork_offset: string | null;
  fork_sub_offset: number | null;
  fork_records: number | null;
  fork_bytes: number | null;
  fork_depth: number;
  fork_token: string | null;
  forks: number;
  deleted_at: number | null;
};

function stateOf(row: StreamRow): StreamState {
  return {
    id: row.id,
    key: row.key,
    incarnation: row.incarnation,
    contentType: row.content_type,
    json: isJsonType(row.content_type),
    expiry: { ttlSeconds: row.ttl_seconds, expiresAt: row.expires_at },
    renewedAt: row.renewed_at,
    closed: row.closed === 1,
    closedBy: row.closed_by === null ? null : (JSON.parse(row.closed_by) as Producer),
    tail: { records: row.tail_records, bytes: row.tail_bytes },
    lastSeq: row.last_seq,
    fork:
      row.fork_source === null
        ? null
        : {
            source: row.fork_source,
            offset: row.fork_offset as string,
            subOffset: row.fork_sub_offset ?? 0,
            inherited: { records: row.fork_records as number, bytes: row.fork_bytes as number },
            depth: row.fork_depth,
            token: row.fork_token,
          },
    forks: row.forks,
    deleted: row.deleted_at !== null,
  };
}

/** How many blocks' sizes a page's plan reads at a time. */
const PLAN_ROWS = 64;

/** A block's place and size, without its data. */
type BlockSize = { first: number; start: number; size: number; count: number };

type BlockRow = {
  first: number;
  start: number;
  records: number | null;
  ends: ArrayBuffer;
  batch_ends: ArrayBuffer;
  data: ArrayBuffer;
};

function blockOf(row: BlockRow, json: boolean): Block {
  const data = new Uint8Array(row.data);
  const { ends, batchEnds } = unpacked(
    { records: row.records, ends: new Uint8Array(row.ends), batchEnds: new Uint8Array(row.batch_ends) },
    data,
    json,
  );
  return { first: row.first, start: row.start, ends, batchEnds, data };
}

/** When a stream expires, if it does: its fixed end, or its sliding window from the last renewal. */
export function deadlineOf(stream: Pick<StreamState, "expiry" | "renewedAt">): number | null {
  const { expiresAt, ttlSeconds } = stream.expiry;
  if (expiresAt !== null) return expiresAt;
  return ttlSeconds === null ? null : stream.renewedAt + ttlSeconds * 1000;
}

export class StreamStore {
  readonly #sql: Sql;
  /**
   * The stream tables: made by the first create, so an object only ever asked about streams it
   * does not have stores nothing.
   */
  readonly #tables: LazyTables;

  /** Opens the store in `storage`, updating its tables if it has them (call it inside a transaction). */
  constructor(storage: SqlStorage) {
    this.#sql = sqlOf(storage);
    this.#tables = streamTables(storage);
  }

  /** A transaction failed: whether the tables exist is read again when next needed. */
  reload(): void {
    this.#tables.reload();
  }

  get(key: string): StreamState | undefined {
    if (!this.#tables.exist()) return undefined;
    const row = this.#sql<StreamRow>`SELECT * FROM streams WHERE key = ${key}`.toArray()[0];
    return row && stateOf(row);
  }

  /**
   * A new stream whose first data (after what it inherits, if it is a fork) is `batches`: each a
   * list of records written as one append.
   */
  create(key: string, stream: NewStream, batches: readonly (readonly Uint8Array[])[]): StreamState {
    this.#tables.make();
    const { fork } = stream;
    const start = fork?.inherited ?? { records: 0, bytes: 0 };
    this.#sql`INSERT INTO streams (key, incarnation, content_type, ttl_seconds, expires_at, renewed_at,
        tail_records, tail_bytes, fork_source, fork_offset, fork_sub_offset, fork_records, fork_bytes,
        fork_depth, fork_token)
      VALUES (${key}, ${randomHex(8)}, ${stream.contentType}, ${stream.expiry.ttlSeconds},
        ${stream.expiry.expiresAt}, ${stream.now}, ${start.records}, ${start.bytes}, ${fork?.source ?? null},
        ${fork?.offset ?? null}, ${fork?.subOffset ?? null}, ${fork?.inherited.records ?? null},
        ${fork?.inherited.bytes ?? null}, ${fork?.depth ?? 0}, ${fork?.token ?? null})`;
    const created = this.get(key) as StreamState;
    let tail = created.tail;
    for (const batch of batches) tail = this.#write(created, batch, tail);
    if (stream.closed) this.#sql`UPDATE streams SET closed = 1 WHERE id = ${created.id}`;
    return this.get(key) as StreamState;
  }

  /**
   * Adds records after the tail as one append (one batch), closes the stream when asked, and
   * records the producer's sequence and the `Stream-Seq`. Answers the new tail.
   */
  append(stream: StreamState, write: AppendWrite): Position {
    const tail = this.#write(stream, write.records, stream.tail);
    const closedBy = write.close && write.producer ? JSON.stringify(write.producer) : null;
    this.#sql`UPDATE streams SET renewed_at = ${write.now},
        last_seq = coalesce(${write.streamSeq}, last_seq),
        closed = max(closed, ${write.close ? 1 : 0}),
        closed_by = coalesce(closed_by, ${closedBy})
      WHERE id = ${stream.id}`;
    if (write.producer) {
      const { id, epoch, seq } = write.producer;
      this.#sql`INSERT INTO stream_producers (stream_id, producer, epoch, last_seq)
        VALUES (${stream.id}, ${id}, ${epoch}, ${seq})
        ON CONFLICT (stream_id, producer) DO UPDATE SET epoch = excluded.epoch, last_seq = excluded.last_seq`;
    }
    return tail;
  }

  /**
   * Writes records after `from` as one append: into the last block while it has room, else as a
   * block of their own. Answers the new tail.
   */
  #write(stream: StreamState, records: readonly Uint8Array[], from: Position): Position {
    if (records.length === 0) return from;
    const separator = separatorOf(stream.json);
    const bytes = recordBytes(records);
    const last = this.#sql<{ first: number; count: number; stored: number }>`SELECT first,
        coalesce(records, length(ends) / 4) AS count,
        length(data) + length(ends) + length(batch_ends) AS stored
      FROM stream_blocks WHERE stream_id = ${stream.id} ORDER BY first DESC LIMIT 1`.toArray()[0];
    const joined = last && this.#joined(stream, last, records, from, bytes);
    if (last && joined) {
      const { block, row } = joined;
      this.#sql`UPDATE stream_blocks SET records = ${row.records}, ends = ${bytesOf(row.ends)},
          batch_ends = ${bytesOf(row.batchEnds)}, data = ${bytesOf(block.data)}
        WHERE stream_id = ${stream.id} AND first = ${last.first}`;
    } else {
      const block = packed(undefined, records, separator);
      const row = stored(block, stream.json);
      this.#sql`INSERT INTO stream_blocks (stream_id, first, start, records, ends, batch_ends, data)
        VALUES (${stream.id}, ${from.records}, ${from.bytes}, ${row.records}, ${bytesOf(row.ends)},
          ${bytesOf(row.batchEnds)}, ${bytesOf(block.data)})`;
    }
    const tail = { records: from.records + records.length, bytes: from.bytes + bytes };
    this.#sql`UPDATE streams SET tail_records = ${tail.records}, tail_bytes = ${tail.bytes}
      WHERE id = ${stream.id}`;
    return tail;
  }

  /**
   * The last block with the append's records after its own, when the append begins where it ends
   * (a fork's first append starts its own block after what it inherits) and its row, with them,
   * still fits BLOCK_BYTES; only then is it read whole.
   */
  #joined(
    stream: StreamState,
    last: { first: number; count: number; stored: number },
    records: readonly Uint8Array[],
    from: Position,
    bytes: number,
  ): { block: ReturnType<typeof packed>; row: StoredBlock } | undefined {
    if (last.first + last.count !== from.records || last.stored + bytes > BLOCK_BYTES) return undefined;
    const block = packed(this.#block(stream, last.first), records, separatorOf(stream.json));
    const row = stored(block, stream.json);
    return storedBytes(block, row) <= BLOCK_BYTES ? { block, row } : undefined;
  }

  #block(stream: StreamState, first: number): Block {
    const row = this.#sql<BlockRow>`SELECT first, start, records, ends, batch_ends, data FROM stream_blocks
      WHERE stream_id = ${stream.id} AND first = ${first}`.one();
    return blockOf(row, stream.json);
  }

  /** A producer's epoch and last sequence number on a stream, if it wrote there. */
  producer(stream: StreamState, producerId: string): { epoch: number; lastSeq: number } | undefined {
    const row = this.#sql<{ epoch: number; last_seq: number }>`SELECT epoch, last_seq FROM stream_producers
      WHERE stream_id = ${stream.id} AND producer = ${producerId}`.toArray()[0];
    return row && { epoch: row.epoch, lastSeq: row.last_seq };
  }

  /** The stream's own blocks, in order, from the one holding record `from` to the last before `until`. */
  #blocksBetween(stream: StreamState, from: number, until: number): SqlStorageCursor<BlockRow> {
    return this.#sql<BlockRow>`SELECT first, start, records, ends, batch_ends, data FROM stream_blocks
      WHERE stream_id = ${stream.id} AND first < ${until} AND first >= coalesce(
        (SELECT max(first) FROM stream_blocks WHERE stream_id = ${stream.id} AND first <= ${from}), 0)
      ORDER BY first`;
  }

  /**
   * Own records from number `from` on and before `until`, in order, until `maxBytes` are
   * reached: at least one when there is one, so a record larger than the page still goes out.
   * The pieces are views of the blocks read; null when there is no record to give.
   */
  page(stream: StreamState, from: number, until: number, maxBytes: number): RecordPage | null {
    const separator = separatorOf(stream.json);
    const pieces: Uint8Array[] = [];
    let page: Omit<RecordPage, "pieces"> | undefined;
    let next = from;
    let bytes = 0;
    const rows = this.#blocksBetween(stream, from, until);
    for (const row of rows) {
      const block = blockOf(row, stream.json);
      const index = next - block.first;
      const stop = Math.min(recordCount(block), until - block.first);
      if (index < 0 || index >= stop) continue;
      const slice = sliceRecords(
        block,
        index,
        stop,
        pieces.length === 0 ? maxBytes : maxBytes - bytes,
        separator,
      );
      if (pieces.length > 0 && bytes + slice.bytes > maxBytes) break;
      page ??= {
        first: from,
        start: recordStart(block, index, separator),
        end: { records: from, bytes: 0 },
        batchEnd: Math.min(block.first + (block.batchEnds[index] as number), until),
      };
      pieces.push(slice.piece);
      next += slice.records;
      bytes += slice.bytes;
      if (bytes >= maxBytes || index + slice.records < stop) break;
    }
    if (!page) return null;
    return { ...page, end: { records: next, bytes: page.start + bytes }, pieces };
  }

  /**
   * Own appends from record `from` (where one starts) on and before `until` (an append it cuts
   * ends there), in order, until `maxBytes` are reached: at least one when there is one. Each is
   * a copy of its records' bytes (an append is never split across blocks).
   */
  appends(stream: StreamState, from: number, until: number, maxBytes: number): AppendData[] {
    const separator = separatorOf(stream.json);
    const appends: AppendData[] = [];
    let next = from;
    let bytes = 0;
    const rows = this.#blocksBetween(stream, from, until);
    for (const row of rows) {
      const block = blockOf(row, stream.json);
      const stop = Math.min(recordCount(block), until - block.first);
      for (let index = next - block.first; index >= 0 && index < stop; index = next - block.first) {
        const end = Math.min(block.batchEnds[index] as number, stop);
        const begin = index === 0 ? 0 : (block.ends[index - 1] as number) + separator;
        const data = block.data.slice(begin, block.ends[end - 1] as number);
        if (appends.length > 0 && bytes + data.byteLength > maxBytes) return appends;
        appends.push({ data, records: end - index });
        next = block.first + end;
        bytes += data.byteLength;
      }
    }
    return appends;
  }

  /**
   * A page of own records from number `from` on and before `until`, planned from the blocks'
   * sizes without reading their data: whole blocks after the first (cut only where `until`
   * falls), stopping before the block that would take it past `maxBytes` (one block at least).
   * `blockData` then reads each part as the answer is sent, so a reader holds one block at a time.
   */
  plan(stream: StreamState, from: number, until: number, maxBytes: number): PagePlan | null {
    const separator = separatorOf(stream.json);
    const parts: PagePart[] = [];
    let start = 0;
    let bytes = 0;
    let next = from;
    for (const row of this.#blockSizes(stream, from, until)) {
      const index = next - row.first;
      if (index < 0 || index >= row.count) continue;
      const stop = Math.min(row.count, until - row.first);
      const ends = index > 0 || stop < row.count ? this.#ends(stream, row.first) : undefined;
      const dataFrom = index === 0 ? 0 : (ends?.[index - 1] as number) + separator;
      const dataTo = stop === row.count ? row.size : (ends?.[stop - 1] as number);
      const partBytes = dataTo - dataFrom - (stop - index - 1) * separator;
      if (parts.length > 0 && bytes + partBytes > maxBytes) break;
      if (parts.length === 0) start = row.start + dataFrom - index * separator;
      parts.push({ first: row.first, from: dataFrom, to: dataTo });
      bytes += partBytes;
      next = row.first + stop;
      if (bytes >= maxBytes || stop < row.count) break;
    }
    return parts.length === 0 ? null : { start, end: { records: next, bytes: start + bytes }, parts };
  }

  /**
   * The sizes of the blocks holding records from number `from` on and before `until`, in order:
   * read PLAN_ROWS at a time, so a page that stops early reads no more of a long stream's rows.
   */
  *#blockSizes(stream: StreamState, from: number, until: number): Generator<BlockSize> {
    const holding = this.#sql<{ first: number | null }>`SELECT max(first) AS first FROM stream_blocks
      WHERE stream_id = ${stream.id} AND first <= ${from}`.one().first;
    for (let lowest = holding ?? 0; ; ) {
      const rows = this.#sql<BlockSize>`SELECT first, start, length(data) AS size,
          coalesce(records, length(ends) / 4) AS count
        FROM stream_blocks WHERE stream_id = ${stream.id} AND first >= ${lowest} AND first < ${until}
        ORDER BY first LIMIT ${PLAN_ROWS}`.toArray();
      yield* rows;
      if (rows.length < PLAN_ROWS) return;
      lowest = (rows[rows.length - 1] as BlockSize).first + 1;
    }
  }

  /** The data of one block, as `plan` named it (undefined once the stream is gone). */
  blockData(stream: StreamState, first: number): Uint8Array | undefined {
    const row = this.#sql<{ data: ArrayBuffer }>`SELECT data FROM stream_blocks
      WHERE stream_id = ${stream.id} AND first = ${first}`.toArray()[0];
    return row && new Uint8Array(row.data);
  }

  #ends(stream: StreamState, first: number): Uint32Array {
    return this.#block(stream, first).ends;
  }

  /** Whether a position is where one of the stream's own records starts. */
  startsRecord(stream: StreamState, position: Position): boolean {
    const row = this.#sql<BlockRow>`SELECT first, start, records, ends, batch_ends, data FROM stream_blocks
      WHERE stream_id = ${stream.id} AND first <= ${position.records} ORDER BY first DESC LIMIT 1`.toArray()[0];
    if (!row) return false;
    const block = blockOf(row, stream.json);
    const index = position.records - block.first;
    return (
      index < recordCount(block) && recordStart(block, index, separatorOf(stream.json)) === position.bytes
    );
  }

  /** Starts a sliding expiry's window again from `now`. */
  renew(stream: StreamState, now: number): void {
    this.#sql`UPDATE streams SET renewed_at = ${now} WHERE id = ${stream.id}`;
  }

  /** Deleted, but kept (data and all) for the forks that still read it. */
  markDeleted(stream: StreamState, now: number): void {
    this.#sql`UPDATE streams SET deleted_at = ${now} WHERE id = ${stream.id}`;
  }

  /**
   * Removes the stream and its data. A fork's source must hear that one of its forks is gone:
   * that is recorded here, in the same transaction, and answered by `releases` until done.
   */
  remove(stream: StreamState): void {
    this.#sql`DELETE FROM stream_blocks WHERE stream_id = ${stream.id}`;
    this.#sql`DELETE FROM stream_producers WHERE stream_id = ${stream.id}`;
    this.#sql`DELETE FROM stream_fork_tokens WHERE stream_id = ${stream.id}`;
    this.#sql`DELETE FROM streams WHERE id = ${stream.id}`;
    if (stream.fork) {
      this
        .#sql`INSERT INTO stream_releases (source, token) VALUES (${stream.fork.source}, ${stream.fork.token})`;
    }
  }

  /**
   * A fork of `source` about to be counted by it under `token`: its release is recorded before the
   * source is asked, and stays due unless `dropRelease` takes it back (the fork was made, or its
   * source counted nothing).
   */
  pendingFork(source: string, token: string): void {
    this.#tables.make();
    this.#sql`INSERT INTO stream_releases (source, token) VALUES (${source}, ${token})`;
  }

  /** The release recorded for the fork of `token` is not due: the fork was made, or never counted. */
  dropRelease(token: string): void {
    this.#sql`DELETE FROM stream_releases WHERE token = ${token}`;
  }

  /** Counts the fork of `token` among the stream's forks, once however often it is asked. */
  addFork(stream: StreamState, token: string): void {
    this.#sql`UPDATE streams SET forks = forks + 1 WHERE id = ${stream.id} AND NOT EXISTS (
        SELECT 1 FROM stream_fork_tokens WHERE stream_id = ${stream.id} AND token = ${token})`;
    this.#sql`INSERT OR IGNORE INTO stream_fork_tokens (stream_id, token) VALUES (${stream.id}, ${token})`;
  }

  /**
   * The fork of `token` is gone (counted off once, however often it is told; null: a fork made
   * before tokens, counted off each time). Answers how many forks remain.
   */
  dropFork(stream: StreamState, token: string | null): number {
    if (token === null) {
      this.#sql`UPDATE streams SET forks = max(forks - 1, 0) WHERE id = ${stream.id}`;
    } else {
      this.#sql`UPDATE streams SET forks = max(forks - 1, 0) WHERE id = ${stream.id} AND EXISTS (
          SELECT 1 FROM stream_fork_tokens WHERE stream_id = ${stream.id} AND token = ${token})`;
      this.#sql`DELETE FROM stream_fork_tokens WHERE stream_id = ${stream.id} AND token = ${token}`;
    }
    return (this.get(stream.key) as StreamState).forks;
  }

  /** Sources still to be told that a fork of theirs is gone (or was never made), with its token. */
  releases(): { id: number; source: string; token: string | null }[] {
    if (!this.#tables.exist()) return [];
    return this.#sql<{
      id: number;
      source: string;
      token: string | null;
    }>`SELECT id, source, token FROM stream_releases ORDER BY id`.toArray();
  }

  released(id: number): void {
    this.#sql`DELETE FROM stream_releases WHERE id = ${id}`;
  }

  /** The earliest time a live stream expires, if any does. */
  nextDeadline(): number | null {
    if (!this.#tables.exist()) return null;
    const row = this.#sql<{ deadline: number | null }>`SELECT min(coalesce(expires_at,
        renewed_at + ttl_seconds * 1000)) AS deadline FROM streams WHERE deleted_at IS NULL`.one();
    return row.deadline;
  }

  /** Keys of live streams whose time is up. */
  expired(now: number): string[] {
    if (!this.#tables.exist()) return [];
    return this.#sql<{ key: string }>`SELECT key FROM streams WHERE deleted_at IS NULL
        AND coalesce(expires_at, renewed_at + ttl_seconds * 1000) <= ${now}`
      .toArray()
      .map((row) => row.key);
  }
}

/** The ETag of a read from `from` to `to`: it changes with the data and with closing. */
export function entityTag(stream: StreamState, from: Position, to: Position, closedAtEnd: boolean): string {
  return `"${stream.incarnation}:${formatOffset(from)}:${formatOffset(to)}${closedAtEnd ? ":c" : ""}"`;
}
