import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { readTools } from "./read-tools";
import { sessionResources } from "./resources";
import { writeTools } from "./write-tools";

/*
 * The tenant's history as Model Context Protocol tools and resources: search, list and read
 * sessions, and with a credential that may write, fork them, label entries and append notes. One
 * server per request, for the caller of that request: tools see only the caller's tenant, and a
 * read-only caller is offered no tool that writes.
 */

const SERVER_INFO = { name: "cf-sessions", version: "1" };

/** Array elements and object members a tool call's arguments hold at most: no tool takes more. */
const MAX_ARGUMENT_ELEMENTS = 100;

/** The server for one request's caller: the read tools always, the write tools when it may write. */
export function mcpServer(c: Context<AppEnv>): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions:
      "The history of this tenant's agent sessions. search_sessions finds past work; read_entries shows a match in its place; read_session reads a session; fork_session branches from it.",
    maxToolInputElements: MAX_ARGUMENT_ELEMENTS,
  });
  readTools(server, c);
  if (c.get("caller").access === "write") writeTools(server, c);
  sessionResources(server, c);
  return server;
}
