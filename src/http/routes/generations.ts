import { createRoute } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import * as z from "zod";
import { zodDetails } from "../../core/append";
import { Id, StoredEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import {
  CompleteGenerationBody,
  GenerationInfo,
  GenerationPage,
  ListGenerationsQuery,
  MAX_GENERATION_BYTES,
  OpenGenerationBody,
} from "../../core/generations/generation-schemas";
import { GENERATION_ID_HEADER, MAX_APPEND_BYTES } from "../../durable/internal";
import type { AppEnv } from "../env";
import {
  body,
  conflict,
  errors,
  failure,
  forObject,
  json,
  passedOn,
  refuseLargeAppend,
  routes,
  sessionObject,
  sessionStub,
  TOO_LARGE_BODY,
  writeErrors,
} from "../route-kit";
import { SessionIdParam } from "../schemas";

/*
 * Generations: an answer written as it is generated, bound to a session (docs/generations.md).
 * Opening one makes its stream, a Durable Streams stream kept in the session's object and served
 * under the generation's path with the protocol as `/v1/stream/*` serves it; complete and stop
 * turn what was written into the session's entry and close the stream, in one transaction.
 */

const GenerationParams = SessionIdParam.extend({ gid: Id.meta({ param: { name: "gid", in: "path" } }) });

const GenerationOutcome = z
  .object({
    generation: GenerationInfo,
    entries: z.array(StoredEntry).meta({ description: "the entries the answer became, in order" }),
  })
  .meta({ id: "GenerationOutcome" });

/** The path of a generation's stream: the protocol, as the session's object answers it. */
const STREAM_PATH = /^\/v1\/sessions\/([^/]+)\/generations\/([^/]+)\/stream$/;

/**
 * Runs `middleware` on every request but those to a generation's stream, whose body (any content
 * type) the protocol reads.
 */
export function exceptGenerationStreams(middleware: MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> {
  return (c, next) => (STREAM_PATH.test(c.req.path) ? next() : middleware(c, next));
}

const outcomeResponses = {
  ...writeErrors,
  201: json(GenerationOutcome, "ended now: its entries, and the generation as it ended"),
  200: json(GenerationOutcome, "ended already the same way: the same outcome, nothing written"),
  409: conflict("stream_closed: the generation was completed or stopped already (the other one of the two)"),
  413: failure(
    `entry_too_large or quota_exceeded for a complete's given message; nothing written, the generation stays open (without a message, an answer that cannot be stored whole ends cut short instead). Or ${TOO_LARGE_BODY}`,
  ),
};

/** The route's `sid` and `gid`, as Hono matched them (each segment decoded), checked as ids. */
function generationParams(c: Context<AppEnv>): z.infer<typeof GenerationParams> {
  const params = GenerationParams.safeParse(c.req.param());
  if (!params.success) throw new SessionError("invalid_request", "invalid path", zodDetails(params.error));
  return params.data;
}

async function toGenerationStream(c: Context<AppEnv>): Promise<Response> {
  const { sid, gid } = generationParams(c);
  await refuseLargeAppend(c);
  const stub = sessionStub(c, sid);
  const request = forObject(c, { [GENERATION_ID_HEADER]: encodeURIComponent(gid) });
  return passedOn(c, await stub.fetch(request));
}

const app = routes()
  .openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/generations",
      operationId: "openGeneration",
      summary: "Open a generation: an answer written chunk by chunk to a stream",
      description: `Answers the generation with \`stream\`, its Durable Streams URL: append chunks there (text/plain for \`text\`, application/json events for \`pi-ai\` and \`ai-sdk-ui\`; at most ${MAX_APPEND_BYTES} bytes an append and ${MAX_GENERATION_BYTES} in all), read it from any offset, follow it live. The session's events announce it (\`generation\`). Complete or stop it to append the answer; without an append for \`abandonAfterSeconds\` it is stopped.`,
      request: { params: SessionIdParam, body: body(OpenGenerationBody, false) },
      responses: {
        201: json(GenerationInfo, "opened"),
        422: failure("parent_not_found"),
        ...writeErrors,
        413: failure(
          `quota_exceeded: the session holds maxOpenGenerations open generations already (64 unless QUOTAS sets it). Or ${TOO_LARGE_BODY}`,
        ),
        415: failure(
          "unsupported_format: the request is not declared application/json, or its `format` is not one the generations take",
        ),
      },
    }),
    async (c) => {
      const object = sessionObject(c, c.req.valid("param").sid);
      const generation = await object.openGeneration(c.req.valid("json"));
      return c.json(generation, 201, { Location: generation.stream });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/generations",
      operationId: "listGenerations",
      summary:
        "The generations of the session: open ones, and ended ones still within their retention window, a page at a time",
      request: { params: SessionIdParam, query: ListGenerationsQuery },
      responses: { 200: json(GenerationPage, "oldest first"), ...errors },
    }),
    async (c) => {
      const page = await sessionObject(c, c.req.valid("param").sid).listGenerations(c.req.valid("query"));
      return c.json(page, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/generations/{gid}",
      operationId: "getGeneration",
      summary: "A generation: its state, the tail of its stream, and the entries it became",
      request: { params: GenerationParams },
      responses: { 200: json(GenerationInfo, "the generation"), ...errors },
    }),
    async (c) => {
      const { sid, gid } = c.req.valid("param");
      return c.json(await sessionObject(c, sid).getGeneration(gid), 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/generations/{gid}/complete",
      operationId: "completeGeneration",
      summary: "Complete a generation: its answer appended under its parent, its stream closed",
      description:
        "With `message`, that is the answer; otherwise it is assembled from the chunks. The entry (the answer's first, which takes the generation's id) exists exactly when the stream says it is closed.",
      request: { params: GenerationParams, body: body(CompleteGenerationBody, false) },
      responses: outcomeResponses,
    }),
    async (c) => {
      const { sid, gid } = c.req.valid("param");
      const { message } = c.req.valid("json");
      const { created, ...answer } = await sessionObject(c, sid).endGeneration(gid, {
        kind: "complete",
        ...(message === undefined ? {} : { message }),
      });
      return c.json(answer, created ? 201 : 200);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/generations/{gid}/stop",
      operationId: "stopGeneration",
      summary: "Stop a generation: what it wrote so far appended as aborted, its stream closed",
      description:
        "Any key that may write the session may stop it; the writer's next append is refused (stream_closed), so it can cancel its model call.",
      request: { params: GenerationParams, body: body(z.strictObject({}), false) },
      responses: outcomeResponses,
    }),
    async (c) => {
      const { sid, gid } = c.req.valid("param");
      const { created, ...answer } = await sessionObject(c, sid).endGeneration(gid, {
        kind: "stop",
        by: "request",
      });
      return c.json(answer, created ? 201 : 200);
    },
  );

