import * as z from "zod";
import { holdsBlobRef } from "./blob-refs";
import { DEFAULT_KEEP_RECENT_TOKENS } from "./compaction";
import { EntryType as EntryTypeSchema, Id, Name, Timestamp } from "./entries";
import { ID_PREFIX_PATTERN } from "./ids";
import { MAX_JSON_DEPTH, nestsDeeperThan, utf8Length } from "./json";
import {
  LATEST_EXPIRES_AT,
  MAX_CONTEXT_TOKENS,
  MAX_ENTRIES_PAGE,
  MAX_METADATA_BYTES,
  MAX_SESSIONS_PAGE,
  MAX_SYSTEM_PROMPT_BYTES,
} from "./limits";

/*
 * What a session is apart from its entries, and the queries and options that name parts of it: the
 * zod schemas every backend, the HTTP edge and the OpenAPI document share.
 */
export const ParentSession = z.object({ id: Id, entryId: Id });
export type ParentSession = z.infer<typeof ParentSession>;

/** A session's metadata: any JSON object. */
export const Metadata = z.record(z.string(), z.unknown());

/** Whether `value`, as JSON, takes at most `bytes` bytes of UTF-8. */
const jsonWithin = (bytes: number) => (value: unknown) => utf8Length(JSON.stringify(value) ?? "") <= bytes;

/**
 * What a header a write gives may not hold: a string opening like a blob reference (U+0000, then
 * `blob:`), which only an entry's values may be (a read would answer it as the blob).
 */
const noBlobRef = [
  (value: unknown) => !holdsBlobRef(value),
  { message: "holds no blob reference (U+0000 then blob:)" },
] as const;

/**
 * Metadata a write gives (create, change, import): at most MAX_JSON_DEPTH levels deep, checked
 * first (the checks after it recurse, and would run out of stack on a deeper value), and at most
 * MAX_METADATA_BYTES as JSON.
 */
export const GivenMetadata = Metadata.refine((value) => !nestsDeeperThan(value, MAX_JSON_DEPTH), {
  message: `nests deeper than ${MAX_JSON_DEPTH} levels`,
  abort: true,
})
  .refine(jsonWithin(MAX_METADATA_BYTES), { message: `at most ${MAX_METADATA_BYTES} bytes as JSON` })
  .refine(...noBlobRef);

/** A system prompt a write gives: at most MAX_SYSTEM_PROMPT_BYTES as JSON. */
export const GivenSystemPrompt = z
  .string()
  .refine(jsonWithin(MAX_SYSTEM_PROMPT_BYTES), {
    message: `at most ${MAX_SYSTEM_PROMPT_BYTES} bytes as JSON`,
  })
  .refine(...noBlobRef);

/** A session's name a write gives (create, change, fork, import). */
export const GivenName = Name.refine(...noBlobRef);

/**
 * Compaction the service runs by itself after a write brings the context estimate over
 * `contextWindow - reserveTokens` (in the background: it never delays the write).
 */
export const AutoCompactSettings = z
  .object({
    contextWindow: z.number().int().positive().max(MAX_CONTEXT_TOKENS),
    reserveTokens: z.number().int().nonnegative(),
    keepRecentTokens: z.number().int().nonnegative().max(MAX_CONTEXT_TOKENS).optional(),
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
      description:
        "UTF-8 bytes of the header's JSON as stored (name, system prompt, metadata and the rest), of the stored entries' JSON, leaf records included, and of the generations' chunks kept (what byte quotas count)",
    }),
    blobBytes: z.number().int().optional().meta({
      description:
        "of `bytes`, those of images and tool outputs stored as blobs in R2 (shared with every session that holds the same value); the session's own storage holds the rest",
    }),
    parentSession: ParentSession.optional(),
    preview: z.string().optional().meta({ description: "the first user message's text, at most 200 chars" }),
    autoCompact: AutoCompactSettings.and(z.object({ status: AutoCompactStatus.optional() })).optional(),
    expiresAt: Timestamp.optional().meta({
      description: "when the service deletes the session (recoverably)",
    }),
    copying: z.object({ entries: z.number().int(), copied: z.number().int() }).optional().meta({
      description:
        "a fork whose path is still being copied from its source, in the background: the path's entries and, of them, those copied so far. Every read answers as if the copy were complete.",
    }),
  })
  .meta({ id: "SessionInfo" });
export type SessionInfo = z.infer<typeof SessionInfo>;

