import type { ListOptions, SessionInfo, SessionPage, TenantSearchResult } from "../../core";
import { encodeCursor, SseReader, sessionsPageLimit, sortKey } from "../../core";
import type { SessionDirectory } from "../directory/session-directory";
import type { DurableEnv } from "../env";
import { directoryObjectName } from "../names";

/*
 * A tenant's directory in shards: each session reports to one shard for its whole life, chosen
 * when it is created by a stable hash of its id over the shard count configured then
 * (DIRECTORY_SHARDS). Listing and search ask every shard and merge.
 *
 * The count may grow: sessions created before keep reporting to the shard they were given (it is
 * stored with them), new sessions spread over all shards, and listing reads every shard up to the
 * current count, which includes every shard ever used. So no row is lost or listed twice. The
 * count must never shrink: the shards above it would no longer be read.
 */

export const DEFAULT_SHARDS = 1;
export const MAX_SHARDS = 64;

/** The configured shard count (DIRECTORY_SHARDS, 1 to 64). */
export function shardCount(env: Pick<DurableEnv, "DIRECTORY_SHARDS">): number {
  const value = Number(env.DIRECTORY_SHARDS ?? DEFAULT_SHARDS);
  return Number.isInteger(value) && value >= 1 ? Math.min(value, MAX_SHARDS) : DEFAULT_SHARDS;
}

/** FNV-1a over the id's UTF-8 bytes: the same shard for the same id, in every runtime and release. */
export function shardOf(sessionId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(sessionId)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

export function directoryShard(
  env: Pick<DurableEnv, "DIRECTORY">,
  tenant: string,
  shard: number,
): DurableObjectStub<SessionDirectory> {
  return env.DIRECTORY.getByName(directoryObjectName(tenant, shard));
}

/** Every shard of a tenant's directory, in order. */
export function directoryShards(env: DurableEnv, tenant: string): DurableObjectStub<SessionDirectory>[] {
  return Array.from({ length: shardCount(env) }, (_, shard) => directoryShard(env, tenant, shard));
}

/**
 * One page of the tenant's listing from the pages each shard answered for the same options: each
 * holds its shard's first `limit` sessions after the cursor, so together they hold the tenant's.
 */
export function mergePages(pages: readonly SessionPage[], options: ListOptions): SessionPage {
  if (pages.length === 1) return pages[0] as SessionPage;
  const limit = sessionsPageLimit(options);
  const order = options.order ?? "updated";
  const all: Array<{ info: SessionInfo; key: string }> = [];
  for (const page of pages) for (const info of page.sessions) all.push({ info, key: sortKey(info, order) });
  all.sort((a, b) =>
    a.key === b.key ? (a.info.id < b.info.id ? 1 : a.info.id > b.info.id ? -1 : 0) : a.key < b.key ? 1 : -1,
  );
  const page = all.slice(0, limit);
  const last = page[page.length - 1];
  const more = all.length > limit || pages.some((p) => p.nextCursor !== null);
  return {
    sessions: page.map(({ info }) => info),
    nextCursor: more && last ? encodeCursor(last.key, last.info.id) : null,
  };
}

/** Search results best first: by score, then the most recently updated, then by id. */
export function rankResults(results: TenantSearchResult[]): TenantSearchResult[] {
  return results.sort(
    (a, b) =>
      b.score - a.score ||
      (a.session.updatedAt === b.session.updatedAt
        ? a.session.id < b.session.id
          ? -1
          : 1
        : a.session.updatedAt < b.session.updatedAt
          ? 1
          : -1),
  );
}

/** The best `limit` results of every shard's best. */
export function mergeSearchResults(
  answers: readonly TenantSearchResult[][],
  limit: number,
): TenantSearchResult[] {
  return rankResults(answers.flat()).slice(0, limit);
}

/** How often a merged event stream says it is alive when nothing happens (for proxies). */
const KEEP_ALIVE_MS = 15_000;

/**
 * The event streams of every shard as one: each event passed on whole, as it arrives from its
 * shard. When one shard's stream ends (its object restarted) the merged stream ends too, so the
 * watcher reconnects to all of them.
 */
export function mergeEventStreams(
  streams: readonly ReadableStream<Uint8Array>[],
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const readers = streams.map((stream) => stream.getReader());
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let ended = false;
  const end = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (ended) return;
    ended = true;
    if (keepAlive !== undefined) clearInterval(keepAlive);
    for (const reader of readers) reader.cancel().catch(() => undefined);
    controller.close();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      keepAlive = setInterval(() => controller.enqueue(encoder.encode(": keep-alive\n\n")), KEEP_ALIVE_MS);
      for (const reader of readers) {
        const sse = new SseReader();
        const decoder = new TextDecoder();
        void (async () => {
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done || ended) break;
              for (const event of sse.push(decoder.decode(value, { stream: true }))) {
                controller.enqueue(encoder.encode(`event: ${event.event}\ndata: ${event.data}\n\n`));
              }
            }
          } catch {
            // The shard's stream broke: ending the merged one lets the watcher reconnect.
          }
          end(controller);
        })();
      }
    },
    cancel() {
      ended = true;
      if (keepAlive !== undefined) clearInterval(keepAlive);
      for (const reader of readers) reader.cancel().catch(() => undefined);
    },
  });
}
