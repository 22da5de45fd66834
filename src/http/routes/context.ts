import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { NavigateResult } from "../../core/compact-session";
import type { SessionContext } from "../../core/context";
import { SessionError } from "../../core/errors";
import { expectedLeaf, leafTag } from "../../core/leaf-tag";
import { MAX_MODEL_CONTEXT_BYTES } from "../../core/limits";
import { contextForModel } from "../../core/providers/convert";
import { parseModelRef } from "../../core/providers/target";
import { Session } from "../../core/session";
import { LeafAt } from "../../core/session-schemas";
import { unavailable } from "../../durable/internal";
import { readCapped } from "../body";
import { summarizerFor } from "../metrics";
import {
  body,
  errors,
  failure,
  json,
  routes,
  sessionObject,
  sessionStorage,
  streamedJson,
  writeErrors,
} from "../route-kit";
import {
  ContextQuery,
  ContextResponse,
  IfMatch,
  LeafAtQuery,
  MoveLeafBody,
  SessionIdParam,
} from "../schemas";

/** A context too large to convert to a model API's request (MAX_MODEL_CONTEXT_BYTES). */
const contextTooLarge = (limit: number) =>
  new SessionError(
    "payload_too_large",
    `the context is larger than ${limit} bytes, more than a model API takes in one request: compact the session, or read the context without format (it streams)`,
    { limit },
  );

const IfNoneMatch = z.object({
  "if-none-match": z.string().optional().meta({ description: 'a version read before, "<version>"' }),
});

