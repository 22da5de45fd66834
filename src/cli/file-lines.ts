import { createReadStream } from "node:fs";
import { concatBytes } from "../core/bytes";

const NEWLINE = 0x0a;

/**
 * The lines of a file as its bytes, without their newline, read a piece at a time (a file too
 * large to hold as one string is read all the same); the last even when no newline ends it. They
 * are left as bytes so that each is decoded, and checked, by its reader.
 */
export async function* fileLines(path: string): AsyncGenerator<Uint8Array> {
  let parts: Uint8Array[] = [];
  let pending = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Uint8Array>) {
    let start = 0;
    for (let newline = chunk.indexOf(NEWLINE); newline >= 0; newline = chunk.indexOf(NEWLINE, start)) {
      parts.push(chunk.subarray(start, newline));
      yield concatBytes(parts, pending + newline - start);
      parts = [];
      pending = 0;
      start = newline + 1;
    }
    if (start < chunk.byteLength) {
      parts.push(chunk.subarray(start));
      pending += chunk.byteLength - start;
    }
  }
  if (pending > 0) yield concatBytes(parts, pending);
}
