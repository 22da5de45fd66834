import { SessionError } from "../../core/errors";
import type { Sql } from "../sql";

/*
 * Which sessions of a tenant hold which blobs: the ledger its directory's shard 0 keeps (one
 * object, so claims and deletions of the same blob never cross). A session claims the blobs of a
 * write before it uploads them and before the write is committed, and gives all its claims up when
 * it is purged; a blob no session claims any more is deleted from the bucket. A write that failed
 * gives back the claims no entry of its session holds (`giveBack`); one it could not give back only
 * keeps a blob until its session is purged: the ledger may keep a blob too long, never drop one a
 * session holds. An owner that gave its claims up claims nothing more: a
 * write it began before its purge is refused (a session created anew under the same id is another
 * owner); one whose blobs were claimed before the purge, and so deleted, may reach the bucket after
 * it: its uploads are not confirmed, and those no session claims are deleted again. Its tables are
 * the directory's migrations.
 */

/**
 * How long the ledger remembers an owner that gave its claims up, to refuse its late claims: far
 * longer than any write of its session takes.
 */
const RELEASED_OWNER_MS = 7 * 24 * 3600 * 1000;

/** What a session asks of the ledger for one blob: its key, and its size in an entry when it brings the value. */
export interface BlobClaimRequest {
  key: string;
  /** Given by a session that holds the value (it may upload it); absent for a reference alone. */
  jsonBytes?: number;
}

/** The error of a write whose session gave its claims up (it was purged) while the write was under way. */
export function purgedOwner(): SessionError {
  return new SessionError("not_found", "session does not exist: it was purged while the write was under way");
}

/** The ledger's answer to a session's uploads: confirmed, or refused and the blobs to delete again. */
export type BlobConfirmation = { confirmed: true } | { confirmed: false; unclaimed: string[] };

/** The ledger's answer for one blob. */
export type BlobClaim =
  | { key: string; jsonBytes: number; upload: boolean }
  /** A reference to a blob the tenant does not store. */
  | { key: string; missing: true };

/** The ledger's tables, appended to the directory shard's migrations. */
export const BLOB_LEDGER_MIGRATION = `
  CREATE TABLE blobs (
    key TEXT PRIMARY KEY,
    json_bytes INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('uploading', 'stored', 'deleting'))
  );
  CREATE TABLE blob_owners (
    key TEXT NOT NULL,
    owner TEXT NOT NULL,
    PRIMARY KEY (key, owner)
  );
  CREATE INDEX blob_owners_by_owner ON blob_owners (owner, key)
`;

/** The blobs being deleted, indexed so that finding them never reads the blobs stored. */
export const BLOBS_DELETING_MIGRATION = `
  CREATE INDEX blobs_deleting ON blobs (key) WHERE state = 'deleting'
`;

/** The owners that gave their claims up (purged sessions), by when, so that old ones are dropped. */
export const BLOB_OWNERS_RELEASED_MIGRATION = `
  CREATE TABLE blob_owners_released (
    owner TEXT PRIMARY KEY,
    released_at INTEGER NOT NULL
  );
  CREATE INDEX blob_owners_released_by_time ON blob_owners_released (released_at)
`;

