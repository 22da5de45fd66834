import { readSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import { SessionError } from "../core/errors";
import { tryParseJson } from "../core/json";
import { BatchMark } from "./batch-mark";
import { errnoCode, ioError } from "./errno";

/** Where a line sits in the log: its first byte and its length in bytes, newline excluded. */
export interface LineSpan {
  offset: number;
  length: number;
}

/** A line read while opening the log. */
export interface ScannedLine extends LineSpan {
  /** 1-based, as editors and error messages count. */
  number: number;
}

const NEWLINE = 0x0a;
/** Bytes read at a time while opening. */
const SCAN_CHUNK = 1 << 20;
/** Lines fetched together are read with one call of at most this many bytes… */
const READ_CHUNK = 4 << 20;
/** …when the bytes between them are fewer than this. */
const READ_GAP = 64 << 10;

/** A line of a log that cannot be read back: never skipped, always an error naming file and line. */
export function corruptLine(file: string, line: number, reason: string): SessionError {
  return new SessionError("invalid_request", `${file}, line ${line}: ${reason}`, { file, line });
}

export interface OpenLogOptions {
  /** Create the file when it is missing (a session with no entries yet), instead of failing. */
  create: boolean;
  /** The file marking the last batch of several lines (see `batch-mark.ts`). */
  markFile: string;
  /** The lines the session's metadata counts as written: confirmed, never cut. */
  confirmedLines: number;
}

/**
 * `entries.jsonl`: an append-only file of JSON lines. Appends are whole batches written at the end
 * and flushed before they count; a failed append is cut off again, and one that a crash cut short
 * is cut off on the next open, so the file only ever holds whole lines of whole batches. Lines are
 * read back by position, so a session's entries do not have to stay in memory.
 */
export class EntryLog {
  readonly file: string;
  readonly #handle: FileHandle;
  readonly #mark: BatchMark;
  #size: number;
  /** Set when a failed append could not be cut off: the file's end is unknown until reopened. */
  #broken: unknown;

  private constructor(file: string, handle: FileHandle, mark: BatchMark, size: number) {
    this.file = file;
    this.#handle = handle;
    this.#mark = mark;
    this.#size = size;
  }

  get size(): number {
    return this.#size;
  }

  /**
   * Opens the log and hands each line's JSON to `accept`, in order. An interrupted append leaves
   * the file ending inside the marked batch, which is cut off whole, or (a batch of one line) a
   * final line without its newline: when that is not valid JSON it is dropped and the file cut
   * back to the last whole line; when it is, only the newline was lost and is written. Any other
   * line that is not JSON, or that `accept` refuses by throwing, fails the open.
   */
  static async open(
    file: string,
    accept: (value: unknown, line: ScannedLine) => void,
    options: OpenLogOptions,
  ): Promise<EntryLog> {
    let handle: FileHandle;
    try {
      handle = await open(file, "r+");
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw ioError("opening", file, error);
      if (!options.create) {
        throw new SessionError("invalid_request", `${file} is missing but the session has entries`, { file });
      }
      handle = await open(file, "wx+");
    }
    let mark: BatchMark | undefined;
    try {
      mark = await BatchMark.open(options.markFile);
      await cutUnfinishedBatch(handle, mark, options.confirmedLines);
      const size = await scan(file, handle, accept);
      // A mark reaching past the end (a crash before its batch was written) would otherwise cut
      // the single lines appended after it, which leave the mark as it is, on a later open.
      if (mark.last !== undefined && mark.last.end > size) await mark.set({ start: size, end: size });
      return new EntryLog(file, handle, mark, size);
    } catch (error) {
      await handle.close().catch(() => undefined);
      await mark?.close().catch(() => undefined);
      throw error;
    }
  }

  /**
   * Appends the lines as one write and flushes it; returns where each landed. A batch of several
   * lines is marked first, so that a crash in the middle of it cannot leave some of its lines.
   */
  async append(lines: readonly string[]): Promise<LineSpan[]> {
    if (this.#broken !== undefined) throw ioError("appending to", this.file, this.#broken);
    const buffers = lines.map((line) => Buffer.from(`${line}\n`, "utf8"));
    const start = this.#size;
    const spans: LineSpan[] = [];
    let end = start;
    for (const buffer of buffers) {
      spans.push({ offset: end, length: buffer.length - 1 });
      end += buffer.length;
    }
    const marked = lines.length > 1;
    try {
      if (marked) await this.#mark.set({ start, end });
      await writeAll(this.#handle, buffers, start);
      await this.#handle.datasync();
    } catch (error) {
      // Part of the batch may have reached the file; cut it off so the log holds whole batches,
      // and clear the mark, which would otherwise cut the lines appended next on reopening.
      try {
        await this.#handle.truncate(start);
        if (marked) await this.#mark.set({ start, end: start });
      } catch (cutError) {
        this.#broken = cutError;
      }
      throw ioError("appending to", this.file, error);
    }
    this.#size = end;
    return spans;
  }

  /** The text of each line, in the order given; lines close together are read with one call. */
  async read(spans: readonly LineSpan[]): Promise<string[]> {
    const texts = new Array<string>(spans.length);
    for (const group of readGroups(spans)) {
      const buffer = Buffer.allocUnsafe(group.length);
      await this.#readInto(buffer, group.offset);
      splitGroup(buffer, group, spans, texts);
    }
    return texts;
  }

  /**
   * The text of each line, read synchronously: for callers that cannot wait (the append planner's
   * view), which read only the few lines they turn out to need.
   */
  readNow(spans: readonly LineSpan[]): string[] {
    const texts = new Array<string>(spans.length);
    for (const group of readGroups(spans)) {
      const buffer = Buffer.allocUnsafe(group.length);
      let done = 0;
      while (done < buffer.length) {
        const n = readSync(this.#handle.fd, buffer, done, buffer.length - done, group.offset + done);
        if (n === 0) throw this.#shorter();
        done += n;
      }
      splitGroup(buffer, group, spans, texts);
    }
    return texts;
  }

  async close(): Promise<void> {
    await Promise.all([this.#handle.close(), this.#mark.close()]);
  }

  async #readInto(buffer: Buffer, position: number): Promise<void> {
    let done = 0;
    while (done < buffer.length) {
      const { bytesRead } = await this.#handle.read(buffer, done, buffer.length - done, position + done);
      if (bytesRead === 0) throw this.#shorter();
      done += bytesRead;
    }
  }

  #shorter(): SessionError {
    const message = `${this.file} is shorter than its index: it was changed by another program`;
    return new SessionError("internal", message, { file: this.file });
  }
}

/** Spans `from` to `to` (exclusive) of a list, read together as the bytes `offset` to `offset + length`. */
interface ReadGroup {
  from: number;
  to: number;
  offset: number;
  length: number;
}

/** The spans grouped into reads: lines close together, in the order given, make one read. */
function* readGroups(spans: readonly LineSpan[]): Generator<ReadGroup> {
  let i = 0;
  while (i < spans.length) {
    const first = spans[i] as LineSpan;
    let end = first.offset + first.length;
    let j = i + 1;
    for (; j < spans.length; j++) {
      const next = spans[j] as LineSpan;
      const nextEnd = next.offset + next.length;
      if (next.offset < end || next.offset - end > READ_GAP || nextEnd - first.offset > READ_CHUNK) break;
      end = nextEnd;
    }
    yield { from: i, to: j, offset: first.offset, length: end - first.offset };
    i = j;
  }
}

/** The text of each line of `group`, cut from the bytes read for it, put at its place in `texts`. */
function splitGroup(buffer: Buffer, group: ReadGroup, spans: readonly LineSpan[], texts: string[]): void {
  for (let k = group.from; k < group.to; k++) {
    const span = spans[k] as LineSpan;
    const at = span.offset - group.offset;
    texts[k] = buffer.toString("utf8", at, at + span.length);
  }
}

async function writeAll(handle: FileHandle, buffers: Buffer[], position: number): Promise<void> {
  let pending = buffers;
  let at = position;
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending, at);
    if (bytesWritten === 0) throw new Error("the file system accepted no bytes");
    at += bytesWritten;
    let skip = bytesWritten;
    while (pending.length > 0 && skip >= (pending[0] as Buffer).length) {
      skip -= (pending[0] as Buffer).length;
      pending = pending.slice(1);
    }
    if (skip > 0) pending = [(pending[0] as Buffer).subarray(skip), ...pending.slice(1)];
  }
}

/** Cuts the log back to the start of its marked batch when it ends inside it: a crash came mid-batch. */
async function cutUnfinishedBatch(
  handle: FileHandle,
  mark: BatchMark,
  confirmedLines: number,
): Promise<void> {
  const batch = mark.last;
  if (batch === undefined) return;
  const { size } = await handle.stat();
  if (size <= batch.start || size >= batch.end) return;
  // Lines confirmed past the batch's start were appended after a crash that left the mark but none
  // of its lines (a release that did not reset such a mark on open): they stay, the mark is stale.
  if ((await linesBefore(handle, batch.start)) < confirmedLines) return;
  await handle.truncate(batch.start);
  await handle.datasync();
}

/** The newlines in the first `end` bytes of the file. */
async function linesBefore(handle: FileHandle, end: number): Promise<number> {
  const buffer = Buffer.alloc(Math.min(end, 1024 * 1024));
  let lines = 0;
  for (let at = 0; at < end; ) {
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, end - at), at);
    if (bytesRead === 0) break;
    for (let i = 0; i < bytesRead; i++) if (buffer[i] === 0x0a) lines++;
    at += bytesRead;
  }
  return lines;
}

