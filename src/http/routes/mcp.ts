import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Context } from "hono";
import { Hono } from "hono";
import { tryParseJson } from "../../core/json";
import { readBody } from "../../durable/internal";
import type { AppEnv } from "../env";
import { batchAnswer, batchRefusal, INVALID_REQUEST, messageRefusal } from "../mcp/batch";
import { checkIncoming } from "../mcp/incoming";
import { mcpServer } from "../mcp/server";
import { toolsOffered } from "../mcp/tool-kit";
import { countRequests } from "../rate-limit";

export const MCP_PATH = "/mcp";

/** An MCP message's body at most: no tool takes more than a note of 100,000 characters. */
export const MAX_MCP_BODY_BYTES = 1024 * 1024;

/**
 * The request's body, read here (at most MAX_MCP_BODY_BYTES), as bytes and as the JSON it holds
 * (undefined when it is no JSON), which the transport is handed so that it parses it no more.
 */
async function readMessages(c: Context<AppEnv>): Promise<{ body: Uint8Array; parsed: unknown }> {
  const body = await readBody(c.req.raw, MAX_MCP_BODY_BYTES);
  return { body, parsed: tryParseJson(new TextDecoder().decode(body)) };
}

/**
 * Model Context Protocol over Streamable HTTP, stateless: each request gets its own server and
 * transport, so any instance of the Worker answers any request, and nothing outlives it. Every
 * message is a POST answered with JSON; with no session kept, there is no stream to open (GET)
 * and no session to end (DELETE): those are answered 405, with a JSON-RPC error as the protocol has.
 * A batch is checked whole (batch.ts) before its messages are counted against the tenant's rate;
 * JSON that is no JSON-RPC message, alone or in a batch, is an invalid request (-32600).
 */
export const mcpRoutes = new Hono<AppEnv>()
  .post(MCP_PATH, async (c) => {
    const { body, parsed } = await readMessages(c);
    const batch = Array.isArray(parsed) ? parsed : undefined;
    // Text that is no JSON is left to the transport, which answers it as a parse error.
    const version = c.req.header("Mcp-Protocol-Version");
    const refusal = batch
      ? batchRefusal(batch, version)
      : parsed === undefined
        ? null
        : messageRefusal(parsed);
    if (refusal !== null) {
      c.set("errorCode", "invalid_request");
      return c.json({ jsonrpc: "2.0", error: { code: INVALID_REQUEST, message: refusal }, id: null }, 400);
    }
    // Each message after the first counts as a request of its own (the first was counted with this one).
    if (batch && batch.length > 1) await countRequests(c, batch.length - 1);
    const { raw } = c.req;
    const request = new Request(raw.url, { method: raw.method, headers: raw.headers, body });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize: MAX_MCP_BODY_BYTES,
    });
    const server = mcpServer(c);
    await server.connect(transport);
    checkIncoming(c, transport, toolsOffered(server));
    const response = await transport.handleRequest(
      request,
      parsed === undefined ? undefined : { parsedBody: parsed },
    );
    return batch ? batchAnswer(response) : response;
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
