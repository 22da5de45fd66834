import * as z from "zod";
import { Id } from "../entries";
import { ModelRefString } from "../providers/entry-input";

/*
 * A generation: a model's answer while it is written, bound to a session. Its chunks go to a
 * Durable Streams stream in one of three formats; when it is completed (or stopped, or abandoned)
 * the answer becomes an ordinary assistant entry under the generation's parent, and the stream is
 * closed in the same transaction.
 */

/**
 * How a generation's chunks are written: plain `text` (each append some text), pi-ai's
 * assistant-message events (`start`, `text_delta`, …, `done`), or the AI SDK's UI message stream
 * parts (`start`, `text-delta`, …, `finish`). The last two are JSON streams: one event a message.
 */
export const GENERATION_FORMATS = ["text", "pi-ai", "ai-sdk-ui"] as const;
export type GenerationFormat = (typeof GENERATION_FORMATS)[number];

export const GenerationFormatSchema = z.enum(GENERATION_FORMATS).meta({
  description:
    "text: appends of plain text; pi-ai: pi-ai assistant-message events; ai-sdk-ui: AI SDK UI message stream parts",
});

/** The content type of a generation's stream: what its appends must declare. */
export function generationContentType(format: GenerationFormat): string {
  return format === "text" ? "text/plain; charset=utf-8" : "application/json";
}

/** Where a generation stands: open (being written), finished (completed), or stopped. */
export const GENERATION_STATES = ["open", "finished", "stopped"] as const;
export type GenerationState = (typeof GENERATION_STATES)[number];

/** Who stopped a generation: a client (`POST …/stop`), or the alarm after no append for too long. */
export type StoppedBy = "request" | "abandoned";

/** Seconds a generation may go without an append before the alarm stops it (default 5 minutes). */
export const DEFAULT_ABANDON_SECONDS = 300;
/** Seconds a finished or stopped generation's stream stays readable (default 1 hour). */
export const DEFAULT_RETAIN_SECONDS = 3600;
export const MAX_ABANDON_SECONDS = 24 * 3600;
export const MAX_RETAIN_SECONDS = 7 * 24 * 3600;
/**
 * The most data one generation's stream holds: 8 MiB. The answer it becomes must fit in one
 * entry (16 MiB serialized), and text stored as JSON may grow by its escapes.
 */
export const MAX_GENERATION_BYTES = 8 * 1024 * 1024;

export const OpenGenerationBody = z
  .strictObject({
    parentId: Id.nullable().optional().meta({
      description: "the entry the answer will be appended under (default: the leaf when it opens)",
    }),
    format: GenerationFormatSchema.default("text"),
    model: ModelRefString.optional().meta({
      description: "who answers, recorded on the assembled message (default: the session's model)",
    }),
    api: z.string().min(1).max(200).optional().meta({
      description: "pi-ai's name of the API the answer comes from (e.g. anthropic-messages)",
    }),
    abandonAfterSeconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_ABANDON_SECONDS)
      .optional()
      .meta({ description: "stopped by the alarm after this long without an append (default 300)" }),
    retainSeconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_RETAIN_SECONDS)
      .optional()
      .meta({ description: "the stream stays readable this long once finished or stopped (default 3600)" }),
  })
  .meta({ id: "OpenGenerationBody" });
export type OpenGenerationBody = z.input<typeof OpenGenerationBody>;

export const CompleteGenerationBody = z
  .strictObject({
    message: z.unknown().optional().meta({
      description:
        "the final message (text and pi-ai: a pi-ai assistant message; ai-sdk-ui: the UIMessage). Absent: assembled from the chunks",
    }),
  })
  .meta({ id: "CompleteGenerationBody" });
export type CompleteGenerationBody = z.infer<typeof CompleteGenerationBody>;

export const GenerationInfo = z
  .object({
    id: Id.meta({ description: "the generation's id, which its (first) entry takes too" }),
    parentId: Id.nullable(),
    format: GenerationFormatSchema,
    state: z.enum(GENERATION_STATES),
    stream: z.string().meta({
      description: "the Durable Streams URL of its chunks (relative to the service)",
      example: "/v1/sessions/demo/generations/0193…/stream",
    }),
    offset: z.string().meta({ description: "the stream's tail: where a reader at its end stands" }),
    openedAt: z.string(),
    lastAppendAt: z.string().meta({ description: "when a chunk was last appended (or it opened)" }),
    finishedAt: z.string().optional(),
    stoppedBy: z.enum(["request", "abandoned"]).optional(),
    entryIds: z.array(Id).optional().meta({
      description: "the entries the answer became (an assistant message, and tool results when it ran tools)",
    }),
    model: z.object({ provider: z.string(), modelId: z.string() }).optional(),
    api: z.string().optional(),
    abandonAfterSeconds: z.number().int(),
    retainSeconds: z.number().int(),
  })
  .meta({ id: "GenerationInfo" });
export type GenerationInfo = z.infer<typeof GenerationInfo>;

/** The most generations one page of a session's listing holds. */
export const MAX_GENERATIONS_PAGE = 200;

export const ListGenerationsQuery = z.object({
  state: z.enum(GENERATION_STATES).optional().meta({ description: "only the generations in this state" }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_GENERATIONS_PAGE)
    .optional()
    .meta({ description: "default 50" }),
  cursor: z
    .string()
    .max(1000)
    .optional()
    .meta({ description: "`nextCursor` of the page before, given with the same state" }),
});
export type ListGenerationsQuery = z.infer<typeof ListGenerationsQuery>;

export const GenerationPage = z
  .object({
    generations: z.array(GenerationInfo).meta({ description: "oldest first" }),
    nextCursor: z
      .string()
      .nullable()
      .meta({ description: "where the next page starts; null after the last" }),
  })
  .meta({ id: "GenerationPage" });
export type GenerationPage = z.infer<typeof GenerationPage>;
