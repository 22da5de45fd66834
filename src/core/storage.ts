import * as z from "zod";
import type { EntryInput, LeafEntry, SessionEntry, StoredEntry, TreeEntry } from "./entries";
import { EntryType as EntryTypeSchema, Id, Timestamp } from "./entries";
import type { ImportedSession } from "./interchange";
import { LATEST_EXPIRES_AT, MAX_ENTRIES_PAGE, MAX_SESSIONS_PAGE } from "./limits";
import type { Session } from "./session";
import type { SyncResult } from "./sync-import";
import type { TreeNode } from "./tree";

export const ParentSession = z.object({ id: Id, entryId: Id });
export type ParentSession = z.infer<typeof ParentSession>;

export const Metadata = z.record(z.string(), z.unknown());

/**
 * Compaction the service runs by itself after a write brings the context estimate over
 * `contextWindow - reserveTokens` (in the background: it never delays the write).
 */
export const AutoCompactSettings = z
  .object({
    contextWindow: z.number().int().positive(),
    reserveTokens: z.number().int().nonnegative(),
    keepRecentTokens: z.number().int().nonnegative().optional(),
  })
  .strict()
  .refine((s) => s.reserveTokens < s.contextWindow, {
    message: "reserveTokens must be less than contextWindow",
  });
export type AutoCompactSettings = z.infer<typeof AutoCompactSettings>;

/** Where automatic compaction stands (service only). */
export const AutoCompactStatus = z.object({
  state: z.enum(["idle", "running", "failed"]),
  lastRunAt: Timestamp.optional(),
  lastEntryId: Id.optional(),
  lastError: z.string().optional(),
});
export type AutoCompactStatus = z.infer<typeof AutoCompactStatus>;

/** What a session is apart from its entries. Its name, once a `session_info` entry exists, comes from entries. */
export const SessionHeader = z.object({
  id: Id,
  createdAt: Timestamp,
  name: z.string().optional(),
  systemPrompt: z.string().optional(),
  metadata: Metadata,
  parentSession: ParentSession.optional(),
  autoCompact: AutoCompactSettings.optional(),
  expiresAt: Timestamp.optional(),
});
export type SessionHeader = z.infer<typeof SessionHeader>;

/**
 * When the service deletes a session by itself (recoverably, like a DELETE). The library's own
 * backends keep it as data.
 */
export const ExpiresAt = Timestamp.refine((value) => Date.parse(value) < Date.parse(LATEST_EXPIRES_AT), {
  message: `must be before ${LATEST_EXPIRES_AT}`,
}).meta({
  description: `ISO 8601, before ${LATEST_EXPIRES_AT}; the service deletes the session then (recoverable for the recovery window)`,
});

export const SessionInfo = z
  .object({
    id: Id,
    name: z.string().optional(),
    systemPrompt: z.string().optional(),
    metadata: Metadata,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    leafId: Id.nullable(),
    entryCount: z.number().int().meta({ description: "entries in the tree (leaf records not counted)" }),
    messageCount: z.number().int(),
    bytes: z.number().int().meta({
      description: "UTF-8 bytes of the stored entries' JSON, leaf records included (what byte quotas count)",
    }),
    parentSession: ParentSession.optional(),
    preview: z.string().optional().meta({ description: "the first user message's text, at most 200 chars" }),
    autoCompact: AutoCompactSettings.and(z.object({ status: AutoCompactStatus.optional() })).optional(),
    expiresAt: Timestamp.optional().meta({
      description: "when the service deletes the session (recoverably)",
    }),
  })
  .meta({ id: "SessionInfo" });
export type SessionInfo = z.infer<typeof SessionInfo>;

export const CreateSessionOptions = z
  .object({
    id: Id.optional(),
    name: z.string().optional(),
    systemPrompt: z.string().optional(),
    metadata: Metadata.optional(),
    expiresAt: ExpiresAt.optional(),
  })
  .strict();
export type CreateSessionOptions = z.infer<typeof CreateSessionOptions>;

