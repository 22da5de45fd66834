import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Hono } from "hono";
import type { AppEnv } from "../env";
import { mcpServer } from "../mcp/server";

export const MCP_PATH = "/mcp";

/**
 * Model Context Protocol over Streamable HTTP, stateless: each request gets its own server and
 * transport, so any instance of the Worker answers any request, and nothing outlives it.
 */
export const mcpRoutes = new Hono<AppEnv>().all(MCP_PATH, async (c) => {
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await mcpServer(c).connect(transport);
  return transport.handleRequest(c.req.raw);
});
