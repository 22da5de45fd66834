import * as z from "zod";
import { Id, Timestamp } from "../entries";
import { CONTEXT_FORMATS, MESSAGE_FORMATS } from "./target";

export const ContextFormatSchema = z.enum(CONTEXT_FORMATS).meta({
  description: "the request shape of a model API; absent: the context in our own shape",
});

export const MessageFormatSchema = z.enum(MESSAGE_FORMATS).meta({
  description: "the model API the message comes from",
});

/**
 * An append of a provider's own message, `{type: "message", format, message}`: `message` is
 * whatever that API sends or takes (a response, a tool result, a user turn), checked and
 * converted by `convertProviderMessage`, which may give several messages for one (an Anthropic
 * user turn of tool results and text).
 */
export const ProviderMessageEntryInput = z
  .looseObject({
    id: Id.optional(),
    parentId: Id.nullable().optional(),
    timestamp: Timestamp.optional(),
    type: z.literal("message"),
    format: MessageFormatSchema,
    message: z.unknown().meta({ description: "the API's message, as it sent or takes it" }),
  })
  .meta({ id: "ProviderMessageEntryInput" });

export type ProviderMessageEntryInput = z.infer<typeof ProviderMessageEntryInput>;
