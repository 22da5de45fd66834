import { OpenAPIHono } from "@hono/zod-openapi";
import { MAX_TENANT_IMPORT_BYTES } from "../core/limits";
import { FAVICON_PATH, viewerApp } from "../viewer";
import { authenticate } from "./auth";
import { declaredBodyLimit, jsonBody } from "./body";
import { cors } from "./cors";
import { refuseCrossSite } from "./cross-site";
import { docsApp } from "./docs";
import type { AppEnv } from "./env";
import { notFound, onError } from "./errors";
import { wellFormedPath } from "./path-encoding";
import { placement } from "./placement";
import { rateLimit } from "./rate-limit";
import { requestLog } from "./request-log";
import { backupRoutes, TENANT_IMPORT_PATH } from "./routes/backup";
import { blobRoutes } from "./routes/blobs";
import { compactionRoutes } from "./routes/compaction";
import { contextRoutes } from "./routes/context";
import { entryRoutes } from "./routes/entries";
import { eventRoutes } from "./routes/events";
import { exceptGenerationStreams, generationRoutes } from "./routes/generations";
import { IMPORT_PATH, interchangeRoutes } from "./routes/interchange";
import { MAX_MCP_BODY_BYTES, MCP_PATH, mcpRoutes } from "./routes/mcp";
import { retentionRoutes } from "./routes/retention";
import { searchRoutes } from "./routes/search";
import { sessionRoutes } from "./routes/sessions";
import { streamListingRoutes } from "./routes/stream-listing";
import { STREAM_PATHS, streamRoutes, streamSafety } from "./routes/streams";
import { usageRoutes } from "./routes/usage";
import { socketTicket } from "./socket-ticket";

const OPENAPI_PATH = "/v1/openapi.json";

/** Routes about the tenant as a whole, outside /v1/sessions. */
const TENANT_PATHS = [
  "/v1/search",
  "/v1/export",
  TENANT_IMPORT_PATH,
  "/v1/retention",
  "/v1/events",
  "/v1/streams",
];

const DOCUMENT = {
  openapi: "3.1.0",
  info: {
    title: "cf-sessions",
    version: "1",
    description: "Persistent, branchable conversation history for LLM agents.",
    license: { name: "MIT", identifier: "MIT" },
  },
  // The document is served by the service it describes: paths are relative to where it was read.
  servers: [{ url: "/", description: "this service" }],
  // Every operation takes a bearer credential unless it says otherwise (a blob's signed URL).
  security: [{ bearer: [] }],
};

/**
 * The service: health, the viewer and the API's documentation without credentials; every /v1
 * route behind the cross-site and size checks, authentication and the tenant's rate limit, and
 * one error envelope for every failure. Every request, whatever answers it, gets a request id and
 * one log line (request-log.ts).
 */
export function createApp(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.onError(onError);
  app.notFound(notFound);
  app.use("*", requestLog);

  app.get("/healthz", (c) => c.json({ ok: true }));
  app.route("/", viewerApp);
  app.doc31(OPENAPI_PATH, DOCUMENT);
  app.route(
    "/",
    docsApp(() => app.getOpenAPI31Document(DOCUMENT), { icon: FAVICON_PATH, spec: OPENAPI_PATH }),
  );
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });

  // Before anything reads a body or a credential: CORS, paths that do not decode, forged requests,
  // declared sizes.
  app.use(
    "/v1/*",
    cors,
    wellFormedPath,
    refuseCrossSite,
    declaredBodyLimit({ [TENANT_IMPORT_PATH]: MAX_TENANT_IMPORT_BYTES }),
  );
  // A WebSocket ticket authenticates its one connection, ahead of the usual credentials.
  app.use("/v1/sessions/:sid/ws", socketTicket);
  // Matches /v1/sessions itself too. Imports are NDJSON and read their own body; so do appends to a
  // generation's stream (any content type, as the protocol has them), which answer as streams do.
  app.use("/v1/sessions/:sid/generations/:gid/stream", streamSafety);
  app.use(
    "/v1/sessions/*",
    authenticate,
    rateLimit,
    placement,
    exceptGenerationStreams(jsonBody([IMPORT_PATH])),
  );
  for (const path of TENANT_PATHS)
    app.use(path, authenticate, rateLimit, placement, jsonBody([TENANT_IMPORT_PATH]));
  app.use("/v1/usage", authenticate, rateLimit, placement);
  // Model Context Protocol: the same checks and credentials as /v1; the transport reads its body.
  app.use(
    MCP_PATH,
    cors,
    refuseCrossSite,
    declaredBodyLimit({ [MCP_PATH]: MAX_MCP_BODY_BYTES }),
    authenticate,
    rateLimit,
    placement,
  );
  // Streams read and write their own bodies (any content type), as the protocol has them.
  app.use(STREAM_PATHS, streamSafety, authenticate, rateLimit, placement);

  return app
    .route("/", sessionRoutes)
    .route("/", entryRoutes)
    .route("/", contextRoutes)
    .route("/", eventRoutes)
    .route("/", generationRoutes)
    .route("/", compactionRoutes)
    .route("/", interchangeRoutes)
    .route("/", searchRoutes)
    .route("/", backupRoutes)
    .route("/", retentionRoutes)
    .route("/", usageRoutes)
    .route("/", streamRoutes)
    .route("/", streamListingRoutes)
    .route("/", blobRoutes)
    .route("/", mcpRoutes);
}
