import { SessionError } from "../../core/errors";
import { MAX_PATH_CHARS } from "./protocol";

/*
 * Streams are named by their path under /v1/stream/ (a `Stream-Forked-From` header names its
 * source the same way). The key is the path after the prefix, percent-decoded; each tenant has
 * its own keys, and each of its streams its own object.
 */

export const STREAM_ROUTE = "/v1/stream/";

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** The key of the stream at a URL path (`/v1/stream/…`). */
export function streamKeyOf(path: string): string {
  if (!path.startsWith(STREAM_ROUTE)) {
    throw new SessionError("invalid_request", `a stream's path starts with ${STREAM_ROUTE}`, { path });
  }
  let key: string;
  try {
    key = decodeURIComponent(path.slice(STREAM_ROUTE.length));
  } catch {
    throw new SessionError("invalid_request", "the stream's path is not valid percent-encoding");
  }
  return streamKey(key);
}

/** A stream's key, when a client could reach a stream under it: the key a tenant import names, too. */
export function streamKey(key: string): string {
  if (key.length === 0 || key.length > MAX_PATH_CHARS || hasControlCharacter(key)) {
    throw new SessionError(
      "invalid_request",
      `a stream's path is 1 to ${MAX_PATH_CHARS} characters, none of them control characters`,
    );
  }
  // The protocol keeps `__ds/…` for its subscription APIs, which this service does not offer.
  if (key.split("/")[0] === "__ds") throw new SessionError("not_found", "the __ds paths are reserved");
  return key;
}

/** The object of one of a tenant's streams: two tenants never share one. */
export function streamObjectName(tenant: string, key: string): string {
  return JSON.stringify([tenant, key]);
}
