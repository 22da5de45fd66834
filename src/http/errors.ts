import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import * as z from "zod";
import type { ErrorBody, ErrorCode } from "../core/errors";
import { CODE_OF_STATUS, ERROR_STATUS, SessionError } from "../core/errors";
import { errorSummary, transientError } from "../durable/internal";
import type { AppEnv } from "./env";

export const ErrorEnvelope = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
      message: z.string(),
      details: z.unknown().optional(),
      requestId: z.string().meta({ description: "the request's x-request-id, to find its log line" }),
    }),
  })
  .meta({ id: "Error" });

/** The error envelope, with the request's id; the code goes into the request's log line. */
function errorResponse(c: Context<AppEnv>, body: ErrorBody, headers?: Record<string, string>): Response {
  const requestId = c.get("requestId");
  c.set("errorCode", body.code);
  return c.json({ error: { ...body, requestId } }, ERROR_STATUS[body.code] as ContentfulStatusCode, headers);
}

/**
 * The one place failures become HTTP: a `SessionError` keeps its code; a transient failure of an
 * object (overloaded, reset mid-call) is `unavailable` with Retry-After; anything else is
 * `internal` with the request id to find the log line, never a stack or a message from inside.
 */
export function onError(error: Error, c: Context<AppEnv>): Response {
  const transient = transientError(error);
  if (transient) {
    c.set("failure", errorSummary(error));
    return onError(transient, c);
  }
  if (error instanceof SessionError) {
    const retryAfter = (error.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds;
    const headers = retryAfter === undefined ? undefined : { "Retry-After": String(retryAfter) };
    return errorResponse(c, error.toJSON(), headers);
  }
  const code = error instanceof HTTPException ? CODE_OF_STATUS[error.status] : undefined;
  if (code) return errorResponse(c, { code, message: error.message || "bad request" });
  c.set("failure", errorSummary(error));
  return errorResponse(c, {
    code: "internal",
    message: "internal error",
    details: { requestId: c.get("requestId") },
  });
}

export function notFound(c: Context<AppEnv>): Response {
  return errorResponse(c, {
    code: "not_found",
    message: `no route for ${c.req.method} ${new URL(c.req.url).pathname}`,
  });
}
