import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { SessionError } from "../../core/errors";
import {
  SAFETY_HEADERS,
  STREAM_KEY_HEADER,
  STREAM_TENANT_HEADER,
  streamKeyOf,
  streamObjectName,
  tenantEnv,
} from "../../durable/internal";
import type { AppEnv } from "../env";
import { forObject, passedOn, refuseLargeAppend } from "../route-kit";
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

async function toStream(c: Context<AppEnv>): Promise<Response> {
  const key = streamKeyOf(new URL(c.req.url).pathname);
  await refuseLargeAppend(c);
  const { tenant } = c.get("caller");
  // The tenant's streams, in its jurisdiction (placed-env.ts).
  const streams = tenantEnv(c.env, tenant).STREAMS;
  if (streams === undefined) {
    // A Worker that embeds the API without binding StreamObject serves everything but streams.
    throw new SessionError("misconfigured", "this service has no STREAMS binding; streams are not served");
  }
  const stub = streams.getByName(streamObjectName(tenant, key));
  const request = forObject(c, {
    [STREAM_TENANT_HEADER]: encodeURIComponent(tenant),
    [STREAM_KEY_HEADER]: encodeURIComponent(key),
  });
  return passedOn(c, await stub.fetch(request));
}

const app = new OpenAPIHono<AppEnv>();
describeStreams(app.openAPIRegistry);

/** GET also answers HEAD (Hono sends HEAD through GET's route, the method unchanged). */
export const streamRoutes = app.on(["GET", "PUT", "POST", "DELETE"], "/v1/stream/:path{.+}", toStream);
