import * as z from "zod";
import { SessionError } from "../errors";
import { assertParsedJson, MAX_JSON_DEPTH } from "../json";
import { AssistantMessage, ToolCall } from "../messages";
import type { GenerationFormat } from "./generation-schemas";

/*
 * What a generation's chunks are, one by one, checked when they are appended so that whatever was
 * appended makes an answer: in the JSON formats each is an event, an object with a string `type`
 * (pi-ai's `text_delta`, the AI SDK's `text-delta`, …); the events the answer is made of are
 * checked for the fields it takes from them (a `done` event's message is an assistant's, a content
 * index names one of at most MAX_CONTENT_BLOCKS blocks), and none nests deeper than its values may
 * in an entry. Anything else is refused before it is written. And the text they carry, for a
 * reader that only shows the words.
 */

/** The most content blocks a pi-ai answer holds: an event's `contentIndex` is 0 to 4095. */
export const MAX_CONTENT_BLOCKS = 4096;

/**
 * How much deeper an entry holds a value than the event it came in: a tool call's input, at depth 1
 * of an AI SDK part, is the entry's `message.content[i].arguments`, at depth 4.
 */
const ENTRY_NESTING = 3;

const ContentIndex = z
  .number()
  .int()
  .min(0)
  .max(MAX_CONTENT_BLOCKS - 1);
const indexed = (fields: z.ZodRawShape = {}) => z.looseObject({ contentIndex: ContentIndex, ...fields });

/** pi-ai's assistant-message events, by type: the fields the answer takes from each. */
const PI_AI_EVENTS: Record<string, z.ZodType> = {
  text_start: indexed(),
  text_delta: indexed({ delta: z.string() }),
  text_end: indexed({ content: z.string().optional() }),
  thinking_start: indexed(),
  thinking_delta: indexed({ delta: z.string() }),
  thinking_end: indexed({ content: z.string().optional() }),
  toolcall_start: indexed(),
  toolcall_delta: indexed({ delta: z.string() }),
  toolcall_end: indexed({ toolCall: ToolCall }),
  done: z.looseObject({ message: AssistantMessage }),
  error: z.looseObject({ error: AssistantMessage }),
};

const partId = z.looseObject({ id: z.string() });
const toolPart = (fields: z.ZodRawShape = {}) => z.looseObject({ toolCallId: z.string(), ...fields });

/** The AI SDK's UI message stream parts, by type: the fields the answer takes from each. */
const UI_PARTS: Record<string, z.ZodType> = {
  "text-start": partId,
  "text-delta": partId.extend({ delta: z.string() }),
  "reasoning-start": partId,
  "reasoning-delta": partId.extend({ delta: z.string() }),
  "tool-input-start": toolPart({ toolName: z.string() }),
  "tool-input-delta": toolPart({ inputTextDelta: z.string() }),
  "tool-input-available": toolPart({ toolName: z.string() }),
  "tool-input-error": toolPart({ toolName: z.string(), errorText: z.string() }),
  "tool-output-available": toolPart(),
  "tool-output-error": toolPart({ errorText: z.string() }),
  "tool-output-denied": toolPart(),
  error: z.looseObject({ errorText: z.string() }),
};

function refused(format: GenerationFormat, index: number, why: string, details: object = {}): SessionError {
  return new SessionError("invalid_request", `a ${format} generation's message ${index} ${why}`, {
    index,
    ...details,
  });
}

/** Refuses a JSON format's chunk that is not an event the answer can be made of (`index`: its place in the append). */
export function checkChunk(format: GenerationFormat, chunk: unknown, index: number): void {
  if (format === "text") return;
  const type = chunk !== null && typeof chunk === "object" ? (chunk as { type?: unknown }).type : undefined;
  if (typeof type !== "string" || Array.isArray(chunk)) {
    throw refused(format, index, 'is not an event: an object with a string "type"');
  }
  assertParsedJson(chunk, `a ${format} generation's message ${index}`, MAX_JSON_DEPTH - ENTRY_NESTING);
  const events = format === "pi-ai" ? PI_AI_EVENTS : UI_PARTS;
  // Only the table's own types are checked: a name an object inherits (`constructor`, …) is an unknown type.
  const parsed = Object.hasOwn(events, type) ? events[type]?.safeParse(chunk) : undefined;
  if (parsed && !parsed.success) {
    throw refused(format, index, `is not a valid "${type}" event`, {
      issues: parsed.error.issues.map((issue) => ({ path: issue.path.map(String), message: issue.message })),
    });
  }
}

/** The text events add to the answer: pi-ai's and the AI SDK's text deltas. */
export function chunkText(format: GenerationFormat, events: readonly unknown[]): string {
  const delta = format === "pi-ai" ? "text_delta" : "text-delta";
  let text = "";
  for (const event of events) {
    if (event === null || typeof event !== "object") continue;
    const { type, delta: piece } = event as { type?: unknown; delta?: unknown };
    if (type === delta && typeof piece === "string") text += piece;
  }
  return text;
}

/** A generation's stream, as a path of the service. */
export function generationStreamPath(sessionId: string, generationId: string): string {
  return `/v1/sessions/${encodeURIComponent(sessionId)}/generations/${encodeURIComponent(generationId)}/stream`;
}
