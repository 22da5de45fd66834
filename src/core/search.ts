import * as z from "zod";
import { EntryType, Id } from "./entries";
import { SessionError } from "./errors";
import { MAX_QUERY_CHARS } from "./search-query";
import { IdPrefix, SessionInfo } from "./session-schemas";

/*
 * Search, in one session (its entries) and across a tenant (its sessions): what is asked and what
 * comes back. Snippets are plain text; `highlights` are the [start, end) offsets (UTF-16 code
 * units, as JavaScript indexes strings) of the matches in them.
 */

export const DEFAULT_SEARCH_HITS = 20;
export const MAX_SEARCH_HITS = 100;

const Highlights = z
  .array(z.tuple([z.number().int(), z.number().int()]))
  .meta({ description: "[start, end) of each match in the snippet" });

export const SearchQueryText = z.string().max(MAX_QUERY_CHARS).meta({
  description: 'words (all required), "a phrase", prefix*, a OR b, -excluded; matched after stemming',
});

/** A search's words and page size. */
const SearchOptions = z.object({
  q: SearchQueryText,
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_SEARCH_HITS)
    .optional()
    .meta({ description: `default ${DEFAULT_SEARCH_HITS}` }),
});

/** Across the tenant: among all its sessions, or those whose id starts with a prefix. */
export const TenantSearchOptions = SearchOptions.extend({
  prefix: IdPrefix.optional(),
  cursor: z
    .string()
    .optional()
    .meta({ description: "nextCursor of the answer before, given with the same q, prefix and limit" }),
});
export type TenantSearchOptions = z.infer<typeof TenantSearchOptions>;

export const SessionSearchOptions = SearchOptions.extend({
  cursor: z.string().optional(),
  order: z.enum(["newest", "rank"]).optional().meta({ description: "newest first (default) or best first" }),
  thinking: z.boolean().optional().meta({ description: "search the model's thinking too (default false)" }),
});
export type SessionSearchOptions = z.infer<typeof SessionSearchOptions>;

export const SearchHit = z
  .object({
    entryId: Id,
    seq: z.number().int(),
    type: EntryType,
    role: z.string().optional().meta({ description: "the message's role, for messages" }),
    onBranch: z.boolean().meta({ description: "whether the entry is on the path root → current leaf" }),
    editedBy: Id.optional().meta({
      description:
        "the latest context edit of this entry on the current branch: the context shows the edit's content (or, for a null replacement, nothing) instead",
    }),
    field: z.enum(["text", "thinking"]),
    snippet: z.string(),
    highlights: Highlights,
  })
  .meta({ id: "SearchHit" });
export type SearchHit = z.infer<typeof SearchHit>;

export const HeaderMatch = z
  .object({
    field: z.enum(["name", "systemPrompt"]).meta({
      description:
        "the name the session was created, imported or forked with, while no session_info entry has named it since (such an entry is a hit itself), or its system prompt",
    }),
    snippet: z.string(),
    highlights: Highlights,
  })
  .meta({ id: "HeaderMatch" });
export type HeaderMatch = z.infer<typeof HeaderMatch>;

export const SessionSearchPage = z.object({
  hits: z.array(SearchHit),
  header: z.array(HeaderMatch).optional().meta({
    description:
      "on the first page (no cursor), when they match: the session's name and system prompt, which are no entries",
  }),
  nextCursor: z.string().nullable(),
  indexing: z.boolean().optional().meta({
    description:
      "true when entries of a large write (an import, a fork, a bulk append) still wait to be indexed: the hits are of the entries indexed so far, and a search a moment later finds the rest",
  }),
});
export type SessionSearchPage = z.infer<typeof SessionSearchPage>;

export const SessionMatch = z
  .object({
    field: z.enum(["name", "labels", "preview", "text"]),
    snippet: z.string(),
    highlights: Highlights,
  })
  .meta({ id: "SessionMatch" });
export type SessionMatch = z.infer<typeof SessionMatch>;

export const TenantSearchResult = z
  .object({
    session: SessionInfo,
    score: z.number().meta({
      description:
        "higher is better: 1000 per match in the name, 100 in labels, 10 in the preview, 1 in the text (at most 9 each)",
    }),
    matches: z.array(SessionMatch).meta({ description: "the best snippet of each field that matched" }),
  })
  .meta({ id: "TenantSearchResult" });
export type TenantSearchResult = z.infer<typeof TenantSearchResult>;

export const TenantSearchPage = z.object({
  results: z.array(TenantSearchResult),
  nextCursor: z.string().nullable().meta({
    description:
      "set when the best `limit` sessions hold more than one answer carries (large system prompts or metadata): the rest of them, after these",
  }),
});
export type TenantSearchPage = z.infer<typeof TenantSearchPage>;

/**
 * Where the next page of a session's hits starts. Newest first: below a seq. By rank: among the
 * entries indexed up to `upTo` (the last seq when the first page was read), after the hit `seq`,
 * whose score (bm25, lower is better) was `score`. A rank cursor of the earlier form, an offset
 * into the ranking, is still read.
 */
export type SearchCursor =
  | { before: number }
  | { upTo: number; score: number; seq: number }
  | { offset: number };

export function encodeSearchCursor(cursor: SearchCursor): string {
  return btoa(JSON.stringify(cursor)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const seqOf = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n);

/** The cursor's values when it has exactly these keys, each valid; else undefined. */
function fields<K extends string>(
  value: Record<string, unknown>,
  checks: Record<K, (n: unknown) => boolean>,
): Record<K, number> | undefined {
  const keys = Object.keys(checks);
  if (Object.keys(value).length !== keys.length) return undefined;
  for (const key of keys) if (!checks[key as K](value[key])) return undefined;
  return value as Record<K, number>;
}

function readCursor(value: Record<string, unknown>, order: "newest" | "rank"): SearchCursor | undefined {
  const natural = (n: unknown) => seqOf(n) && n >= 0;
  if (order === "newest") return fields(value, { before: natural });
  const keyset = fields(value, {
    upTo: natural,
    score: (n) => typeof n === "number" && Number.isFinite(n),
    seq: natural,
  });
  return keyset ?? fields(value, { offset: natural });
}

export function decodeSearchCursor(cursor: string, order: "newest" | "rank"): SearchCursor {
  try {
    const value: unknown = JSON.parse(atob(cursor.replace(/-/g, "+").replace(/_/g, "/")));
    if (value && typeof value === "object" && !Array.isArray(value)) {
      const read = readCursor(value as Record<string, unknown>, order);
      if (read) return { ...read };
    }
  } catch {
    // fall through to the error below
  }
  throw new SessionError(
    "invalid_request",
    "invalid cursor (a cursor belongs to the query and order it came from)",
    { cursor },
  );
}
