import type { BlobKind, BlobSlot } from "../../core/blob-refs";
import { blobRef } from "../../core/blob-refs";
import { sha256Hex } from "../../core/bytes";
import { utf8Length } from "../../core/json";

/*
 * A value as a blob holds it: an image's base64 data decoded to its bytes (a quarter smaller, and
 * served as the image itself), when encoding the bytes again gives back exactly the same text;
 * anything else as UTF-8 text. Either way reading the blob gives back the value it was made from,
 * character for character, which is what keeps a context the same whether its values sit in the
 * entry or in R2.
 */

/** A value ready to be stored as a blob. */
export interface BlobValue {
  kind: BlobKind;
  sha256: string;
  /** The reference the entry holds instead of the value. */
  ref: string;
  bytes: Uint8Array;
  contentType: string;
  /** UTF-8 bytes of the value as a JSON string: what it adds to an entry's size. */
  jsonBytes: number;
}

/* ES2025's base64 methods of Uint8Array, which the runtime has and the project's lib does not name. */
interface Base64Bytes {
  fromBase64(text: string): Uint8Array;
}
interface ToBase64 {
  toBase64(): string;
}
/** ES2024's `String.prototype.isWellFormed`, which the runtime has and the project's lib (ES2023) does not name. */
interface WellFormed {
  isWellFormed(): boolean;
}

/** Base64 of bytes (the runtime's own encoder, standard alphabet, padded). */
export function toBase64(bytes: Uint8Array): string {
  return (bytes as Uint8Array & ToBase64).toBase64();
}

/** The bytes a base64 text stands for, or undefined when it is not base64 of the usual kind. */
function fromBase64(text: string): Uint8Array | undefined {
  try {
    return (Uint8Array as unknown as Base64Bytes).fromBase64(text);
  } catch {
    return undefined;
  }
}

/** A media type fit for a Content-Type header; anything else is served as bytes. */
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i;

/** How a slot's value is kept as a blob; undefined for text that is not well-formed UTF-16 (it stays in the entry). */
export async function encodeBlob(slot: BlobSlot): Promise<BlobValue | undefined> {
  const jsonBytes = utf8Length(JSON.stringify(slot.value));
  if (slot.kind === "image") {
    const bytes = fromBase64(slot.value);
    if (bytes && toBase64(bytes) === slot.value) {
      const sha256 = await sha256Hex(bytes);
      const contentType =
        slot.mimeType && MEDIA_TYPE.test(slot.mimeType) ? slot.mimeType : "application/octet-stream";
      return { kind: "b64", sha256, ref: blobRef("b64", sha256), bytes, contentType, jsonBytes };
    }
  }
  // Lone surrogates would not survive UTF-8: such a value stays where it is.
  if (!(slot.value as string & WellFormed).isWellFormed()) return undefined;
  const bytes = new TextEncoder().encode(slot.value);
  const sha256 = await sha256Hex(bytes);
  return {
    kind: "txt",
    sha256,
    ref: blobRef("txt", sha256),
    bytes,
    contentType: "text/plain; charset=utf-8",
    jsonBytes,
  };
}

/** The value a blob's bytes stand for (a U+FEFF it starts with is the value's). */
export function decodeBlob(kind: BlobKind, bytes: Uint8Array): string {
  return kind === "b64"
    ? toBase64(bytes)
    : new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(bytes);
}
