import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit as honoBodyLimit } from "hono/body-limit";
import { concatBytes } from "../core/bytes";
import { SessionError } from "../core/errors";
import { MAX_BODY_BYTES, MAX_NDJSON_LINE_BYTES } from "../core/limits";
import { decodeNdjson, decodeNdjsonLine, type NumberedLine } from "../core/ndjson";
import type { AppEnv } from "./env";

const JSON_TYPE = /^application\/([\w.-]+\+)?json$/i;
const NDJSON_TYPE = /^application\/(x-ndjson|jsonl)$/i;

/** The media type of a request, without parameters, lower case ("" when there is none). */
function mediaType(header: string | undefined): string {
  return header?.split(";")[0]?.trim().toLowerCase() ?? "";
}

const tooLarge = (limit: number) =>
  new SessionError("payload_too_large", `the body is larger than ${limit} bytes`, { limit });

/**
 * Reads at most `limit` bytes of a body (a request's, or an answer's), failing with `tooLong` as
 * soon as it is larger, whatever Content-Length says.
 */
export async function readCapped(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  tooLong: (limit: number) => SessionError = tooLarge,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLong(limit);
    }
    parts.push(value);
  }
  return concatBytes(parts, size);
}

/**
 * Refuses a body declared larger than 32 MiB before reading any of it (413), and lets go of every
 * body a request leaves unread. workerd's local server holds an answer back until the request
 * body has been read or cancelled, so a client declaring 100 MB and sending a few bytes would
 * otherwise wait for an answer as long as it keeps the connection open.
 */
export const declaredBodyLimit =
  (streamed: Readonly<Record<string, number>> = {}): MiddlewareHandler =>
  async (c, next) => {
    const request = c.req.raw;
    const limit = streamed[c.req.path] ?? MAX_BODY_BYTES;
    try {
      const declared = c.req.header("Content-Length");
      if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
      await next();
    } finally {
      if (request.body && !request.bodyUsed) await request.body.cancel().catch(() => {});
    }
  };

const NEWLINE = 0x0a;

/**
 * An NDJSON body read line by line as it arrives, never whole: each line checked as UTF-8 and at
 * most MAX_NDJSON_LINE_BYTES, at most `limit` bytes in all. Blank lines are skipped; lines are numbered
 * from 1.
 */
export async function* streamedNdjsonLines(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): AsyncGenerator<NumberedLine> {
  if (!body) return;
  const reader = body.getReader();
  // The bytes of the line being read, as they came (none of them holds a newline).
  let parts: Uint8Array[] = [];
  let pending = 0;
  let line = 1;
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) throw tooLarge(limit);
      let start = 0;
      for (let newline = value.indexOf(NEWLINE); newline >= 0; newline = value.indexOf(NEWLINE, start)) {
        parts.push(value.subarray(start, newline));
        const text = decodeNdjsonLine(concatBytes(parts, pending + newline - start), line);
        parts = [];
        pending = 0;
        start = newline + 1;
        if (text.trim()) yield { line, text };
        line++;
      }
      if (start < value.byteLength) {
        parts.push(value.subarray(start));
        pending += value.byteLength - start;
      }
      // A line longer than any entry can be is refused before it is held whole.
      if (pending > MAX_NDJSON_LINE_BYTES) {
        const message = `line ${line} is longer than ${MAX_NDJSON_LINE_BYTES} bytes`;
        throw new SessionError("payload_too_large", message, { line });
      }
    }
    if (pending > 0) {
      const text = decodeNdjsonLine(concatBytes(parts, pending), line);
      if (text.trim()) yield { line, text };
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** An NDJSON body (its type checked by `jsonBody`) as UTF-8 text, at most 32 MiB. */
export async function readNdjson(c: Context<AppEnv>): Promise<string> {
  const bytes = await readCapped(c.req.raw.body, MAX_BODY_BYTES);
  c.set("bytesIn", bytes.byteLength);
  return decodeNdjson(bytes);
}

/** A JSON body is read whole, by the route's validator: at most 32 MiB of it. */
const capJsonBody = honoBodyLimit({
  maxSize: MAX_BODY_BYTES,
  onError: () => {
    throw tooLarge(MAX_BODY_BYTES);
  },
});

/**
 * Gets JSON bodies ready for validation. A POST, PUT or PATCH with a body must declare
 * application/json: browsers send other types from other sites without asking first, so a route
 * accepting them would be open to forged requests. Refuses other media types (415) and bodies over
 * 32 MiB (413, Hono's body limit). An empty body (none, or `Content-Length: 0`) stands for `{}`,
 * declared as application/json or as nothing at all (`curl -X POST`, a client generated for a route
 * without a body); one declared as another type is refused like any other. The route's validator
 * parses the rest. A POST to one of `ndjsonPaths` takes `application/x-ndjson` (or
 * `application/jsonl`) instead, and reads its own body.
 */
export const jsonBody =
  (ndjsonPaths: readonly string[] = []): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "DELETE") return next();
    const type = mediaType(c.req.header("Content-Type"));
    const unsupported = (message: string) =>
      new SessionError("unsupported_format", message, { contentType: type || null });
    // The imports are POSTs; a session named `import` is changed with JSON like any other.
    if (c.req.method === "POST" && ndjsonPaths.includes(c.req.path)) {
      if (NDJSON_TYPE.test(type)) return next();
      throw unsupported("send the file as application/x-ndjson (or application/jsonl)");
    }
    const declared = c.req.header("Content-Length");
    const empty = !c.req.raw.body || declared === "0";
    if (empty && (type === "" || JSON_TYPE.test(type))) {
      const headers = new Headers(c.req.raw.headers);
      headers.set("Content-Type", "application/json");
      c.req.raw = new Request(c.req.raw, { headers, body: "{}" });
      return capJsonBody(c, next);
    }
    if (!JSON_TYPE.test(type)) throw unsupported("send the body as application/json");
    if (declared === undefined) return chunkedJsonBody(c, next);
    return capJsonBody(c, next);
  };

/**
 * A JSON body sent without its length (chunked): counted as it is read, for the request log, and
 * when it passes the limit the client's stream is cancelled, so the 413 is not held back until
 * the client has sent the rest.
 */
async function chunkedJsonBody(c: Context<AppEnv>, next: () => Promise<void>): Promise<void> {
  const source = c.req.raw.body as ReadableStream<Uint8Array>;
  const stop = new AbortController();
  let bytes = 0;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      bytes += chunk.byteLength;
      c.set("bytesIn", bytes);
      controller.enqueue(chunk);
    },
  });
  c.req.raw = new Request(c.req.raw, { body: source.pipeThrough(counter, { signal: stop.signal }) });
  try {
    await capJsonBody(c, next);
  } catch (error) {
    if (error instanceof SessionError && error.code === "payload_too_large") stop.abort();
    throw error;
  }
}
