import type { EntryRef } from "../core/append";
import type { OmittedHistory } from "../core/compaction";
import type { EntryType, StoredEntry } from "../core/entries";
import type { TextLine } from "../core/entry-text";
import type { ForkPathEntry } from "../core/fork";
import type { SessionHeader, SessionInfo } from "../core/session-schemas";

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
  /** A fork: its source, where its copy starts, and its name. */
  fork?: ForkBegin;
}

/** What a fork's object begins with: its source's answer (see `ForkStart`) and its name. */
export interface ForkBegin {
  sourceId: string;
  start: ForkStart;
  name: string | undefined;
}

/** A call of the fork or the import that builds a session (see `NewSessionOptions.builder`). */
export interface Building {
  builder?: string;
}

/** What an append through a session's object may be refused for beyond the append rules. */
export interface AppendGuard {
  /**
   * Refused (`leaf_conflict`, nothing written) while a generation is open: its answer goes under
   * the head it opened at, which would leave what is appended on a branch of its own. Checked in
   * the write itself, so no generation opens between the check and the append; a replay, which
   * writes nothing, is answered as ever.
   */
  refuseWhileGenerating?: boolean;
}

/** Entries read in order until the page is full; `rest` are the seqs still to read. */
export interface EntryPage {
  entries: StoredEntry[];
  rest: number[];
}

/**
 * Where a read of a context's lines starts (see `ContextLines`): at the entry in position `from`
 * (`skip` of its lines already read), until `lines` lines; or before the entry in position
 * `before` (null: the end), going back until `chars` characters of lines.
 */
export type ContextWindow =
  | { from: number; skip: number; lines: number }
  | { before: number | null; chars: number };

/**
 * Lines of a context: the entries it is made of, in order (its compaction first, when it opens
 * with one), each with the lines of the messages it stands for in it. A read answers the entries
 * of a window of their positions, as many as one read takes, never the whole context.
 */
export interface ContextLines {
  /** Entries the context is made of. */
  total: number;
  /** The position of the first of `entries`. */
  from: number;
  /**
   * Entries from `from` on, each with the lines read of it (none for one that stands for no
   * message) and how many it has: reading forwards, those from where the window starts, as many as
   * it asks; backwards, its last ones.
   */
  entries: { id: string; lines: TextLine[]; count: number }[];
}

/**
 * Lines of a tree (see `drawTree`) from a position: how many it has, those asked for that a read
 * takes, and the last seq of the entries it was drawn of (what draws the same tree again).
 */
export interface TreeLinesPage {
  total: number;
  lines: string[];
  bound: number;
}

/** An entry too large to carry whole: where it is, and how large its JSON is. */
export interface EntryPlace {
  id: string;
  seq: number;
  type: string;
  parentId: string | null;
  timestamp: string;
  omitted: { chars: number };
}

/**
 * Entries as a reader is shown them: each one's lines, and the entry whole while it is at most
 * `wholeChars` characters of JSON and fits in what is `left` of the answer's budget, else its place.
 */
export interface ShownEntries {
  entries: { lines: TextLine[]; entry: StoredEntry | EntryPlace }[];
  /** What is left of the budget after the entries carried whole. */
  left: number;
}

/**
 * A page of a tree's shape: the seq of each entry of the tree in append order and its parent's
 * (0: a root), up to `bound` (the session's last seq when the first page was read: what is
 * appended after is in no page); `done` when no page follows.
 */
export interface TreeShapePage {
  seqs: number[];
  parents: number[];
  bound: number;
  done: boolean;
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
  path_bytes: number | null;
  path_blob_bytes: number | null;
  path_messages: number | null;
  path_preview: number | null;
  messages_held: string | null;
  edit_target: string | null;
  [key: string]: SqlStorageValue;
}

/** What the path root → a fork's head holds: the fork's figures from the moment it answers. */
export interface PathFigures {
  entries: number;
  messages: number;
  /** UTF-8 bytes of the entries as stored, their blobs' values included (what quotas count). */
  bytes: number;
  blobBytes: number;
  preview?: string;
  /** The name the path's latest `session_info` entry gives, when the path holds one. */
  entryName?: { name?: string };
}

