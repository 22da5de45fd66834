import { OpenAPIHono } from "@hono/zod-openapi";
import { viewerApp } from "../viewer";
import { authenticate } from "./auth";
import { jsonBody } from "./body";
import { docsPage } from "./docs";
import type { AppEnv } from "./env";
import { notFound, onError } from "./errors";
import { rateLimit } from "./rate-limit";
import { compactionRoutes } from "./routes/compaction";
import { contextRoutes } from "./routes/context";
import { entryRoutes } from "./routes/entries";
import { IMPORT_PATH, interchangeRoutes } from "./routes/interchange";
import { sessionRoutes } from "./routes/sessions";

const OPENAPI_PATH = "/v1/openapi.json";

/**
 * The service: health, the viewer and the API's documentation without credentials; every /v1
 * route behind authentication and the tenant's rate limit, one error envelope for every failure.
 */
export function createApp() {
  const app = new OpenAPIHono<AppEnv>();
  app.onError(onError);
  app.notFound(notFound);

  app.get("/healthz", (c) => c.json({ ok: true }));
  app.get("/docs", (c) => c.html(docsPage(OPENAPI_PATH)));
  app.route("/", viewerApp);
  app.doc31(OPENAPI_PATH, {
    openapi: "3.1.0",
    info: {
      title: "cf-sessions",
      version: "1",
      description: "Persistent, branchable conversation history for LLM agents.",
    },
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });

  // Matches /v1/sessions itself too. Imports are NDJSON and read their own body.
  app.use("/v1/sessions/*", authenticate, rateLimit, jsonBody([IMPORT_PATH]));

  return app
    .route("/", sessionRoutes)
    .route("/", entryRoutes)
    .route("/", contextRoutes)
    .route("/", compactionRoutes)
    .route("/", interchangeRoutes);
}
