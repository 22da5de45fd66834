import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { SessionError } from "../../core/internal";
import {
  MAX_APPEND_BYTES,
  refuseBody,
  SAFETY_HEADERS,
  STREAM_KEY_HEADER,
  STREAM_REQUEST_ID_HEADER,
  STREAM_TENANT_HEADER,
  streamKeyOf,
  streamObjectName,
  tenantEnv,
} from "../../durable/internal";
import type { AppEnv } from "../env";
import { describeStreams } from "./stream-docs";

/*
 * `/v1/stream/*`: the Durable Streams protocol for the caller's tenant (docs/streams.md). The
 * router authenticates (a read-only key may GET and HEAD, nothing else), refuses a body declared
 * over the append limit before the object sees it, and hands the request to the stream's object,
 * which answers it: protocol headers, and the service's error envelope on failure.
 */

export const STREAM_PATHS = "/v1/stream/*";

/** The protocol's browser safety headers on every answer, those the router gives itself (401, 403, 429) too. */
export const streamSafety: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  for (const [name, value] of Object.entries(SAFETY_HEADERS)) c.res.headers.set(name, value);
};

/** The error code of an object's error answer (for the request's log line). */
async function errorCodeOf(answer: Response): Promise<string | undefined> {
  if (answer.status < 400 || answer.headers.get("Content-Type") !== "application/json") return undefined;
  const body = (await answer
    .clone()
    .json()
    .catch(() => undefined)) as { error?: { code?: string } } | undefined;
  return body?.error?.code;
}

async function toStream(c: Context<AppEnv>): Promise<Response> {
  const key = streamKeyOf(new URL(c.req.url).pathname);
  const declared = c.req.header("Content-Length");
  if (declared !== undefined && Number(declared) > MAX_APPEND_BYTES) {
    // Refused before the object sees it (the rest of the body read and dropped: see refuseBody).
    await refuseBody(c.req.raw.body, MAX_APPEND_BYTES);
  }
  const { tenant } = c.get("caller");
  const headers = new Headers(c.req.raw.headers);
  headers.delete("Authorization");
  headers.set(STREAM_TENANT_HEADER, encodeURIComponent(tenant));
  headers.set(STREAM_KEY_HEADER, encodeURIComponent(key));
  headers.set(STREAM_REQUEST_ID_HEADER, c.get("requestId"));
  // The tenant's streams, in its jurisdiction (placed-env.ts).
  const streams = tenantEnv(c.env, tenant).STREAMS;
  if (streams === undefined) {
    // A Worker that embeds the API without binding StreamObject serves everything but streams.
    throw new SessionError("misconfigured", "this service has no STREAMS binding; streams are not served");
  }
  const stub = streams.getByName(streamObjectName(tenant, key));
  const answer = await stub.fetch(new Request(c.req.raw, { headers }));
  const code = await errorCodeOf(answer);
  if (code !== undefined) c.set("errorCode", code);
  // The object's answer has its headers fixed; later middleware (CORS, the request id) adds to a copy.
  return new Response(answer.body, { status: answer.status, headers: new Headers(answer.headers) });
}

const app = new OpenAPIHono<AppEnv>();
describeStreams(app.openAPIRegistry);

/** GET also answers HEAD (Hono sends HEAD through GET's route, the method unchanged). */
export const streamRoutes = app.on(["GET", "PUT", "POST", "DELETE"], "/v1/stream/:path{.+}", toStream);
