import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { newId } from "../core";
import { logLine, tenantHash } from "../durable";
import type { AppEnv } from "./env";
import { recordRequest } from "./metrics";

/*
 * One log line and one metrics data point per request, written once the answer's body has been
 * sent (so its size is known): request id, method, route pattern (never the path, which holds
 * ids and may hold anything a caller typed), status, error code, duration, bytes in and out, the
 * tenant as an opaque hash and the session the request was about. The request id is the caller's
 * `x-request-id` when it is short and plain, else a new one, and goes back in the `x-request-id`
 * header of every answer (and in every error envelope, errors.ts). With REQUEST_LOG=errors only
 * answers of 400 and up are logged (metrics still count every request). Answers pass through a stream
 * that counts their bytes as they are sent, so they go out without a Content-Length (chunked).
 */

export const REQUEST_ID_HEADER = "x-request-id";
const CALLER_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** The caller's request id when it is one we may echo and log, else a new one. */
export function requestIdOf(header: string | undefined): string {
  return header !== undefined && CALLER_REQUEST_ID.test(header) ? header : newId();
}

/** The route pattern that matched (`/v1/sessions/:sid`), or null when no route did. */
function routeOf(c: Context): string | null {
  for (const route of matchedRoutes(c)) if (route.method !== "ALL") return route.path;
  return null;
}

/** The body passed through, `done` called with its size once it has been sent or abandoned. */
function counted(
  body: ReadableStream<Uint8Array>,
  done: (bytes: number, complete: boolean) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let bytes = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        done(bytes, false);
        throw error;
      }
      if (chunk.done) {
        controller.close();
        done(bytes, true);
      } else {
        bytes += chunk.value.byteLength;
        controller.enqueue(chunk.value);
      }
    },
    cancel(reason) {
      done(bytes, false);
      return reader.cancel(reason);
    },
  });
}

export const requestLog: MiddlewareHandler<AppEnv> = async (c, next) => {
  const started = Date.now();
  const requestId = requestIdOf(c.req.header(REQUEST_ID_HEADER));
  c.set("requestId", requestId);
  await next();
  const durationMs = Date.now() - started;
  const response = c.res;
  const caller = c.get("caller");
  const tenant = caller ? await tenantHash(caller.tenant) : null;
  const line = {
    type: "request",
    requestId,
    method: c.req.method,
    route: routeOf(c),
    status: response.status,
    errorCode: c.get("errorCode") ?? null,
    durationMs,
    bytesIn: c.get("bytesIn") ?? (Number(c.req.header("content-length")) || 0),
    tenant,
    sessionId: c.get("sessionId") ?? null,
  };
  const failure = c.get("failure");
  const logged = c.env.REQUEST_LOG !== "errors" || line.status >= 400;
  const write = (bytesOut: number, complete: boolean) => {
    if (logged) {
      logLine(
        { ...line, bytesOut, ...(complete ? {} : { incomplete: true }), ...(failure ? { failure } : {}) },
        line.status >= 500 ? "error" : "info",
      );
    }
    recordRequest(c.env.METRICS, tenant, { ...line, bytesOut });
  };
  const headers = new Headers(response.headers);
  headers.set(REQUEST_ID_HEADER, requestId);
  // A WebSocket answer (101) carries its socket, which a copy would lose: only its header is set.
  if (response.status === 101 || response.body === null) {
    if (response.status === 101) response.headers.set(REQUEST_ID_HEADER, requestId);
    else c.res = new Response(null, { status: response.status, statusText: response.statusText, headers });
    write(0, true);
    return;
  }
  c.res = new Response(counted(response.body, write), {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
};
