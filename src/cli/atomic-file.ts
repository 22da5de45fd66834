import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Writable } from "node:stream";

/**
 * Writes `text`, waiting for the stream to drain when its buffer is full. A stream that failed, or
 * fails while it is waited for, rejects with its error: a drain that never comes is not waited for.
 */
export function write(stream: Writable, text: string): Promise<void> {
  if (stream.errored) return Promise.reject(stream.errored);
  if (stream.write(text)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const drained = () => {
      stream.off("error", failed);
      resolve();
    };
    const failed = (error: Error) => {
      stream.off("drain", drained);
      reject(error);
    };
    stream.once("drain", drained);
    stream.once("error", failed);
  });
}

/**
 * Writes streamed text to `path` only once all of it arrived: into a hidden file beside it first,
 * renamed over `path` at the end. A stream that fails leaves `path` as it was (no empty or half
 * file), and the hidden file is removed.
 */
export async function writeFileAtomically(path: string, chunks: AsyncIterable<string>): Promise<void> {
  const partial = join(dirname(path), `.${basename(path)}.${process.pid}.partial`);
  const file = createWriteStream(partial);
  const closed = new Promise<void>((resolve, reject) => {
    file.once("close", resolve);
    file.once("error", reject);
  });
  // The file may fail (it cannot be opened, the disk is full) while the next chunk is awaited: its
  // error is held here and thrown by the next write or the close, never left unhandled.
  closed.catch(() => undefined);
  try {
    for await (const chunk of chunks) await write(file, chunk);
    file.end();
    await closed;
    await rename(partial, path);
  } catch (error) {
    file.destroy();
    await closed.catch(() => undefined);
    await rm(partial, { force: true });
    throw error;
  }
}
