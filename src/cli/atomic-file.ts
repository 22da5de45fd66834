import type { WriteStream } from "node:fs";
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Writes `text`, waiting for the stream to drain when its buffer is full. */
export function write(stream: WriteStream, text: string): Promise<void> {
  return stream.write(text)
    ? Promise.resolve()
    : new Promise((resolve) => stream.once("drain", () => resolve()));
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
