import { createRoute } from "@hono/zod-openapi";
import { errors, json, repo, routes } from "../route-kit";
import { UsageResponse } from "../schemas";

/** What the caller's tenant stores, and the quotas it is held to. */
export const usageRoutes = routes().openapi(
  createRoute({
    method: "get",
    path: "/v1/usage",
    operationId: "getUsage",
    summary: "Usage of the tenant: sessions, entries and bytes, its streams, and its quotas",
    description:
      "Summed from what each session last reported to the tenant's directory: a write shows here within the report interval (about a second). `blobs` are the values stored apart in R2, each once however many sessions hold it.",
    responses: { 200: json(UsageResponse, "the tenant's usage"), ...errors },
  }),
  async (c) => {
    const tenant = repo(c);
    const quotas = tenant.quotas();
    const [usage, streams, blobs] = await Promise.all([
      tenant.usage(),
      tenant.streamUsage(),
      tenant.blobUsage(),
    ]);
    return c.json({ ...usage, streams, blobs, quotas }, 200);
  },
);