/** What a model gets from a leaf, and moving the head. */
export const contextRoutes = routes()
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/context",
      operationId: "getContext",
      summary: "What to send to a model from a leaf",
      description:
        "Every answer has a version (also its ETag). With `since` set to an earlier version, a context that only grew since (the usual agent turn) comes back as `append`: the new messages; otherwise whole, with `reset: true`. If-None-Match with the current version (a weak tag too) is 304, except with `blobs=url`, whose signed URLs expire: that answer is `Cache-Control: no-store`. With `format`, the request fields carrying the context in that model API's shape, for `model` (default: the session's model): signatures and encrypted reasoning go back only to the model that made them.",
      request: { params: SessionIdParam, query: ContextQuery, headers: IfNoneMatch },
      responses: {
        200: json(
          ContextResponse,
          "the context, what was appended to it since `since`, or its request fields in `format`",
        ),
        304: { description: "the context is still the version If-None-Match names" },
        413: failure(
          `payload_too_large: with \`format\`, a context over ${MAX_MODEL_CONTEXT_BYTES / (1024 * 1024)} MiB as JSON (more than a model API takes)`,
        ),
        415: failure("unsupported_format"),
        ...errors,
      },
    }),
    async (c) => {
      const { leafId, asOf, since, format, model, imageInput, blobs } = c.req.valid("query");
      if (blobs === "url" && format !== undefined) {
        const message = "blobs=url applies to a context in our own shape";
        throw new SessionError("invalid_request", message, { format });
      }
      if (blobs === "url" && !c.env.BLOB_URL_SECRET) {
        const message = "this service signs no blob URLs (BLOB_URL_SECRET is not set)";
        throw new SessionError("invalid_request", message, { blobs });
      }
      if (asOf !== undefined && leafId !== undefined) {
        throw new SessionError("invalid_request", "give either leafId or asOf", { leafId, asOf });
      }
      if (format === undefined && (model !== undefined || imageInput !== undefined)) {
        const message = "model and imageInput apply to a context in a format";
        throw new SessionError("invalid_request", message, { format: null });
      }
      if (format !== undefined && since !== undefined) {
        throw new SessionError("invalid_request", "since applies to a context in our own shape", { format });
      }
      const object = sessionObject(c, c.req.valid("param").sid);
      // A version the client holds already is answered before any body is built, its tags compared
      // weakly (RFC 9110). Not with blobs=url: the version does not change when the URLs expire.
      const ifNoneMatch =
        blobs === "url"
          ? undefined
          : c.req
              .valid("header")
              ["if-none-match"]?.split(/\s*,\s*/)
              .map((tag) => tag.replace(/^W\//, "").replace(/^"|"$/g, ""));
      // The leaf as it stood then, from the session's leaf history.
      const leaf = asOf === undefined ? leafId : (await object.leafAt(asOf)).leafId;
      // Built and projected by the session's object, passed through as it streams.
      const answer = await object.getContext(leaf, {
        since,
        ifNoneMatch,
        ...(blobs === "url" ? { blobs: { urls: true, origin: new URL(c.req.url).origin } } : {}),
      });
      const etag = `"${answer.version}"`;
      if (answer.kind === "unchanged") return c.body(null, 304, { ETag: etag });
      if (format === undefined) {
        const headers: Record<string, string> = { ETag: etag };
        if (blobs === "url") headers["Cache-Control"] = "no-store";
        return streamedJson(ContextResponse, answer.body, headers);
      }
      // Converted here, not in the object: the object's time is the session's writers' time.
      // Read whole before anything is answered: a part that cannot be read (a blob gone from its
      // bucket, an object reset mid-stream) is a failure to answer, not a cut answer. A context
      // larger than any model API takes is refused before the Worker holds more of it.
      const body = typeof answer.body === "string" ? new Response(answer.body).body : answer.body;
      const whole = (await readCapped(body, MAX_MODEL_CONTEXT_BYTES, contextTooLarge)
        .then((bytes) => JSON.parse(new TextDecoder().decode(bytes)))
        .catch((error: unknown) => {
          throw error instanceof SessionError
            ? error
            : unavailable("the session's context could not be read whole; try again", "not_applied");
        })) as SessionContext & { version: string };
      const { version: _version, ...context } = whole;
      const request = contextForModel(context, format, {
        ...(model === undefined ? {} : { model: parseModelRef(model) }),
        ...(imageInput === undefined ? {} : { imageInput: imageInput === "true" }),
      });
      return c.json(request, 200, { ETag: etag });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/leaf",
      operationId: "getLeaf",
      summary: "Where the head is, or stood at a time",
      description:
        "With `asOf`, the leaf as it stood then, from the session's leaf history (every write records the leaf it left); `historyStartsAt` says how far back that goes. An `asOf` before it is 404, one in the future 400.",
      request: { params: SessionIdParam, query: LeafAtQuery },
      responses: { 200: json(LeafAt, "the leaf"), ...errors },
    }),
    async (c) => {
      const at = await sessionObject(c, c.req.valid("param").sid).leafAt(c.req.valid("query").asOf);
      return c.json(at, 200, { ETag: leafTag(at.leafId) });
    },
  )
  .openapi(
    createRoute({
      method: "put",
      path: "/v1/sessions/{sid}/leaf",
      operationId: "moveLeaf",
      summary: "Move the head",
      request: { params: SessionIdParam, headers: IfMatch, body: body(MoveLeafBody) },
      responses: {
        200: json(NavigateResult, "moved"),
        412: failure("leaf_conflict"),
        ...writeErrors,
        502: failure("branch_summary_failed: the summarizer failed (with `summarize`); nothing written"),
      },
    }),
    async (c) => {
      const { targetId, asOf, ...options } = c.req.valid("json");
      const sid = c.req.valid("param").sid;
      const storage = sessionStorage(c, sid);
      const session = new Session(storage);
      // Back (or forward) to where the leaf stood then: a new head, nothing deleted.
      const target =
        asOf === undefined ? (targetId as string | null) : (await sessionObject(c, sid).leafAt(asOf)).leafId;
      const result = await session.navigate(target, {
        ...options,
        expectedLeafId: expectedLeaf(c.req.valid("header")["if-match"]),
        summarizer: await summarizerFor(c, sid),
      });
      return c.json(result, 200, { ETag: leafTag(result.leafId) });
    },
  );
