import { encodeCursor, sortKey } from "../../core/info";
import { sessionsPageLimit } from "../../core/paging";
import type { TenantSearchResult } from "../../core/search";
import type { ListOptions, SessionInfo, SessionPage } from "../../core/session-schemas";
import { SSE_KEEP_ALIVE, SseReader, sseText } from "../../core/sse";
import { rankResults } from "../directory/directory-search";

/*
 * Listing, search and events of a tenant's directory ask every shard (names.ts says which) and
 * merge what they answer.
 */

/**
 * One page of the tenant's listing from the pages each shard answered for the same options: each
 * holds its shard's first sessions after the cursor (`limit` of them, or fewer when they hold much),
 * so together they hold the tenant's down to where the first shard with more stopped. The page
 * ends there, for the next one to go on from it without skipping what that shard did not send.
 */
export function mergePages(pages: readonly SessionPage[], options: ListOptions): SessionPage {
  if (pages.length === 1) return pages[0] as SessionPage;
  const limit = sessionsPageLimit(options);
  const order = options.order ?? "updated";
  /** Whether `a` is listed before `b`: newer first, then the greater id. */
  const before = (a: { key: string; id: string }, b: { key: string; id: string }) =>
    a.key === b.key ? a.id > b.id : a.key > b.key;
  const all: Array<{ info: SessionInfo; key: string; id: string }> = [];
  let stop: { key: string; id: string } | undefined;
  for (const page of pages) {
    for (const info of page.sessions) all.push({ info, key: sortKey(info, order), id: info.id });
    const last = page.sessions[page.sessions.length - 1];
    if (page.nextCursor === null || !last) continue;
    const end = { key: sortKey(last, order), id: last.id };
    if (!stop || before(end, stop)) stop = end;
  }
  all.sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
  const within = stop ? all.filter((entry) => !before(stop as { key: string; id: string }, entry)) : all;
  const page = within.slice(0, limit);
  const last = page[page.length - 1];
  const more = within.length > page.length || stop !== undefined;
  return {
    sessions: page.map(({ info }) => info),
    nextCursor: more && last ? encodeCursor(last.key, last.info.id) : null,
  };
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
  const stop = () => {
    ended = true;
    if (keepAlive !== undefined) clearInterval(keepAlive);
    for (const reader of readers) reader.cancel().catch(() => undefined);
  };
  const end = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (ended) return;
    stop();
    controller.close();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      keepAlive = setInterval(() => controller.enqueue(encoder.encode(SSE_KEEP_ALIVE)), KEEP_ALIVE_MS);
      for (const reader of readers) {
        const sse = new SseReader();
        const decoder = new TextDecoder();
        void (async () => {
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done || ended) break;
              for (const event of sse.push(decoder.decode(value, { stream: true }))) {
                controller.enqueue(encoder.encode(sseText(event)));
              }
            }
          } catch {
            // The shard's stream broke: ending the merged one lets the watcher reconnect.
          }
          end(controller);
        })();
      }
    },
    cancel: stop,
  });
}
