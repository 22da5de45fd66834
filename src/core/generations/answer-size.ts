import { SessionError } from "../errors";
import { utf8Length } from "../json";
import { MAX_ENTRY_BYTES } from "../limits";
import type { AgentMessage } from "../messages";
import { deniedText } from "../providers/from-ai-sdk-ui";
import { isRecord } from "../providers/incoming";
import { outputText } from "./answer-fold";
import type { GenerationFormat } from "./generation-schemas";

/*
 * What a chunk adds to the answer it makes, counted as the answer is stored (JSON, UTF-8): the text
 * it carries with its escapes (a control character takes six bytes), and the values it carries as
 * their JSON (a tool's output as the text of its result, escaped once more), and what the answer
 * copies from an earlier chunk (a tool call's name, into each of its blocks and results). Summed as
 * chunks are appended, so that a generation is refused the chunk that would make its answer too
 * large to store, rather than failing to end.
 */

/** Bytes of `text` as a JSON string's content. */
function escaped(text: unknown): number {
  return typeof text === "string" ? utf8Length(JSON.stringify(text)) - 2 : 0;
}

/** Bytes of `value` as JSON. */
function json(value: unknown): number {
  return value === undefined ? 0 : utf8Length(JSON.stringify(value));
}

/** Bytes of the fields that hold a part's provider metadata, and of an OpenAI item's JSON around its values. */
const PROVIDER_FIELDS_BYTES = 128;

/**
 * Bytes of what a provider said of an AI SDK part (`providerMetadata`): kept on its block, and
 * copied again into pi-ai's signature fields (as a JSON string at most).
 */
function providerMetadataBytes(event: Record<string, unknown>): number {
  const metadata = event.providerMetadata;
  if (metadata === undefined) return 0;
  return PROVIDER_FIELDS_BYTES + json(metadata) + escaped(JSON.stringify(metadata));
}

/** The block at `contentIndex` of a pi-ai event's partial message (what an `…_end` may take). */
function partialBlock(event: Record<string, unknown>): unknown {
  const content = (event.partial as { content?: unknown } | undefined)?.content;
  return Array.isArray(content) ? content[event.contentIndex as number] : undefined;
}

/** Bytes a chunk (some text, or an event already checked) adds to the answer, at most. */
export function answerBytes(format: GenerationFormat, chunk: unknown): number {
  if (format === "text") return escaped(chunk);
  if (chunk === null || typeof chunk !== "object") return 0;
  const event = chunk as Record<string, unknown>;
  switch (event.type) {
    case "start": {
      const { provider, model, api, usage } = (event.partial ?? {}) as Record<string, unknown>;
      return json({ provider, model, api, usage });
    }
    case "text_delta":
    case "thinking_delta":
    case "text-delta":
    case "reasoning-delta":
      return escaped(event.delta) + providerMetadataBytes(event);
    case "text-start":
    case "text-end":
    case "reasoning-start":
    case "reasoning-end":
      return providerMetadataBytes(event);
    case "text_end":
    case "thinking_end":
      return escaped(event.content) + json(partialBlock(event));
    case "toolcall_start":
      return json(partialBlock(event));
    case "toolcall_end":
      return json(event.toolCall);
    case "done":
      return json(event.message);
    case "error":
      // pi-ai's carries the message whole; the AI SDK's, the text of the error.
      return json(event.error) + escaped(event.errorText);
    case "tool-input-start":
      return escaped(event.toolCallId) + escaped(event.toolName) + providerMetadataBytes(event);
    case "tool-input-available":
      return (
        escaped(event.toolCallId) + escaped(event.toolName) + json(event.input) + providerMetadataBytes(event)
      );
    case "tool-input-error":
      // The call's block, and its result: the id and the name twice.
      return (
        2 * (escaped(event.toolCallId) + escaped(event.toolName)) +
        json(event.input) +
        escaped(event.errorText)
      );
    case "tool-output-available":
      // A preliminary output is not kept: the final one is the call's result.
      if (event.preliminary === true) return 0;
      return escaped(event.toolCallId) + escaped(outputText(event.output));
    case "tool-output-error":
      return escaped(event.toolCallId) + escaped(event.errorText);
    case "tool-output-denied":
      return escaped(event.toolCallId) + escaped(deniedText(event.reason));
    default:
      return 0;
  }
}

