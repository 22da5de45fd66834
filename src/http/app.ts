import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import * as z from "zod";
import type { EntryInput } from "../core";
import {
  checkExportFormat,
  checkFormat,
  EntryInput as EntryInputSchema,
  exportNative,
  exportPi,
  Id,
  MAX_BATCH_ENTRIES,
  parseImport,
  Session,
  SessionError,
  summarizerFromConfig,
  treeToJson,
  zodDetails,
} from "../core";
import { DurableRepo } from "../durable";
import { viewerApp } from "../viewer";
import { authenticate } from "./auth";
import { jsonBody, readText } from "./body";
import { docsPage } from "./docs";
import type { AppEnv } from "./env";
import { ErrorEnvelope, notFound, onError } from "./errors";
import { rateLimit } from "./rate-limit";
import {
  AppendBody,
  AppendResponse,
  BranchResponse,
  CompactBody,
  CompactResponse,
  ContextResponse,
  CreateSessionBody,
  EntriesPage,
  EntriesQuery,
  EntryIdParams,
  ExportQuery,
  ForkBody,
  ImportEntriesBody,
  ImportQuery,
  ImportResult,
  LeafQuery,
  ListSessionsQuery,
  MoveLeafBody,
  MoveLeafResponse,
  PatchSessionBody,
  SessionIdParam,
  SessionInfo,
  SessionPage,
  StoredEntry,
  TreeResponse,
} from "./schemas";
import { entriesPageJson, jsonArray, streamJson } from "./stream";

/** `ETag` of a session: its leaf (`""` when it has none). */
export function etag(leafId: string | null): string {
  return `"${leafId ?? ""}"`;
}

/** The leaf an `If-Match` expects: undefined when absent or `*`, null for `""`. */
export function expectedLeaf(header: string | undefined): string | null | undefined {
  if (header === undefined || header.trim() === "*") return undefined;
  const match = /^(?:W\/)?"([^"]*)"$/.exec(header.trim());
  if (!match) throw new SessionError("invalid_request", 'If-Match must be one quoted leaf id, e.g. "0193…"');
  return match[1] || null;
}

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});

const errors = {
  400: json(ErrorEnvelope, "invalid_request"),
  401: json(ErrorEnvelope, "unauthorized"),
  404: json(ErrorEnvelope, "not_found"),
};

const body = <T extends z.ZodType>(schema: T) => ({
  content: { "application/json": { schema } },
  required: true,
});

function repo(c: Context<AppEnv>): DurableRepo {
  return new DurableRepo(c.env, c.get("caller").tenant);
}

function session(c: Context<AppEnv>, sid: string) {
  return repo(c).storage(sid);
}

/** A batch is `{entries: [...]}`; anything with a `type` is one entry. */
function isBatch(raw: unknown): raw is { entries: unknown[] } {
  return typeof raw === "object" && raw !== null && !("type" in raw) && "entries" in raw;
}

/** A batch or a single entry, reported with the issues of the form that was sent. */
function appendIssues(raw: unknown) {
  if (isBatch(raw)) {
    const batch = z.object({ entries: z.array(EntryInputSchema) }).safeParse(raw);
    return batch.success ? [] : zodDetails(batch.error);
  }
  const single = EntryInputSchema.safeParse(raw);
  return single.success ? [] : zodDetails(single.error);
}

