import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Hono } from "hono";
import type { AppEnv } from "../env";
import { mcpServer } from "../mcp/server";

export const MCP_PATH = "/mcp";

/** An MCP message's body at most: no tool takes more than a note of 100,000 characters. */
export const MAX_MCP_BODY_BYTES = 1024 * 1024;

/**
 * Model Context Protocol over Streamable HTTP, stateless: each request gets its own server and
 * transport, so any instance of the Worker answers any request, and nothing outlives it. Every
 * message is a POST answered with JSON; with no session kept, there is no stream to open (GET)
 * and no session to end (DELETE): those are answered 405, with a JSON-RPC error as the protocol has.
 */
export const mcpRoutes = new Hono<AppEnv>()
  .post(MCP_PATH, async (c) => {
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize: MAX_MCP_BODY_BYTES,
    });
    await mcpServer(c).connect(transport);
    return transport.handleRequest(c.req.raw);
  })
  .on(["GET", "DELETE"], MCP_PATH, (c) =>
    c.json(
      {
        jsonrpc: "2.0",
        error: { code: -32000, message: "Method not allowed: MCP messages are POSTs" },
        id: null,
      },
      405,
      { Allow: "POST" },
    ),
  );
