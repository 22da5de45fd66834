import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type {
  CallToolResult,
  ServerNotification,
  ServerRequest,
  ToolAnnotations,
} from "@modelcontextprotocol/sdk/types.js";
import type { Context } from "hono";
import * as z from "zod";
import { SessionError } from "../../core/errors";
import { errorSummary, transientError } from "../../durable/internal";
import type { AppEnv, ToolCall } from "../env";

/*
 * How every tool is declared and answered: its arguments a zod shape (validated by the SDK, which
 * answers a bad one with a tool error naming it), its answer short text for the model with the
 * same answer whole as structured content, and a refusal of the store a tool error naming its code
 * and what it was about (a transient failure of an object `unavailable`, saying whether the call
 * may have been applied, as over HTTP); anything else an internal error whose detail stays in the
 * request's log line. Long answers come in pages of lines, with a cursor to the next.
 */

export interface ToolSpec<Shape extends z.ZodRawShape> {
  title: string;
  /** When to use the tool: what the model reads to choose it. Never user data. */
  description: string;
  input: Shape;
  readOnly: boolean;
}

export function answer(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: structured };
}

function refusal(c: Context<AppEnv>, call: ToolCall, thrown: unknown): CallToolResult {
  // A transient failure of an object is answered as HTTP answers it: unavailable, with its outcome.
  const transient = transientError(thrown);
  if (transient) c.set("failure", errorSummary(thrown));
  const error = transient ?? thrown;
  call.errorCode = error instanceof SessionError ? error.code : "internal";
  if (error instanceof SessionError) {
    c.set("errorCode", error.code);
    const details = error.details === undefined ? "" : ` ${JSON.stringify(error.details)}`;
    return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}${details}` }] };
  }
  c.set("errorCode", "internal");
  c.set("failure", errorSummary(error));
  return { isError: true, content: [{ type: "text", text: "internal: the tool failed; try again" }] };
}

/**
 * Records a call in the request's log line, or updates its record: the calls of a batch share the
 * request, and each is logged apart, about the session it names, with its own error code.
 */
export function recordCall(c: Context<AppEnv>, call: ToolCall): ToolCall {
  const calls = c.get("toolCalls") ?? [];
  const recorded = calls.find((known) => known.id === call.id);
  if (recorded) return Object.assign(recorded, call);
  c.set("toolCalls", [...calls, call]);
  return call;
}

/** The names of the tools each server offers: a call of any other is refused before the SDK sees it. */
const offeredTools = new WeakMap<McpServer, Set<string>>();

/** The names of the tools `server` offers. */
export function toolsOffered(server: McpServer): ReadonlySet<string> {
  return offeredTools.get(server) ?? new Set();
}

export function registerTool<Shape extends z.ZodRawShape>(
  server: McpServer,
  c: Context<AppEnv>,
  name: string,
  spec: ToolSpec<Shape>,
  run: (args: z.infer<z.ZodObject<Shape>>) => Promise<CallToolResult>,
): void {
  const annotations: ToolAnnotations = spec.readOnly
    ? { readOnlyHint: true }
    : { readOnlyHint: false, destructiveHint: false };
  offeredTools.set(server, (offeredTools.get(server) ?? new Set()).add(name));
  server.registerTool(
    name,
    // Strict, as the API's bodies are: an argument the tool does not take is refused, by name.
    {
      title: spec.title,
      description: spec.description,
      inputSchema: z.strictObject(spec.input),
      annotations,
    },
    // The SDK has checked the arguments against the shape before it calls this.
    (async (
      args: z.infer<z.ZodObject<Shape>>,
      extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
    ) => {
      const sessionId = (args as { sessionId?: unknown }).sessionId;
      const call = recordCall(c, {
        id: extra.requestId,
        tool: name,
        sessionId: typeof sessionId === "string" ? sessionId : null,
        errorCode: null,
      });
      try {
        return await run(args);
      } catch (error) {
        return refusal(c, call, error);
      }
    }) as never,
  );
}

/**
 * Characters of lines one page holds at most (a line at least): an answer stays well within what
 * clients give a model of a tool's result (Claude Code: 25,000 tokens, with the text and the
 * structured content both counted).
 */
export const MAX_PAGE_CHARS = 40_000;

/**
 * Characters of a listing's answer at most (list_sessions, search_sessions): its lines and its
 * structured content together, a page of each.
 */
export const MAX_LISTING_CHARS = 2 * MAX_PAGE_CHARS;

/** How many of `items`, from the first, fit in MAX_LISTING_CHARS as `chars` measures each (one at least). */
export function fittingCount<T>(items: readonly T[], chars: (item: T) => number): number {
  let used = 0;
  let count = 0;
  for (const item of items) {
    used += chars(item);
    if (count > 0 && used > MAX_LISTING_CHARS) break;
    count++;
  }
  return count;
}
