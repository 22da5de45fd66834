import { createRoute } from "@hono/zod-openapi";
import { SessionSearchPage, TenantSearchOptions, TenantSearchPage } from "../../core/search";
import { errors, json, repo, routes, sessionObject } from "../route-kit";
import { SessionIdParam, SessionSearchQuery } from "../schemas";

const QUERY_SYNTAX =
  'Words are all required and matched after stemming ("deploying" finds "deployed"); "a phrase" in quotes, prefix* for words starting so, a OR b for either, -word to leave out. Any text is a valid query: characters that are not letters or digits separate words. Text written without spaces between words (Chinese, Japanese, Thai) is one word up to a space or punctuation: search its start with prefix*. A query with no word to find is 400.';

/** Full-text search: the entries of one session, and the sessions of the tenant. */
export const searchRoutes = routes()
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/search",
      operationId: "searchSession",
      summary: "Search the entries of a session",
      description: `Over message text (user, assistant, tool results, system messages), summaries, custom messages, the text a context edit puts in place of a message (the edited message keeps its own, and a hit on it names the edit in editedBy when the current branch edits it), labels and the names session_info entries give; the model's thinking with thinking=true. The session's own name (while no session_info entry has named it) and system prompt, when they match, come apart in header, on the first page. Indexed as entries are written. ${QUERY_SYNTAX}`,
      request: { params: SessionIdParam, query: SessionSearchQuery },
      responses: { 200: json(SessionSearchPage, "hits, newest first or by rank"), ...errors },
    }),
    async (c) => {
      const page = await sessionObject(c, c.req.valid("param").sid).search(c.req.valid("query"));
      return c.json(page, 200);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/search",
      operationId: "searchSessions",
      summary: "Search the sessions of the tenant",
      description: `Sessions ranked by their name, labels, preview and text (each session's beginning and its most recent text), with the best snippet of each field that matched. Served from the tenant's directory: what a session wrote is found within DIRECTORY_SYNC_MS. ${QUERY_SYNTAX}`,
      request: { query: TenantSearchOptions },
      responses: { 200: json(TenantSearchPage, "sessions, best first"), ...errors },
    }),
    async (c) => c.json(await repo(c).search(c.req.valid("query")), 200),
  );
