import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import * as z from "zod";
import { toBase64 } from "../../core/bytes";

/*
 * A value as the saver's serializer writes it, kept readable in the entry: the serializer's JSON as
 * JSON (what the viewer and search show), anything else (bytes) as base64 under its type.
 */

export const Serialized = z.union([
  z.object({ type: z.literal("json"), json: z.unknown() }).strict(),
  z.object({ type: z.string(), base64: z.string() }).strict(),
]);
export type Serialized = z.infer<typeof Serialized>;

const decoder = new TextDecoder();

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}

export async function serialize(serde: SerializerProtocol, value: unknown): Promise<Serialized> {
  const [type, bytes] = await serde.dumpsTyped(value);
  return type === "json"
    ? { type, json: JSON.parse(decoder.decode(bytes)) }
    : { type, base64: toBase64(bytes) };
}

export function deserialize(serde: SerializerProtocol, value: Serialized): Promise<unknown> {
  return "json" in value
    ? serde.loadsTyped("json", JSON.stringify(value.json))
    : serde.loadsTyped(value.type, fromBase64(value.base64));
}
