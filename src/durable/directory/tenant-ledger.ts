import { SessionError } from "../../core/errors";
import type { Quotas } from "../quotas";
import { quotaExceeded } from "../quotas";
import type { Sql } from "../sql";
import type { ClaimRequest, SeedRow } from "../types";
import { STREAM_CLAIM_PREFIX } from "./stream-registry";

/*
 * A tenant's quota ledger, kept by its directory shard 0 once the tenant has a tenant-wide quota
 * (`maxSessions`, `maxStreams`, `maxTenantBytes`). Every session and every stream of the tenant has
 * a claim: the most bytes it may hold without asking again (a stream's under its key after
 * STREAM_CLAIM_PREFIX, which no session id holds). Claims are granted one request at a time, so the tenant's sessions
 * together never pass its quotas, however many of them write at once. A session asks for room a
 * chunk at a time and hands back what it did not use once it is idle (`settle`); each request
 * carries the session's sequence number, and one older than the last the ledger heard from that
 * session changes nothing, so a late answer never undoes a newer one.
 *
 * A ledger that has not seen the tenant's sessions yet (the quotas were just set, or changed, or a
 * holder was deleted under other quotas) is seeded from the bytes the directory's shards last heard
 * from each session. A holder they do not list keeps its claim if it asked for room since the
 * ledger was last seeded (a session just created, or a fork or an import still being written, is
 * listed only once it reports); one that is still not listed and asked nothing since is gone, and
 * loses its claim.
 *
 * A release carries the holder's sequence too, and the ledger remembers it for a while: a claim the
 * holder sent before it was released (a write that asked for room while its session was deleted)
 * arrives late and is refused (`not_found`), rather than counting a holder that is gone. A claim
 * sent after (the session restored, or created again under its id) is the holder's again.
 */

/**
 * Room a session is given beyond what a write needs, so that most writes need no request: 256 KiB,
 * or a 64th of the tenant's quota when that is less, so that a few writers cannot hold it all.
 */
const CLAIM_CHUNK_BYTES = 256 * 1024;
const CLAIM_CHUNK_SHARE = 64;
/** How long the ledger remembers a release, against claims sent before it that arrive after it. */
const RELEASE_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

/** The quota ledger's releases, by holder: the sequence of the last (tenant-ledger.ts). */
export const QUOTA_RELEASES_MIGRATION = `
  CREATE TABLE quota_releases (
    session_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    released_at INTEGER NOT NULL
  );
  CREATE INDEX quota_releases_by_time ON quota_releases (released_at)
`;

export class TenantLedger {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** Whether the ledger was seeded under these quotas (their JSON). */
  seededFor(quotas: string): boolean {
    const row = this.#sql<{ seeded_for: string }>`SELECT seeded_for FROM quota_ledger`.toArray()[0];
    return row?.seeded_for === quotas;
  }