/** A fork as its source answers it, having counted it among the forks that copy from it. */
export interface ForkStart {
  /** The fork's head (the target, or its parent for `before`); null: the fork holds nothing. */
  leafId: string | null;
  header: SessionHeader;
  name: string | undefined;
  figures: PathFigures;
  /** The label index the path's label entries make, in path order. */
  labels: Record<string, string>;
  /** What `forkExtras` reads: the path entries it can act on, root first, and the source's labels of them. */
  path: ForkPathEntry[];
  sourceLabels: Record<string, string>;
  /** Type and parent of those entries: what a fork's first writes see of them before they are copied. */
  refs: Record<string, EntryRef>;
  /** The path's first page, from the head up; null when the fork holds nothing. */
  page: CopiedRows | null;
  /** What the source keeps the rest of the path by, until the fork has copied it (none: nothing is left). */
  hold?: string;
}

export interface DirectoryReport {
  info: SessionInfo;
  /** Which life of the id this is: a deleted and re-created session is a new incarnation. */
  incarnation: string;
  /**
   * Grows with every write to the session, and when its text is all indexed for search (what
   * `search` carries changes then); a report of a version the shard holds already is ignored.
   */
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
  /** A session's id, or a stream's key after STREAM_CLAIM_PREFIX. */
  sessionId: string;
  /** Bytes the session holds now. */
  holds: number;
  /** Bytes its write adds. */
  wants: number;
  /** Increases with each request the session makes. */
  seq: number;
  /**
   * A session being created (or restored), or a stream being made: it counts against
   * `maxSessions` or `maxStreams` from now.
   */
  newSession: boolean;
  /**
   * Granted what the tenant's quota leaves when that is less than the write wants, rather than
   * refused: for a write that keeps what fits of what it would have written.
   */
  partial?: boolean;
}

/** What a stream's object tells its directory shard about it. */
export interface StreamReport {
  /** The stream's path under `/v1/stream/`. */
  key: string;
  /** Raised by each report of the stream's object. */
  version: number;
  /** Listed; deleted but kept while forks read it; or removed with its data. */
  state: "live" | "deleted" | "removed";
  contentType: string;
  /** Bytes of data the stream holds itself (not what a fork reads from its source). */
  bytes: number;
  closed: boolean;
  /** Its last write (or, with a sliding expiry, its last renewal), epoch milliseconds. */
  activeAt: number;
  expiresAt: number | null;
  /** Whose stream, and the shard it reports to (a new shard learns its tenant from a report). */
  tenant: string;
  shard: number;
}

/** A stream as the tenant's listing shows it. */
export interface StreamListing {
  path: string;
  contentType: string;
  bytes: number;
  closed: boolean;
  createdAt: string;
  activeAt: string;
  expiresAt: string | null;
}

export interface StreamUsage {
  streams: number;
  bytes: number;
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

/** A page of a fork's path, from a row up towards the root (see fork-source.ts). */
export interface CopiedRows {
  /** Rows whose payload is inline, as JSON arrays of their columns. */
  batches: string[];
  /** Rows whose payload was stored in chunks, each with its payload whole. */
  chunked: CopiedRow[];
  /** The blobs the page's entries refer to. */
  blobRefs: string[];
  /** How many rows the page holds. */
  rows: number;
  /** The row the path goes on with above the page (its seq and depth); null: the page reached the root. */
  next: { seq: number; depth: number } | null;
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
 * What a compaction reads of a context path (session-reads.ts): `seqs` whole, in path order;
 * `omitted` (the middle of a long path) only counted, a part at a time. `after` names the entry
 * the omitted part follows; `compactionId` the latest compaction the omitted entries project under.
 */
export interface CompactionPlan {
  seqs: number[];
  omitted: number[];
  after?: string;
  compactionId?: string;
}

/** What a branch summary reads of the branch it leaves (a `CompactionPlan` of it), and where it left. */
export interface AbandonedPlan extends CompactionPlan {
  commonAncestorId: string | null;
}

/** A count of omitted entries: how many of those asked it covered (`done`), and what they hold. */
export interface OmittedCount {
  done: number;
  counted: Omit<OmittedHistory, "after">;
}
