import type { SessionMatch, TenantSearchOptions, TenantSearchResult } from "../../core/search";
import { DEFAULT_SEARCH_HITS } from "../../core/search";
import { ftsQuery } from "../../core/search-query";
import { readSnippet } from "../../core/search-text";
import type { SessionInfo } from "../../core/session-schemas";
import type { Sql } from "../sql";
import { matchRows } from "../sql";

/*
 * The tenant's search within one directory shard: the shard's `session_text` index ranked by bm25,
 * then scored so the answers of all shards can be merged.
 */

/** Words around a match in the snippet of a session's text. */
const SNIPPET_WORDS = 16;

const FIELDS: SessionMatch["field"][] = ["name", "labels", "preview", "text"];
/**
 * Candidates each shard ranks for every result asked: bm25 picks them within the shard, then the
 * score below orders them. bm25's figures depend on the shard's own statistics and cannot be
 * compared across shards; the score can.
 */
const CANDIDATES_PER_RESULT = 3;

/**
 * A session's score for a query: matches in its name outrank any in its labels, which outrank any
 * in its preview, then in its text; within a field, more matches (up to 9) score more.
 */
export function matchScore(matches: readonly SessionMatch[]): number {
  const weight: Record<SessionMatch["field"], number> = { name: 1000, labels: 100, preview: 10, text: 1 };
  return matches.reduce(
    (score, match) => score + weight[match.field] * Math.min(match.highlights.length, 9),
    0,
  );
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

/** This shard's best sessions for a query, with the best snippet of each field that matched. */
export function searchShard(sql: Sql, options: TenantSearchOptions): TenantSearchResult[] {
  const limit = options.limit ?? DEFAULT_SEARCH_HITS;
  const match = ftsQuery(options.q);
  const candidates = limit * CANDIDATES_PER_RESULT;
  const prefix = options.prefix;
  // With a prefix, the ids are filtered before bm25 picks the candidates, so every match among
  // them can be found; without one, the index alone answers.
  const ranked = matchRows(() =>
    prefix === undefined
      ? sql<{ rowid: number }>`
          SELECT rowid FROM session_text WHERE session_text MATCH ${match}
          ORDER BY rank LIMIT ${candidates}`
      : sql<{ rowid: number }>`
          SELECT t.rowid AS rowid FROM session_text t JOIN sessions s ON s.rowid = t.rowid
          WHERE session_text MATCH ${match} AND substr(s.id, 1, length(${prefix})) = ${prefix}
          ORDER BY t.rank LIMIT ${candidates}`,
  );
  if (ranked.length === 0) return [];
  const details = new Map<number, Record<string, string>>();
  for (const row of matchRows(
    () => sql<Record<string, string> & { rowid: number }>`
      SELECT t.rowid AS rowid, s.info AS info,
        snippet(session_text, 0, char(1), char(2), '…', 64) AS name,
        snippet(session_text, 1, char(1), char(2), '…', ${SNIPPET_WORDS}) AS labels,
        snippet(session_text, 2, char(1), char(2), '…', 64) AS preview,
        snippet(session_text, 3, char(1), char(2), '…', ${SNIPPET_WORDS}) AS text
      FROM session_text t JOIN sessions s ON s.rowid = t.rowid
      WHERE session_text MATCH ${match}
        AND t.rowid IN (SELECT value FROM json_each(${JSON.stringify(ranked.map((r) => r.rowid))}))`,
  )) {
    details.set(row.rowid, row);
  }
  const results: TenantSearchResult[] = [];
  for (const { rowid } of ranked) {
    const row = details.get(rowid);
    if (!row) continue;
    const matches: SessionMatch[] = [];
    for (const field of FIELDS) {
      const { snippet, highlights } = readSnippet(row[field] ?? "");
      if (highlights.length > 0) matches.push({ field, snippet, highlights });
    }
    const session = JSON.parse(row.info as string) as SessionInfo;
    results.push({ session, score: matchScore(matches), matches });
  }
  return rankResults(results).slice(0, limit);
}
