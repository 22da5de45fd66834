import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import { dirname } from "node:path";
import { tryParseJson } from "../core/json";
import { isRecord } from "../core/providers/incoming";
import { errnoCode } from "./errno";
import { syncFolder } from "./sync-folder";

/** Where a batch lies in the log: the offset of its first line, and the offset after its last newline. */
export interface BatchSpan {
  start: number;
  end: number;
}

/** Bytes a mark is written in, padded with spaces, so each mark overwrites the last in place. */
const MARK_SIZE = 64;

/**
 * `last-batch`: where the log's last batch of several lines starts and ends, flushed before any
 * of its lines is written. A crash in the middle of such a batch leaves the log ending between
 * the two, and opening cuts it back to the start, so the batch is gone whole. A batch of one line
 * needs no mark: cut short, it is a torn last line, which opening drops.
 */
export class BatchMark {
  readonly #handle: FileHandle;
  /**
   * The batch marked last; undefined when there is none, or when the mark is unreadable, which
   * only a crash while writing it leaves, before any line of its batch was written.
   */
  readonly last: BatchSpan | undefined;

  private constructor(handle: FileHandle, last: BatchSpan | undefined) {
    this.#handle = handle;
    this.last = last;
  }

  /** Opens the mark, creating it (and flushing its folder, so it outlives a crash) when missing. */
  static async open(file: string): Promise<BatchMark> {
    let handle: FileHandle;
    try {
      handle = await open(file, "r+");
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw error;
      handle = await open(file, "wx+");
      try {
        await syncFolder(dirname(file));
      } catch (syncError) {
        await handle.close().catch(() => undefined);
        throw syncError;
      }
    }
    try {
      const { buffer, bytesRead } = await handle.read(Buffer.alloc(MARK_SIZE), 0, MARK_SIZE, 0);
      return new BatchMark(handle, parseSpan(buffer.toString("utf8", 0, bytesRead)));
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
  }

  /** Records `span` as the last batch, and flushes it. */
  async set(span: BatchSpan): Promise<void> {
    await this.#handle.write(JSON.stringify(span).padEnd(MARK_SIZE), 0, "utf8");
    await this.#handle.datasync();
  }

  async close(): Promise<void> {
    await this.#handle.close();
  }
}

function parseSpan(text: string): BatchSpan | undefined {
  const value = tryParseJson(text);
  if (!isRecord(value)) return undefined;
  const { start, end } = value;
  return Number.isSafeInteger(start) && Number.isSafeInteger(end)
    ? { start: start as number, end: end as number }
    : undefined;
}
