import { SessionError } from "./errors";
import { checkEntryTypes } from "./given-input";
import { DEFAULT_ENTRIES_PAGE, DEFAULT_SESSIONS_PAGE, MAX_ENTRIES_PAGE, MAX_SESSIONS_PAGE } from "./limits";
import type { EntryQuery, ListOptions } from "./session-schemas";

/** Checks shared by every backend for the arguments of an entry page. */
export function entryPage(query: EntryQuery): { after: number; limit: number; types?: ReadonlySet<string> } {
  const limit = query.limit ?? DEFAULT_ENTRIES_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ENTRIES_PAGE) {
    throw new SessionError("invalid_request", `limit must be an integer from 1 to ${MAX_ENTRIES_PAGE}`);
  }
  const after = query.after ?? 0;
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new SessionError("invalid_request", "after must be a non-negative integer (a seq)");
  }
  if (query.type === undefined) return { after, limit };
  checkEntryTypes(query.type);
  return { after, limit, types: new Set(typeof query.type === "string" ? [query.type] : query.type) };
}

export function sessionsPageLimit(options: ListOptions): number {
  const limit = options.limit ?? DEFAULT_SESSIONS_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SESSIONS_PAGE) {
    throw new SessionError("invalid_request", `limit must be an integer from 1 to ${MAX_SESSIONS_PAGE}`);
  }
  return limit;
}
