import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { sha256Hex } from "../core/bytes";
import { newId } from "../core/ids";
import { logLine, REQUEST_ID_HEADER, tenantHash } from "../durable/internal";
import type { AppEnv, ToolCall } from "./env";
import { recordRequest } from "./metrics";
import { countedBytes } from "./stream";

/*
 * One log line and one metrics data point per request, written once the answer's body has been
 * sent (so its size is known): request id, method, route pattern (never the path, which holds
 * ids and may hold anything a caller typed), status, error code, duration, bytes in and out, the
 * tenant as an opaque hash, the session the request was about and the MCP tool it called. An MCP
 * batch of several tool calls lists them instead, each with its JSON-RPC id (by its hash unless it
 * is a number or short and plain), tool, session and error code; the line's session is theirs when
 * they share one (else null), its error code the first a call was answered with. An internal
 * failure adds what failed, quoted parts cut out (errorSummary). The request id is the caller's
 * `x-request-id` when it is short and plain, else a new one, and goes back in the `x-request-id`
 * header of every answer (and in every error envelope, errors.ts). With REQUEST_LOG=errors only
 * answers of 400 and up are logged (metrics still count every request). Answers that are logged or
 * counted pass through a stream that counts their bytes as they are sent, so they go out without a
 * Content-Length (chunked); the others go out as they are.
 */

/** A caller's request id we may echo and log; any other is replaced by a new one. */
const CALLER_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** The route pattern that matched (`/v1/sessions/:sid`), or null when no route did. */
function routeOf(c: Context): string | null {
  for (const route of matchedRoutes(c)) if (route.method !== "ALL") return route.path;
  return null;
}

export const requestLog: MiddlewareHandler<AppEnv> = async (c, next) => {
  const started = Date.now();
  const header = c.req.header(REQUEST_ID_HEADER);
  const requestId = header !== undefined && CALLER_REQUEST_ID.test(header) ? header : newId();
  c.set("requestId", requestId);
  await next();
  const durationMs = Date.now() - started;
  const response = c.res;
  const logged = c.env.REQUEST_LOG !== "errors" || response.status >= 400;
  // A WebSocket answer (101) carries its socket, which a copy would lose: only its header is set.
  if (response.status === 101) response.headers.set(REQUEST_ID_HEADER, requestId);
  if (!logged && !c.env.METRICS) {
    // Nobody waits for the answer's size: it goes out as it came, with its Content-Length.
    if (response.status !== 101) c.res = withRequestIdHeader(response, requestId);
    return;
  }
  const calls = c.get("toolCalls") ?? [];
  const caller = c.get("caller");
  const tenant = caller ? await tenantHash(caller.tenant) : null;
  const line = {
    type: "request",
    requestId,
    method: c.req.method,
    route: routeOf(c),
    status: response.status,
    errorCode: calls.length > 0 ? firstErrorCode(calls, c.get("errorCode")) : (c.get("errorCode") ?? null),
    durationMs,
    bytesIn: c.get("bytesIn") ?? (Number(c.req.header("content-length")) || 0),
    tenant,
    sessionId: calls.length > 1 ? sharedSession(calls) : (c.get("sessionId") ?? calls[0]?.sessionId ?? null),
  };
  const named =
    calls.length === 1
      ? { tool: calls[0]?.tool }
      : calls.length > 1
        ? { toolCalls: await Promise.all(calls.map(loggedCall)) }
        : {};
  const failure = c.get("failure");
  const write = (bytesOut: number, complete: boolean) => {
    if (logged) {
      logLine(
        {
          ...line,
          bytesOut,
          ...named,
          ...(complete ? {} : { incomplete: true }),
          ...(failure ? { failure } : {}),
        },
        line.status >= 500 ? "error" : "info",
      );
    }
    recordRequest(c.env.METRICS, tenant, { ...line, bytesOut });
  };
  if (response.status === 101 || response.body === null) {
    if (response.status !== 101) c.res = withRequestId(response, null, requestId);
    write(0, true);
    return;
  }
  c.res = withRequestId(response, countedBytes(response.body, write), requestId);
};

/**
 * `response` itself with the request id header when its headers may change, else a copy (the
 * answers of other objects' fetches have immutable headers, and a copied body loses its length).
 */
function withRequestIdHeader(response: Response, requestId: string): Response {
  try {
    response.headers.set(REQUEST_ID_HEADER, requestId);
    return response;
  } catch {
    return withRequestId(response, response.body, requestId);
  }
}

/** `response` with `body` and the request id among its headers. */
function withRequestId(response: Response, body: BodyInit | null, requestId: string): Response {
  const headers = new Headers(response.headers);
  headers.set(REQUEST_ID_HEADER, requestId);
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/**
 * A batch's tool call as its line names it: the client's JSON-RPC id as it is when it is a number
 * or short and plain (as a caller's request id must be), any other by the start of its SHA-256.
 */
async function loggedCall(call: ToolCall): Promise<ToolCall> {
  if (typeof call.id === "number" || CALLER_REQUEST_ID.test(call.id)) return call;
  return { ...call, id: `sha256:${(await sha256Hex(call.id)).slice(0, 16)}` };
}

/** The session every call names, or null when they name several (or none). */
function sharedSession(calls: readonly ToolCall[]): string | null {
  const first = calls[0]?.sessionId ?? null;
  return calls.every((call) => call.sessionId === first) ? first : null;
}

/** The error code of the first call that was refused, else the request's own. */
function firstErrorCode(calls: readonly ToolCall[], own: string | undefined): string | null {
  return calls.find((call) => call.errorCode !== null)?.errorCode ?? own ?? null;
}