export function createApp() {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        throw new SessionError("invalid_request", `invalid ${result.target}`, zodDetails(result.error));
      }
    },
  });
  app.onError(onError);
  app.notFound(notFound);

  app.get("/healthz", (c) => c.json({ ok: true }));
  app.get("/docs", (c) => c.html(docsPage("/v1/openapi.json")));
  app.route("/", viewerApp);
  app.doc31("/v1/openapi.json", {
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

  const security = [{ bearer: [] }];

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions",
      summary: "Create a session",
      security,
      request: { body: { content: { "application/json": { schema: CreateSessionBody } }, required: false } },
      responses: {
        201: json(SessionInfo, "the new session"),
        409: json(ErrorEnvelope, "already_exists"),
        ...errors,
      },
    }),
    async (c) => {
      const info = await repo(c).createSession(c.req.valid("json") ?? {});
      return c.json(info, 201, { ETag: etag(info.leafId) });
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions",
      summary: "List sessions, newest first",
      security,
      request: { query: ListSessionsQuery },
      responses: { 200: json(SessionPage, "a page of sessions"), ...errors },
    }),
    async (c) => c.json(await repo(c).list(c.req.valid("query")), 200),
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}",
      summary: "Describe a session",
      security,
      request: { params: SessionIdParam },
      responses: { 200: json(SessionInfo, "the session; ETag is its leaf"), ...errors },
    }),
    async (c) => {
      const info = await session(c, c.req.valid("param").sid).getInfo();
      return c.json(info, 200, { ETag: etag(info.leafId) });
    },
  );

  app.openapi(
    createRoute({
      method: "patch",
      path: "/v1/sessions/{sid}",
      summary: "Rename, or change the system prompt or metadata",
      security,
      request: { params: SessionIdParam, body: body(PatchSessionBody) },
      responses: { 200: json(SessionInfo, "the session"), ...errors },
    }),
    async (c) => {
      const storage = session(c, c.req.valid("param").sid);
      const { name, ...header } = c.req.valid("json");
      if (name !== undefined) await storage.appendEntries([{ type: "session_info", name }]);
      if (Object.values(header).some((v) => v !== undefined)) await storage.updateHeader(header);
      const info = await storage.getInfo();
      return c.json(info, 200, { ETag: etag(info.leafId) });
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/v1/sessions/{sid}",
      summary: "Delete a session",
      security,
      request: { params: SessionIdParam },
      responses: { 204: { description: "deleted" }, ...errors },
    }),
    async (c) => {
      await session(c, c.req.valid("param").sid).delete();
      return c.body(null, 204);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/entries",
      summary: "Append an entry or an atomic batch",
      description:
        "Each entry's parent defaults to the leaf (in a batch, to the previous entry). Resending an entry with the same id and content is an idempotent replay (200).",
      security,
      request: {
        params: SessionIdParam,
        headers: z.object({
          "if-match": z.string().optional().meta({ description: 'the expected leaf, "<leafId>"' }),
        }),
        body: body(AppendBody),
      },
      responses: {
        201: json(AppendResponse, "appended"),
        200: json(AppendResponse, "every entry was a replay; nothing written"),
        409: json(ErrorEnvelope, "already_exists"),
        412: json(ErrorEnvelope, "leaf_conflict"),
        413: json(ErrorEnvelope, "entry_too_large / payload_too_large"),
        422: json(ErrorEnvelope, "parent_not_found / invalid_tree"),
        ...errors,
      },
    }),
    async (c) => {
      const input: unknown = c.req.valid("json");
      const entries = (isBatch(input) ? input.entries : [input]) as EntryInput[];
      const result = await session(c, c.req.valid("param").sid).appendEntries(entries, {
        expectedLeafId: expectedLeaf(c.req.header("If-Match")),
        validated: true,
      });
      return c.json({ entries: result.entries, leafId: result.leafId }, result.created ? 201 : 200, {
        ETag: etag(result.leafId),
      });
    },
    (result, c) => {
      if (!result.success) {
        if (result.target !== "json")
          throw new SessionError("invalid_request", `invalid ${result.target}`, zodDetails(result.error));
        return c.req.json().then((raw) => {
          const details = appendIssues(raw);
          throw new SessionError(
            "invalid_request",
            "invalid entry",
            details.length > 0 ? details : zodDetails(result.error),
          );
        });
      }
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/import",
      summary: "Write entries verbatim into a session",
      description:
        "For restores and copies: ids, parents, timestamps and leaf records are kept as given (parents must exist); the rules for new appends (default parent, replays, label targets) do not apply. At most 1,000 entries.",
      security,
      request: { params: SessionIdParam, body: body(ImportEntriesBody) },
      responses: {
        200: json(z.object({ leafId: Id.nullable() }), "written"),
        409: json(ErrorEnvelope, "already_exists"),
        422: json(ErrorEnvelope, "parent_not_found / invalid_tree"),
        ...errors,
      },
    }),
    async (c) => {
      const { entries } = c.req.valid("json");
      if (entries.length > MAX_BATCH_ENTRIES) {
        throw new SessionError("payload_too_large", `a batch holds at most ${MAX_BATCH_ENTRIES} entries`);
      }
      const storage = session(c, c.req.valid("param").sid);
      await storage.importEntries(entries);
      const leafId = await storage.getLeafId();
      return c.json({ leafId }, 200, { ETag: etag(leafId) });
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/entries",
      summary: "Entries in append order, paged by seq",
      security,
      request: { params: SessionIdParam, query: EntriesQuery },
      responses: { 200: json(EntriesPage, "a page of entries"), ...errors },
    }),
    async (c) => {
      const { after, limit = 100, type } = c.req.valid("query");
      const pages = await session(c, c.req.valid("param").sid).entryPages({ after, limit, type });
      return streamJson(entriesPageJson(pages, limit)) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/entries/{eid}",
      summary: "One entry",
      security,
      request: { params: EntryIdParams },
      responses: { 200: json(StoredEntry, "the entry"), ...errors },
    }),
    async (c) => {
      const { sid, eid } = c.req.valid("param");
      const entry = await session(c, sid).getEntry(eid);
      if (!entry) throw new SessionError("not_found", `entry ${eid} does not exist`, { entryId: eid });
      return c.json(entry, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/branch",
      summary: "The path root → leaf",
      security,
      request: { params: SessionIdParam, query: LeafQuery },
      responses: { 200: json(BranchResponse, "the path"), ...errors },
    }),
    async (c) => {
      const pages = await session(c, c.req.valid("param").sid).branchPages(c.req.valid("query").leafId);
      return streamJson(jsonArray('{"entries":', pages, "}")) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/tree",
      summary: "The whole tree, without payloads",
      security,
      request: { params: SessionIdParam },
      responses: { 200: json(TreeResponse, "the roots"), ...errors },
    }),
    async (c) => {
      const roots = await session(c, c.req.valid("param").sid).getTree();
      // Written without recursion: a tree may be a chain far deeper than JSON.stringify can go.
      return c.body(`{"roots":${treeToJson(roots)}}`, 200, { "Content-Type": "application/json" }) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/context",
      summary: "What to send to a model from a leaf",
      security,
      request: { params: SessionIdParam, query: LeafQuery },
      responses: { 200: json(ContextResponse, "the context"), ...errors },
    }),
    async (c) => {
      const body = await session(c, c.req.valid("param").sid).context(c.req.valid("query").leafId);
      return new Response(body, { headers: { "Content-Type": "application/json; charset=utf-8" } }) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "put",
      path: "/v1/sessions/{sid}/leaf",
      summary: "Move the head",
      security,
      request: {
        params: SessionIdParam,
        headers: z.object({ "if-match": z.string().optional() }),
        body: body(MoveLeafBody),
      },
      responses: {
        200: json(MoveLeafResponse, "moved"),
        412: json(ErrorEnvelope, "leaf_conflict"),
        ...errors,
      },
    }),
    async (c) => {
      const { targetId, ...options } = c.req.valid("json");
      const result = await new Session(session(c, c.req.valid("param").sid)).navigate(targetId, {
        ...options,
        expectedLeafId: expectedLeaf(c.req.header("If-Match")),
        summarizer: summarizerFromConfig(c.env),
      });
      return c.json(result, 200, { ETag: etag(result.leafId) });
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/compact",
      summary: "Compact the current branch",
      description:
        "Summarizes what the kept part (at least keepRecentTokens of the newest messages) drops and appends the compaction at the leaf.",
      security,
      request: {
        params: SessionIdParam,
        body: { content: { "application/json": { schema: CompactBody } }, required: false },
      },
      responses: {
        201: json(CompactResponse, "the compaction entry"),
        409: json(ErrorEnvelope, "nothing_to_compact"),
        412: json(ErrorEnvelope, "leaf_conflict: the branch moved off the kept part meanwhile"),
        502: json(ErrorEnvelope, "summarizer_failed: nothing written"),
        ...errors,
      },
    }),
    async (c) => {
      const storage = session(c, c.req.valid("param").sid);
      const entry = await new Session(storage).compact({
        ...c.req.valid("json"),
        summarizer: summarizerFromConfig(c.env),
      });
      return c.json({ entry }, 201, { ETag: etag(entry.id) });
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/fork",
      summary: "A new session holding the path to an entry",
      security,
      request: { params: SessionIdParam, body: body(ForkBody) },
      responses: {
        201: json(SessionInfo, "the new session"),
        409: json(ErrorEnvelope, "already_exists"),
        ...errors,
      },
    }),
    async (c) => {
      const { entryId, ...options } = c.req.valid("json");
      const fork = await session(c, c.req.valid("param").sid).fork(entryId, options);
      const info = await fork.getInfo();
      return c.json(info, 201, { ETag: etag(info.leafId) });
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/export",
      summary: "Export a session as NDJSON (native or pi)",
      security,
      request: { params: SessionIdParam, query: ExportQuery },
      responses: {
        200: {
          content: { "application/x-ndjson": { schema: z.string() } },
          description: "a header line, then entries",
        },
        415: json(ErrorEnvelope, "unsupported_format"),
        ...errors,
      },
    }),
    async (c) => {
      const format = checkExportFormat(c.req.valid("query").format);
      const sid = c.req.valid("param").sid;
      const session = new Session(repo(c).storage(sid));
      const lines = format === "pi" ? exportPi(session) : exportNative(session);
      // The header is read before answering, so a missing session is a 404, not a broken stream.
      const first = await lines.next();
      return new Response(ndjsonStream(first, lines), {
        headers: {
          "Content-Type": "application/x-ndjson; charset=utf-8",
          "Content-Disposition": `attachment; filename="${sid}.jsonl"`,
        },
      }) as never;
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: IMPORT_PATH,
      summary: "Import a session from NDJSON (native, pi, Claude Code or Codex CLI)",
      description:
        "Keeps the file's session id unless it is taken (then a new one is chosen); an `id` given in the query that is taken is 409. A refused file names its line and imports nothing. What an accepted file needed repaired (a torn last line, a missing parent, a repeated line) is listed in `warnings`.",
      security,
      request: {
        query: ImportQuery,
        body: { content: { "application/x-ndjson": { schema: z.string() } }, required: true },
      },
      responses: {
        200: json(ImportResult, "mode=sync: the session, which had all or part of the file"),
        201: json(ImportResult, "the imported session, with the repairs made"),
        409: json(ErrorEnvelope, "already_exists"),
        413: json(ErrorEnvelope, "payload_too_large"),
        415: json(ErrorEnvelope, "unsupported_format"),
        ...errors,
      },
    }),
    async (c) => {
      const { format: formatName, id, mode } = c.req.valid("query");
      const format = checkFormat(formatName);
      const text = await readText(c.req.raw);
      const file = parseImport(format, text);
      if (mode === "sync") {
        const { session, ...sync } = await repo(c).syncSession(file, id === undefined ? {} : { id });
        const info = await session.getInfo();
        const status = sync.status === "created" ? 201 : 200;
        return c.json({ ...info, warnings: file.warnings, sync }, status, { ETag: etag(info.leafId) });
      }
      const session = await repo(c).importSession(file, id === undefined ? {} : { id });
      const info = await session.getInfo();
      return c.json({ ...info, warnings: file.warnings }, 201, { ETag: etag(info.leafId) });
    },
  );

  return app;
}

const IMPORT_PATH = "/v1/sessions/import";

/** Streams NDJSON lines from an export, pulling the next page only when the client reads. */
function ndjsonStream(
  first: IteratorResult<string>,
  rest: AsyncGenerator<string>,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let pending: IteratorResult<string> | undefined = first;
  return new ReadableStream({
    async pull(controller) {
      const next = pending ?? (await rest.next());
      pending = undefined;
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await rest.return(undefined);
    },
  });
}
