import { concatBytes, toBase64 } from "../../core/bytes";
import type { StreamAppend, StreamHeader } from "../../core/stream-backup";
import type { StreamContext } from "./context";
import { pageBytes } from "./context";

/*
 * A stream read out for its tenant's backup (core's stream-backup.ts): its header, and its appends
 * a page at a time, each whole: a binary append's bytes, a JSON append's messages. A fork's appends
 * are what it reads, its source's up to the fork point included.
 */

const decoder = new TextDecoder();
const COMMA = new Uint8Array([0x2c]);

export async function exportHeader(context: StreamContext, key: string): Promise<StreamHeader> {
  const stream = await context.visible(key);
  const { ttlSeconds, expiresAt } = stream.expiry;
  return {
    path: key,
    contentType: stream.contentType,
    ttlSeconds,
    expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
    closed: stream.closed,
  };
}

/** The appends from record `from` on, about `maxBytes` of them (one at least), and where the next page starts. */
export async function exportAppends(
  context: StreamContext,
  key: string,
  from: number,
  maxBytes: number,
): Promise<{ appends: StreamAppend[]; next: number | null }> {
  const stream = await context.visible(key);
  const { records } = stream.tail;
  const appends: StreamAppend[] = [];
  let at = from;
  let bytes = 0;
  while (at < records && (appends.length === 0 || bytes < maxBytes)) {
    const first = await context.page(stream, at, records, 1);
    if (!first) break;
    const whole =
      first.end.records >= first.batchEnd
        ? first
        : await context.page(stream, at, first.batchEnd, Number.POSITIVE_INFINITY);
    if (!whole) break;
    const pieces = stream.json
      ? whole.pieces.flatMap((piece, i) => (i === 0 ? [piece] : [COMMA, piece]))
      : whole.pieces;
    const data = concatBytes(
      pieces,
      pieces.reduce((size, piece) => size + piece.byteLength, 0),
    );
    appends.push(stream.json ? { json: decoder.decode(data) } : { base64: toBase64(data) });
    bytes += pageBytes(whole);
    at = whole.end.records;
  }
  return { appends, next: at < records ? at : null };
}