export class BlobLedger {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /**
   * Claims blobs for `owner` (inside a transaction): each answers its size and whether it must be
   * uploaded (new, not yet confirmed, or being deleted when the object last stopped). A reference
   * alone to a blob not stored is `missing`, and not claimed. An owner that gave its claims up is
   * refused (`not_found`: its session was purged), and nothing is claimed.
   */
  claim(owner: string, requests: readonly BlobClaimRequest[]): BlobClaim[] {
    if (this.#released(owner)) throw purgedOwner();
    return requests.map(({ key, jsonBytes }) => {
      const row = this.#sql<{ json_bytes: number; state: string }>`
        SELECT json_bytes, state FROM blobs WHERE key = ${key}`.toArray()[0];
      if (jsonBytes === undefined && row?.state !== "stored") return { key, missing: true };
      if (!row) {
        this
          .#sql`INSERT INTO blobs (key, json_bytes, state) VALUES (${key}, ${jsonBytes as number}, 'uploading')`;
      } else if (row.state === "deleting") {
        this.#sql`UPDATE blobs SET state = 'uploading' WHERE key = ${key}`;
      }
      this.#sql`INSERT OR IGNORE INTO blob_owners (key, owner) VALUES (${key}, ${owner})`;
      const size = row?.json_bytes ?? (jsonBytes as number);
      return { key, jsonBytes: size, upload: row?.state !== "stored" };
    });
  }

  /** The sizes in an entry of the blobs (of those given) the ledger knows. */
  sizes(keys: readonly string[]): Array<{ key: string; jsonBytes: number }> {
    return this.#sql<{ key: string; jsonBytes: number }>`SELECT key, json_bytes AS jsonBytes FROM blobs
      WHERE key IN (SELECT value FROM json_each(${JSON.stringify(keys)}))`.toArray();
  }

  /**
   * Blobs `owner` uploaded after claiming them (inside a transaction): from now on a claim needs no
   * upload. An owner that gave its claims up meanwhile is refused: its purge deleted the blobs no
   * session claims, perhaps before they reached the bucket, so those it uploaded are to be deleted
   * again (`unclaimed`); a blob another session claims stays as it is.
   */
  confirm(owner: string, uploads: readonly Required<BlobClaimRequest>[]): BlobConfirmation {
    const keys = JSON.stringify(uploads.map((upload) => upload.key));
    if (!this.#released(owner)) {
      this.#sql`UPDATE blobs SET state = 'stored'
        WHERE state = 'uploading' AND key IN (SELECT value FROM json_each(${keys}))`;
      return { confirmed: true };
    }
    // A blob no session claims is being deleted already, or was deleted and forgotten.
    for (const { key, jsonBytes } of uploads) {
      this
        .#sql`INSERT OR IGNORE INTO blobs (key, json_bytes, state) VALUES (${key}, ${jsonBytes}, 'deleting')`;
    }
    const unclaimed = this.#sql<{ key: string }>`SELECT key FROM blobs
      WHERE state = 'deleting' AND key IN (SELECT value FROM json_each(${keys}))`
      .toArray()
      .map((row) => row.key);
    return { confirmed: false, unclaimed };
  }

  /** Whether `owner` gave its claims up. */
  #released(owner: string): boolean {
    return this.#sql`SELECT 1 FROM blob_owners_released WHERE owner = ${owner}`.toArray().length > 0;
  }

  /**
   * Gives up every claim of `owner`, which claims nothing from now on; answers the blobs no one
   * claims any more, now to be deleted.
   */
  release(owner: string): string[] {
    const now = Date.now();
    this.#sql`INSERT OR REPLACE INTO blob_owners_released (owner, released_at) VALUES (${owner}, ${now})`;
    this.#sql`DELETE FROM blob_owners_released WHERE released_at < ${now - RELEASED_OWNER_MS}`;
    // Only the owner's blobs can lose their last claim: the rest of the ledger is never read.
    const keys = this.#sql<{ key: string }>`DELETE FROM blob_owners WHERE owner = ${owner} RETURNING key`
      .toArray()
      .map((row) => row.key);
    this.#sql`UPDATE blobs SET state = 'deleting'
      WHERE key IN (SELECT value FROM json_each(${JSON.stringify(keys)}))
        AND NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.key = blobs.key)`;
    return this.unclaimed();
  }

  /**
   * Gives up `owner`'s claims of these blobs (a write that claimed them was not committed, and no
   * entry of its session holds them); answers those of them no one claims any more, now to be deleted.
   */
  giveBack(owner: string, keys: readonly string[]): string[] {
    const listed = JSON.stringify(keys);
    this.#sql`DELETE FROM blob_owners
      WHERE owner = ${owner} AND key IN (SELECT value FROM json_each(${listed}))`;
    this.#sql`UPDATE blobs SET state = 'deleting'
      WHERE key IN (SELECT value FROM json_each(${listed}))
        AND NOT EXISTS (SELECT 1 FROM blob_owners o WHERE o.key = blobs.key)`;
    return this.#sql<{ key: string }>`SELECT key FROM blobs
      WHERE state = 'deleting' AND key IN (SELECT value FROM json_each(${listed}))`
      .toArray()
      .map((row) => row.key);
  }

  /**
   * Blobs being deleted, a thousand at most (what one deletion from the bucket takes); some may be
   * left from a deletion the object did not finish.
   */
  unclaimed(): string[] {
    return this.#sql<{ key: string }>`SELECT key FROM blobs WHERE state = 'deleting' LIMIT 1000`
      .toArray()
      .map((row) => row.key);
  }

  /** Forgets blobs deleted from the bucket, unless a claim came for one meanwhile. */
  deleted(keys: readonly string[]): void {
    this.#sql`DELETE FROM blobs WHERE state = 'deleting'
      AND key IN (SELECT value FROM json_each(${JSON.stringify(keys)}))`;
  }

  /** Blobs the tenant stores, and their bytes as entries hold them. */
  usage(): { blobs: number; bytes: number } {
    return this.#sql<{ blobs: number; bytes: number }>`
      SELECT count(*) AS blobs, total(json_bytes) AS bytes FROM blobs WHERE state = 'stored'`.one();
  }
}
