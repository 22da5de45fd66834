import { listCursor, sortKey } from "../../core/info";
import { sessionsPageLimit } from "../../core/paging";
import type { TenantSearchOptions, TenantSearchPage } from "../../core/search";
import { DEFAULT_SEARCH_HITS } from "../../core/search";
import type { ListOptions, SessionInfo, SessionPage } from "../../core/session-schemas";
import { SSE_KEEP_ALIVE, SseReader, sseText } from "../../core/sse";
import type { SearchRank, ShardSearch } from "../directory/directory-search";
import {
  compareRanks,
  rankOf,
  rankResults,
  searchCursor,
  searchedAfter,
} from "../directory/directory-search";

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
    nextCursor: more && last ? listCursor(options, last.key, last.info.id) : null,
  };
}

/**
 * One answer of the tenant search from each shard's answer to the same options: the best results
 * of all. A shard whose results were cut to fit its share of characters may have better ones than
 * another shard's worst it left out, so the answer ends at its last result, and the next answer
 * (its cursor) goes on from there.
 */
export function mergeSearchResults(
  answers: readonly ShardSearch[],
  options: TenantSearchOptions,
): TenantSearchPage {
  const given = searchedAfter(options)?.given ?? 0;
  const wanted = (options.limit ?? DEFAULT_SEARCH_HITS) - given;
  let stop: SearchRank | undefined;
  for (const answer of answers) {
    const last = answer.results[answer.results.length - 1];
    if (!answer.cut || !last) continue;
    if (!stop || compareRanks(rankOf(last), stop) < 0) stop = rankOf(last);
  }
  const all = rankResults(answers.flatMap((answer) => answer.results));
  const within = stop ? all.filter((result) => compareRanks(rankOf(result), stop) <= 0) : all;
  const results = within.slice(0, Math.max(wanted, 0));
  const last = results[results.length - 1];
  const more = stop !== undefined && results.length < wanted && last !== undefined;
  return {
    results,
    nextCursor: more ? searchCursor(options, { ...rankOf(last), given: given + results.length }) : null,
  };
}

/** How often a merged event stream says it is alive when nothing happens (for proxies). */
const KEEP_ALIVE_MS = 15_000;

/** One shard's event stream as the merge reads it: its events are cut whole from its bytes. */
interface ShardStream {
  reader: ReadableStreamDefaultReader<Uint8Array>;
  sse: SseReader;
  decoder: TextDecoder;
}

interface ShardRead {
  shard: ShardStream;
  read: ReadableStreamReadResult<Uint8Array>;
}

/**
 * The event streams of every shard as one: each event passed on whole, as it arrives from its
 * shard. A shard is read only while the merged stream's reader wants more, so a reader that stops
 * reading holds its shards' streams back, and each shard closes it with `closed` once too much
 * waits for it (as it closes any slow reader) rather than the events piling up here. When one
 * shard's stream ends (its object restarted, or it let the reader go) the merged stream ends too,
 * so the watcher reconnects to all of them.
 */
export function mergeEventStreams(
  streams: readonly ReadableStream<Uint8Array>[],
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const shards: ShardStream[] = streams.map((stream) => ({
    reader: stream.getReader(),
    sse: new SseReader(),
    decoder: new TextDecoder(),
  }));
  /** Each shard's read under way: at most one at a time, kept across pulls. */
  const reading = new Map<ShardStream, Promise<ShardRead>>();
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    if (keepAlive !== undefined) clearInterval(keepAlive);
    for (const { reader } of shards) reader.cancel().catch(() => undefined);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      keepAlive = setInterval(() => {
        // A reader that is behind has data waiting already; a keep-alive would only add to it.
        if ((controller.desiredSize ?? 0) > 0) controller.enqueue(encoder.encode(SSE_KEEP_ALIVE));
      }, KEEP_ALIVE_MS);
    },
    async pull(controller) {
      for (;;) {
        for (const shard of shards) {
          if (!reading.has(shard))
            reading.set(
              shard,
              shard.reader.read().then((read) => ({ shard, read })),
            );
        }
        let next: ShardRead;
        try {
          next = await Promise.race(reading.values());
        } catch {
          // A shard's stream broke: ending the merged one lets the watcher reconnect.
          stop();
          return controller.close();
        }
        const { shard, read } = next;
        reading.delete(shard);
        if (read.done) {
          stop();
          return controller.close();
        }
        const events = shard.sse.push(shard.decoder.decode(read.value, { stream: true }));
        if (events.length > 0) return controller.enqueue(encoder.encode(events.map(sseText).join("")));
      }
    },
    cancel: stop,
  });
}
