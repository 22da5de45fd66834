import { SessionError } from "../../core/errors";
import type { Sql } from "../sql";

/*
 * Where a session's leaf stood over time: after every write, the leaf it left and when (the
 * object's clock, never going back), in the `leaf_history` table (schema.ts). `GET …/context`,
 * fork and `PUT …/leaf` read it with `asOf`. Nothing is ever taken out of it but with the session:
 * moving back in time writes a new head, it deletes nothing. A session written before the table
 * existed has its history from its last write before then.
 */

export class LeafHistory {
  readonly #sql: Sql;
  /** The latest time recorded, so the next is never earlier (loaded when first needed). */
  #lastAt: number | undefined;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** Records, inside the write's transaction, the leaf (by seq) a write ending at `seq` left. */
  record(seq: number, leafSeq: number | null): void {
    this.#lastAt ??= this.#sql<{ at: number | null }>`SELECT max(at) AS at FROM leaf_history`.one().at ?? 0;
    const at = Math.max(Date.now(), this.#lastAt);
    this.#sql`INSERT OR REPLACE INTO leaf_history (seq, at, leaf_seq) VALUES (${seq}, ${at}, ${leafSeq})`;
    this.#lastAt = at;
  }

  /** Forgets what it knew of the table (its storage was dropped, or a write rolled back). */
  reset(): void {
    this.#lastAt = undefined;
  }

  /** When the session's history starts: its creation, or for an older session its last write before. */
  startsAt(): number | undefined {
    return this.#sql<{ at: number | null }>`SELECT min(at) AS at FROM leaf_history`.one().at ?? undefined;
  }

  /**
   * The leaf's seq (null: no leaf) as it stood at `at` (milliseconds): `not_found` before the
   * session's history starts, `invalid_request` for a time still to come.
   */
  leafSeqAt(at: number, asOf: string): number | null {
    if (at > Date.now()) {
      throw new SessionError("invalid_request", "asOf is in the future", { asOf });
    }
    const row = this.#sql<{ leaf_seq: number | null }>`
      SELECT leaf_seq FROM leaf_history WHERE at <= ${at} ORDER BY at DESC, seq DESC LIMIT 1`.toArray()[0];
    if (!row) {
      const starts = this.startsAt();
      throw new SessionError(
        "not_found",
        `the session did not exist at ${asOf}${starts === undefined ? "" : `; its history starts at ${new Date(starts).toISOString()}`}`,
        { asOf, historyStartsAt: starts === undefined ? null : new Date(starts).toISOString() },
      );
    }
    return row.leaf_seq;
  }
}
