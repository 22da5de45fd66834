import { SessionError } from "../../core/errors";
import { cursorValues, encodeCursor } from "../../core/info";
import type { SessionMatch, TenantSearchOptions, TenantSearchResult } from "../../core/search";
import { DEFAULT_SEARCH_HITS } from "../../core/search";
import { ftsQuery } from "../../core/search-query";
import { readSnippet } from "../../core/search-text";
import type { SessionInfo } from "../../core/session-schemas";
import type { Sql } from "../sql";
import { matchRows } from "../sql";

/*
 * The tenant's search within one directory shard: the best matches in the shard's `session_text`
 * index by bm25, of the whole row and of each field, then scored so the answers of all shards can
 * be merged.
 */

/** Words around a match in the snippet of a session's text. */
const SNIPPET_WORDS = 16;

const FIELDS: SessionMatch["field"][] = ["name", "labels", "preview", "text"];
/**
 * Candidates each shard ranks for every result asked, among the matches of the whole row and among
 * those of each field: the best by bm25 and the most recently updated, then the score below orders
 * them all. bm25 over the whole row alone would let a word repeated in the text outweigh it once in
 * the name, which the score ranks first; its figures depend on the shard's own statistics and cannot
 * be compared across shards, the score can; and it favours short rows, so among sessions that match
 * alike it would pass over the most recently updated, which the score's ties put first.
 */
const CANDIDATES_PER_RESULT = 3;

const FIELD_WEIGHTS: Record<SessionMatch["field"], number> = {
  name: 1000,
  labels: 100,
  preview: 10,
  text: 1,
};

/**
 * A session's score for a query from how often it matches in each field (`counts`, in `FIELDS`
 * order): matches in its name outrank any in its labels, which outrank any in its preview, then in
 * its text; within a field, more matches (up to 9) score more.
 */
export function matchScore(counts: readonly number[]): number {
  return FIELDS.reduce((score, field, i) => score + FIELD_WEIGHTS[field] * Math.min(counts[i] ?? 0, 9), 0);
}

/** Where a result stands in the ranking. */
export interface SearchRank {
  score: number;
  updatedAt: string;
  id: string;
}

export function rankOf(result: TenantSearchResult): SearchRank {
  return { score: result.score, updatedAt: result.session.updatedAt, id: result.session.id };
}

