import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type Resource,
} from "@modelcontextprotocol/sdk/types.js";
import type { Context } from "hono";
import type { TextLine } from "../../core/entry-text";
import { SessionError } from "../../core/errors";
import { isValidId } from "../../core/ids";
import type { SessionInfo } from "../../core/session-schemas";
import type { ContextLines, ObjectCalls, SessionObject } from "../../durable/internal";
import { errorSummary, transientError } from "../../durable/internal";
import type { AppEnv } from "../env";
import { repo, sessionObject } from "../route-kit";
import { MAX_MESSAGE_CHARS, sessionLine, shownLine } from "./render";
import { shortName } from "./session-summary";

/*
 * Each of the caller's sessions as a resource, `session://<id>`, whose text is its context from
 * the head: listed a page at a time (newest first, as list_sessions), and named by a template.
 * They are handled on the SDK's underlying server, whose listing takes the client's cursor
 * (McpServer's would list every session at once).
 */

const SCHEME = "session://";
/** Sessions one resources/list answer gives. */
const RESOURCES_PAGE = 50;
/**
 * A resource's text at most: a longer context keeps its most recent lines and says how many
 * came before (read_session pages through them all).
 */
export const MAX_RESOURCE_CHARS = 256 * 1024;
/** The JSON-RPC error code MCP gives a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;

function resource(info: SessionInfo): Resource {
  return {
    uri: sessionUri(info.id),
    name: info.id,
    ...(info.name ? { title: shortName(info.name) } : {}),
    description: sessionLine(info),
    mimeType: "text/plain",
  };
}

/**
 * A session's URI: its id percent-encoded, as the template's `{id}` expands it, so that an id
 * holding colons is not read as a host and a port.
 */
function sessionUri(id: string): string {
  return `${SCHEME}${encodeURIComponent(id)}`;
}

/** The session a resource URI names, or a refusal naming the URI (a malformed escape too). */
function sessionIdOf(uri: string): string {
  const id = uri.startsWith(SCHEME) ? decodedOrNull(uri.slice(SCHEME.length)) : null;
  if (id === null || !isValidId(id))
    throw new McpError(RESOURCE_NOT_FOUND, `no resource ${uri}: use session://<id>`, { uri });
  return id;
}

function decodedOrNull(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/**
 * The most recent lines of a session's context that fit in MAX_RESOURCE_CHARS, after a line
 * saying how many entries came before: its entries read by the session's object backwards from
 * the end, a window at a time, until the lines fill what a resource holds.
 */
async function recentLines(object: ObjectCalls<SessionObject>, leafId: string | null): Promise<string[]> {
  const lines: string[] = [];
  let size = 0;
  let before: number | null = null;
  const leftOut = (entries: number) => [
    `(earlier lines left out, of the context's first ${entries} entries: read_session pages through them all)`,
    ...lines,
  ];
  for (;;) {
    const read = await object.getContextLines(
      leafId,
      { before, chars: MAX_RESOURCE_CHARS - size },
      MAX_MESSAGE_CHARS,
    );
    for (let i = read.entries.length - 1; i >= 0; i--) {
      const entry = read.entries[i] as ContextLines["entries"][number];
      for (let n = entry.lines.length - 1; n >= 0; n--) {
        const line = shownLine(entry.id, entry.lines[n] as TextLine);
        if (size + line.length + 1 > MAX_RESOURCE_CHARS) return leftOut(read.from + i + 1);
        size += line.length + 1;
        lines.unshift(line);
      }
      if (entry.lines.length < entry.count) return leftOut(read.from + i + 1);
    }
    if (read.from === 0) return lines;
    before = read.from;
  }
}

/**
 * A failure as JSON-RPC answers it: a refusal of the store by its code (a transient failure of an
 * object `unavailable`, as over HTTP, an error of the server's with its details), anything else as
 * internal.
 */
function rpcError(c: Context<AppEnv>, thrown: unknown, uri?: string): McpError {
  if (thrown instanceof McpError) return thrown;
  const transient = transientError(thrown);
  if (transient) c.set("failure", errorSummary(thrown));
  const error = transient ?? thrown;
  if (error instanceof SessionError) {
    c.set("errorCode", error.code);
    const code =
      error.code === "not_found"
        ? RESOURCE_NOT_FOUND
        : error.code === "unavailable"
          ? ErrorCode.InternalError
          : ErrorCode.InvalidParams;
    return new McpError(code, `${error.code}: ${error.message}`, { uri, ...(error.details as object) });
  }
  c.set("errorCode", "internal");
  c.set("failure", errorSummary(error));
  return new McpError(ErrorCode.InternalError, "internal: the read failed; try again");
}

export function sessionResources(server: McpServer, c: Context<AppEnv>): void {
  const rpc = server.server;
  rpc.registerCapabilities({ resources: {} });

  rpc.setRequestHandler(ListResourcesRequestSchema, async (request) => {
    try {
      const page = await repo(c).list({ limit: RESOURCES_PAGE, cursor: request.params?.cursor });
      return {
        resources: page.sessions.map(resource),
        ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
      };
    } catch (error) {
      throw rpcError(c, error);
    }
  });

  rpc.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: `${SCHEME}{id}`,
        name: "session",
        title: "A session",
        description:
          "A session's context from its head, oldest first, one line per message led by its entry id",
        mimeType: "text/plain",
      },
    ],
  }));

  rpc.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params;
    try {
      const object = sessionObject(c, sessionIdOf(uri));
      const info = await object.getInfo();
      const text = [sessionLine(info), ...(await recentLines(object, info.leafId))].join("\n");
      return { contents: [{ uri, mimeType: "text/plain", text }] };
    } catch (error) {
      throw rpcError(c, error, uri);
    }
  });
}
