import type { MiddlewareHandler } from "hono";
import { SessionError } from "../core/errors";
import { EVENTS_AFTER_HEADER } from "../core/events";
import { ANSWER_HEADERS, REQUEST_HEADERS, REQUEST_ID_HEADER } from "../durable/internal";
import type { AppEnv } from "./env";

/*
 * Cross-origin access to /v1 from pages on other origins: only from the origins listed in
 * `CORS_ALLOWED_ORIGINS` (comma-separated, each exactly `scheme://host[:port]`); unset, from none.
 * A preflight from an allowed origin is answered 204 with what it may send; any other preflight
 * 403. Answers to an allowed origin carry Access-Control-Allow-Origin, never
 * Access-Control-Allow-Credentials: callers authenticate with a bearer token, not cookies.
 */

const ALLOWED_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE";
/**
 * The API's headers (a resumed event stream's Last-Event-ID, a caller's own request id among them),
 * those of the Durable Streams protocol (/v1/stream) and MCP's (/mcp).
 */
const ALLOWED_HEADERS = [
  "Authorization",
  "Content-Type",
  "If-Match",
  "Last-Event-ID",
  REQUEST_ID_HEADER,
  ...REQUEST_HEADERS,
  "Mcp-Protocol-Version",
].join(", ");
/** What a page may read of an answer: the request id every answer carries among them. */
const EXPOSED_HEADERS = [
  "ETag",
  "Retry-After",
  "Content-Disposition",
  REQUEST_ID_HEADER,
  EVENTS_AFTER_HEADER,
  ...ANSWER_HEADERS,
].join(", ");
const PREFLIGHT_MAX_AGE_SECONDS = "600";

let parsed: { setting: string; origins: ReadonlySet<string> } | undefined;

/** The origins `CORS_ALLOWED_ORIGINS` lists; an entry that is not exactly an origin is logged and left out. */
function allowedOrigins(setting: string | undefined): ReadonlySet<string> {
  if (!setting) return new Set();
  if (parsed?.setting !== setting) {
    const origins = new Set<string>();
    for (const entry of setting.split(",").map((part) => part.trim())) {
      if (!entry) continue;
      const origin = URL.canParse(entry) ? new URL(entry).origin : "null";
      if (origin !== "null" && origin === entry) origins.add(origin);
      else
        console.error(
          `config: CORS_ALLOWED_ORIGINS entry "${entry}" is not an origin (scheme://host[:port]); ignored`,
        );
    }
    parsed = { setting, origins };
  }
  return parsed.origins;
}

/** Whether a request's Origin is one CORS_ALLOWED_ORIGINS lets in. */
export function originAllowed(origin: string | undefined, setting: string | undefined): origin is string {
  return origin !== undefined && allowedOrigins(setting).has(origin);
}

export const cors: MiddlewareHandler<AppEnv> = async (c, next) => {
  const origin = c.req.header("Origin");
  const allowed = originAllowed(origin, c.env.CORS_ALLOWED_ORIGINS);
  if (c.req.method === "OPTIONS" && origin !== undefined && c.req.header("Access-Control-Request-Method")) {
    if (!allowed) {
      const message = "this origin may not call the API from a browser (CORS_ALLOWED_ORIGINS)";
      throw new SessionError("forbidden", message, { origin });
    }
    return c.body(null, 204, {
      "Access-Control-Allow-Origin": origin,
      "Access-Control-Allow-Methods": ALLOWED_METHODS,
      "Access-Control-Allow-Headers": ALLOWED_HEADERS,
      "Access-Control-Max-Age": PREFLIGHT_MAX_AGE_SECONDS,
      Vary: "Origin",
    });
  }
  await next();
  if (allowedOrigins(c.env.CORS_ALLOWED_ORIGINS).size > 0) c.res.headers.append("Vary", "Origin");
  if (allowed) {
    c.res.headers.set("Access-Control-Allow-Origin", origin);
    c.res.headers.set("Access-Control-Expose-Headers", EXPOSED_HEADERS);
  }
};
