import { newId } from "../../core/ids";
import type { Sql } from "../sql";
import { hasSchema } from "./schema";

/*
 * The forks still copying from a session (its `fork_holds` table), each by a hold of its own: a
 * fork is answered before its path is copied, and until it says it has copied it all (releasing
 * its hold), the source keeps what it reads. Deleted, expired or purged, the session leaves every
 * route at once, but its purge waits for the last hold (session-life.ts).
 */

export interface Hold {
  hold: string;
  forkId: string;
  /** When it was taken (milliseconds). */
  since: number;
}

export class ForkHolds {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** Takes a hold for the fork `forkId`; answers it. */
  add(forkId: string): string {
    const hold = newId();
    this.#sql`INSERT INTO fork_holds (hold, fork_id, since) VALUES (${hold}, ${forkId}, ${Date.now()})`;
    return hold;
  }

  has(hold: string): boolean {
    return (
      hasSchema(this.#sql) && this.#sql`SELECT 1 FROM fork_holds WHERE hold = ${hold}`.toArray().length > 0
    );
  }

  remove(hold: string): void {
    if (hasSchema(this.#sql)) this.#sql`DELETE FROM fork_holds WHERE hold = ${hold}`;
  }

  /** The holds on the session, oldest first. */
  list(): Hold[] {
    if (!hasSchema(this.#sql)) return [];
    return this.#sql<{ hold: string; fork_id: string; since: number }>`
      SELECT hold, fork_id, since FROM fork_holds ORDER BY since`
      .toArray()
      .map((row) => ({ hold: row.hold, forkId: row.fork_id, since: row.since }));
  }
}
