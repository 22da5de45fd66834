import type { Context, MiddlewareHandler } from "hono";
import { assertJsonDepth, MAX_BODY_BYTES, SessionError } from "../core";
import type { AppEnv } from "./env";

const JSON_TYPE = /^application\/([\w.-]+\+)?json$/i;
const NDJSON_TYPE = /^application\/(x-ndjson|jsonl)$/i;

const tooLarge = (limit: number) =>
  new SessionError("payload_too_large", `the body is larger than ${limit} bytes`, { limit });

/** The media type of a request, without parameters, lower case ("" when there is none). */
function mediaType(header: string | undefined): string {
  return header?.split(";")[0]?.trim().toLowerCase() ?? "";
}

/** Reads at most `limit` bytes of a body, failing as soon as it is larger (whatever Content-Length says). */
export async function readCapped(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
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
      throw tooLarge(limit);
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return bytes;
}

/**
 * Refuses a body declared larger than 32 MiB before reading any of it (413), and lets go of every
 * body a request leaves unread. workerd's local server holds an answer back until the request
 * body has been read or cancelled, so a client declaring 100 MB and sending a few bytes would
 * otherwise wait for an answer as long as it keeps the connection open.
 */
export const bodyLimit: MiddlewareHandler = async (c, next) => {
  const request = c.req.raw;
  try {
    const declared = c.req.header("Content-Length");
    if (declared !== undefined && Number(declared) > MAX_BODY_BYTES) throw tooLarge(MAX_BODY_BYTES);
    await next();
  } finally {
    if (request.body && !request.bodyUsed) await request.body.cancel().catch(() => {});
  }
};

/** An NDJSON body (its type checked by `jsonBody`) as UTF-8 text, at most 32 MiB. */
export async function readNdjson(c: Context<AppEnv>): Promise<string> {
  const bytes = await readCapped(c.req.raw.body, MAX_BODY_BYTES);
  c.set("bytesIn", bytes.byteLength);
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new SessionError("invalid_request", "the body is not valid UTF-8");
  }
}

/**
 * Parses JSON bodies before validation. Every POST, PUT and PATCH must declare application/json,
 * an empty body included (it stands for `{}`): browsers send other types from other sites without
 * asking first, so a route accepting them would be open to forged requests. Refuses other media
 * types (415), bodies over 32 MiB (413), malformed or over-deep JSON (400). The paths in
 * `ndjsonPaths` take `application/x-ndjson` (or `application/jsonl`) instead, and read their own
 * bodies.
 */
export const jsonBody =
  (ndjsonPaths: readonly string[] = []): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "DELETE") return next();
    const type = mediaType(c.req.header("Content-Type"));
    if (ndjsonPaths.includes(c.req.path)) {
      if (NDJSON_TYPE.test(type)) return next();
      throw new SessionError(
        "unsupported_format",
        "send the file as application/x-ndjson (or application/jsonl)",
        {
          contentType: type || null,
        },
      );
    }
    if (!JSON_TYPE.test(type)) {
      throw new SessionError("unsupported_format", "send the body as application/json", {
        contentType: type || null,
      });
    }
    const bytes = await readCapped(c.req.raw.body, MAX_BODY_BYTES);
    c.set("bytesIn", bytes.byteLength);
    let value: unknown = {};
    if (bytes.byteLength > 0) {
      try {
        value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
      } catch {
        throw new SessionError("invalid_request", "the body is not valid JSON");
      }
      assertJsonDepth(value, "the body");
    }
    // The validators read the parsed body from here instead of the (consumed) stream.
    c.req.bodyCache.json = Promise.resolve(value);
    return next();
  };
