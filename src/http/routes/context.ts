import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { expectedLeaf, leafTag, NavigateResult, Session, SessionContext } from "../../core";
import { ErrorEnvelope } from "../errors";
import { summarizerFor } from "../metrics";
import {
  body,
  errors,
  json,
  routes,
  security,
  sessionStorage,
  streamedJson,
  writeErrors,
} from "../route-kit";
import { LeafQuery, MoveLeafBody, SessionIdParam } from "../schemas";

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
      request: { params: SessionIdParam, query: LeafQuery },
      responses: { 200: json(SessionContext, "the context"), ...errors },
    }),
    async (c) => {
      const storage = sessionStorage(c, c.req.valid("param").sid);
      // Built and projected by the session's object, passed through as it streams.
      return streamedJson(SessionContext, await storage.context(c.req.valid("query").leafId));
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
        ...writeErrors,
      },
    }),
    async (c) => {
      const { targetId, ...options } = c.req.valid("json");
      const sid = c.req.valid("param").sid;
      const session = new Session(sessionStorage(c, sid));
      const result = await session.navigate(targetId, {
        ...options,
        expectedLeafId: expectedLeaf(c.req.valid("header")["if-match"]),
        summarizer: await summarizerFor(c, sid),
      });
      return c.json(result, 200, { ETag: leafTag(result.leafId) });
    },
  );
