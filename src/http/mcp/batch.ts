import { isJSONRPCRequest, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";

/*
 * A batch: several JSON-RPC messages in one JSON array, as protocol versions before 2025-06-18
 * allow. One the server cannot answer whole is refused before any of it is counted or run: one
 * sent under a version without batches (its Mcp-Protocol-Version header naming 2025-06-18 or
 * later), an empty one, one of more than MAX_BATCH_MESSAGES, one holding anything but JSON-RPC
 * messages, and one whose requests repeat an id (its answers could not be told apart, and only one
 * would be sent for the calls that ran). A batch is answered with an array, one of one message too
 * (JSON-RPC 2.0, section 6).
 */

/** Messages one batch holds at most (the SDK's own bound, checked here before they are counted). */
export const MAX_BATCH_MESSAGES = 100;

/** The JSON-RPC code of a message, or a batch, that is not a valid request. */
export const INVALID_REQUEST = -32600;

/**
 * Why `message`, JSON sent alone, cannot be answered, or null when it can: JSON that is no JSON-RPC
 * message is an invalid request, as it is in a batch (only text that is no JSON is a parse error).
 */
export function messageRefusal(message: unknown): string | null {
  return JSONRPCMessageSchema.safeParse(message).success
    ? null
    : "Invalid Request: the body is not a JSON-RPC message";
}

/** The first protocol version without batches: 2025-06-18 removed them. */
const FIRST_VERSION_WITHOUT_BATCHES = "2025-06-18";

/**
 * Why `messages` cannot be answered as a batch, or null when it can; `version` is the protocol
 * version the request's Mcp-Protocol-Version header names (none: 2025-03-26, as MCP has it).
 */
export function batchRefusal(messages: readonly unknown[], version: string | undefined): string | null {
  // Versions are dates: they sort as text. A header naming none is the transport's to refuse.
  if (
    version !== undefined &&
    /^\d{4}-\d{2}-\d{2}$/.test(version) &&
    version >= FIRST_VERSION_WITHOUT_BATCHES
  )
    return `Invalid Request: protocol version ${version} has no batches: send each message in a request of its own`;
  if (messages.length === 0) return "Invalid Request: an empty batch";
  if (messages.length > MAX_BATCH_MESSAGES)
    return `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages`;
  const ids = new Set<string>();
  for (const [index, message] of messages.entries()) {
    if (!JSONRPCMessageSchema.safeParse(message).success)
      return `Invalid Request: message ${index} of the batch is not a JSON-RPC message`;
    if (!isJSONRPCRequest(message)) continue;
    const id = `${typeof message.id}:${message.id}`;
    if (ids.has(id)) return `Invalid Request: the request id ${JSON.stringify(message.id)} is repeated`;
    ids.add(id);
  }
  return null;
}

/** The transport's answer to a batch, its one message in an array when it gave it bare. */
export async function batchAnswer(response: Response): Promise<Response> {
  if (response.status !== 200 || !response.headers.get("Content-Type")?.includes("application/json"))
    return response;
  const answer: unknown = await response.json();
  return new Response(JSON.stringify(Array.isArray(answer) ? answer : [answer]), {
    status: response.status,
    headers: response.headers,
  });
}
