import { LATEST_EXPIRES_AT } from "../../core/limits";
import type { DurableEnv } from "../env";
import { numberSetting } from "../settings";
import type { Sql } from "../sql";
import { hasSchema } from "./schema";

/*
 * Where a session stands apart from its content: the directory shard it reports to (fixed when it
 * is created), whether it is still being written by a fork or an import (not listed until
 * complete), and whether it is deleted: a deleted session answers not_found everywhere but keeps
 * its data until `purgeAt`, so it can be restored whole until then.
 */

export const DEFAULT_RECOVERY_SECONDS = 7 * 24 * 3600;
/** An unlisted session a fork or an import never completed is dropped after this long. */
export const PENDING_MS = 24 * 3600 * 1000;

/** How long a deleted session stays restorable (RECOVERY_WINDOW_SECONDS; 0 purges at once). */
export function recoveryWindowMs(env: Pick<DurableEnv, "RECOVERY_WINDOW_SECONDS">): number {
  return numberSetting(env.RECOVERY_WINDOW_SECONDS, DEFAULT_RECOVERY_SECONDS, { whole: false }) * 1000;
}

export interface LifecycleState {
  shard: number;
  /** When an unlisted (fork or import in progress) session was created; null once listed. */
  pendingSince: number | null;
  deletedAt: number | null;
  purgeAt: number | null;
}

const FRESH: LifecycleState = { shard: 0, pendingSince: null, deletedAt: null, purgeAt: null };

export class SessionLifecycle {
  readonly #sql: Sql;
  #stored: LifecycleState | undefined;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** The state as stored (read when first needed, and again after `reload`). */
  get state(): Readonly<LifecycleState> {
    this.#stored ??= this.#load();
    return this.#stored;
  }

  /** Reads the state again from storage: a transaction that wrote it failed and rolled back. */
  reload(): void {
    this.#stored = undefined;
  }

  /** The stored state; a session written before lifecycles existed reports to shard 0. */
  #load(): LifecycleState {
    if (!hasSchema(this.#sql)) return { ...FRESH };
    const row = this.#sql<{
      directory_shard: number;
      pending_since: number | null;
      deleted_at: number | null;
      purge_at: number | null;
    }>`SELECT directory_shard, pending_since, deleted_at, purge_at FROM lifecycle`.toArray()[0];
    if (!row) return { ...FRESH };
    return {
      shard: row.directory_shard,
      pendingSince: row.pending_since,
      deletedAt: row.deleted_at,
      purgeAt: row.purge_at,
    };
  }

  get deleted(): boolean {
    return this.state.deletedAt !== null;
  }

  get pending(): boolean {
    return this.state.pendingSince !== null;
  }

  #save(next: LifecycleState): void {
    this
      .#sql`INSERT OR REPLACE INTO lifecycle (singleton, directory_shard, pending_since, deleted_at, purge_at)
      VALUES (1, ${next.shard}, ${next.pendingSince}, ${next.deletedAt}, ${next.purgeAt})`;
    this.#stored = next;
  }

  /** A new session: its shard, and whether it waits to be listed until it is complete. */
  begin(shard: number, pendingSince: number | null): void {
    this.#save({ ...FRESH, shard, pendingSince });
  }

  listed(): void {
    if (this.pending) this.#save({ ...this.state, pendingSince: null });
  }

  markDeleted(now: number, purgeAt: number): void {
    this.#save({ ...this.state, deletedAt: now, purgeAt });
  }

  markRestored(): void {
    this.#save({ ...this.state, deletedAt: null, purgeAt: null });
  }

  /** Forgets the state after the object's storage was deleted. */
  reset(): void {
    this.#stored = { ...FRESH };
  }

  /**
   * When the object must next wake for its lifecycle: to purge a deleted session, to drop one left
   * incomplete, to delete one whose `expiresAt` came, or (`soon`) to go on with background work.
   */
  dueAt(expiresAt: string | undefined, soon: number | undefined): number | undefined {
    if (this.state.purgeAt !== null) return this.state.purgeAt;
    const times: number[] = [];
    if (this.state.pendingSince !== null) times.push(this.state.pendingSince + PENDING_MS);
    // An expiry stored before expiries were bounded may lie past what an alarm can be set to.
    const expiry = expiresAt === undefined ? Number.NaN : Date.parse(expiresAt);
    if (expiry < Date.parse(LATEST_EXPIRES_AT)) times.push(expiry);
    if (soon !== undefined) times.push(soon);
    return times.length > 0 ? Math.min(...times) : undefined;
  }
}
