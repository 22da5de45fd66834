import { utf8Length } from "../json";
import { DENIED_TOOL_CALL, outputText } from "./answer-fold";
import type { GenerationFormat } from "./generation-schemas";

/*
 * What a chunk adds to the answer it makes, counted as the answer is stored (JSON, UTF-8): the text
 * it carries with its escapes (a control character takes six bytes), and the values it carries as
 * their JSON (a tool's output as the text of its result, escaped once more). Summed as chunks are
 * appended, so that a generation is refused the chunk that would make its answer too large to
 * store, rather than failing to end.
 */

/** Bytes of `text` as a JSON string's content. */
function escaped(text: unknown): number {
  return typeof text === "string" ? utf8Length(JSON.stringify(text)) - 2 : 0;
}

/** Bytes of `value` as JSON. */
function json(value: unknown): number {
  return value === undefined ? 0 : utf8Length(JSON.stringify(value));
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
      return escaped(event.delta);
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
      return escaped(event.toolCallId) + escaped(event.toolName);
    case "tool-input-available":
    case "tool-input-error":
      return (
        escaped(event.toolCallId) + escaped(event.toolName) + json(event.input) + escaped(event.errorText)
      );
    case "tool-output-available":
      return escaped(event.toolCallId) + escaped(outputText(event.output));
    case "tool-output-error":
    case "tool-output-denied":
      return escaped(event.toolCallId) + escaped(event.errorText ?? DENIED_TOOL_CALL);
    default:
      return 0;
  }
}
