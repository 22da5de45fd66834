import type { MiddlewareHandler } from "hono";
import { assertJsonDepth, MAX_BODY_BYTES, SessionError } from "../core";

const JSON_TYPE = /^application\/([\w.-]+\+)?json$/i;

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
      throw new SessionError("payload_too_large", `the body is larger than ${limit} bytes`, { limit });
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

function checkDeclaredLength(header: string | undefined, limit: number): void {
  if (header !== undefined && Number(header) > limit) {
    throw new SessionError("payload_too_large", `the body is larger than ${limit} bytes`, { limit });
  }
}

/** The body as text, at most 32 MiB (413 otherwise, refused before reading when declared). */
export async function readText(request: Request): Promise<string> {
  checkDeclaredLength(request.headers.get("Content-Length") ?? undefined, MAX_BODY_BYTES);
  const bytes = await readCapped(request.body, MAX_BODY_BYTES);
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new SessionError("invalid_request", "the body is not valid UTF-8");
  }
}

/**
 * Parses JSON bodies before validation: refuses other media types (415), bodies over 32 MiB (413,
 * before reading them), malformed or over-deep JSON (400). An empty body without a type is `{}`.
 * Paths in `except` read their own bodies.
 */
export const jsonBody =
  (except: readonly string[] = []): MiddlewareHandler =>
  async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "DELETE") return next();
    if (except.includes(c.req.path)) return next();
    checkDeclaredLength(c.req.header("Content-Length"), MAX_BODY_BYTES);
    const type = c.req.header("Content-Type")?.split(";")[0]?.trim() ?? "";
    const bytes = await readCapped(c.req.raw.body, MAX_BODY_BYTES);
    let value: unknown = {};
    if (bytes.byteLength > 0 || type) {
      if (!JSON_TYPE.test(type)) {
        throw new SessionError("unsupported_format", "send the body as application/json", {
          contentType: type || null,
        });
      }
      try {
        value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
      } catch {
        throw new SessionError("invalid_request", "the body is not valid JSON");
      }
      assertJsonDepth(value, "the body");
    }
    // The validators read the parsed body from here instead of the (consumed) stream.
    c.req.bodyCache.json = Promise.resolve(value);
    if (!type) {
      const headers = new Headers(c.req.raw.headers);
      headers.set("Content-Type", "application/json");
      c.req.raw = new Request(c.req.raw.url, { method: c.req.method, headers });
    }
    return next();
  };
