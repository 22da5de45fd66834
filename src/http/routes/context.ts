import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import {
  contextForModel,
  expectedLeaf,
  leafTag,
  NavigateResult,
  parseModelRef,
  Session,
  SessionError,
  summarizerFromConfig,
} from "../../core";
import { ErrorEnvelope } from "../errors";
import { body, errors, json, routes, security, sessionStorage, streamedJson } from "../route-kit";
import { ContextQuery, ContextResponse, MoveLeafBody, SessionIdParam } from "../schemas";

const IfMatch = z.object({
  "if-match": z.string().optional().meta({ description: 'the expected leaf, "<leafId>"' }),
});

/** What a model gets from a leaf, and moving the head. */
export const contextRoutes = routes()
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/context",
      summary: "What to send to a model from a leaf",
      security,
      description:
        "Without `format`, the context in our own shape. With `format`, the request fields carrying it in that model API's shape, for `model` (default: the session's model): signatures and encrypted reasoning go back only to the model that made them.",
      request: { params: SessionIdParam, query: ContextQuery },
      responses: {
        200: json(ContextResponse, "the context"),
        415: json(ErrorEnvelope, "unsupported_format"),
        ...errors,
      },
    }),
    async (c) => {
      const { leafId, format, model, imageInput } = c.req.valid("query");
      const storage = sessionStorage(c, c.req.valid("param").sid);
      if (format === undefined) {
        if (model !== undefined || imageInput !== undefined) {
          throw new SessionError("invalid_request", "model and imageInput apply to a context in a format", {
            format: null,
          });
        }
        // Built and projected by the session's object, passed through as it streams.
        return streamedJson(ContextResponse, await storage.context(leafId));
      }
      // Converted here, not in the object: the object's time is the session's writers' time.
      const request = contextForModel(await storage.getContext(leafId), format, {
        ...(model === undefined ? {} : { model: parseModelRef(model) }),
        ...(imageInput === undefined ? {} : { imageInput: imageInput === "true" }),
      });
      return c.json(request, 200);
    },
  )
  .openapi(
    createRoute({
      method: "put",
      path: "/v1/sessions/{sid}/leaf",
      summary: "Move the head",
      security,
      request: { params: SessionIdParam, headers: IfMatch, body: body(MoveLeafBody) },
      responses: {
        200: json(NavigateResult, "moved"),
        412: json(ErrorEnvelope, "leaf_conflict"),
        ...errors,
      },
    }),
    async (c) => {
      const { targetId, ...options } = c.req.valid("json");
      const session = new Session(sessionStorage(c, c.req.valid("param").sid));
      const result = await session.navigate(targetId, {
        ...options,
        expectedLeafId: expectedLeaf(c.req.valid("header")["if-match"]),
        summarizer: summarizerFromConfig(c.env),
      });
      return c.json(result, 200, { ETag: leafTag(result.leafId) });
    },
  );