export const HeaderPatch = z
  .object({
    systemPrompt: z.string().nullable().optional().meta({ description: "null removes it" }),
    metadata: Metadata.optional().meta({ description: "replaces the metadata" }),
    autoCompact: AutoCompactSettings.nullable().optional().meta({
      description:
        "compact by itself when the context passes contextWindow - reserveTokens; null turns it off",
    }),
    expiresAt: ExpiresAt.nullable().optional().meta({ description: "null: the session never expires" }),
  })
  .strict();
export type HeaderPatch = z.infer<typeof HeaderPatch>;

/** A change to a session: its header, and its name (a `session_info` entry). */
export const SessionPatch = HeaderPatch.extend({
  name: z.string().optional().meta({ description: "appends a session_info entry; blank clears the name" }),
}).strict();
export type SessionPatch = z.infer<typeof SessionPatch>;

export const EntryQuery = z.object({
  after: z.coerce.number().int().min(0).optional().meta({ description: "a seq: entries after it" }),
  limit: z.coerce.number().int().min(1).max(MAX_ENTRIES_PAGE).optional().meta({ description: "default 100" }),
  type: z.union([EntryTypeSchema, z.array(EntryTypeSchema).readonly()]).optional(),
});
export type EntryQuery = z.infer<typeof EntryQuery>;

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

/** `before` on a user message means its parent: the head to edit and resend it from. */
export const Position = z.enum(["at", "before"]);
export type Position = z.infer<typeof Position>;

export interface LeafOptions extends AppendOptions {
  position?: Position;
}

export const ForkOptions = z
  .object({
    position: Position.optional(),
    id: Id.optional().meta({ description: "id of the new session (a fresh one when absent)" }),
    name: z.string().optional().meta({ description: "the source's name carries over when absent" }),
  })
  .strict();
export type ForkOptions = z.infer<typeof ForkOptions>;

export const ListOptions = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_SESSIONS_PAGE).optional().meta({ description: "default 50" }),
  cursor: z.string().nullable().optional(),
  order: z.enum(["updated", "created"]).optional().meta({ description: "newest first; default updated" }),
});
export type ListOptions = z.infer<typeof ListOptions>;

export const SessionPage = z.object({ sessions: z.array(SessionInfo), nextCursor: z.string().nullable() });
export type SessionPage = z.infer<typeof SessionPage>;

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
  /** The path root → leaf (the current leaf when `leafId` is undefined; empty for `null`). */
  getBranch(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]>;
  /**
   * The path as `buildSessionContext` needs it: a storage may leave out entries that can affect
   * neither the messages nor the derived settings (what the latest compaction dropped), so that
   * its cost does not grow with history; the whole branch is always a correct answer.
   */
  getContextPath(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]>;
  getTree(): Promise<TreeNode[]>;
  /** Every entry's current label. */
  getLabels(): Promise<Record<string, string>>;

  /** Appends atomically: every entry or none. */
  appendEntries(entries: readonly EntryInput[], options?: AppendOptions): Promise<AppendResult>;
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

export interface SessionRepo {
  create(options?: CreateSessionOptions): Promise<Session>;
  /** Fails with `not_found` when there is no such session. */
  open(id: string): Promise<Session>;
  list(options?: ListOptions): Promise<SessionPage>;
  delete(id: string): Promise<void>;
  fork(id: string, targetId: string, options?: ForkOptions): Promise<Session>;
  /**
   * Writes a parsed import file (`parseNative`, `parsePi`) as a new session: the file's id unless
   * it is taken (then a new one), or `id`, which fails with `already_exists` if taken.
   */
  importSession(file: ImportedSession, options?: { id?: string }): Promise<Session>;
  /**
   * Writes a parsed import file into the session of its id (or `id`), to keep a copy of a file that
   * grows: creates the session when there is none, appends what the file gained since the last
   * sync, writes nothing when it gained nothing; a session that differs from the file is
   * `already_exists` and nothing is written (`syncImport`).
   */
  syncSession(file: ImportedSession, options?: { id?: string }): Promise<SyncResult>;
  cleanup(): Promise<void>;
}
