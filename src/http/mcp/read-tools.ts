import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Context } from "hono";
import * as z from "zod";
import { Id } from "../../core/entries";
import { SessionError } from "../../core/errors";
import { listCursor, sortKey } from "../../core/info";
import { DEFAULT_SESSIONS_PAGE } from "../../core/limits";
import type { SearchHit } from "../../core/search";
import {
  DEFAULT_SEARCH_HITS,
  MAX_SEARCH_HITS,
  SearchQueryText,
  SessionSearchOptions,
  TenantSearchOptions,
} from "../../core/search";
import { IdPrefix, ListOptions } from "../../core/session-schemas";
import type { AppEnv } from "../env";
import { repo, sessionObject } from "../route-kit";
import { type AnswerBudget, type AroundPart, aroundPart } from "./around-part";
import { MAX_ENTRIES_CHARS, MAX_ENTRY_CHARS } from "./entry-places";
import { headerMatchLine, hitLine, MAX_MESSAGE_CHARS, searchResultLine, sessionLine } from "./render";
import { contextPage, ReadCursor, refuseEarlierCursor, treePage } from "./session-pages";
import { sessionSummary } from "./session-summary";
import { answer, fittingCount, MAX_PAGE_CHARS, registerTool } from "./tool-kit";

/* The tools that read: the tenant's sessions searched and listed, a session read, entries around a match. */

