import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { textStream } from "../../core/context-answer";
import { MAX_TENANT_IMPORT_BYTES } from "../../core/limits";
import { exportResumption, TenantImportReport } from "../../core/tenant-stream";
import { streamedNdjsonLines } from "../body";
import { creationLocation } from "../placement";
import { errors, failure, json, ndjsonResponse, repo, routes } from "../route-kit";
import { ExportTenantQuery, ImportTenantQuery } from "../schemas";

/** Where a tenant stream is posted: NDJSON, read as it arrives. */
export const TENANT_IMPORT_PATH = "/v1/import";

/** A whole tenant out as one stream, and back in. */
export const backupRoutes = routes()
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/export",
      operationId: "exportTenant",
      summary: "Export every session of the tenant as one NDJSON stream",
      description:
        'A line {"type":"export","format":"cf-tenant","version":1}, then each session as its native export (header line, entries) followed by {"type":"cursor","cursor":…} once complete, then each stream at /v1/stream/* as {"type":"stream",path,contentType,ttlSeconds,expiresAt,closed}, one {"type":"stream_append"} line per append (base64, or a JSON append\'s messages as json) and its cursor line, and {"type":"end","sessions":n,"streams":m} at the end (no `streams` when there are none). Sessions newest first by creation, streams by path. A session or stream that fails while sent is followed by {"type":"error",…} instead of its cursor (a session deleted while sent: error code not_found). To resume a cut stream, pass the last cursor line\'s cursor. Deleted sessions and streams are not exported.',
      request: { query: ExportTenantQuery },
      responses: {
        200: {
          content: { "application/x-ndjson": { schema: z.string() } },
          description: "the tenant's sessions",
        },
        ...errors,
      },
    }),
    async (c) => {
      const { cursor } = c.req.valid("query");
      // A bad cursor is refused before the stream starts.
      if (cursor !== undefined) exportResumption(cursor);
      const lines = repo(c).exportTenant(cursor ?? null);
      return ndjsonResponse(textStream(lines), "sessions.ndjson");
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: TENANT_IMPORT_PATH,
      operationId: "importTenant",
      summary: "Import a tenant stream (from GET /v1/export, or native exports one after another)",
      description:
        "application/x-ndjson, read as it arrives. Each session is written on its own and listed once all its entries are: one that fails is left out and reported, and the import goes on. A session whose id is taken is skipped (existing=skip, default) or reported refused (existing=refuse); one the export says was deleted while sent (an error line with code not_found) is skipped, with that error; an id held by a deleted session is taken over; a session a previous import left incomplete is written again. Streams are made again with their appends (the same offsets), each whole or removed and reported; a taken path is skipped or refused like a session's id. The answer lists every session and every stream with its status.",
      request: {
        query: ImportTenantQuery,
        body: { content: { "application/x-ndjson": { schema: z.string() } }, required: true },
      },
      responses: {
        200: json(TenantImportReport, "what became of each session and stream"),
        413: failure("payload_too_large: a line over 17 MiB, or a stream over 1 GiB"),
        415: failure("unsupported_format: not application/x-ndjson"),
        ...errors,
      },
    }),
    async (c) => {
      const lines = streamedNdjsonLines(c.req.raw.body, MAX_TENANT_IMPORT_BYTES);
      const { existing, location } = c.req.valid("query");
      const near = creationLocation(c, location);
      const report = await repo(c).importTenant(lines, existing ?? "skip", near);
      return c.json(report, 200);
    },
  );
