import type { Sql } from "../sql";
import type { SeedRow, StreamListing, StreamReport, StreamUsage } from "../types";

/*
 * The streams of a tenant (`/v1/stream/*`) that report to one directory shard: each stream's
 * object reports what it is and holds when it is made, deleted or removed, and shortly after it
 * grows, so the tenant's streams can be listed, counted in its usage and quotas, and reached by its
 * retention without waking every object. Reports are ordered by a version each object raises; a
 * removed stream stays as a marker for a week, so that a late report cannot list it again.
 */

/** A removed stream's marker outlives any report still in flight by far; older ones are dropped. */
const MARKER_MS = 7 * 24 * 3600 * 1000;

/** Bytes the tenant's ledger counts a stream by: its key, with a character no session id holds. */
export const STREAM_CLAIM_PREFIX = "/";

export const STREAM_REGISTRY_MIGRATION = `
  CREATE TABLE stream_listing (
    key TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    state TEXT NOT NULL,
    content_type TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    closed INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    active_at INTEGER NOT NULL,
    expires_at INTEGER
  );
  CREATE INDEX stream_listing_by_activity ON stream_listing (state, active_at)
`;

/** The listing by key, so that a page reads its own rows only. */
export const STREAM_LISTING_BY_KEY_MIGRATION =
  "CREATE INDEX stream_listing_by_key ON stream_listing (state, key)";

type ListingRow = {
  key: string;
  state: StreamReport["state"];
  content_type: string;
  bytes: number;
  closed: number;
  created_at: number;
  active_at: number;
  expires_at: number | null;
};

export interface StreamListOptions {
  prefix: string;
  limit: number;
  /** The last key of the previous page. */
  after: string | null;
}

/**
 * The least text that sorts after every text starting with `prefix`, as SQLite sorts text (by code
 * point), or null when none does (an empty prefix, or one of U+10FFFF only).
 */
function textAfterPrefix(prefix: string): string | null {
  const chars = [...prefix];
  while (chars.length > 0) {
    const last = (chars.pop() as string).codePointAt(0) as number;
    if (last < 0x10ffff) {
      // No text holds a surrogate: the character after U+D7FF is U+E000.
      const next = last >= 0xd7ff && last < 0xe000 ? 0xe000 : last + 1;
      return chars.join("") + String.fromCodePoint(next);
    }
  }
  return null;
}

export class StreamRegistry {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** What a stream's object reports; an older report than the one kept changes nothing. */
  report(report: StreamReport): void {
    const { key, version, state, contentType, bytes, closed, activeAt, expiresAt } = report;
    this.#sql`INSERT INTO stream_listing
        (key, version, state, content_type, bytes, closed, created_at, active_at, expires_at)
      VALUES (${key}, ${version}, ${state}, ${contentType}, ${bytes}, ${closed ? 1 : 0}, ${activeAt},
        ${activeAt}, ${expiresAt})
      ON CONFLICT (key) DO UPDATE SET version = excluded.version, state = excluded.state,
        content_type = excluded.content_type, bytes = excluded.bytes, closed = excluded.closed,
        active_at = excluded.active_at, expires_at = excluded.expires_at,
        created_at = CASE WHEN stream_listing.state = 'removed' THEN excluded.created_at
          ELSE stream_listing.created_at END
      WHERE stream_listing.version < excluded.version`;
  }

  /**
   * The streams clients can see (not deleted), by key, after the cursor's, read as a range of keys:
   * from the prefix, or the least key past the cursor's (`|| char(1)`: keys hold no control
   * characters), up to the least text past every key that starts with the prefix.
   */
  list({ prefix, limit, after }: StreamListOptions): StreamListing[] {
    const from = after ?? "";
    const end = textAfterPrefix(prefix);
    const rows =
      end === null
        ? this.#sql<ListingRow>`SELECT * FROM stream_listing
            WHERE state = 'live' AND key >= max(${prefix}, ${from} || char(1))
            ORDER BY key LIMIT ${limit}`
        : this.#sql<ListingRow>`SELECT * FROM stream_listing
            WHERE state = 'live' AND key >= max(${prefix}, ${from} || char(1)) AND key < ${end}
            ORDER BY key LIMIT ${limit}`;
    return rows.toArray().map((row) => ({
      path: row.key,
      contentType: row.content_type,
      bytes: row.bytes,
      closed: row.closed === 1,
      createdAt: new Date(row.created_at).toISOString(),
      activeAt: new Date(row.active_at).toISOString(),
      expiresAt: row.expires_at === null ? null : new Date(row.expires_at).toISOString(),
    }));
  }

  /** Streams that hold data (a deleted one still read by its forks included) and their bytes. */
  usage(): StreamUsage {
    const { streams, bytes } = this.#sql<{ streams: number; bytes: number }>`
      SELECT count(*) AS streams, coalesce(sum(bytes), 0) AS bytes
      FROM stream_listing WHERE state != 'removed'`.one();
    return { streams, bytes };
  }

  /** Each stream's bytes under its ledger id: what a quota ledger is seeded from. */
  quotaSeed(): SeedRow[] {
    return this.#sql<{ key: string; bytes: number }>`
      SELECT key, bytes FROM stream_listing WHERE state != 'removed'`
      .toArray()
      .map((row) => ({ id: `${STREAM_CLAIM_PREFIX}${row.key}`, bytes: row.bytes }));
  }

  /** Streams no one has written (or, with a sliding expiry, read) since `before`, oldest first. */
  idle(before: number, limit: number): string[] {
    return this.#sql<{ key: string }>`SELECT key FROM stream_listing
      WHERE state = 'live' AND active_at < ${before} ORDER BY active_at LIMIT ${limit}`
      .toArray()
      .map((row) => row.key);
  }

  /** A stream whose object holds nothing: no longer listed. */
  forget(key: string): void {
    this.#sql`DELETE FROM stream_listing WHERE key = ${key}`;
  }

  /** Markers of streams removed long ago. */
  prune(now: number): void {
    this.#sql`DELETE FROM stream_listing WHERE state = 'removed' AND active_at < ${now - MARKER_MS}`;
  }
}
