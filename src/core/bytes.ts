/** The parts as one run of `size` bytes (their total), the first itself when it is the only one. */
export function concatBytes(parts: readonly Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return bytes;
}

/** Bytes per `btoa` call: a multiple of 3, so the pieces join into one base64 text. */
const BASE64_PIECE = 3 * 8192;

/** The bytes as base64, encoded a piece at a time so that no call takes too many arguments. */
export function toBase64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.byteLength; i += BASE64_PIECE) {
    text += btoa(String.fromCharCode(...bytes.subarray(i, i + BASE64_PIECE)));
  }
  return text;
}

/** The SHA-256 of `data` (text as UTF-8) in hex. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return hex(new Uint8Array(digest));
}

/** The bytes in hex, two lower-case digits each. */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** `count` random bytes in hex: tokens and incarnations nobody can guess. */
export function randomHex(count: number): string {
  return hex(crypto.getRandomValues(new Uint8Array(count)));
}