/** Best first: by score, then the most recently updated, then by id. */
export function compareRanks(a: SearchRank, b: SearchRank): number {
  if (a.score !== b.score) return b.score - a.score;
  if (a.updatedAt !== b.updatedAt) return a.updatedAt < b.updatedAt ? 1 : -1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Search results best first. */
export function rankResults(results: TenantSearchResult[]): TenantSearchResult[] {
  return results.sort((a, b) => compareRanks(rankOf(a), rankOf(b)));
}

/** Where the next answer of a search goes on: after the result of this rank, `given` results given before. */
export interface SearchPlace extends SearchRank {
  given: number;
}

function searchScope(options: TenantSearchOptions): string[] {
  return [options.q, options.prefix ?? "", String(options.limit ?? DEFAULT_SEARCH_HITS)];
}

export function searchCursor(options: TenantSearchOptions, place: SearchPlace): string {
  return encodeCursor(
    String(place.score),
    place.updatedAt,
    place.id,
    String(place.given),
    ...searchScope(options),
  );
}

/**
 * Where a search goes on from its cursor (none: from the best). A cursor of another search (another
 * query, prefix or limit) is `invalid_request`: its place in this one would skip or repeat sessions.
 */
export function searchedAfter(options: TenantSearchOptions): SearchPlace | undefined {
  const { cursor } = options;
  if (!cursor) return undefined;
  const [score, updatedAt, id, given, ...scope] = cursorValues(cursor);
  if (
    typeof score === "string" &&
    typeof updatedAt === "string" &&
    typeof id === "string" &&
    typeof given === "string" &&
    JSON.stringify(scope) === JSON.stringify(searchScope(options))
  ) {
    const place = { score: Number(score), updatedAt, id, given: Number(given) };
    if (Number.isFinite(place.score) && Number.isSafeInteger(place.given) && place.given >= 0) return place;
  }
  throw new SessionError(
    "invalid_request",
    "the cursor is not of this search (a cursor goes on only with the q, prefix and limit it came with)",
    { cursor },
  );
}

/** A shard's answer: its best results after the cursor, `cut` when more would have passed its share of characters. */
export interface ShardSearch {
  results: TenantSearchResult[];
  cut: boolean;
}

/**
 * This shard's best sessions for a query after the cursor, with the best snippet of each field that
 * matched: the search's `limit` less those given before, or fewer when their infos would pass
 * `maxChars` of JSON (one at least), so that no answer grows with what sessions hold. Candidates
 * are ranked without their infos; only the infos answered are read.
 */
export function searchShard(
  sql: Sql,
  options: TenantSearchOptions,
  maxChars: number = Number.POSITIVE_INFINITY,
): ShardSearch {
  const limit = options.limit ?? DEFAULT_SEARCH_HITS;
  const place = searchedAfter(options);
  const wanted = limit - (place?.given ?? 0);
  const match = ftsQuery(options.q);
  const candidates = limit * CANDIDATES_PER_RESULT;
  const prefix = options.prefix;
  // The best matches of the whole row (a query's words may be found in different fields), and
  // those of each field alone.
  const queries = [match, ...FIELDS.map((field) => ftsQuery(options.q, [field]))];
  const ranked = new Set<number>();
  for (const query of queries) {
    // With a prefix, the ids are filtered before the candidates are picked, so every match among
    // them can be found; without one, the index alone answers bm25's pick.
    const byRank = matchRows(() =>
      prefix === undefined
        ? sql<{ rowid: number }>`
            SELECT rowid FROM session_text WHERE session_text MATCH ${query}
            ORDER BY rank LIMIT ${candidates}`
        : sql<{ rowid: number }>`
            SELECT t.rowid AS rowid FROM session_text t JOIN sessions s ON s.rowid = t.rowid
            WHERE session_text MATCH ${query} AND substr(s.id, 1, length(${prefix})) = ${prefix}
            ORDER BY t.rank LIMIT ${candidates}`,
    );
    const byUpdate = matchRows(
      () => sql<{ rowid: number }>`
        SELECT t.rowid AS rowid FROM session_text t JOIN sessions s ON s.rowid = t.rowid
        WHERE session_text MATCH ${query} AND substr(s.id, 1, length(${prefix ?? ""})) = ${prefix ?? ""}
        ORDER BY s.updated_at DESC, s.id LIMIT ${candidates}`,
    );
    for (const row of [...byRank, ...byUpdate]) ranked.add(row.rowid);
  }
  if (ranked.size === 0 || wanted <= 0) return { results: [], cut: false };
  const scored: Array<SearchRank & { rowid: number; chars: number; matches: SessionMatch[] }> = [];
  // A field's matches are counted in the whole field (the marks its highlight adds), not only in
  // its snippet.
  for (const row of matchRows(
    () => sql<
      Record<string, string> &
        Record<`${SessionMatch["field"]}Count`, number> & { rowid: number; chars: number }
    >`
      SELECT t.rowid AS rowid, s.id AS id, s.info->>'$.updatedAt' AS updatedAt, length(s.info) AS chars,
        snippet(session_text, 0, char(1), char(2), '…', 64) AS name,
        snippet(session_text, 1, char(1), char(2), '…', ${SNIPPET_WORDS}) AS labels,
        snippet(session_text, 2, char(1), char(2), '…', 64) AS preview,
        snippet(session_text, 3, char(1), char(2), '…', ${SNIPPET_WORDS}) AS text,
        length(highlight(session_text, 0, char(1), '')) - length(t.name) AS nameCount,
        length(highlight(session_text, 1, char(1), '')) - length(t.labels) AS labelsCount,
        length(highlight(session_text, 2, char(1), '')) - length(t.preview) AS previewCount,
        length(highlight(session_text, 3, char(1), '')) - length(t.text) AS textCount
      FROM session_text t JOIN sessions s ON s.rowid = t.rowid
      WHERE session_text MATCH ${match}
        AND t.rowid IN (SELECT value FROM json_each(${JSON.stringify([...ranked])}))`,
  )) {
    const matches: SessionMatch[] = [];
    for (const field of FIELDS) {
      const { snippet, highlights } = readSnippet(row[field] ?? "");
      if (highlights.length > 0) matches.push({ field, snippet, highlights });
    }
    const { rowid, chars, id, updatedAt } = row;
    scored.push({
      rowid,
      chars,
      id: id as string,
      updatedAt: updatedAt as string,
      score: matchScore(FIELDS.map((field) => row[`${field}Count`])),
      matches,
    });
  }
  const best = scored
    .filter((result) => !place || compareRanks(result, place) > 0)
    .sort(compareRanks)
    .slice(0, wanted);
  const answered: typeof best = [];
  let chars = 0;
  for (const result of best) {
    if (answered.length > 0 && chars + result.chars > maxChars) break;
    answered.push(result);
    chars += result.chars;
  }
  const infos = new Map<number, string>();
  for (const row of sql<{ rowid: number; info: string }>`
    SELECT rowid, info FROM sessions
    WHERE rowid IN (SELECT value FROM json_each(${JSON.stringify(answered.map((r) => r.rowid))}))`) {
    infos.set(row.rowid, row.info);
  }
  const results: TenantSearchResult[] = [];
  for (const { rowid, score, matches } of answered) {
    const info = infos.get(rowid);
    if (info !== undefined) results.push({ session: JSON.parse(info) as SessionInfo, score, matches });
  }
  return { results, cut: answered.length < best.length };
}
