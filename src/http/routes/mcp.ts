import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Context } from "hono";
import { Hono } from "hono";
import { tryParseJson } from "../../core/json";
import { readBody } from "../../durable/internal";
import type { AppEnv } from "../env";
import { mcpServer } from "../mcp/server";
import { countRequests } from "../rate-limit";

export const MCP_PATH = "/mcp";

/** An MCP message's body at most: no tool takes more than a note of 100,000 characters. */
export const MAX_MCP_BODY_BYTES = 1024 * 1024;

/**
 * Model Context Protocol over Streamable HTTP, stateless: each request gets its own server and
 * transport, so any instance of the Worker answers any request, and nothing outlives it. Every
 * message is a POST answered with JSON; with no session kept, there is no stream to open (GET)
 * and no session to end (DELETE): those are answered 405, with a JSON-RPC error as the protocol has.
 */
/**
 * The request as the transport reads it, its body read here (at most MAX_MCP_BODY_BYTES): a batch
 * (several messages in one JSON array, as protocol versions before 2025-06-18 allow) counts each
 * message after the first against the tenant's rate, as that many requests would (the first was
 * counted with the request).
 */
async function countedRequest(c: Context<AppEnv>): Promise<Request> {
  const request = c.req.raw;
  const body = await readBody(request, MAX_MCP_BODY_BYTES);
  const text = new TextDecoder().decode(body);
  if (text.trimStart().startsWith("[")) {
    const messages = tryParseJson(text);
    if (Array.isArray(messages) && messages.length > 1) await countRequests(c, messages.length - 1);
  }
  return new Request(request.url, { method: request.method, headers: request.headers, body });
}

export const mcpRoutes = new Hono<AppEnv>()
  .post(MCP_PATH, async (c) => {
    const request = await countedRequest(c);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize: MAX_MCP_BODY_BYTES,
    });
    await mcpServer(c).connect(transport);
    return transport.handleRequest(request);
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
