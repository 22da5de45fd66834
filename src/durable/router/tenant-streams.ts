import { SessionError } from "../../core/errors";
import { decodeCursor, encodeCursor } from "../../core/info";
import type { DurableEnv } from "../env";
import { directoryShards } from "../names";
import type { StreamListing, StreamUsage } from "../types";

/*
 * A tenant's streams as its directory knows them (stream-registry.ts): each shard lists the streams
 * that report to it, by path; a page of the tenant's is the first of every shard's pages merged.
 */

export interface StreamPage {
  streams: StreamListing[];
  nextCursor: string | null;
}

export interface StreamListRequest {
  /** Only the streams whose path starts with it. */
  prefix?: string;
  limit: number;
  cursor?: string;
}

/** The sort key of this listing's cursors (a session listing's is a time). */
const CURSOR_KIND = "streams";

/** The cursor of a listing page that starts after `path`. */
export function streamCursor(path: string): string {
  return encodeCursor(CURSOR_KIND, path);
}

function afterCursor(cursor: string): string {
  const { key, id } = decodeCursor(cursor);
  if (key !== CURSOR_KIND)
    throw new SessionError("invalid_request", "not a cursor of the stream listing", { cursor });
  return id;
}

/**
 * Paths in the order each shard pages them: SQLite compares text by its UTF-8 bytes, that is by
 * code point, where JavaScript's `<` compares UTF-16 units and puts U+E000–U+FFFF after every
 * character beyond U+FFFF (whose surrogates start at U+D800).
 */
function byCodePoint(a: string, b: string): number {
  const shorter = Math.min(a.length, b.length);
  for (let i = 0; i < shorter; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit's place by code point: surrogates after U+E000–U+FFFF, the rest where they are. */
function codePointRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}

/** A page of the tenant's streams (not deleted ones), by path. */
export async function listTenantStreams(
  env: DurableEnv,
  tenant: string,
  request: StreamListRequest,
): Promise<StreamPage> {
  const after = request.cursor === undefined ? null : afterCursor(request.cursor);
  const options = { prefix: request.prefix ?? "", limit: request.limit + 1, after };
  const pages = await Promise.all(directoryShards(env, tenant).map((shard) => shard.listStreams(options)));
  const all = pages.flat().sort((a, b) => byCodePoint(a.path, b.path));
  const streams = all.slice(0, request.limit);
  const last = streams[streams.length - 1];
  return {
    streams,
    nextCursor: all.length > request.limit && last ? streamCursor(last.path) : null,
  };
}

/** The tenant's streams that hold data (deleted ones still read by forks included), and their bytes. */
export async function tenantStreamUsage(env: DurableEnv, tenant: string): Promise<StreamUsage> {
  const shards = await Promise.all(directoryShards(env, tenant).map((shard) => shard.streamUsage()));
  return shards.reduce(
    (sum, shard) => ({ streams: sum.streams + shard.streams, bytes: sum.bytes + shard.bytes }),
    {
      streams: 0,
      bytes: 0,
    },
  );
}
