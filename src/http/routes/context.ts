import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { expectedLeaf, leafTag, NavigateResult, Session, summarizerFromConfig } from "../../core";
import { ErrorEnvelope } from "../errors";
import { body, errors, json, routes, security, sessionStorage, streamedJson } from "../route-kit";
import { ContextAnswer, ContextQuery, MoveLeafBody, SessionIdParam } from "../schemas";

const IfNoneMatch = z.object({
  "if-none-match": z.string().optional().meta({ description: 'a version read before, "<version>"' }),
});

const IfMatch = z.object({
  "if-match": z.string().optional().meta({ description: 'the expected leaf, "<leafId>"' }),
});

/** What a model gets from a leaf, and moving the head. */
export const contextRoutes = routes()
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/context",
      operationId: "getContext",
      summary: "What to send to a model from a leaf",
      security,
      description:
        "Every answer has a version (also its ETag). With `since` set to an earlier version, a context that only grew since (the usual agent turn) comes back as `append`: the new messages; otherwise whole, with `reset: true`. If-None-Match with the current version is 304.",
      request: { params: SessionIdParam, query: ContextQuery, headers: IfNoneMatch },
      responses: {
        200: json(ContextAnswer, "the context, or what was appended to it since `since`"),
        304: { description: "the context is still the version If-None-Match names" },
        ...errors,
      },
    }),
    async (c) => {
      const { leafId, since } = c.req.valid("query");
      const storage = sessionStorage(c, c.req.valid("param").sid);
      // Built and projected by the session's object, passed through as it streams.
      const { version, body } = await storage.context(leafId, since);
      const etag = `"${version}"`;
      if (
        c.req
          .valid("header")
          ["if-none-match"]?.split(/\s*,\s*/)
          .includes(etag)
      ) {
        await body.cancel();
        return c.body(null, 304, { ETag: etag });
      }
      return streamedJson(ContextAnswer, body, { ETag: etag });
    },
  )
  .openapi(
    createRoute({
      method: "put",
      path: "/v1/sessions/{sid}/leaf",
      operationId: "moveLeaf",
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
