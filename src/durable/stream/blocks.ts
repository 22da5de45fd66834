/*
 * How a stream's records are packed into rows. A row (a block) holds consecutive records: their
 * bytes one after another (a JSON stream's messages joined by commas, so a page of them is one
 * array with no work per message), where each record ends, and where each record's append ends.
 * Small appends fill the last block up to BLOCK_BYTES, so a stream of 100,000 twenty-byte chunks
 * is some 500 rows, read in a few steps; an append is never split across blocks.
 *
 * `ends` and `batchEnds` are Uint32Arrays stored as their bytes (little-endian, as every Workers
 * machine is): `ends[i]` is where record i ends in `data`, `batchEnds[i]` the index in the block
 * after the last record of record i's append.
 */

/** The data a block may hold before the next append starts another one. */
export const BLOCK_BYTES = 4096;

export interface Block {
  /** The number of its first record. */
  first: number;
  /** Bytes of the stream (separators not counted) before its first record. */
  start: number;
  ends: Uint32Array;
  batchEnds: Uint32Array;
  data: Uint8Array;
}

/** A slice of a block's records: the bytes, how many records, and the stream bytes they hold. */
export interface BlockSlice {
  piece: Uint8Array;
  records: number;
  bytes: number;
}

const COMMA = 0x2c;

/** Between records in a block: a comma in JSON streams, nothing in the others. */
export function separatorOf(json: boolean): number {
  return json ? 1 : 0;
}

/** Where record `i` starts in the block's data. */
function dataStart(block: Block, i: number, separator: number): number {
  return i === 0 ? 0 : (block.ends[i - 1] as number) + separator;
}

export function recordCount(block: Block): number {
  return block.ends.length;
}

/** Bytes of the stream before record `i` of the block. */
export function recordStart(block: Block, i: number, separator: number): number {
  return block.start + dataStart(block, i, separator) - i * separator;
}

/** A block's bytes as SQLite stores them. */
export function bytesOf(view: Uint8Array | Uint32Array): ArrayBuffer {
  const whole = view.byteOffset === 0 && view.byteLength === view.buffer.byteLength;
  return (whole ? view.buffer : view.slice().buffer) as ArrayBuffer;
}

/**
 * Records `from` to `until` (indexes in the block) taking at most `budget` bytes, at least one:
 * the whole records that fit.
 */
export function sliceRecords(
  block: Block,
  from: number,
  until: number,
  budget: number,
  separator: number,
): BlockSlice {
  const begin = dataStart(block, from, separator);
  let last = from;
  while (last + 1 < until) {
    const bytes = (block.ends[last + 1] as number) - begin - (last + 1 - from) * separator;
    if (bytes > budget) break;
    last += 1;
  }
  const end = block.ends[last] as number;
  return {
    piece: block.data.subarray(begin, end),
    records: last + 1 - from,
    bytes: end - begin - (last - from) * separator,
  };
}

/** The data, ends and append ends of `records` written after what `block` holds (if any). */
export function packed(
  block: Pick<Block, "ends" | "batchEnds" | "data"> | undefined,
  records: readonly Uint8Array[],
  separator: number,
): { ends: Uint32Array; batchEnds: Uint32Array; data: Uint8Array } {
  const before = block ? block.ends.length : 0;
  const count = before + records.length;
  // The block's data has its separators; each new record brings one, but for a first record.
  let size =
    (block ? block.data.byteLength : 0) + separator * (before > 0 ? records.length : records.length - 1);
  for (const record of records) size += record.byteLength;
  const data = new Uint8Array(size);
  const ends = new Uint32Array(count);
  const batchEnds = new Uint32Array(count);
  let at = 0;
  if (block) {
    data.set(block.data, 0);
    ends.set(block.ends, 0);
    batchEnds.set(block.batchEnds, 0);
    at = block.data.byteLength;
  }
  records.forEach((record, i) => {
    if (before + i > 0 && separator > 0) data[at++] = COMMA;
    data.set(record, at);
    at += record.byteLength;
    ends[before + i] = at;
    batchEnds[before + i] = count;
  });
  return { ends, batchEnds, data };
}