export const CreateSessionOptions = z
  .object({
    id: Id.optional(),
    name: GivenName.optional(),
    systemPrompt: GivenSystemPrompt.optional(),
    metadata: GivenMetadata.optional(),
    expiresAt: ExpiresAt.optional(),
  })
  .strict();
export type CreateSessionOptions = z.infer<typeof CreateSessionOptions>;

/**
 * Settings a write gives: what a compaction keeps must fit in the budget, or every write after a
 * compaction would bring another. Stored settings are read as they are.
 */
const GivenAutoCompactSettings = AutoCompactSettings.refine(
  (s) => (s.keepRecentTokens ?? DEFAULT_KEEP_RECENT_TOKENS) < s.contextWindow - s.reserveTokens,
  {
    message: `keepRecentTokens (${DEFAULT_KEEP_RECENT_TOKENS} unless given) must be less than contextWindow - reserveTokens`,
  },
);

export const HeaderPatch = z
  .object({
    systemPrompt: GivenSystemPrompt.nullable().optional().meta({ description: "null removes it" }),
    metadata: GivenMetadata.optional().meta({ description: "replaces the metadata" }),
    autoCompact: GivenAutoCompactSettings.nullable().optional().meta({
      description:
        "compact by itself when the context passes contextWindow - reserveTokens; null turns it off",
    }),
    expiresAt: ExpiresAt.nullable().optional().meta({ description: "null: the session never expires" }),
  })
  .strict();
export type HeaderPatch = z.infer<typeof HeaderPatch>;

/** A change to a session: its header, and its name (a `session_info` entry). */
export const SessionPatch = HeaderPatch.extend({
  name: GivenName.optional().meta({ description: "appends a session_info entry; blank clears the name" }),
}).strict();
export type SessionPatch = z.infer<typeof SessionPatch>;

export const EntryQuery = z.object({
  after: z.coerce.number().int().min(0).optional().meta({ description: "a seq: entries after it" }),
  limit: z.coerce.number().int().min(1).max(MAX_ENTRIES_PAGE).optional().meta({ description: "default 100" }),
  /** The types to read: one, or a list of at least one. */
  type: z.union([EntryTypeSchema, z.array(EntryTypeSchema).min(1).readonly()]).optional(),
});
export type EntryQuery = z.infer<typeof EntryQuery>;

/** `before` on a user message means its parent: the head to edit and resend it from. */
export const Position = z.enum(["at", "before"]);
export type Position = z.infer<typeof Position>;

export const ForkOptions = z
  .object({
    position: Position.optional(),
    id: Id.optional().meta({ description: "id of the new session (a fresh one when absent)" }),
    name: GivenName.optional().meta({ description: "the source's name carries over when absent" }),
  })
  .strict();
export type ForkOptions = z.infer<typeof ForkOptions>;

/** The start of a session id, as listing and the tenant's search filter by. */
export const IdPrefix = z
  .string()
  .regex(ID_PREFIX_PATTERN, "must be 1-128 characters of A-Z a-z 0-9 . _ : -")
  .meta({ description: "only the sessions whose id starts with it" });

/** A project as sessions record it in `metadata.project` (`github.com/acme/app/services/api`). */
export const ProjectKey = z
  .string()
  .min(1)
  .max(512)
  .meta({ description: "only the sessions whose metadata.project is this project, or a folder in it" });

/** Whether a session's recorded project (`metadata.project`) is `project`, or a folder inside it. */
export function inProject(recorded: unknown, project: string): boolean {
  return typeof recorded === "string" && (recorded === project || recorded.startsWith(`${project}/`));
}

export const ListOptions = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_SESSIONS_PAGE).optional().meta({ description: "default 50" }),
  cursor: z.string().nullable().optional(),
  order: z.enum(["updated", "created"]).optional().meta({ description: "newest first; default updated" }),
  prefix: IdPrefix.optional(),
  project: ProjectKey.optional(),
});
export type ListOptions = z.infer<typeof ListOptions>;

/** Where a session's leaf stood at a time, and how far back the session's leaf history goes. */
export const LeafAt = z
  .object({
    leafId: Id.nullable().meta({ description: "the leaf then (now, when no time is given); null: none" }),
    historyStartsAt: Timestamp.meta({ description: "how far back the session's leaf history goes" }),
  })
  .meta({ id: "LeafAt" });
export type LeafAt = z.infer<typeof LeafAt>;

export const SessionPage = z.object({ sessions: z.array(SessionInfo), nextCursor: z.string().nullable() });
export type SessionPage = z.infer<typeof SessionPage>;
