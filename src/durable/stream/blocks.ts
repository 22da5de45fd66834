/*
 * How a stream's records are packed into rows. A row (a block) holds consecutive records: their
 * bytes one after another (a JSON stream's messages joined by commas, so a page of them is one
 * array with no work per message), where each record ends, and where each record's append ends.
 * Small appends fill the last block up to BLOCK_BYTES, so a stream of 100,000 twenty-byte chunks
 * is some 600 rows, read in a few steps; an append is never split across blocks.
 *
 * In memory, `ends[i]` is where record i ends in `data`, `batchEnds[i]` the index in the block after
 * the last record of record i's append. A row stores no more of them than it must, so a stream's
 * rows hold about its bytes whatever the size of its records (StoredBlock): a JSON block no ends
 * (a top-level comma ends each message but the last, found again when the block is read), a binary
 * block each record's length as a varint (a byte for a record under 128 bytes); no append ends when
 * every record is an append of its own (a binary stream's, or JSON appends of one message), else
 * each append's record count as a varint. Rows written before this packing have no record count,
 * and both arrays whole (Uint32, little-endian).
 */

/**
 * What a block's row may store (its data and the ends it keeps) before the next append starts
 * another: a row that fits one 4 KiB SQLite page with its other columns, so small appends fill
 * pages rather than spill each row onto a second page.
 */
export const BLOCK_BYTES = 3968;

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

/** The bytes of `records` (a stream holds each record's bytes, its separators apart). */
export function recordBytes(records: readonly Uint8Array[]): number {
  let bytes = 0;
  for (const record of records) bytes += record.byteLength;
  return bytes;
}

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
  const size =
    (block ? block.data.byteLength : 0) +
    separator * (before > 0 ? records.length : records.length - 1) +
    recordBytes(records);
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

/** A block's ends as its row holds them (see above). */
export interface StoredBlock {
  records: number;
  ends: Uint8Array;
  batchEnds: Uint8Array;
}

/** Bytes a block's row stores: its data and the ends it keeps. */
export function storedBytes(block: Pick<Block, "data">, row: StoredBlock): number {
  return block.data.byteLength + row.ends.byteLength + row.batchEnds.byteLength;
}

/** Unsigned LEB128: seven bits a byte, the high bit set on every byte but the last. */
function varints(values: Iterable<number>): Uint8Array {
  const bytes: number[] = [];
  for (let value of values) {
    while (value >= 0x80) {
      bytes.push((value & 0x7f) | 0x80);
      value = Math.floor(value / 0x80);
    }
    bytes.push(value);
  }
  return Uint8Array.from(bytes);
}

function* readVarints(bytes: Uint8Array): Generator<number> {
  let value = 0;
  let scale = 1;
  for (const byte of bytes) {
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      yield value;
      value = 0;
      scale = 1;
    } else {
      scale *= 0x80;
    }
  }
}

/** What a row stores of a block's ends and append ends. */
export function stored(block: Pick<Block, "ends" | "batchEnds">, json: boolean): StoredBlock {
  const records = block.ends.length;
  const lengths: number[] = [];
  const counts: number[] = [];
  let ownAppends = true;
  let appendStart = 0;
  for (let i = 0; i < records; i++) {
    lengths.push(
      (block.ends[i] as number) - (i === 0 ? 0 : (block.ends[i - 1] as number) + separatorOf(json)),
    );
    const end = block.batchEnds[i] as number;
    if (end !== i + 1) ownAppends = false;
    if (end === i + 1) {
      counts.push(end - appendStart);
      appendStart = end;
    }
  }
  return {
    records,
    ends: json ? new Uint8Array(0) : varints(lengths),
    batchEnds: ownAppends ? new Uint8Array(0) : varints(counts),
  };
}

/**
 * A block's ends and append ends from its row: `records` null for a row written before the
 * packing, which holds both whole.
 */
export function unpacked(
  row: { records: number | null; ends: Uint8Array; batchEnds: Uint8Array },
  data: Uint8Array,
  json: boolean,
): Pick<Block, "ends" | "batchEnds"> {
  const whole = (bytes: Uint8Array) => new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  if (row.records === null) return { ends: whole(row.ends), batchEnds: whole(row.batchEnds) };
  const { records } = row;
  let ends: Uint32Array;
  if (json) {
    ends = messageEnds(data, records);
  } else {
    ends = new Uint32Array(records);
    let at = 0;
    let i = 0;
    for (const length of readVarints(row.ends)) {
      at += length;
      ends[i++] = at;
    }
  }
  const batchEnds = new Uint32Array(records);
  if (row.batchEnds.length === 0) {
    for (let i = 0; i < records; i++) batchEnds[i] = i + 1;
  } else {
    let i = 0;
    for (const count of readVarints(row.batchEnds)) {
      const end = i + count;
      for (; i < end; i++) batchEnds[i] = end;
    }
  }
  return { ends, batchEnds };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Where each of a JSON block's `count` messages ends: at each comma outside strings and nesting
 * (the messages are valid JSON, checked when appended), and the last at the data's end.
 */
function messageEnds(data: Uint8Array, count: number): Uint32Array {
  const ends = new Uint32Array(count);
  let found = 0;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < data.length && found < count - 1; i++) {
    const byte = data[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth++;
    else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
    else if (byte === COMMA && depth === 0) ends[found++] = i;
  }
  ends[count - 1] = data.length;
  return ends;
}
