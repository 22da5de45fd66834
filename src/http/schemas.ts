import * as z from "zod";
import { NavigateRequest } from "../core/compact-session";
import { ContextDelta, FullContext } from "../core/context-answer";
import { EntryType, Id, SessionEntry, StoredEntry, Timestamp } from "../core/entries";
import { ImportWarning } from "../core/interchange";
import { MAX_BATCH_ENTRIES } from "../core/limits";
import { LocationHint } from "../core/location";
import { AppendEntryInput, ContextFormatSchema, ModelRefString } from "../core/providers/entry-input";
import { SessionSearchOptions } from "../core/search";
import {
  CreateSessionOptions,
  EntryQuery,
  ForkOptions,
  ListOptions,
  SessionInfo,
  SessionPatch,
} from "../core/session-schemas";
import { SyncSummary } from "../core/sync-import";
import { ExistingSessions } from "../core/tenant-stream";
import { MAX_PATH_CHARS } from "../durable/internal";

/*
 * What the HTTP API adds to core's schemas: path and query parameters (strings on the wire), and
 * the envelopes of its answers. Bodies are core's schemas themselves: what is validated is what
 * the library takes and what the OpenAPI document describes.
 */

export const SessionIdParam = z.object({ sid: Id.meta({ param: { name: "sid", in: "path" } }) });
export const EntryIdParams = SessionIdParam.extend({ eid: Id.meta({ param: { name: "eid", in: "path" } }) });

/** The leaf a write expects the session to have: refused with `conflict` when it has moved. */
export const IfMatch = z.object({
  "if-match": z.string().optional().meta({ description: 'the expected leaf, "<leafId>"' }),
});

export const CreateSessionBody = CreateSessionOptions.extend({ location: LocationHint.optional() }).strict();
export const PatchSessionBody = SessionPatch;
/** A time in a session's past: the leaf as it stood then (see docs/placement.md, "Time travel"). */
export const AsOf = Timestamp.meta({
  description: "a time (ISO 8601): the leaf as it stood then, from the session's leaf history",
  example: "2026-01-01T12:00:00.000Z",
});

/** Exactly one of two fields that say the same thing two ways. */
const oneOf =
  (a: string, b: string) =>
  (value: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    if ((value[a] === undefined) === (value[b] === undefined)) {
      ctx.addIssue({ code: "custom", path: [a], message: `give either ${a} or ${b}` });
    }
  };

export const MoveLeafBody = NavigateRequest.extend({
  targetId: Id.nullable().optional().meta({ description: "the new leaf (null: no leaf); or give asOf" }),
  asOf: AsOf.optional().meta({ description: "move the leaf back to where it stood at this time" }),
})
  .strict()
  .superRefine(oneOf("targetId", "asOf"));
export const ForkBody = ForkOptions.extend({
  entryId: Id.optional().meta({ description: "the entry to fork at; or give asOf" }),
  asOf: AsOf.optional().meta({ description: "fork at the leaf as it stood at this time" }),
  location: LocationHint.optional(),
})
  .strict()
  .superRefine(oneOf("entryId", "asOf"));

export const ListSessionsQuery = ListOptions.extend({
  cursor: z
    .string()
    .optional()
    .meta({ description: "nextCursor of the page before, given with the same order, prefix and project" }),
});

/**
 * One entry, or `{entries: [...]}` (no `type`): a batch either way, and an invalid one is
 * reported with the paths of the form that was sent.
 */
export const AppendBody = z
  .discriminatedUnion("type", [
    AppendEntryInput,
    z
      .object({
        type: z
          .undefined()
          .optional()
          .meta({ type: "null", not: {}, description: "absent: a batch has no type" }),
        // Bounds the document states; an empty batch is invalid_request and a longer one payload_too_large.
        entries: z.array(AppendEntryInput).meta({ minItems: 1, maxItems: MAX_BATCH_ENTRIES }),
      })
      .strict(),
  ])
  .meta({
    description: `one entry, or a batch of 1 to ${MAX_BATCH_ENTRIES} entries appended atomically; a message entry with a \`format\` carries a model API's own message, stored as the messages it stands for`,
  });

/** The entries an append body carries, in order. */
export function appendedEntries(body: z.output<typeof AppendBody>): AppendEntryInput[] {
  return body.type === undefined ? body.entries : [body];
}

export const AppendResponse = z.object({ entries: z.array(StoredEntry), leafId: Id.nullable() });

