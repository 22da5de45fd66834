import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { textStream } from "../../core/context-answer";
import { exportLines } from "../../core/export-formats";
import { parseImport } from "../../core/import-formats";
import { checkExportFormat, checkFormat } from "../../core/interchange";
import { leafTag } from "../../core/leaf-tag";
import { Session } from "../../core/session";
import { readNdjson } from "../body";
import { recordEvent } from "../metrics";
import { creationLocation } from "../placement";
import {
  conflict,
  errors,
  failure,
  json,
  ndjsonResponse,
  repo,
  routes,
  sessionStorage,
  writtenInfo,
} from "../route-kit";
import { ExportQuery, ImportQuery, ImportResult, SessionIdParam } from "../schemas";

/** Where imports are posted: NDJSON, which the JSON body parser leaves alone. */
export const IMPORT_PATH = "/v1/sessions/import";

/** The first value of `lines`, already read, then the rest. */
async function* resume(first: IteratorResult<string>, rest: AsyncGenerator<string>): AsyncGenerator<string> {
  if (first.done) return;
  yield first.value;
  yield* rest;
}

/** Sessions out as NDJSON files and in from them (native, pi, and other agents' logs). */
export const interchangeRoutes = routes()
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/export",
      operationId: "exportSession",
      summary: "Export a session as NDJSON (native, pi, Claude Code or Codex CLI)",
      request: { params: SessionIdParam, query: ExportQuery },
      responses: {
        200: {
          content: { "application/x-ndjson": { schema: z.string() } },
          description: "a header line, then entries",
        },
        415: failure("unsupported_format"),
        ...errors,
      },
    }),
    async (c) => {
      const format = checkExportFormat(c.req.valid("query").format);
      const sid = c.req.valid("param").sid;
      const session = new Session(sessionStorage(c, sid));
      const lines = exportLines(format, session);
      // The header is read before answering, so a missing session is a 404, not a broken stream.
      const first = await lines.next();
      return ndjsonResponse(textStream(resume(first, lines)), `${sid}.jsonl`);
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: IMPORT_PATH,
      operationId: "importSession",
      summary: "Import a session from NDJSON (native, pi, Claude Code or Codex CLI)",
      description:
        "The body is application/x-ndjson (application/jsonl is taken too). Keeps the file's session id unless it is taken (then a new one is chosen); an `id` given in the query that is taken is 409. A refused file names its line and imports nothing. What an accepted file needed repaired (a torn last line, a missing parent, a repeated line) is listed in `warnings`.",
      request: {
        query: ImportQuery,
        body: { content: { "application/x-ndjson": { schema: z.string() } }, required: true },
      },
      responses: {
        ...errors,
        200: json(ImportResult, "mode=sync: the session, which had all or part of the file"),
        201: json(ImportResult, "the imported session, with the repairs made"),
        409: conflict("already_exists"),
        413: failure("payload_too_large / quota_exceeded"),
        415: failure("unsupported_format"),
      },
    }),
    async (c) => {
      const started = Date.now();
      const { format, id, mode, location: asked } = c.req.valid("query");
      const checked = checkFormat(format);
      const location = creationLocation(c, asked);
      const file = parseImport(checked, await readNdjson(c));
      const options = { ...(id === undefined ? {} : { id }), location };
      if (mode === "sync") {
        const { session, ...sync } = await repo(c).syncSession(file, options);
        const info = await writtenInfo(session);
        c.set("sessionId", info.id);
        const status = sync.status === "created" ? 201 : 200;
        return c.json({ ...info, warnings: file.warnings, sync }, status, { ETag: leafTag(info.leafId) });
      }
      const session = await repo(c).importSession(file, options);
      const info = await writtenInfo(session);
      c.set("sessionId", info.id);
      await recordEvent(c, {
        kind: "import",
        sessionId: info.id,
        format: checked,
        entries: info.entryCount,
        bytes: info.bytes,
        warnings: file.warnings.length,
        durationMs: Date.now() - started,
      });
      return c.json({ ...info, warnings: file.warnings }, 201, { ETag: leafTag(info.leafId) });
    },
  );
