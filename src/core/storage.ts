import type { OmittedHistory } from "./compaction";
import type { LeafEntry, SessionEntry, StoredEntry, TreeEntry } from "./entries";
import type { AppendEntryInput } from "./providers/entry-input";
import type {
  EntryQuery,
  ForkOptions,
  HeaderPatch,
  Position,
  SessionHeader,
  SessionInfo,
} from "./session-schemas";
import type { TreeNode } from "./tree";

/*
 * The port a backend provides for one session (`SessionStorage`), and the options and answers of its
 * calls. The conveniences over it are written once, in `Session`.
 */

export interface AppendOptions {
  /** Write only if the leaf is still this (`null`: the session has no leaf). */
  expectedLeafId?: string | null;
}

export interface ImportOptions {
  /** The entries already passed `SessionEntry` validation (a copy from another store, a parsed file). */
  validated?: boolean;
}

export interface AppendResult {
  /** The entries in request order: new ones as stored, replays as they were stored before. */
  entries: StoredEntry[];
  leafId: string | null;
  /** False when every entry was an idempotent replay and nothing was written. */
  created: boolean;
}

export interface LeafOptions extends AppendOptions {
  position?: Position;
}

/**
 * Where one session's entries live: the primitives a backend provides (header, leaf, reading
 * entries and paths, appending a batch, copying, deleting). Every backend (memory, JSONL files, a
 * Durable Object's SQLite, the service over HTTP) applies the same append rules (`planAppend`) and
 * passes the same conformance suite; conveniences are written once, in `Session`.
 */
export interface SessionStorage {
  readonly id: string;
  getHeader(): Promise<SessionHeader>;
  updateHeader(patch: HeaderPatch): Promise<SessionHeader>;
  /** The header, the leaf, the name and counts. */
  getInfo(): Promise<SessionInfo>;

  getLeafId(): Promise<string | null>;
  /** Moves the head durably and appends a `leaf` record; returns the record. */
  setLeafId(targetId: string | null, options?: LeafOptions): Promise<StoredEntry<LeafEntry>>;

  getEntry(id: string): Promise<StoredEntry | undefined>;
  /** Entries in append order, paged by `seq`. */
  getEntries(query?: EntryQuery): Promise<StoredEntry[]>;
  /**
   * The same entries as `getEntries`, a bounded page at a time, read as they are taken: a storage
   * whose entries may be large (megabytes each) offers it, so that reading a session never holds
   * more than a page of it.
   */
  entryPages?(query?: EntryQuery): Promise<AsyncIterable<StoredEntry[]>>;
  /** The path root → leaf (the current leaf when `leafId` is undefined; empty for `null`). */
  getBranch(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]>;
  /**
   * The path as `buildSessionContext` needs it: a storage may leave out entries that can affect
   * neither the messages nor the derived settings (what the latest compaction dropped), so that
   * its cost does not grow with history; the whole branch is always a correct answer.
   */
  getContextPath(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]>;
  /**
   * What a compaction at `leafId` reads, in bounded memory however long the history: the context
   * path, or (when it is too long to hold) its start, its end holding at least `keepRecentTokens`,
   * the entries that change how others project, and a count of the rest (`omitted`). A storage
   * without it gives compaction the whole context path.
   */
  getCompactionPath?(
    leafId: string,
    keepRecentTokens: number,
  ): Promise<{ path: StoredEntry<TreeEntry>[]; omitted?: OmittedHistory }>;
  /**
   * What leaving `fromLeafId` for `targetId` abandons, in bounded memory however long the branch
   * left: the entries after the deepest entry on both paths (`commonAncestorId`) up to
   * `fromLeafId`; of a long part its start, its end and the entries that change how others read,
   * the rest counted (`omitted`). A storage without it gives navigation both whole paths.
   */
  getAbandonedPath?(
    fromLeafId: string,
    targetId: string | null,
  ): Promise<{ commonAncestorId: string | null; path: StoredEntry<TreeEntry>[]; omitted?: OmittedHistory }>;
  getTree(): Promise<TreeNode[]>;
  /** Every entry's current label. */
  getLabels(): Promise<Record<string, string>>;

  /**
   * Appends atomically: every entry or none. A provider's message (`{type: "message", format,
   * message}`) stands for the message entries it converts to.
   */
  appendEntries(entries: readonly AppendEntryInput[], options?: AppendOptions): Promise<AppendResult>;
  /**
   * Copies entries exactly as given (ids, parents, timestamps, `leaf` records) in order: how forks
   * and imports are written. Parents must exist; the rules for new appends are not applied.
   */
  importEntries(entries: readonly SessionEntry[], options?: ImportOptions): Promise<void>;

  fork(targetId: string, options?: ForkOptions): Promise<SessionStorage>;
  delete(): Promise<void>;
  /** Releases what the storage holds open (file locks, handles). */
  cleanup(): Promise<void>;
}
