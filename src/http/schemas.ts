import * as z from "zod";
import {
  AutoCompactSettings,
  EntryInput,
  EntryType,
  Id,
  ImportWarning,
  MAX_BATCH_ENTRIES,
  MAX_ENTRIES_PAGE,
  MAX_SESSIONS_PAGE,
  Metadata,
  SessionEntry,
  SessionInfo,
  SyncSummary,
  ThinkingLevel,
} from "../core";

/*
 * Request and response bodies of the HTTP API, built from the core schemas: what is validated is
 * what the OpenAPI document describes.
 */

export const SessionIdParam = z.object({ sid: Id.meta({ param: { name: "sid", in: "path" } }) });
export const EntryIdParams = SessionIdParam.extend({ eid: Id.meta({ param: { name: "eid", in: "path" } }) });

export const CreateSessionBody = z
  .object({
    id: Id.optional(),
    name: z.string().optional(),
    systemPrompt: z.string().optional(),
    metadata: Metadata.optional(),
  })
  .strict();

export const PatchSessionBody = z
  .object({
    name: z.string().optional().meta({ description: "appends a session_info entry; blank clears the name" }),
    systemPrompt: z.string().nullable().optional().meta({ description: "null removes it" }),
    metadata: Metadata.optional().meta({ description: "replaces the metadata" }),
    autoCompact: AutoCompactSettings.nullable().optional().meta({
      description:
        "compact by itself when the context passes contextWindow - reserveTokens; null turns it off",
    }),
  })
  .strict();

export const CompactBody = z
  .object({
    summary: z.string().optional().meta({ description: "the summary itself; no summarizer is called" }),
    keepRecentTokens: z.number().int().nonnegative().optional().meta({ description: "default 20000" }),
    customInstructions: z.string().optional(),
    retainTail: z.boolean().optional().meta({ description: "also store the kept messages in the entry" }),
  })
  .strict();
export const CompactResponse = z.object({ entry: z.lazy(() => StoredEntry) });

export const ListSessionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_SESSIONS_PAGE).optional(),
  cursor: z.string().optional(),
  order: z.enum(["updated", "created"]).optional(),
});

export const SessionPage = z.object({ sessions: z.array(SessionInfo), nextCursor: z.string().nullable() });

const StoredEntry = SessionEntry.and(z.object({ seq: z.number().int() })).meta({ id: "StoredEntry" });

export const AppendBody = z
  .union([EntryInput, z.object({ entries: z.array(EntryInput) })])
  .meta({ description: `one entry, or a batch of 1 to ${MAX_BATCH_ENTRIES} entries appended atomically` });
export const AppendResponse = z.object({ entries: z.array(StoredEntry), leafId: Id.nullable() });

export const EntriesQuery = z.object({
  after: z.coerce.number().int().min(0).optional().meta({ description: "a seq: entries after it" }),
  limit: z.coerce.number().int().min(1).max(MAX_ENTRIES_PAGE).optional(),
  type: z
    .string()
    .optional()
    .meta({ description: "entry types, comma-separated" })
    .transform((value, ctx) => {
      if (value === undefined) return undefined;
      const types = value.split(",").map((t) => t.trim());
      for (const type of types) {
        if (!EntryType.safeParse(type).success) {
          ctx.addIssue({ code: "custom", message: `unknown entry type ${type}` });
          return z.NEVER;
        }
      }
      return types as EntryType[];
    }),
});
export const EntriesPage = z.object({ entries: z.array(StoredEntry), nextCursor: z.string().nullable() });

export const LeafQuery = z.object({ leafId: Id.optional() });
export const BranchResponse = z.object({ entries: z.array(StoredEntry) });

export const ContextResponse = z
  .object({
    systemPrompt: z.string(),
    messages: z.array(z.record(z.string(), z.unknown())),
    thinkingLevel: ThinkingLevel,
    model: z.object({ provider: z.string(), modelId: z.string() }).nullable(),
    activeToolNames: z.array(z.string()).nullable(),
  })
  .meta({ id: "SessionContext" });

export const TreeResponse = z.object({
  roots: z.array(z.record(z.string(), z.unknown())).meta({
    description: "nodes {id, parentId, type, timestamp, role?, label?, children}",
  }),
});

const Position = z.enum(["at", "before"]);

export const MoveLeafBody = z
  .object({
    targetId: Id.nullable(),
    position: Position.optional(),
    summarize: z.boolean().optional().meta({ description: "summarize the branch left, under the target" }),
    customInstructions: z.string().optional(),
  })
  .strict();
export const MoveLeafResponse = z.object({
  leafId: Id.nullable(),
  entry: StoredEntry.optional().meta({ description: "the branch summary written (it is the new leaf)" }),
  record: StoredEntry.optional().meta({ description: "the leaf record written when the head simply moved" }),
});

export const ImportEntriesBody = z
  .object({ entries: z.array(SessionEntry) })
  .strict()
  .meta({
    description: "entries written verbatim, in order: ids, parents, timestamps and leaf records as given",
  });

export const ForkBody = z
  .object({
    entryId: Id,
    position: Position.optional(),
    id: Id.optional(),
    name: z.string().optional(),
  })
  .strict();

export { SessionInfo, StoredEntry };

export const ExportQuery = z.object({
  format: z.string().optional().meta({ description: "native (default) or pi" }),
});

export const ImportResult = SessionInfo.extend({
  warnings: z.array(ImportWarning).meta({ description: "what was repaired to import the file, by line" }),
  sync: SyncSummary.optional().meta({ description: "with mode=sync: what the sync did" }),
}).meta({ id: "ImportResult" });

export const ImportQuery = z.object({
  format: z.string().optional().meta({ description: "native (default), pi, claude-code or codex" }),
  id: Id.optional().meta({ description: "the id to give the session (409 if taken)" }),
  mode: z.enum(["sync"]).optional().meta({
    description:
      "sync: into the session of the file's id (or `id`), appending what the file gained since; 409 if the session differs from the file",
  }),
});
