import { SessionError } from "../../core/errors";
import type { SessionStats } from "../../core/info";
import { emptyStats, sessionInfo } from "../../core/info";
import type { AutoCompactStatus, SessionHeader, SessionInfo } from "../../core/session-schemas";
import type { Sql } from "../sql";
import type { EntryRows } from "./entry-rows";
import { hasSchema, updateSchema } from "./schema";

/*
 * The `session` row: the session's state (header, leaf, counts) kept in memory as stored. Its
 * existence says the schema exists: the schema is brought up to date when the row is read or
 * written first. After a transaction that failed (`stale`), storage rolled back and memory did
 * not: the row is read again before it is next used.
 */

export interface SessionState {
  tenant: string;
  incarnation: string;
  header: SessionHeader;
  leafId: string | null;
  stats: SessionStats;
  version: number;
  nextSeq: number;
  autoCompaction?: AutoCompactStatus;
}

export class SessionRow {
  readonly #storage: SqlStorage;
  readonly #sql: Sql;
  readonly #rows: EntryRows;
  #state: SessionState | undefined;
  /** A transaction failed since the state was read: storage rolled back, so it is read again. */
  #stale = false;

  constructor(storage: SqlStorage, sql: Sql, rows: EntryRows) {
    this.#storage = storage;
    this.#sql = sql;
    this.#rows = rows;
    if (hasSchema(sql)) {
      updateSchema(storage);
      this.#state = this.#load();
    }
  }

  #load(): SessionState | undefined {
    const row = this.#sql<{
      tenant: string;
      incarnation: string;
      header: string;
      leaf_id: string | null;
      stats: string;
      version: number;
      auto_compaction: string | null;
    }>`SELECT tenant, incarnation, header, leaf_id, stats, version, auto_compaction FROM session`.toArray()[0];
    if (!row) return undefined;
    const stats: SessionStats = JSON.parse(row.stats);
    // Sessions stored before their bytes were counted: counted once from the rows, kept from then on.
    stats.bytes ??= this.#rows.storedBytes();
    return {
      tenant: row.tenant,
      incarnation: row.incarnation,
      header: JSON.parse(row.header),
      leafId: row.leaf_id,
      stats,
      version: row.version,
      nextSeq: this.#rows.lastSeq() + 1,
      ...(row.auto_compaction ? { autoCompaction: JSON.parse(row.auto_compaction) } : {}),
    };
  }

  /** The state as stored, read again after a transaction that failed. */
  get current(): SessionState | undefined {
    if (this.#stale) {
      this.#state = hasSchema(this.#sql) ? this.#load() : undefined;
      this.#stale = false;
    }
    return this.#state;
  }

  /** Marks the state as no longer what storage holds: it is read again when next needed. */
  stale(): void {
    this.#stale = true;
  }

  /** The state; `not_found` when this object holds no session. */
  live(): SessionState {
    const state = this.current;
    if (!state) throw new SessionError("not_found", "session does not exist");
    return state;
  }

  /** The leaf a read starts from (the head when undefined); `not_found` when there is no session. */
  start(leafId: string | null | undefined): string | null {
    const state = this.live();
    return leafId === undefined ? state.leafId : leafId;
  }

  /** Writes the row of a new session; `already_exists` when there is one. */
  create(tenant: string, incarnation: string, header: SessionHeader): void {
    if (this.current) {
      throw new SessionError("already_exists", `session ${header.id} already exists`, { id: header.id });
    }
    const stats = emptyStats(header.createdAt);
    updateSchema(this.#storage);
    this.#sql`INSERT INTO session (singleton, tenant, incarnation, header, leaf_id, stats, version)
      VALUES (1, ${tenant}, ${incarnation}, ${JSON.stringify(header)}, NULL, ${JSON.stringify(stats)}, 1)`;
    this.#state = { tenant, incarnation, header, leafId: null, stats, version: 1, nextSeq: 1 };
  }

  /** Forgets the state after the object's storage was deleted. */
  forget(): void {
    this.#state = undefined;
    this.#stale = false;
  }

  info(): SessionInfo {
    const state = this.live();
    const info = sessionInfo(state.header, state.stats, state.leafId);
    if (info.autoCompact) info.autoCompact.status = state.autoCompaction ?? { state: "idle" };
    return info;
  }
}
