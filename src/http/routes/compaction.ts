import { createRoute } from "@hono/zod-openapi";
import { CompactRequest } from "../../core/compact-session";
import { leafTag } from "../../core/leaf-tag";
import { Session } from "../../core/session";
import { recordEvent, summarizerFor, timed } from "../metrics";
import { body, conflict, failure, json, routes, sessionStorage, writeErrors } from "../route-kit";
import { CompactResponse, SessionIdParam } from "../schemas";

/** Compacting a session's current branch. */
export const compactionRoutes = routes().openapi(
  createRoute({
    method: "post",
    path: "/v1/sessions/{sid}/compact",
    operationId: "compactSession",
    summary: "Compact the current branch",
    description:
      "Summarizes what the kept part (at least keepRecentTokens of the newest messages) drops and appends the compaction at the leaf.",
    request: { params: SessionIdParam, body: body(CompactRequest, false) },
    responses: {
      ...writeErrors,
      201: json(CompactResponse, "the compaction entry"),
      409: conflict("nothing_to_compact"),
      412: failure("leaf_conflict: the branch moved off the kept part meanwhile"),
      502: failure("summarizer_failed: nothing written"),
    },
  }),
  async (c) => {
    const sessionId = c.req.valid("param").sid;
    const session = new Session(sessionStorage(c, sessionId));
    const summarizer = await summarizerFor(c, sessionId);
    const entry = await timed(
      () => session.compact({ ...c.req.valid("json"), summarizer }),
      (outcome, durationMs) =>
        recordEvent(c, { kind: "compaction", sessionId, trigger: "manual", outcome, durationMs }),
    );
    return c.json({ entry }, 201, { ETag: leafTag(entry.id) });
  },
);