  /**
   * Claims for the sessions the directory knows of, each at least what it last reported. A claim
   * of a holder the directory does not know of goes unless the holder asked since the last seed
   * (it may not be listed yet); else it was gone while the ledger was not told.
   */
  seed(rows: readonly SeedRow[], quotas: string): void {
    for (const { id, bytes } of rows) {
      this.#sql`INSERT INTO quota_claims (session_id, bytes, seq) VALUES (${id}, ${bytes}, 0)
        ON CONFLICT (session_id) DO UPDATE SET bytes = max(bytes, excluded.bytes)`;
    }
    const known = new Set(rows.map((row) => row.id));
    for (const { session_id } of this.#sql<{ session_id: string }>`
      SELECT session_id FROM quota_claims WHERE asked_since_seed = 0`) {
      if (!known.has(session_id)) this.#sql`DELETE FROM quota_claims WHERE session_id = ${session_id}`;
    }
    this.#sql`UPDATE quota_claims SET asked_since_seed = 0 WHERE asked_since_seed = 1`;
    this.#sql`INSERT OR REPLACE INTO quota_ledger (singleton, seeded_for) VALUES (1, ${quotas})`;
  }

  /** The ledger may have missed holders coming and going: it is seeded again before its next claim. */
  unseed(): void {
    this.#sql`DELETE FROM quota_ledger`;
  }

  /**
   * The bytes the session may hold after its write: what it claimed, or more if the write needs
   * more and the quotas leave room. `quota_exceeded` when they do not (nothing changes then),
   * unless it asks for what they leave (`partial`): then it is granted that room.
   */
  claim(request: ClaimRequest, quotas: Quotas): number {
    const row = this.#row(request.sessionId);
    if (row && request.seq <= row.seq) return row.bytes;
    // Released after the holder sent this (a seed since may have listed it again): refused.
    const released = this.#releasedAt(request.sessionId);
    if (released !== undefined && request.seq <= released) {
      throw new SessionError("not_found", "it was deleted while this write asked for room");
    }
    if (released !== undefined) this.#sql`DELETE FROM quota_releases WHERE session_id = ${request.sessionId}`;
    if (!row && request.newSession)
      this.#checkCount(request.sessionId.startsWith(STREAM_CLAIM_PREFIX), quotas);
    const need = request.holds + request.wants;
    const current = row?.bytes ?? 0;
    let granted = need;
    if (quotas.maxTenantBytes !== undefined) {
      const others = this.#totals().bytes - current;
      const room = quotas.maxTenantBytes - others;
      if (need > room && !request.partial) {
        throw quotaExceeded(
          "maxTenantBytes",
          quotas.maxTenantBytes,
          `the write would take this tenant past its quota of ${quotas.maxTenantBytes} bytes`,
        );
      }
      const chunk = Math.min(CLAIM_CHUNK_BYTES, Math.floor(quotas.maxTenantBytes / CLAIM_CHUNK_SHARE));
      granted = need > room ? Math.max(room, current) : Math.min(Math.max(need + chunk, current), room);
    }
    this.#sql`INSERT INTO quota_claims (session_id, bytes, seq, asked_since_seed)
      VALUES (${request.sessionId}, ${granted}, ${request.seq}, 1)
      ON CONFLICT (session_id) DO UPDATE SET
        bytes = excluded.bytes, seq = excluded.seq, asked_since_seed = 1`;
    return granted;
  }

  /** The session is idle holding `holds` bytes: its claim shrinks to them. */
  settle(sessionId: string, holds: number, seq: number): void {
    this.#sql`UPDATE quota_claims SET bytes = ${holds}, seq = ${seq}, asked_since_seed = 1
      WHERE session_id = ${sessionId} AND seq < ${seq}`;
  }

  /**
   * The session was deleted: it no longer counts, nor does a claim it sent before `seq` (when
   * given) that arrives after.
   */
  release(sessionId: string, seq?: number): void {
    this.#sql`DELETE FROM quota_claims WHERE session_id = ${sessionId}`;
    if (seq === undefined) return;
    const now = Date.now();
    this.#sql`INSERT INTO quota_releases (session_id, seq, released_at) VALUES (${sessionId}, ${seq}, ${now})
      ON CONFLICT (session_id) DO UPDATE SET seq = max(seq, excluded.seq), released_at = excluded.released_at`;
    this.#sql`DELETE FROM quota_releases WHERE released_at < ${now - RELEASE_KEPT_MS}`;
  }

  /** The sequence of the holder's last release the ledger remembers, if any. */
  #releasedAt(sessionId: string): number | undefined {
    return this.#sql<{
      seq: number;
    }>`SELECT seq FROM quota_releases WHERE session_id = ${sessionId}`.toArray()[0]?.seq;
  }

  /** Refuses one more session (or stream) when the tenant holds as many as its quota allows. */
  #checkCount(stream: boolean, quotas: Quotas): void {
    const quota = stream ? "maxStreams" : "maxSessions";
    const limit = quotas[quota];
    if (limit === undefined) return;
    const totals = this.#totals();
    const held = stream ? totals.streams : totals.sessions;
    if (held >= limit) {
      const what = stream ? "streams" : "sessions";
      throw quotaExceeded(quota, limit, `the tenant holds ${held} ${what}; the quota is ${limit}`);
    }
  }

  #row(sessionId: string): { bytes: number; seq: number } | undefined {
    return this.#sql<{ bytes: number; seq: number }>`
      SELECT bytes, seq FROM quota_claims WHERE session_id = ${sessionId}`.toArray()[0];
  }

  /** The ledger's totals (quota_totals, kept by triggers as claims change). */
  #totals(): { sessions: number; streams: number; bytes: number } {
    const totals = this.#sql<{ claims: number; streams: number; bytes: number }>`
      SELECT claims, streams, bytes FROM quota_totals`.one();
    return { sessions: totals.claims - totals.streams, streams: totals.streams, bytes: totals.bytes };
  }
}
