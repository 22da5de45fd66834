import type {
  EntryType,
  ForkPathEntry,
  OmittedHistory,
  SessionHeader,
  SessionInfo,
  StoredEntry,
} from "../core/internal";

/*
 * What crosses RPC between the Worker and the objects, and between objects: the answers and
 * requests no single side owns.
 */

/** How a session is created: its directory shard, the bytes it is about to receive, who builds it. */
export interface NewSessionOptions {
  shard?: number;
  bytes?: number;
  /**
   * A fork's or an import's token: the session is found by that builder's calls alone (it is
   * found by no one else) until the builder publishes it, complete. Absent: listed at once.
   */
  builder?: string;
}

/** A call of the fork or the import that builds a session (see `NewSessionOptions.builder`). */
export interface Building {
  builder?: string;
}

/** Entries read in order until the page is full; `rest` are the seqs still to read. */
export interface EntryPage {
  entries: StoredEntry[];
  rest: number[];
}

/**
 * A row of a fork's path as it crosses to the new session: its columns as stored (the copy keeps
 * the source's seqs, so what a row points at, its parent and the latest compaction and settings on
 * its path, all on the same path, keeps its number) and its payload whole, with its UTF-8 size.
 */
export interface CopiedRow {
  seq: number;
  id: string;
  parent_id: string | null;
  parent_seq: number | null;
  type: EntryType;
  role: string | null;
  timestamp: string;
  depth: number;
  last_compaction: number | null;
  last_thinking: number | null;
  last_model: number | null;
  last_tools: number | null;
  body: string;
  /** UTF-8 bytes of `body` as stored. */
  bytes: number;
  /** What the values of its blobs add to it (it holds references to them). */
  blob_bytes: number;
  [key: string]: SqlStorageValue;
}

export interface ForkSource {
  /** The head of the fork (the target, or its parent for `before`). */
  leafId: string | null;
  /** Seqs of the path root → leaf, to copy in pages. */
  seqs: number[];
  /** Bytes of those entries as stored: what the fork will hold before any label it re-creates. */
  bytes: number;
  /** Light entries of the path, those `forkExtras` can act on (labels, names, labelled entries, the target), in path order. */
  path: ForkPathEntry[];
  labels: Record<string, string>;
  header: SessionHeader;
  name: string | undefined;
}

export interface DirectoryReport {
  info: SessionInfo;
  /** Which life of the id this is: a deleted and re-created session is a new incarnation. */
  incarnation: string;
  /** Grows with every write to the session; older reports are ignored. */
  version: number;
  /** The tenant and shard the report goes to (the shard learns who it is from them). */
  tenant?: string;
  shard?: number;
  /** What the tenant's search finds the session by, besides its name and preview. */
  search?: SearchDigest;
}

/** What a tenant stores, as its sessions last reported it. */
export interface TenantUsage {
  sessions: number;
  entries: number;
  bytes: number;
}

/** The tenant's retention: sessions idle (no write) for this many days are deleted; null keeps them. */
export interface Retention {
  idleDays: number | null;
}

export interface ClaimRequest {
  sessionId: string;
  /** Bytes the session holds now. */
  holds: number;
  /** Bytes its write adds. */
  wants: number;
  /** Increases with each request the session makes. */
  seq: number;
  /** A session being created (or restored): it counts against `maxSessions` from now. */
  newSession: boolean;
}

export interface SeedRow {
  id: string;
  bytes: number;
}

/** What the tenant's search finds a session by besides its name and preview: its labels and a digest of its text. */
export interface SearchDigest {
  labels: string;
  text: string;
}

/** A page of a fork's path, and the seqs still to copy (see `EntryRows.pathRows`). */
export interface CopiedRows {
  /** Rows whose payload is inline, as JSON arrays of their columns. */
  batches: string[];
  /** Rows whose payload was stored in chunks, each with its payload whole. */
  chunked: CopiedRow[];
  /** What the session's figures need of each row, in order. */
  figures: CopiedFigure[];
  /** The blobs the page's entries refer to. */
  blobRefs: string[];
  first?: number;
  last?: { seq: number; id: string };
  rest: number[];
}

/**
 * What a session's figures read of a row it copied: its sizes, and its payload only for labels and
 * names (the first user message's, for the preview, is read from the copy).
 */
export interface CopiedFigure {
  seq: number;
  type: EntryType;
  role: string | null;
  body: string | null;
  /** UTF-8 bytes of the payload as stored, chunks included. */
  bytes: number;
  blob_bytes: number;
}

/** What the retention sweep of a directory shard learns from a session it found idle. */
export type ExpiryOutcome = "expired" | "kept" | "missing";

/**
 * A context answer from a session's object: its version, and its JSON whole (`string`) or
 * streamed; or only the version, when the caller holds it already (`unchanged`).
 */
export type ContextAnswer =
  | { version: string; kind: "full" | "delta"; body: ReadableStream<Uint8Array> | string }
  | { version: string; kind: "unchanged" };

/**
 * What a compaction reads of a context path (compaction-reads.ts): `seqs` whole, in path order;
 * `omitted` (the middle of a long path) only counted, a part at a time. `after` names the entry
 * the omitted part follows; `compactionId` the latest compaction the omitted entries project under.
 */
export interface CompactionPlan {
  seqs: number[];
  omitted: number[];
  after?: string;
  compactionId?: string;
}

/** A count of omitted entries: how many of those asked it covered (`done`), and what they hold. */
export interface OmittedCount {
  done: number;
  counted: Omit<OmittedHistory, "after">;
}
