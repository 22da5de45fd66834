import { toBase64 } from "../../core/bytes";
import type { StreamAppend, StreamHeader } from "../../core/stream-backup";
import type { StreamContext } from "./context";
import type { AppendData } from "./sources";
import type { StreamState } from "./store";

/*
 * A stream read out for its tenant's backup (core's stream-backup.ts): its header, and its appends
 * a page at a time, each whole: a binary append's bytes, a JSON append's messages. A fork's appends
 * are what it reads, its source's up to the fork point included: a page of them is one call to the
 * source.
 */

const decoder = new TextDecoder();

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

/**
 * A stream's appends from record `from` (where one starts) on and before `until`, about `maxBytes`
 * of them (one at least): what a fork inherits, from its source (an append the fork point cuts
 * ends there), or else its own.
 */
export function appendsOf(
  context: StreamContext,
  stream: StreamState,
  from: number,
  until: number,
  maxBytes: number,
): Promise<AppendData[]> {
  const fork = stream.fork;
  if (!fork || from >= fork.inherited.records)
    return Promise.resolve(context.store.appends(stream, from, until, maxBytes));
  return context.sources.appends(fork.source, from, Math.min(until, fork.inherited.records), maxBytes);
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
  // A fork's page of inherited appends that ends at the fork point, short of `maxBytes`, goes on
  // with its own.
  do {
    const page = await appendsOf(context, stream, at, records, maxBytes - bytes);
    for (const { data, records: count } of page) {
      appends.push(stream.json ? { json: decoder.decode(data) } : { base64: toBase64(data) });
      bytes += data.byteLength;
      at += count;
    }
  } while (at < records && bytes < maxBytes && at === stream.fork?.inherited.records);
  return { appends, next: at < records ? at : null };
}
