import { createRoute } from "@hono/zod-openapi";
import { body, bodyErrors, errors, json, repo, routes } from "../route-kit";
import { RetentionBody } from "../schemas";

/** The tenant's retention: how long a session may stay idle before it is deleted. */
export const retentionRoutes = routes()
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/retention",
      operationId: "getRetention",
      summary: "Retention of the tenant",
      responses: {
        200: json(RetentionBody, "days without a write after which a session is deleted"),
        ...errors,
      },
    }),
    async (c) => c.json(await repo(c).retention(), 200),
  )
  .openapi(
    createRoute({
      method: "put",
      path: "/v1/retention",
      operationId: "setRetention",
      summary: "Set the retention of the tenant",
      description:
        "Sessions with no write (a restore counts as one) for idleDays are deleted, as by DELETE: restorable for the recovery window. Checked about hourly by each directory shard; null turns it off. A session's own expiresAt applies as well.",
      request: { body: body(RetentionBody) },
      responses: { 200: json(RetentionBody, "the retention set"), ...errors, ...bodyErrors },
    }),
    async (c) => c.json(await repo(c).setRetention(c.req.valid("json")), 200),
  );
