import { SessionError } from "../../core";

/**
 * A request body of at most `limit` bytes, read as it arrives; a larger one is refused (413) as
 * soon as it passes the limit, whatever its Content-Length said.
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let read: ReadableStreamReadResult<Uint8Array>;
    try {
      read = await reader.read();
    } catch {
      // The client went away mid-body: nothing was written, and nobody waits for the answer.
      throw new SessionError("invalid_request", "the request body ended before it was whole");
    }
    const { done, value } = read;
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new SessionError("payload_too_large", `an append carries at most ${limit} bytes`, { limit });
    }
    parts.push(value);
  }
  if (parts.length === 1) return parts[0] as Uint8Array;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return bytes;
}
