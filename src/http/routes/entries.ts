import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import { jsonArray, textStream } from "../../core/context-answer";
import { Id, StoredEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import { expectedLeaf, leafTag } from "../../core/leaf-tag";
import { MAX_BATCH_ENTRIES } from "../../core/limits";
import { TreeNode } from "../../core/tree";
import {
  afterWrite,
  body,
  conflict,
  errors,
  failure,
  json,
  routes,
  sessionStorage,
  streamedJson,
  writeErrors,
} from "../route-kit";
import {
  AppendBody,
  AppendResponse,
  appendedEntries,
  BranchResponse,
  EntriesPage,
  EntriesQuery,
  EntryIdParams,
  IfMatch,
  ImportEntriesBody,
  LeafQuery,
  SessionIdParam,
} from "../schemas";
import { entriesPageJson, entryJson, treeJson } from "../stream";

const TreeResponse = z.object({ roots: z.array(TreeNode) });

/** A session's entries: appending, reading them, its paths and its tree. */
export const entryRoutes = routes()
  .openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/entries",
      operationId: "appendEntries",
      summary: "Append an entry or an atomic batch",
      description:
        "Each entry's parent defaults to the leaf (in a batch, to the previous entry). Resending an entry with the same id and content is an idempotent replay (200). A message entry with a `format` (`openai-chat`, `openai-responses`, `anthropic`, `gemini`, `ai-sdk`) carries that API's own message: it is stored as the messages it stands for, chained, the first under the entry's id and the others under `<id>:1`, `<id>:2`, …; tool results take their tool's name from the calls they answer, and replies are recorded as the session's model unless `model` names another.",
      request: { params: SessionIdParam, headers: IfMatch, body: body(AppendBody) },
      responses: {
        ...writeErrors,
        201: json(AppendResponse, "appended"),
        200: json(AppendResponse, "every entry was a replay; nothing written"),
        409: conflict("already_exists"),
        412: failure("leaf_conflict"),
        413: failure("entry_too_large / payload_too_large / quota_exceeded"),
        415: failure(
          "unsupported_format: the request is not declared application/json, or a message entry's format is not one of the known ones",
        ),
        422: failure("parent_not_found / invalid_tree"),
      },
    }),
    async (c) => {
      const storage = sessionStorage(c, c.req.valid("param").sid);
      // Provider messages are converted by the session's object, against the conversation it holds.
      const result = await storage.appendEntries(appendedEntries(c.req.valid("json")), {
        expectedLeafId: expectedLeaf(c.req.valid("header")["if-match"]),
        validated: true,
      });
      return c.json({ entries: result.entries, leafId: result.leafId }, result.created ? 201 : 200, {
        ETag: leafTag(result.leafId),
      });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/import",
      operationId: "writeEntries",
      summary: "Write entries verbatim into a session",
      description:
        "For restores and copies: ids, parents, timestamps and leaf records are kept as given (parents must exist); the rules for new appends (default parent, replays, label targets) do not apply. At most 1,000 entries.",
      request: { params: SessionIdParam, body: body(ImportEntriesBody) },
      responses: {
        ...writeErrors,
        200: json(z.object({ leafId: Id.nullable() }), "written"),
        409: conflict("already_exists"),
        422: failure("parent_not_found / invalid_tree"),
      },
    }),
    async (c) => {
      const { entries } = c.req.valid("json");
      if (entries.length > MAX_BATCH_ENTRIES) {
        throw new SessionError("payload_too_large", `a batch holds at most ${MAX_BATCH_ENTRIES} entries`);
      }
      const storage = sessionStorage(c, c.req.valid("param").sid);
      await storage.importEntries(entries);
      const leafId = await afterWrite(() => storage.getLeafId());
      return c.json({ leafId }, 200, { ETag: leafTag(leafId) });
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/entries",
      operationId: "listEntries",
      summary: "Entries in append order, paged by seq",
      request: { params: SessionIdParam, query: EntriesQuery },
      responses: { 200: json(EntriesPage, "a page of entries"), ...errors },
    }),
    async (c) => {
      const { after, limit = 100, type } = c.req.valid("query");
      const pages = await sessionStorage(c, c.req.valid("param").sid).entryPages({ after, limit, type });
      return streamedJson(EntriesPage, textStream(entriesPageJson(pages, limit)));
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/entries/{eid}",
      operationId: "getEntry",
      summary: "One entry",
      request: { params: EntryIdParams },
      responses: { 200: json(StoredEntry, "the entry"), ...errors },
    }),
    async (c) => {
      const { sid, eid } = c.req.valid("param");
      const entry = await sessionStorage(c, sid).getEntry(eid);
      if (!entry) throw new SessionError("not_found", `entry ${eid} does not exist`, { entryId: eid });
      return c.json(entry, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/branch",
      operationId: "getBranch",
      summary: "The path root → leaf",
      request: { params: SessionIdParam, query: LeafQuery },
      responses: { 200: json(BranchResponse, "the path"), ...errors },
    }),
    async (c) => {
      const storage = sessionStorage(c, c.req.valid("param").sid);
      const pages = await storage.branchPages(c.req.valid("query").leafId);
      return streamedJson(BranchResponse, textStream(jsonArray('{"entries":', entryJson(pages), "}")));
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/tree",
      operationId: "getTree",
      summary: "The whole tree, without payloads",
      request: { params: SessionIdParam },
      responses: { 200: json(TreeResponse, "the roots"), ...errors },
    }),
    async (c) => {
      const steps = await sessionStorage(c, c.req.valid("param").sid).treeSteps();
      return streamedJson(TreeResponse, textStream(treeJson(steps)));
    },
  );
