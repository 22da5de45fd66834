import type { SessionHeader, SessionInfo } from "../../core/session-schemas";
import { sqlOf } from "../sql";
import { ContextReads } from "./context-reads";
import { CopyState, EntryRows } from "./entry-rows";
import { PathReads } from "./path-reads";
import { SearchIndex } from "./search-index";
import { SessionReads } from "./session-reads";
import type { SessionState } from "./session-state";
import { HeadContext, LeafHistory, SessionRow } from "./session-state";
import { SessionWrites } from "./session-writes";

/*
 * One session in a Durable Object's SQLite: its state (the `session` row, kept in memory) and the
 * parts that read and write it: `reads` (entries, paths, the tree, search), `contexts` (a leaf's
 * context, the head's kept in memory) and `writes` (every write in one transaction). Should a
 * transaction fail, what memory holds is read again from storage. Runs inside the object only:
 * every method is synchronous.
 */

export class SessionStore {
  readonly #row: SessionRow;
  readonly #head = new HeadContext();
  readonly #history: LeafHistory;
  readonly #search: SearchIndex;
  /** In a fork still copying its path, where the copy stands (entry-rows.ts). */
  readonly copy: CopyState;
  readonly reads: SessionReads;
  readonly contexts: ContextReads;
  readonly writes: SessionWrites;

  constructor(storage: DurableObjectStorage) {
    const sql = sqlOf(storage.sql);
    const rows = new EntryRows(storage.sql, sql);
    const paths = new PathReads(rows, sql);
    const search = new SearchIndex(storage.sql, sql, rows, paths);
    const history = new LeafHistory(sql);
    const row = new SessionRow(storage.sql, sql, rows);
    this.#row = row;
    this.#history = history;
    this.#search = search;
    this.copy = new CopyState(sql);
    const parts = { storage, sql, row, rows, paths, search, history, head: this.#head, copy: this.copy };
    this.reads = new SessionReads(parts);
    this.contexts = new ContextReads(parts);
    this.writes = new SessionWrites(parts, this.reads, this.contexts, this);
  }

  /**
   * Forgets what memory holds of the session, to read it again from storage: call it when a
   * transaction that wrote the session failed, as storage rolled back and memory did not.
   */
  reload(): void {
    this.#row.stale();
    this.#head.drop();
    this.#history.reset();
    this.copy.reload();
  }

  get exists(): boolean {
    return this.#row.current !== undefined;
  }

  /** The session's state; `not_found` when this object holds no session. */
  get state(): Readonly<SessionState> {
    return this.#row.live();
  }

  init(tenant: string, incarnation: string, header: SessionHeader): SessionInfo {
    this.#row.create(tenant, incarnation, header);
    this.#search.indexHeader(header, this.state.stats);
    this.#history.record(0, null);
    return this.info();
  }

  /** Forgets the in-memory state after the object's storage was deleted. */
  reset(): void {
    this.#row.forget();
    this.#head.drop();
    this.#history.reset();
    this.copy.reset();
  }

  /** The session's info; a fork still copying its path says how far it is. */
  info(): SessionInfo {
    const info = this.#row.info();
    const copying = this.copy.progress();
    return copying ? { ...info, copying } : info;
  }

  lastSeq(): number {
    return this.state.nextSeq - 1;
  }
}