export const EntriesQuery = EntryQuery.extend({
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

export const LeafAtQuery = z.object({ asOf: AsOf.optional() });

export const ContextQuery = LeafQuery.extend({
  asOf: AsOf.optional().meta({
    description: "the context of the leaf as it stood at this time (instead of leafId)",
  }),
  since: z
    .string()
    .max(64)
    .optional()
    .meta({ description: "the version of a context read before: answer only what was appended since" }),
  format: ContextFormatSchema.optional(),
  model: ModelRefString.optional().meta({
    description:
      "with `format`: the model the request is for; default: the session's model (its last model change or reply)",
  }),
  imageInput: z.enum(["true", "false"]).optional().meta({
    description:
      "with `format`: whether the model reads images (default true); false turns images into a note",
  }),
  blobs: z.enum(["inline", "url"]).optional().meta({
    description:
      "url: images and tool outputs stored as blobs come as short-lived signed URLs instead of their values (default inline)",
  }),
});

/*
 * The request fields of each model API, as `GET …/context?format=` answers them: the fields at
 * the top, their items described by the API's own documentation.
 */

const items = (description: string) => z.array(z.unknown().meta({ type: "object", description }));

export const OpenAIChatRequest = z
  .object({ messages: items("a Chat Completions message: system, user, assistant or tool") })
  .meta({ id: "OpenAIChatRequest", description: "`messages` of a Chat Completions request" });

export const OpenAIResponsesRequest = z
  .object({
    instructions: z.string().optional().meta({ description: "the system prompt" }),
    input: items("a Responses input item: a message, reasoning, function_call or function_call_output"),
  })
  .meta({ id: "OpenAIResponsesRequest", description: "`instructions` and `input` of a Responses request" });

export const AnthropicRequest = z
  .object({
    system: z.string().optional().meta({ description: "the system prompt" }),
    messages: items("a Messages API message param, user and assistant alternating"),
  })
  .meta({ id: "AnthropicRequest", description: "`system` and `messages` of a Messages request" });

export const GeminiRequest = z
  .object({
    systemInstruction: z
      .object({ parts: z.array(z.object({ text: z.string() })) })
      .optional()
      .meta({ description: "the system prompt (`config.systemInstruction` in @google/genai)" }),
    contents: items("a Gemini content of role user or model"),
  })
  .meta({
    id: "GeminiRequest",
    description: "`systemInstruction` and `contents` of a generateContent request",
  });

export const AISDKRequest = z
  .object({
    system: z.string().optional().meta({ description: "the system prompt" }),
    messages: items("an AI SDK 6 ModelMessage: user, assistant or tool"),
  })
  .meta({
    id: "AISDKRequest",
    description: "`system` and `messages` for the AI SDK's generateText / streamText",
  });

export const AISDKUIRequest = z
  .object({ messages: items("an AI SDK UIMessage: id, role, parts") })
  .meta({ id: "AISDKUIRequest", description: "`messages` for the AI SDK's useChat" });

export const ContextResponse = z
  .union([
    FullContext,
    ContextDelta,
    OpenAIChatRequest,
    OpenAIResponsesRequest,
    AnthropicRequest,
    GeminiRequest,
    AISDKRequest,
    AISDKUIRequest,
  ])
  .meta({
    description:
      "the context, or what was appended to it since `since`; with `format`, the request fields of that API",
  });

export const BranchResponse = z.object({ entries: z.array(StoredEntry) });
export const CompactResponse = z.object({ entry: StoredEntry });

export const ImportEntriesBody = z
  .object({ entries: z.array(SessionEntry).meta({ maxItems: MAX_BATCH_ENTRIES }) })
  .strict()
  .meta({
    description: "entries written verbatim, in order: ids, parents, timestamps and leaf records as given",
  });

export const ImportResult = SessionInfo.extend({
  warnings: z.array(ImportWarning).meta({ description: "what was repaired to import the file, by line" }),
  sync: SyncSummary.optional().meta({ description: "with mode=sync: what the sync did" }),
}).meta({ id: "ImportResult" });

export const ExportQuery = z.object({
  format: z.string().optional().meta({ description: "native (default), pi, claude-code or codex" }),
});

export const ImportQuery = z.object({
  format: z.string().optional().meta({ description: "native (default), pi, claude-code or codex" }),
  id: Id.optional().meta({ description: "the id to give the session (409 if taken)" }),
  mode: z.enum(["sync"]).optional().meta({
    description:
      "sync: into the session of the file's id (or `id`), appending what the file gained since; 409 if the session differs from the file",
  }),
  location: LocationHint.optional(),
});

const Count = z.number().int().nonnegative();

export const UsageResponse = z
  .object({
    sessions: Count,
    entries: Count.meta({ description: "entries in the tenant's sessions (leaf records not counted)" }),
    bytes: Count.meta({
      description:
        "UTF-8 bytes of the sessions' headers' and stored entries' JSON and of the generations' chunks kept, as byte quotas count them",
    }),
    streams: z
      .object({
        streams: Count.meta({
          description: "streams at /v1/stream/* holding data (a deleted one still read by its forks too)",
        }),
        bytes: Count.meta({
          description: "the data they hold themselves (a fork's inherited data is its source's)",
        }),
      })
      .meta({
        description:
          "the tenant's Durable Streams, as their objects last reported them (within about a second of a write); their bytes count against maxTenantBytes with the sessions' `bytes`",
      }),
    blobs: z
      .object({
        blobs: Count.meta({ description: "blobs the tenant stores in R2" }),
        bytes: Count.meta({
          description:
            "their bytes as entries hold them (each blob once; also within `bytes` for each session)",
        }),
      })
      .meta({ description: "images and tool outputs stored apart, each once (docs/placement.md)" }),
    quotas: z
      .object({
        maxSessions: Count.optional(),
        maxStreams: Count.optional(),
        maxSessionBytes: Count.optional(),
        maxTenantBytes: Count.optional(),
        maxOpenGenerations: Count.optional().meta({ description: "64 unless QUOTAS sets it" }),
      })
      .meta({ description: "the quotas that apply to the tenant; an absent one is no limit" }),
  })
  .meta({ id: "Usage" });

/** The largest page of the stream listing. */
export const MAX_STREAMS_PAGE = 200;

export const ListStreamsQuery = z.object({
  prefix: z
    .string()
    .min(1)
    .max(MAX_PATH_CHARS)
    .optional()
    .meta({ description: "only the streams whose path starts with it" }),
  limit: z.coerce.number().int().min(1).max(MAX_STREAMS_PAGE).optional().meta({ description: "default 50" }),
  cursor: z
    .string()
    .max(4 * MAX_PATH_CHARS)
    .optional()
    .meta({ description: "`nextCursor` of the page before" }),
});

export const StreamListing = z
  .object({
    path: z.string().meta({ description: "its path under /v1/stream/" }),
    contentType: z.string(),
    bytes: Count.meta({ description: "the data it holds itself" }),
    closed: z.boolean(),
    createdAt: z.string(),
    activeAt: z
      .string()
      .meta({ description: "its last write (or, with a sliding Stream-TTL, its last renewal)" }),
    expiresAt: z
      .string()
      .nullable()
      .meta({ description: "when its Stream-TTL or Stream-Expires-At ends it" }),
  })
  .meta({ id: "StreamListing" });

export const StreamPage = z
  .object({ streams: z.array(StreamListing), nextCursor: z.string().nullable() })
  .meta({ id: "StreamPage" });

/** A flag in a query string: `true` or `false`. */
const QueryFlag = z.enum(["true", "false"]).transform((value) => value === "true");

export const DeleteQuery = z.object({
  purge: QueryFlag.optional().meta({
    description: "true: delete for good now, with no recovery window (a deleted session too)",
  }),
});

export const SessionSearchQuery = SessionSearchOptions.extend({
  thinking: QueryFlag.optional().meta({ description: "true: search the model's thinking too" }),
});

export const ExportTenantQuery = z.object({
  cursor: z
    .string()
    .optional()
    .meta({ description: "from a `cursor` line of an export: resume after that session or stream" }),
});

export const ImportTenantQuery = z.object({
  existing: ExistingSessions.optional(),
  location: LocationHint.optional(),
});

export const RetentionBody = z
  .object({
    idleDays: z
      .number()
      .int()
      .min(1)
      .max(36_500)
      .nullable()
      .meta({ description: "delete sessions with no write for this many days; null keeps them" }),
  })
  .strict()
  .meta({ id: "Retention" });

/** The body of a POST that takes no options: `{}`, or none (declared `application/json` all the same). */
export const EmptyBody = z.object({}).strict().meta({ description: "{} or no body, as application/json" });