/** Lines one read_session call gives at most. */
export const MAX_READ_LINES = 200;
const DEFAULT_READ_LINES = 50;
/** Entries read_entries shows on each side of an entry at most. */
const MAX_AROUND = 20;
const DEFAULT_AROUND = 3;
/** Matches read_entries shows at most, each with the entries around it. */
const MAX_MATCHES = 20;
const DEFAULT_MATCHES = 5;
/** Sessions one list_sessions call gives at most. */
const MAX_LISTED_SESSIONS = 100;
export function readTools(server: McpServer, c: Context<AppEnv>): void {
  registerTool(
    server,
    c,
    "search_sessions",
    {
      title: "Search past sessions",
      description:
        'Use first when the user refers to earlier work ("didn\'t we fix this before?", "what did we decide about X?"): finds the sessions whose name, labels or text match, best first, with a snippet of each field that matched. Words are all required and stemmed; "a phrase", prefix*, a OR b, -excluded. Then read_entries with a session id and the same query to see each match in its place, or read_session to read it all.',
      input: {
        query: SearchQueryText,
        prefix: IdPrefix.optional().describe(
          "only sessions whose id starts with this (e.g. claude-code- for imported Claude Code sessions)",
        ),
        limit: TenantSearchOptions.shape.limit,
      },
      readOnly: true,
    },
    async ({ query, prefix, limit = DEFAULT_SEARCH_HITS }) => {
      const page = await repo(c).search({ q: query, prefix, limit });
      const found = page.results.map((result) => ({
        ...result,
        session: sessionSummary(result.session),
      }));
      const results = found.slice(
        0,
        fittingCount(found, (result) => searchResultLine(result).length + JSON.stringify(result).length),
      );
      const lines = results.map(searchResultLine);
      // The best matches only: a full page says so, never cut silently.
      if (results.length < found.length || page.nextCursor)
        lines.push(
          `the best ${results.length} shown, as many as one answer holds; more may match: a prefix or more words`,
        );
      else if (results.length >= limit)
        lines.push(
          `the best ${results.length} shown; more may match: a higher limit (up to ${MAX_SEARCH_HITS}), a prefix or more words`,
        );
      return answer(lines.length ? lines.join("\n") : "no session matches", { results });
    },
  );

  registerTool(
    server,
    c,
    "list_sessions",
    {
      title: "List recent sessions",
      description:
        "Use to see what was worked on lately, without a word to search for: sessions newest first, each with its id, name, last update and first message. Long lists come in pages: pass nextCursor for the next one.",
      input: {
        prefix: ListOptions.shape.prefix,
        order: ListOptions.shape.order,
        limit: z
          .number()
          .int()
          .min(1)
          .max(MAX_LISTED_SESSIONS)
          .optional()
          .describe(`sessions at most (default ${DEFAULT_SESSIONS_PAGE})`),
        cursor: z.string().max(1000).optional().describe("nextCursor of the previous page"),
      },
      readOnly: true,
    },
    async (options) => {
      const page = await repo(c).list(options);
      const listed = page.sessions.map(sessionSummary);
      // A page cut short to fit one answer goes on after the last session it shows.
      const sessions = listed.slice(
        0,
        fittingCount(listed, (session) => sessionLine(session).length + JSON.stringify(session).length),
      );
      const last = sessions.at(-1);
      const nextCursor =
        sessions.length < listed.length && last
          ? listCursor(options, sortKey(last, options.order ?? "updated"), last.id)
          : page.nextCursor;
      const lines = sessions.map(sessionLine);
      if (nextCursor) lines.push(`more: list_sessions with cursor "${nextCursor}"`);
      return answer(lines.length ? lines.join("\n") : "no sessions", { sessions, nextCursor });
    },
  );

  registerTool(
    server,
    c,
    "read_session",
    {
      title: "Read a session",
      description:
        "Use after search_sessions or list_sessions to read what was said: the conversation a model would see from the session's head (or from entryId, to read a branch or up to a point), oldest first, one line per message led by its entry id. view \"tree\" shows the session's branches instead, one line per entry. Long sessions come in pages: pass nextCursor (with the same view) for the next one, which goes on reading what the first page read (the path to the head it read, or the tree as it was), even after the session has moved on.",
      input: {
        sessionId: Id.describe("the session's id"),
        entryId: Id.optional().describe(
          'read the path ending at this entry instead of the head (not with view "tree", which shows every entry)',
        ),
        view: z
          .enum(["context", "tree"])
          .optional()
          .describe("context (default): the conversation; tree: every entry and branch, without text"),
        limit: z
          .number()
          .int()
          .min(1)
          .max(MAX_READ_LINES)
          .optional()
          .describe(`lines at most (default ${DEFAULT_READ_LINES})`),
        cursor: ReadCursor,
      },
      readOnly: true,
    },
    async ({ sessionId, entryId, view, limit = DEFAULT_READ_LINES, cursor }) => {
      refuseEarlierCursor(cursor);
      // The tree shows every entry: an entry to read the path to means nothing there.
      if (view === "tree" && entryId !== undefined)
        throw new SessionError(
          "invalid_request",
          'entryId reads the path ending at an entry, and view "tree" shows every entry: pass one or the other',
          { entryId },
        );
      const object = sessionObject(c, sessionId);
      const info = await object.getInfo();
      const read =
        view === "tree"
          ? await treePage(object, cursor, limit)
          : await contextPage(object, entryId ?? info.leafId, entryId !== undefined, cursor, limit);
      const text = [`${sessionLine(info)}\nhead: ${info.leafId ?? "none"}; ${read.shown}`, ...read.page];
      if (read.nextCursor) text.push(`more: read_session with cursor "${read.nextCursor}"`);
      return answer(text.join("\n"), {
        session: sessionSummary(info),
        lines: read.page,
        nextCursor: read.nextCursor,
      });
    },
  );

  registerTool(
    server,
    c,
    "read_entries",
    {
      title: "Read entries around a match",
      description:
        "Use to see a match in its place: with query, the session's entries that match it (best first), each with the entries written just before and after it, led on the first page by the session's name or system prompt when they match; with entryId, the entries around that entry. Each line is led by its entry id, to fork or label at. Entries come whole in structuredContent, but for a large one (its id, seq, type and size only). An answer holds what fits: the entries it leaves out are named by a line giving the read_entries call that shows them. More matches: pass nextCursor.",
      input: {
        sessionId: Id.describe("the session's id"),
        query: SearchQueryText.optional().describe(
          'words to find in the session (all required, stemmed; "a phrase", prefix*, a OR b, -excluded)',
        ),
        entryId: Id.optional().describe("the entry to read around, instead of a query"),
        around: z
          .number()
          .int()
          .min(0)
          .max(MAX_AROUND)
          .optional()
          .describe(`entries on each side (default ${DEFAULT_AROUND})`),
        limit: z
          .number()
          .int()
          .min(1)
          .max(MAX_MATCHES)
          .optional()
          .describe(`matches at most (default ${DEFAULT_MATCHES})`),
        cursor: SessionSearchOptions.shape.cursor.describe("nextCursor of the previous page of matches"),
      },
      readOnly: true,
    },
    async ({ sessionId, query, entryId, around = DEFAULT_AROUND, limit = DEFAULT_MATCHES, cursor }) => {
      if ((query === undefined) === (entryId === undefined)) {
        throw new SessionError("invalid_request", "give either query or entryId", {
          arguments: ["query", "entryId"],
        });
      }
      const object = sessionObject(c, sessionId);
      // The entries around `centre`, their text cut; whole only within what is left for them.
      const entriesAround = async (centre: string | number, budget: AnswerBudget) =>
        (
          await object.getEntriesAround(centre, around, {
            maxChars: MAX_MESSAGE_CHARS,
            wholeChars: MAX_ENTRY_CHARS,
            left: budget.structured,
          })
        ).entries;
      if (entryId !== undefined) {
        const budget = { text: MAX_PAGE_CHARS, structured: MAX_ENTRIES_CHARS - EMPTY_AROUND_CHARS };
        const part = aroundPart(await entriesAround(entryId, budget), entryId, budget, true);
        // The object answers not_found for an entry it has not; one it read is always in its window.
        if (part === null) throw new SessionError("not_found", "no such entry", { entryId });
        return answer(part.lines.join("\n"), { entries: part.entries, nextCursor: null });
      }
      const page = await object.search({ q: query as string, order: "rank", limit, cursor });
      // Each match's line is shown, and its entries while they fit: what the lines of all take, and
      // the structured content of all without entries, is set aside first.
      const lineOnly = (hit: SearchHit) =>
        `${hitLine(hit)}\n  (more than a page holds: read_entries with entryId "${hit.entryId}")`;
      const closing = [
        ...(page.hits.length === 0 ? ["no entry matches"] : []),
        ...(page.nextCursor ? [`more: read_entries with cursor "${page.nextCursor}"`] : []),
      ];
      const budget: AnswerBudget = {
        text:
          MAX_PAGE_CHARS -
          [...(page.header ?? []).map(headerMatchLine), ...page.hits.map(lineOnly), ...closing].reduce(
            (sum, block) => sum + block.length + 2,
            0,
          ),
        structured:
          MAX_ENTRIES_CHARS -
          JSON.stringify({
            matches: page.hits.map((hit) => ({ hit, entries: [] })),
            header: page.header,
            nextCursor: page.nextCursor,
          }).length,
      };
      const matches: { hit: SearchHit; entries: AroundPart["entries"] }[] = [];
      // The session's name and system prompt, when they match (the first page only), lead.
      const text = (page.header ?? []).map(headerMatchLine);
      let full = false;
      for (const hit of page.hits) {
        // A match shown with its entries takes no line saying it is not.
        budget.text += lineOnly(hit).length - hitLine(hit).length;
        const part = full
          ? null
          : aroundPart(await entriesAround(hit.seq, budget), hit.entryId, budget, matches.length === 0);
        if (part === null) {
          full = true;
          budget.text -= lineOnly(hit).length - hitLine(hit).length;
          matches.push({ hit, entries: [] });
          text.push(lineOnly(hit));
          continue;
        }
        budget.text -= part.used.text + 1;
        budget.structured -= part.used.structured;
        matches.push({ hit, entries: part.entries });
        text.push([hitLine(hit), ...part.lines].join("\n"));
      }
      return answer([...text, ...closing].join("\n\n"), {
        matches,
        ...(page.header ? { header: page.header } : {}),
        nextCursor: page.nextCursor,
      });
    },
  );
}

/** Characters of read_entries' structured content around an entry without its entries. */
const EMPTY_AROUND_CHARS = JSON.stringify({ entries: [], nextCursor: null }).length;
