import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Context } from "hono";
import * as z from "zod";
import { Id, IdPrefix, MAX_SEARCH_HITS, SearchQueryText, SessionError } from "../../core/internal";
import type { AppEnv } from "../env";
import { recordEvent } from "../metrics";
import { creationLocation } from "../placement";
import { repo, sessionStorage } from "../route-kit";
import { entryLine, searchResultLine, sessionLine } from "./render";

/*
 * The tenant's history as Model Context Protocol tools: search, list and read sessions, and with a
 * credential that may write, fork them, label entries and append notes. One server per request,
 * for the caller of that request: tools see only the caller's tenant, and a read-only caller is
 * offered no tool that writes.
 */

const SERVER_INFO = { name: "cf-sessions", version: "1" };

/** Entries of a path one read_session call gives at most. */
export const MAX_READ_ENTRIES = 200;
const DEFAULT_READ_ENTRIES = 50;
const MAX_NOTE_CHARS = 100_000;
const MAX_LABEL_CHARS = 1000;

const Cursor = z.string().max(64).optional().describe("nextCursor of the previous page");

/** A cursor of read_session: how many lines of the path came before. */
function readOffset(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  if (!/^\d{1,9}$/.test(cursor)) throw new SessionError("invalid_request", "invalid cursor", { cursor });
  return Number(cursor);
}

function text(lines: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: lines }], structuredContent: structured };
}

/**
 * Runs a tool: a refusal of the store becomes a tool error naming its code and the argument it is
 * about; anything else is an internal error whose detail stays in the request's log line.
 */
function tool<A>(c: Context<AppEnv>, run: (args: A) => Promise<CallToolResult>) {
  return async (args: A): Promise<CallToolResult> => {
    try {
      return await run(args);
    } catch (error) {
      if (error instanceof SessionError) {
        c.set("errorCode", error.code);
        const details = error.details === undefined ? "" : ` ${JSON.stringify(error.details)}`;
        return {
          isError: true,
          content: [{ type: "text", text: `${error.code}: ${error.message}${details}` }],
        };
      }
      c.set("errorCode", "internal");
      c.set("failure", error instanceof Error ? error.message : String(error));
      return { isError: true, content: [{ type: "text", text: "internal: the tool failed; try again" }] };
    }
  };
}

function readTools(server: McpServer, c: Context<AppEnv>): void {
  server.registerTool(
    "search_sessions",
    {
      title: "Search past sessions",
      description:
        'Use first when the user refers to earlier work ("didn\'t we fix this before?", "what did we decide about X?"): finds the sessions whose name, labels or text match, best first, with a snippet of each match. Words are all required and stemmed; "a phrase", prefix*, a OR b, -excluded. Then read_session with a session id to see what was said.',
      inputSchema: {
        query: SearchQueryText,
        prefix: IdPrefix.optional().describe(
          "only sessions whose id starts with this (e.g. claude-code- for imported Claude Code sessions)",
        ),
        limit: z
          .number()
          .int()
          .min(1)
          .max(MAX_SEARCH_HITS)
          .optional()
          .describe("sessions at most (default 20)"),
      },
      annotations: { readOnlyHint: true },
    },
    tool(c, async ({ query, prefix, limit }) => {
      const { results } = await repo(c).search({ q: query, prefix, limit });
      const lines = results.length ? results.map(searchResultLine).join("\n") : "no session matches";
      return text(lines, { results });
    }),
  );

  server.registerTool(
    "list_sessions",
    {
      title: "List recent sessions",
      description:
        "Use to see what the tenant worked on lately, without a word to search for: sessions newest first, each with its id, name, last update and first message. Page with cursor.",
      inputSchema: {
        prefix: IdPrefix.optional().describe("only sessions whose id starts with this"),
        limit: z.number().int().min(1).max(100).optional().describe("sessions at most (default 20)"),
        cursor: Cursor,
      },
      annotations: { readOnlyHint: true },
    },
    tool(c, async ({ prefix, limit, cursor }) => {
      const page = await repo(c).list({ limit: limit ?? 20, prefix, cursor });
      const lines = page.sessions.map(sessionLine);
      if (page.nextCursor) lines.push(`more: list_sessions with cursor "${page.nextCursor}"`);
      return text(lines.length ? lines.join("\n") : "no sessions", page);
    }),
  );

  server.registerTool(
    "read_session",
    {
      title: "Read a session",
      description:
        "Use after search_sessions or list_sessions to read what was said: the conversation a model would see from the session's head (or from entryId, to read a branch or up to a point), oldest first, one line per message led by its entry id. Long sessions come in pages: pass nextCursor for the next one.",
      inputSchema: {
        sessionId: Id.describe("the session's id"),
        entryId: Id.optional().describe("read the path ending at this entry instead of the head"),
        limit: z
          .number()
          .int()
          .min(1)
          .max(MAX_READ_ENTRIES)
          .optional()
          .describe(`lines at most (default ${DEFAULT_READ_ENTRIES})`),
        cursor: Cursor,
      },
      annotations: { readOnlyHint: true },
    },
    tool(c, async ({ sessionId, entryId, limit, cursor }) => {
      const offset = readOffset(cursor);
      const storage = sessionStorage(c, sessionId);
      const info = await storage.getInfo();
      const path = await storage.getContextPath(entryId ?? info.leafId);
      const shown = path.flatMap((entry) => {
        const line = entryLine(entry);
        return line === undefined ? [] : [{ entry, line }];
      });
      const page = shown.slice(offset, offset + (limit ?? DEFAULT_READ_ENTRIES));
      const next = offset + page.length < shown.length ? String(offset + page.length) : null;
      const header = `${sessionLine(info)}\nhead: ${info.leafId ?? "none"}; lines ${offset + 1}-${offset + page.length} of ${shown.length}`;
      const lines = [header, ...page.map((item) => item.line)];
      if (next) lines.push(`more: read_session with cursor "${next}"`);
      return text(lines.join("\n"), {
        session: info,
        entries: page.map((item) => item.entry),
        nextCursor: next,
      });
    }),
  );
}

