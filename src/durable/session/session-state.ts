import type { PlannedWrite } from "../../core/append";
import type { ContextSettings } from "../../core/context";
import { deriveState, projectEntries } from "../../core/context";
import type { ContextEditEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import { langGraphMessagesHeld } from "../../core/framework-custom-messages";
import type { SessionStats } from "../../core/info";
import { countHeader, emptyStats, sessionInfo } from "../../core/info";
import type { AutoCompactStatus, SessionHeader, SessionInfo } from "../../core/session-schemas";
import type { Sql } from "../sql";
import type { CopyState, EntryRows } from "./entry-rows";
import type { PathReads } from "./path-reads";
import { hasSchema, updateSchema } from "./schema";
import type { SearchIndex } from "./search-index";

/*
 * What the store's reads, contexts and writes share of one session's storage (`StoreParts`): the
 * tables' readers and writers, in a fork still copying its path where the copy stands, and what
 * the rest of this file keeps: the `session` row (its state in memory as stored), the context at
 * the head kept in memory, and where the leaf stood over time.
 */

export interface StoreParts {
  storage: DurableObjectStorage;
  sql: Sql;
  row: SessionRow;
  rows: EntryRows;
  paths: PathReads;
  search: SearchIndex;
  history: LeafHistory;
  head: HeadContext;
  copy: CopyState;
}

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
    // Sessions stored before their bytes were counted: counted once from the rows (the header
    // below), kept from then on.
    if (stats.bytes === undefined) {
      stats.bytes = this.#rows.storedBytes();
      delete stats.headerBytes;
    }
    const header: SessionHeader = JSON.parse(row.header);
    // Sessions stored before their header counted: it counts from now on, stored with the next write.
    if (stats.headerBytes === undefined) countHeader(stats, header);
    return {
      tenant: row.tenant,
      incarnation: row.incarnation,
      header,
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
    const stats = emptyStats(header);
    updateSchema(this.#storage);
    this.#sql`INSERT INTO session (singleton, tenant, incarnation, header, leaf_id, stats, version)
      VALUES (1, ${tenant}, ${incarnation}, ${JSON.stringify(header)}, NULL, ${JSON.stringify(stats)}, 1)`;
    this.#state = { tenant, incarnation, header, leafId: null, stats, version: 1, nextSeq: 1 };
  }

  /**
   * Raises the version the directory orders the session's reports by, in the transaction of a
   * change that no write made but a report shows: a report of a version the directory holds
   * already is ignored.
   */
  raiseVersion(): void {
    const state = this.live();
    this.#sql`UPDATE session SET version = ${state.version + 1}`;
    state.version++;
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

/*
 * The context at the head, kept in memory while the head only grows. Agents build the context at
 * the head after every turn: kept, and grown entry by entry as appends arrive, it costs nothing to
 * rebuild. Contexts over CONTEXT_CACHE_CHARS are read from storage each time.
 */

/** Characters of projected messages kept in memory for the context at the head. */
const CONTEXT_CACHE_CHARS = 6 * 1024 * 1024;

export interface KeptContext {
  leafId: string;
  readonly compactionId: string | undefined;
  /** The LangGraph checkpoint whose messages value the context holds, if any. */
  readonly checkpointId: string | null;
  settings: ContextSettings;
  /** The context's edits: one written before its target (a hand-made file) applies to it when it arrives. */
  readonly edits: ReadonlyMap<string, ContextEditEntry>;
  /** Each message's JSON. */
  readonly pieces: string[];
  chars: number;
  /** `pieces` joined with commas, once asked for (the inside of the messages array). */
  joined: string | undefined;
}

/** How to build the head's context from storage: its settings and its messages page by page. */
export interface ContextSource {
  compactionId: string | undefined;
  checkpointId: string | null;
  settings: ContextSettings;
  edits: ReadonlyMap<string, ContextEditEntry>;
  pages: Iterable<string[]>;
}

export class HeadContext {
  #kept: KeptContext | undefined;
  /** A head whose context was found too large to keep (so it is not read twice each time). */
  #tooLarge: string | undefined;

  /** The kept context at `leafId`, built from `source` when missing; undefined when too large to keep. */
  get(leafId: string, source: () => ContextSource): KeptContext | undefined {
    if (this.#kept?.leafId === leafId) return this.#kept;
    if (this.#tooLarge === leafId) return undefined;
    const { compactionId, checkpointId, settings, edits, pages } = source();
    const pieces: string[] = [];
    let chars = 0;
    for (const page of pages) {
      for (const piece of page) {
        pieces.push(piece);
        chars += piece.length;
      }
      if (chars > CONTEXT_CACHE_CHARS) {
        this.#tooLarge = leafId;
        return undefined;
      }
    }
    this.#kept = { leafId, compactionId, checkpointId, settings, edits, pieces, chars, joined: undefined };
    return this.#kept;
  }

  /**
   * Keeps the context current after a write: entries appended under the head extend it; anything
   * else (a compaction, a context edit, which changes an earlier message, a LangGraph checkpoint
   * that decides anew which messages its value stands for, a branch, a move) drops it, to be
   * rebuilt when next asked.
   */
  follow(writes: readonly PlannedWrite[], leafId: string | null): void {
    const kept = this.#kept;
    if (!kept) return;
    for (const { entry } of writes) {
      if (entry.type === "leaf") {
        if (entry.targetId === kept.leafId) continue;
      } else if (
        entry.parentId === kept.leafId &&
        entry.type !== "compaction" &&
        entry.type !== "context_edit" &&
        !this.#replacesMessages(entry)
      ) {
        const projecting = { edits: kept.edits, checkpointId: null };
        for (const message of projectEntries([entry], kept.compactionId, projecting)) {
          const piece = JSON.stringify(message);
          kept.pieces.push(piece);
          kept.chars += piece.length;
        }
        kept.settings = deriveState([entry], kept.settings);
        kept.leafId = entry.id;
        kept.joined = undefined;
        continue;
      }
      this.#kept = undefined;
      return;
    }
    if (kept.leafId !== leafId || kept.chars > CONTEXT_CACHE_CHARS) this.#kept = undefined;
  }

  /** Whether an entry changes which messages a LangGraph checkpoint's value stands for in the kept context. */
  #replacesMessages(entry: PlannedWrite["entry"]): boolean {
    if (entry.type !== "custom") return false;
    const held = langGraphMessagesHeld(entry);
    return held === "value" || (held === "changes" && this.#kept?.checkpointId != null);
  }

  /** Forgets the kept context and what was known of its size (after a reset or a rollback). */
  drop(): void {
    this.#kept = undefined;
    this.#tooLarge = undefined;
  }
}

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
