import { DurableObject } from "cloudflare:workers";
import type { DurableEnv } from "../env";
import type { Sql } from "../sql";
import { migrate, sqlOf } from "../sql";

/*
 * Where a tenant was placed: one object per tenant, in the default namespace, named by a hash of
 * the tenant (it holds no name and no data of the tenant, only its jurisdiction). The Worker asks
 * it once a minute per isolate and tenant (placement-check.ts): a tenant whose pin changed while its
 * sessions stay where they were would otherwise be served from an empty place, and its new
 * sessions written beside the old ones in another jurisdiction.
 */

const MIGRATIONS = [
  `CREATE TABLE placement (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    jurisdiction TEXT NOT NULL,
    placed_at INTEGER NOT NULL
  )`,
];

/** A jurisdiction as the registry records it: "" is the default (no jurisdiction). */
export type PlaceName = string;

export class TenantPlacement extends DurableObject<DurableEnv> {
  readonly #sql: Sql;

  constructor(ctx: DurableObjectState, env: DurableEnv) {
    super(ctx, env);
    this.#sql = sqlOf(ctx.storage.sql);
    ctx.storage.transactionSync(() => migrate(ctx.storage.sql, MIGRATIONS));
  }

  /** Where the tenant is placed; undefined for a tenant not seen yet. @internal */
  placed(): PlaceName | undefined {
    return this.#sql<{ jurisdiction: string }>`SELECT jurisdiction FROM placement`.toArray()[0]?.jurisdiction;
  }

  /** Records `place` for a tenant seen for the first time; answers where the tenant is placed. @internal */
  place(place: PlaceName): PlaceName {
    const recorded = this.placed();
    if (recorded !== undefined) return recorded;
    this.#sql`INSERT INTO placement (singleton, jurisdiction, placed_at) VALUES (1, ${place}, ${Date.now()})`;
    return place;
  }

  /**
   * Moves the record from `from` to `to` (the caller found nothing of the tenant left at `from`).
   * @internal
   */
  move(from: PlaceName, to: PlaceName): boolean {
    const moved = this.#sql`UPDATE placement SET jurisdiction = ${to}, placed_at = ${Date.now()}
      WHERE jurisdiction = ${from} RETURNING 1`.toArray();
    return moved.length > 0;
  }
}
