import { createRoute } from "@hono/zod-openapi";
import { checkExpiresAt } from "../../core/header";
import { leafTag } from "../../core/leaf-tag";
import { SessionInfo, SessionPage } from "../../core/session-schemas";
import { forkSession } from "../fork";
import { creationLocation } from "../placement";
import {
  afterWrite,
  body,
  bodyErrors,
  conflict,
  errors,
  failure,
  json,
  repo,
  routes,
  sessionObject,
  sessionStorage,
  TOO_LARGE_BODY,
  writeErrors,
  writtenInfo,
} from "../route-kit";
import {
  CreateSessionBody,
  DeleteQuery,
  EmptyBody,
  ForkBody,
  ListSessionsQuery,
  PatchSessionBody,
  SessionIdParam,
} from "../schemas";

/** What making a new session answers (created, or forked). */
const createdResponses = {
  ...writeErrors,
  201: json(SessionInfo, "the new session"),
  409: conflict("already_exists"),
};

/** Sessions as a whole: create, list, describe, change, delete and restore, fork. */
export const sessionRoutes = routes()
  .openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions",
      operationId: "createSession",
      summary: "Create a session",
      description:
        "An id held by a deleted session (still restorable) is taken over: that session is purged first.",
      request: { body: body(CreateSessionBody, false) },
      responses: createdResponses,
    }),
    async (c) => {
      const { location, ...options } = c.req.valid("json") ?? {};
      checkExpiresAt(options.expiresAt);
      const near = creationLocation(c, location);
      const info = await repo(c).createSession(options, near);
      return c.json(info, 201, { ETag: leafTag(info.leafId) });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions",
      operationId: "listSessions",
      summary: "List sessions, newest first",
      request: { query: ListSessionsQuery },
      responses: { 200: json(SessionPage, "a page of sessions"), ...errors },
    }),
    async (c) => c.json(await repo(c).list(c.req.valid("query")), 200),
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}",
      operationId: "getSession",
      summary: "Describe a session",
      request: { params: SessionIdParam },
      responses: { 200: json(SessionInfo, "the session; ETag is its leaf"), ...errors },
    }),
    async (c) => {
      const info = await sessionStorage(c, c.req.valid("param").sid).getInfo();
      return c.json(info, 200, { ETag: leafTag(info.leafId) });
    },
  )
  .openapi(
    createRoute({
      method: "patch",
      path: "/v1/sessions/{sid}",
      operationId: "updateSession",
      summary: "Rename, or change the system prompt or metadata",
      request: { params: SessionIdParam, body: body(PatchSessionBody) },
      responses: { 200: json(SessionInfo, "the session"), ...writeErrors },
    }),
    async (c) => {
      const storage = sessionStorage(c, c.req.valid("param").sid);
      const { name, ...header } = c.req.valid("json");
      checkExpiresAt(header.expiresAt);
      // Two writes: once the name is written, a failure leaves the change applied in part.
      let written = false;
      if (name !== undefined) {
        await storage.appendEntries([{ type: "session_info", name }]);
        written = true;
      }
      if (Object.values(header).some((v) => v !== undefined)) {
        await (written ? afterWrite(() => storage.updateHeader(header)) : storage.updateHeader(header));
        written = true;
      }
      const info = await (written ? writtenInfo(storage) : storage.getInfo());
      return c.json(info, 200, { ETag: leafTag(info.leafId) });
    },
  )
  .openapi(
    createRoute({
      method: "delete",
      path: "/v1/sessions/{sid}",
      operationId: "deleteSession",
      summary: "Delete a session",
      description:
        "The session leaves the listing and every route answers 404, but POST …/restore brings it back whole within the recovery window (RECOVERY_WINDOW_SECONDS, seven days by default); then it is purged. purge=true deletes it for good at once, a deleted one too.",
      request: { params: SessionIdParam, query: DeleteQuery },
      responses: { 204: { description: "deleted" }, ...errors },
    }),
    async (c) => {
      const sid = c.req.valid("param").sid;
      if (c.req.valid("query").purge) await sessionObject(c, sid).purge();
      else await sessionStorage(c, sid).delete();
      return c.body(null, 204);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/restore",
      operationId: "restoreSession",
      summary: "Restore a deleted session",
      description:
        "Within the recovery window: the session as it was when deleted, listed again, its updatedAt the time of the restore (the tenant's retention counts its idleness from then). An expiresAt that has passed is cleared. 404 when it was never created or has been purged; 409 when it is not deleted.",
      request: { params: SessionIdParam, body: body(EmptyBody, false) },
      responses: {
        ...errors,
        ...bodyErrors,
        413: failure(
          `${TOO_LARGE_BODY}, or quota_exceeded: the session back would pass one of the tenant's quotas; nothing restored`,
        ),
        200: json(SessionInfo, "the restored session"),
        409: conflict("already_exists: the session is not deleted"),
      },
    }),
    async (c) => {
      const info = await repo(c).restore(c.req.valid("param").sid);
      return c.json(info, 200, { ETag: leafTag(info.leafId) });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/fork",
      operationId: "forkSession",
      summary: "A new session holding the path to an entry",
      request: { params: SessionIdParam, body: body(ForkBody) },
      responses: createdResponses,
    }),
    async (c) => {
      const { entryId, asOf, ...options } = c.req.valid("json");
      const info = await forkSession(c, c.req.valid("param").sid, { entryId, asOf }, options);
      return c.json(info, 201, { ETag: leafTag(info.leafId) });
    },
  );
