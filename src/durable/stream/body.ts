import { concatBytes } from "../../core/bytes";
import { SessionError } from "../../core/errors";
import { MAX_BODY_BYTES } from "../../core/limits";

/*
 * Request bodies of appends. A body over the limit is refused (413), but the rest of it, up to
 * the service's largest body, is read and dropped first: most HTTP clients, told no while still
 * sending, see a reset connection instead of the answer.
 */

function tooLarge(limit: number): SessionError {
  return new SessionError("payload_too_large", `an append carries at most ${limit} bytes`, { limit });
}

async function read(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  try {
    return await reader.read();
  } catch {
    // The client went away mid-body: nothing was written, and nobody waits for the answer.
    throw new SessionError("invalid_request", "the request body ended before it was whole");
  }
}

/** Reads what is left of a body too large to take, up to MAX_BODY_BYTES; then refuses it. */
export async function refuseBody(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  alreadyRead = 0,
): Promise<never> {
  if (body) {
    const reader = body.getReader();
    let size = alreadyRead;
    for (let chunk = await read(reader); !chunk.done; chunk = await read(reader)) {
      size += chunk.value.byteLength;
      if (size > MAX_BODY_BYTES) break;
    }
    await reader.cancel().catch(() => {});
  }
  throw tooLarge(limit);
}

/** A request body of at most `limit` bytes, read as it arrives, whatever its Content-Length said. */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (let chunk = await read(reader); !chunk.done; chunk = await read(reader)) {
    size += chunk.value.byteLength;
    if (size > limit) {
      reader.releaseLock();
      return refuseBody(request.body, limit, size);
    }
    parts.push(chunk.value);
  }
  return concatBytes(parts, size);
}
