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