app.openAPIRegistry.registerPath({
  method: "get",
  path: "/v1/sessions/{sid}/generations/{gid}/stream",
  operationId: "readGenerationStream",
  summary: "Read the chunks of a generation: the Durable Streams protocol (offset, long-poll, SSE, HEAD)",
  request: {
    params: GenerationParams,
    query: z.object({
      offset: z.string().optional().meta({ description: "-1 (the start, default), now, or an offset" }),
      live: z.enum(["long-poll", "sse"]).optional(),
    }),
  },
  responses: {
    200: {
      description: "chunks from the offset, or an SSE stream of them",
      content: { "*/*": { schema: z.string() } },
    },
    204: { description: "a long-poll that saw no new chunk" },
    ...errors,
  },
});
app.openAPIRegistry.registerPath({
  method: "post",
  path: "/v1/sessions/{sid}/generations/{gid}/stream",
  operationId: "appendToGeneration",
  summary: "Append chunks to an open generation (Producer-Id/-Epoch/-Seq for exactly-once appends)",
  request: {
    params: GenerationParams,
    body: { content: { "*/*": { schema: z.string() } }, description: "text, or JSON events" },
  },
  responses: {
    200: { description: "appended (a producer's new data)" },
    204: { description: "appended; a producer's duplicate" },
    ...errors,
    409: conflict("stream_closed (completed or stopped), content_type_mismatch, sequence_conflict"),
    413: failure(
      `payload_too_large: over ${MAX_APPEND_BYTES} bytes, or the stream or the answer it makes (as stored) past ${MAX_GENERATION_BYTES}; quota_exceeded: the chunks would take the session or the tenant past a byte quota`,
    ),
  },
});

/** The generation routes; the stream's own (any method) answer through the session's object. */
export const generationRoutes = app.on(
  ["GET", "POST", "PUT", "DELETE"],
  "/v1/sessions/:sid/generations/:gid/stream",
  toGenerationStream,
);
