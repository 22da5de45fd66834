import { SessionError } from "../errors";
import type { GenerationFormat } from "./generation-schemas";

/*
 * What a generation's chunks are, one by one: in the JSON formats each is an event, an object with
 * a string `type` (pi-ai's `text_delta`, the AI SDK's `text-delta`, …); anything else is refused
 * before it is written. And the text they carry, for a reader that only shows the words.
 */

/** Refuses a JSON format's chunk that is not an event (`index`: its place in the append). */
export function checkChunk(format: GenerationFormat, chunk: unknown, index: number): void {
  if (format === "text") return;
  const type = chunk !== null && typeof chunk === "object" ? (chunk as { type?: unknown }).type : undefined;
  if (typeof type !== "string" || Array.isArray(chunk)) {
    throw new SessionError(
      "invalid_request",
      `a ${format} generation takes events: objects with a string "type" (message ${index} is not one)`,
      { index },
    );
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
