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
import { projectContext } from "../../core/context";
import { SessionError } from "../../core/errors";
import { isValidId } from "../../core/ids";
import type { SessionInfo } from "../../core/session-schemas";
import { errorSummary } from "../../durable/internal";
import type { AppEnv } from "../env";
import { repo, sessionStorage } from "../route-kit";
import { contextLines, sessionLine } from "./render";
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

/** The most recent lines that fit in `max` characters, after a line saying how many came before. */
function recentLines(lines: readonly string[], max: number): string[] {
  let size = 0;
  let from = lines.length;
  while (from > 0 && size + (lines[from - 1] as string).length + 1 <= max)
    size += (lines[--from] as string).length + 1;
  if (from === 0) return [...lines];
  return [`(${from} earlier lines left out: read_session pages through them all)`, ...lines.slice(from)];
}

/** A failure as JSON-RPC answers it: a refusal of the store by its code, anything else as internal. */
function rpcError(c: Context<AppEnv>, error: unknown, uri?: string): McpError {
  if (error instanceof McpError) return error;
  if (error instanceof SessionError) {
    c.set("errorCode", error.code);
    const code = error.code === "not_found" ? RESOURCE_NOT_FOUND : ErrorCode.InvalidParams;
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
      const storage = sessionStorage(c, sessionIdOf(uri));
      const info = await storage.getInfo();
      const lines = contextLines(projectContext(await storage.getContextPath(info.leafId)));
      const text = [sessionLine(info), ...recentLines(lines, MAX_RESOURCE_CHARS)].join("\n");
      return { contents: [{ uri, mimeType: "text/plain", text }] };
    } catch (error) {
      throw rpcError(c, error, uri);
    }
  });
}