function writeTools(server: McpServer, c: Context<AppEnv>): void {
  server.registerTool(
    "fork_session",
    {
      title: "Branch from a session",
      description:
        "Use to continue from a past session without changing it: a new session holding its conversation up to entryId (default: its head). Answers the new session's id.",
      inputSchema: {
        sessionId: Id.describe("the session to fork"),
        entryId: Id.optional().describe("the last entry the fork keeps (default: the head)"),
        newId: Id.optional().describe("the new session's id (default: a fresh one)"),
        name: z.string().max(MAX_LABEL_CHARS).optional().describe("the new session's name"),
      },
    },
    tool(c, async ({ sessionId, entryId, newId, name }) => {
      const started = Date.now();
      const source = sessionStorage(c, sessionId);
      const target = entryId ?? (await source.getInfo()).leafId;
      if (target === null) {
        throw new SessionError("invalid_request", "the session has no entries: nothing to fork", {
          argument: "sessionId",
        });
      }
      const info = await source.forkSession(target, {
        id: newId,
        name,
        location: creationLocation(c, undefined),
      });
      await recordEvent(c, {
        kind: "fork",
        sessionId: info.id,
        sourceId: sessionId,
        entries: info.entryCount,
        bytes: info.bytes,
        durationMs: Date.now() - started,
      });
      return text(`forked ${sessionId} at ${target} into ${sessionLine(info)}`, { session: info });
    }),
  );

  server.registerTool(
    "label_entry",
    {
      title: "Label an entry",
      description:
        'Use to mark a moment worth finding again ("decision: use SQLite", "fix for the login bug"): labels are searched by search_sessions and shown in the tree. A blank label clears it.',
      inputSchema: {
        sessionId: Id.describe("the session holding the entry"),
        entryId: Id.describe("the entry to label"),
        label: z.string().max(MAX_LABEL_CHARS).describe("the label; blank clears it"),
      },
    },
    tool(c, async ({ sessionId, entryId, label }) => {
      const result = await sessionStorage(c, sessionId).appendEntries([
        { type: "label", targetId: entryId, label },
      ]);
      const written = result.entries[0];
      return text(`labelled ${entryId} in ${sessionId}: ${label} (entry ${written?.id})`, {
        entries: result.entries,
        leafId: result.leafId,
      });
    }),
  );

  server.registerTool(
    "append_note",
    {
      title: "Append a note to a session",
      description:
        "Use to leave a note in a session for whoever reads it later (a conclusion, a follow-up): appended at its head as a note the session's model sees as context.",
      inputSchema: {
        sessionId: Id.describe("the session to write to"),
        text: z.string().min(1).max(MAX_NOTE_CHARS).describe("the note"),
      },
    },
    tool(c, async ({ sessionId, text: note }) => {
      const result = await sessionStorage(c, sessionId).appendEntries([
        { type: "custom_message", customType: "note", content: note, display: true },
      ]);
      const written = result.entries[0];
      return text(`appended note ${written?.id} to ${sessionId}`, {
        entries: result.entries,
        leafId: result.leafId,
      });
    }),
  );
}

/** The server for one request's caller: the read tools always, the write tools when it may write. */
export function mcpServer(c: Context<AppEnv>): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions:
      "The history of this tenant's agent sessions. search_sessions finds past work; read_session reads it; fork_session branches from it.",
  });
  readTools(server, c);
  if (c.get("caller").access === "write") writeTools(server, c);
  return server;
}
