import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { ClientRequestSchema, ErrorCode, isJSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Context } from "hono";
import type * as z from "zod";
import { Id } from "../../core/entries";
import { SessionError } from "../../core/errors";
import { assertProtoKeysKept } from "../../core/json";
import type { AppEnv } from "../env";
import { recordCall } from "./tool-kit";

/*
 * Every message the transport delivers, seen before the SDK handles it. A request whose params
 * the schema of its method refuses is answered here, Invalid params (-32602) with a sentence naming
 * what is wrong, and never reaches the SDK (which would answer an internal error with the
 * validator's dump); so is a call of a tool the caller is not offered, a protocol error as MCP
 * makes it (the SDK would answer it as an error of the tool), and one whose arguments hold a key
 * named `__proto__`, which the method's schema would drop without a word (refused as over HTTP).
 * Each tool call is recorded in the request's log line as it comes in: a call refused before it
 * reaches its tool (here, or by the SDK for its arguments) is logged `invalid_request`, by the tool
 * and the session it names when each is plain; a call whose arguments pass is the tool's from then
 * on. Nothing here may throw: a message that cannot be recorded is still answered, and the others
 * of its batch with it.
 */

/** The schema the SDK parses each request with, by its method. */
const REQUEST_SCHEMAS: ReadonlyMap<string, z.ZodType> = new Map(
  ClientRequestSchema.options.map((schema) => [schema.shape.method.value, schema]),
);

/**
 * What is wrong with a request's params, as one sentence, or null when its method's schema takes
 * them and, for a tool call, the tool is one of `tools` and its arguments hold no key named
 * `__proto__` that the schema drops.
 */
function paramsRefusal(request: JSONRPCRequest, tools: ReadonlySet<string>): string | null {
  const schema = REQUEST_SCHEMAS.get(request.method);
  if (schema === undefined) return null;
  const parsed = schema.safeParse(request);
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "the request"}: ${issue.message}`,
    );
    return `Invalid params: ${issues.join("; ")}`;
  }
  const tool = request.method === "tools/call" ? member(request.params, "name") : undefined;
  if (typeof tool !== "string") return null;
  if (!tools.has(tool)) return `Unknown tool: ${plainId(tool) ?? "(not a tool name)"}`;
  // The method's schema rebuilds the arguments, dropping such a key without a word: it is refused,
  // as over HTTP, rather than the tool run as if it had not been sent.
  try {
    const sent = member(request.params, "arguments");
    const kept = member(member(parsed.data, "params"), "arguments");
    if (sent !== undefined) assertProtoKeysKept(JSON.stringify(sent), kept, "params.arguments");
    return null;
  } catch (error) {
    return `Invalid params: ${error instanceof SessionError ? error.message : "its arguments cannot be read"}`;
  }
}

/** `value` when it is a plain id (as tool names and session ids are), else null: what a log line may name. */
function plainId(value: unknown): string | null {
  return Id.safeParse(value).success ? (value as string) : null;
}

/** A member of `value` when it is an object, else undefined. */
function member(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/**
 * Checks each request the transport delivers, answering one it refuses, and records each tool
 * call; `tools` are the names of the tools the caller is offered.
 */
export function checkIncoming(c: Context<AppEnv>, transport: Transport, tools: ReadonlySet<string>): void {
  const deliver = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage, extra) => {
    if (!isJSONRPCRequest(message)) return deliver?.(message, extra);
    const refused = paramsRefusal(message, tools);
    if (message.method === "tools/call") {
      recordCall(c, {
        id: message.id,
        tool: plainId(member(message.params, "name")) ?? "(not a tool name)",
        sessionId: plainId(member(member(message.params, "arguments"), "sessionId")),
        errorCode: "invalid_request",
      });
    } else if (refused !== null) c.set("errorCode", "invalid_request");
    if (refused === null) return deliver?.(message, extra);
    transport
      .send({ jsonrpc: "2.0", id: message.id, error: { code: ErrorCode.InvalidParams, message: refused } })
      .catch((error: unknown) =>
        transport.onerror?.(error instanceof Error ? error : new Error(String(error))),
      );
  };
}