/** Reads every line of the log into `accept`, repairs an interrupted last line, returns the size. */
async function scan(
  file: string,
  handle: FileHandle,
  accept: (value: unknown, line: ScannedLine) => void,
): Promise<number> {
  const chunk = Buffer.allocUnsafe(SCAN_CHUNK);
  /** Bytes of the line being read that came in earlier chunks. */
  let carried: Buffer[] = [];
  let lineStart = 0;
  let number = 0;
  let position = 0;
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, SCAN_CHUNK, position);
    if (bytesRead === 0) break;
    const bytes = chunk.subarray(0, bytesRead);
    let from = 0;
    for (let newline = bytes.indexOf(NEWLINE, from); newline !== -1; newline = bytes.indexOf(NEWLINE, from)) {
      const piece = bytes.subarray(from, newline);
      const text =
        carried.length > 0 ? Buffer.concat([...carried, piece]).toString("utf8") : piece.toString("utf8");
      carried = [];
      number++;
      const lineEnd = position + newline;
      const value = tryParseJson(text);
      if (value === undefined) throw corruptLine(file, number, "not valid JSON");
      accept(value, { offset: lineStart, length: lineEnd - lineStart, number });
      lineStart = lineEnd + 1;
      from = newline + 1;
    }
    // Copied: `chunk` is reused by the next read.
    if (from < bytesRead) carried.push(Buffer.from(bytes.subarray(from)));
    position += bytesRead;
  }
  if (carried.length === 0) return position;

  const value = tryParseJson(Buffer.concat(carried).toString("utf8"));
  if (value === undefined) {
    await handle.truncate(lineStart);
    await handle.datasync();
    return lineStart;
  }
  number++;
  accept(value, { offset: lineStart, length: position - lineStart, number });
  await handle.write("\n", position);
  await handle.datasync();
  return position + 1;
}
