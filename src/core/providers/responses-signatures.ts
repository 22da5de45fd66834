import { tryParseJson } from "../json";

/*
 * pi-ai's text signature for an OpenAI Responses message item: its id and phase, so the model
 * that wrote the item gets it back under the same id. Readers write it, converters read it back.
 */

/** pi-ai's text signature for a Responses message item: `{"v":1,"id":…,"phase":…}`. */
export function messageSignature(id: string, phase?: string): string {
  return JSON.stringify(phase === undefined ? { v: 1, id } : { v: 1, id, phase });
}

/** A text signature read back: pi-ai's `{"v":1,"id":…,"phase":…}`, or an older plain message id. */
export function messageIdentity(
  signature: string | undefined,
): { id: string; phase?: "commentary" | "final_answer" } | undefined {
  if (!signature) return undefined;
  if (!signature.startsWith("{")) return { id: signature };
  const parsed = tryParseJson(signature) as { v?: unknown; id?: unknown; phase?: unknown } | undefined;
  if (parsed?.v !== 1 || typeof parsed.id !== "string") return undefined;
  return parsed.phase === "commentary" || parsed.phase === "final_answer"
    ? { id: parsed.id, phase: parsed.phase }
    : { id: parsed.id };
}
