import * as z from "zod";
import { EntryInput, Id, Timestamp } from "../entries";
import { CONTEXT_FORMATS, MESSAGE_FORMATS } from "./target";

export const ContextFormatSchema = z.enum(CONTEXT_FORMATS).meta({
  description: "the request shape of a model API; absent: the context in our own shape",
});

export const MessageFormatSchema = z.enum(MESSAGE_FORMATS).meta({
  description: "the model API the message comes from",
});

/** A model named as `<provider>/<modelId>` (read by `parseModelRef`; the id may hold slashes). */
export const ModelRefString = z
  .string()
  .regex(/^[^/]+\/.+$/, 'must be "<provider>/<modelId>"')
  .meta({ description: '"<provider>/<modelId>"', example: "anthropic/claude-sonnet-4-5" });

/**
 * An append of a provider's own message, `{type: "message", format, message}`: `message` is
 * whatever that API sends or takes (a response, a tool result, a user turn), checked and
 * converted by `convertProviderMessage`, which may give several messages for one (an Anthropic
 * user turn of tool results and text).
 */
export const ProviderMessageEntryInput = z
  .looseObject({
    id: Id.optional().meta({
      description: "the first message's id; the messages after it get `<id>:1`, `<id>:2`, …",
    }),
    parentId: Id.nullable().optional(),
    timestamp: Timestamp.optional(),
    type: z.literal("message"),
    format: MessageFormatSchema,
    message: z.unknown().nonoptional().meta({ description: "the API's message, as it sent or takes it" }),
    model: ModelRefString.optional().meta({
      description: "who answered; default: the session's model (its last model change or reply)",
    }),
  })
  .meta({ id: "ProviderMessageEntryInput" });

export type ProviderMessageEntryInput = z.infer<typeof ProviderMessageEntryInput>;

// `EntryInput` lists the message entry first.
const [messageEntryInput, ...otherEntryInputs] = EntryInput.options;

/**
 * What an append takes: any entry, or a provider's message to convert. A message entry carries
 * our own message unless it names a `format`; a format outside the known ones fails on `format`.
 */
export const AppendEntryInput = z.discriminatedUnion("type", [
  z.discriminatedUnion("format", [
    messageEntryInput.extend({
      // A field left out: `not: {}` admits no value, null neither (the document's generator
      // needs a type for it).
      format: z
        .undefined()
        .optional()
        .meta({ type: "null", not: {}, description: "absent: the message is ours" }),
    }),
    ProviderMessageEntryInput,
  ]),
  ...otherEntryInputs,
]);

export type AppendEntryInput = EntryInput | ProviderMessageEntryInput;
