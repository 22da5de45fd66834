import { createRoute } from "@hono/zod-openapi";
import { errors, json, repo, routes } from "../route-kit";
import { ListStreamsQuery, StreamPage } from "../schemas";

/** The caller's tenant's streams (`/v1/stream/*`), by path. */
export const streamListingRoutes = routes().openapi(
  createRoute({
    method: "get",
    path: "/v1/streams",
    operationId: "listStreams",
    summary: "List the streams of the tenant by path",
    description:
      "The streams at /v1/stream/* that clients can read (not deleted ones), in path order, a page at a time; `prefix` keeps those whose path starts with it. As their objects last reported them: a stream made or deleted shows at once, its new size within about a second of a write.",
    request: { query: ListStreamsQuery },
    responses: { 200: json(StreamPage, "a page of streams"), ...errors },
  }),
  async (c) => {
    const { prefix, limit, cursor } = c.req.valid("query");
    const page = await repo(c).listStreams({ prefix, limit: limit ?? 50, cursor });
    return c.json(page, 200);
  },
);