/**
 * A generation's answer counted chunk by chunk (`answerBytes`), with what the answer copies from
 * chunks before: an AI SDK tool call's name, which a `tool-input-available` or `tool-input-error`
 * without one takes from its `tool-input-start`, and every result of the call takes again; the text
 * of reasoning an OpenAI item names, which its signature (the item as JSON) holds again.
 */
export class AnswerSize {
  readonly #format: GenerationFormat;
  /** Bytes of each AI SDK tool call's name, by call id, as its later parts copy it. */
  readonly #toolNames = new Map<string, number>();
  /** Each AI SDK reasoning part's text as its signature would copy it, by part id, and whether an OpenAI item names it. */
  readonly #reasoning = new Map<string, { bytes: number; named: boolean }>();
  #bytes = 0;

  constructor(format: GenerationFormat) {
    this.#format = format;
  }

  /** Bytes of the answer so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Counts the next chunk; answers the bytes it adds. */
  add(chunk: unknown): number {
    const adds = answerBytes(this.#format, chunk) + this.#copiedName(chunk) + this.#copiedReasoning(chunk);
    this.#bytes += adds;
    return adds;
  }

  /**
   * Bytes of reasoning text the answer copies: a reasoning part an OpenAI item names is kept as
   * pi-ai's thinking and again in its signature, a JSON string (from-ai-sdk.ts), counted from its
   * first text once the item is named.
   */
  #copiedReasoning(chunk: unknown): number {
    if (this.#format !== "ai-sdk-ui" || !isRecord(chunk)) return 0;
    if (
      chunk.type !== "reasoning-start" &&
      chunk.type !== "reasoning-delta" &&
      chunk.type !== "reasoning-end"
    )
      return 0;
    const id = typeof chunk.id === "string" ? chunk.id : "";
    const part = this.#reasoning.get(id) ?? { bytes: 0, named: false };
    this.#reasoning.set(id, part);
    const copy = typeof chunk.delta === "string" ? escaped(JSON.stringify(chunk.delta)) : 0;
    part.bytes += copy;
    if (part.named) return copy;
    const openai = isRecord(chunk.providerMetadata) ? chunk.providerMetadata.openai : undefined;
    if (!isRecord(openai) || typeof openai.itemId !== "string") return 0;
    part.named = true;
    return part.bytes;
  }

  /** Bytes of the tool name the answer copies into what `chunk` adds (answer-fold.ts). */
  #copiedName(chunk: unknown): number {
    if (this.#format !== "ai-sdk-ui" || !isRecord(chunk)) return 0;
    const id = typeof chunk.toolCallId === "string" ? chunk.toolCallId : "";
    const names = this.#toolNames;
    switch (chunk.type) {
      case "tool-input-start":
        names.set(id, escaped(chunk.toolName));
        return 0;
      case "tool-input-available":
      case "tool-input-error": {
        const own = escaped(chunk.toolName);
        if (own > 0) {
          names.set(id, own);
          return 0;
        }
        const copied = names.get(id) ?? 0;
        return chunk.type === "tool-input-error" ? 2 * copied : copied;
      }
      case "tool-output-available":
        return chunk.preliminary === true ? 0 : (names.get(id) ?? 0);
      case "tool-output-error":
      case "tool-output-denied":
        return names.get(id) ?? 0;
      default:
        return 0;
    }
  }
}

/**
 * Refuses an answer a message of which is more than an entry holds (`entry_too_large`), measured
 * block by block: an answer whose blocks copy one long value many times is refused without being
 * made into one string longer than the runtime holds.
 */
export function checkStoredSize(messages: readonly AgentMessage[]): void {
  for (const message of messages) {
    const content = (message as { content?: unknown }).content;
    const blocks = Array.isArray(content) ? content : [];
    // The message with its content array empty, then each block and the comma before it.
    let bytes = json(Array.isArray(content) ? { ...message, content: [] } : message);
    for (const [index, block] of blocks.entries()) {
      if (bytes > MAX_ENTRY_BYTES) break;
      bytes += json(block) + (index > 0 ? 1 : 0);
    }
    if (bytes > MAX_ENTRY_BYTES) {
      throw new SessionError(
        "entry_too_large",
        `a message of the answer is more than ${MAX_ENTRY_BYTES} bytes serialized, the most an entry holds`,
        { limit: MAX_ENTRY_BYTES },
      );
    }
  }
}
