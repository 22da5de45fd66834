import type { z } from "zod";
import { SessionError } from "../errors";
import { parseJsonField } from "../json";
import type { AgentMessage, AssistantMessage, ImageContent, ToolResultMessage } from "../messages";
import { NO_USAGE } from "../messages";
import { lastTurnOf } from "./last-turn";
import type { MessageFormat } from "./target";
import { parseDataUrl } from "./text";
import { isWireIdOf } from "./tool-call-ids";

/*
 * What every reader of a provider's messages shares: validation that names the bad field, the
 * assistant message around the converted content, usage, tool-call arguments, and the tool calls
 * waiting for results (a result of OpenAI or Anthropic does not name its tool; Gemini's may have
 * no id).
 */

/** Who answered, as recorded on the message; each reader fills in what its response leaves out. */
export interface AnsweringModel {
  provider?: string;
  modelId?: string;
  api?: string;
}

export interface ReadOptions {
  /** The model that answered (defaults: the provider of the format, the model the response names). */
  model?: AnsweringModel;
  /** Unix milliseconds stored on the messages (default: the response's creation time, else now). */
  timestamp?: number;
  /**
   * The conversation so far. Tool results are matched to its last turn's calls: they take the
   * tool's name from there, and Gemini results without an id take their call's id.
   */
  history?: readonly AgentMessage[];
}

interface Issue {
  path: Array<string | number>;
  code: string;
  message: string;
}

/**
 * Issues with full paths. A union that failed (a string or a list of blocks, say) reports the
 * option that got furthest, so the caller reads `content.0.text`, not just `content`.
 */
function specificIssues(issues: readonly z.core.$ZodIssue[], prefix: Array<string | number>): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
    const branches = issue.code === "invalid_union" ? issue.errors : [];
    if (branches.length === 0) {
      out.push({ path, code: issue.code, message: issue.message });
      continue;
    }
    let best: Issue[] = [];
    for (const branch of branches) {
      const resolved = specificIssues(branch, path);
      if ((resolved[0]?.path.length ?? -1) > (best[0]?.path.length ?? -1)) best = resolved;
    }
    out.push(...best);
  }
  return out;
}

/** `value` as `schema` reads it, or `invalid_request` naming the first bad field under `message`. */
export function readWith<S extends z.ZodType>(format: MessageFormat, schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const details = specificIssues(parsed.error.issues, ["message"]);
  const first = details[0];
  const where = first && first.path.length > 0 ? first.path.join(".") : "message";
  throw new SessionError(
    "invalid_request",
    `invalid ${format} message: ${where}: ${first?.message ?? "invalid"}`,
    details,
  );
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `input` as an object to look into, or `invalid_request` for anything else. */
export function objectOf(format: MessageFormat, input: unknown): Record<string, unknown> {
  if (isRecord(input)) return input;
  throw invalidMessage(format, [], "expected an object");
}

export function invalidMessage(
  format: MessageFormat,
  path: ReadonlyArray<string | number>,
  message: string,
): SessionError {
  const where = ["message", ...path].join(".");
  return new SessionError("invalid_request", `invalid ${format} message: ${where}: ${message}`, [
    { path: ["message", ...path], code: "custom", message },
  ]);
}

/** Tool-call arguments from the JSON string an API sends; what is not a JSON object reads as `{}`. */
export function parseArguments(json: string): Record<string, unknown> {
  const value = parseJsonField(json, "tool call arguments");
  return isRecord(value) ? value : {};
}

/** An image from a `data:` URL; any other URL is `invalid_request` at `path`, as it cannot be stored. */
export function dataUrlImage(
  format: MessageFormat,
  url: string,
  path: ReadonlyArray<string | number>,
): ImageContent {
  const image = parseDataUrl(url);
  if (!image) throw invalidMessage(format, path, "only data: URLs can be stored");
  return { type: "image", data: image.data, mimeType: image.mimeType };
}

/** How a reply ended, in pi-ai's terms: each reader maps its API's reasons to these. */
export type StopReason = Pick<AssistantMessage, "stopReason" | "errorMessage">;

/** Whether a reply's content calls tools. */
export function hasToolCall(content: AssistantMessage["content"]): boolean {
  return content.some((block) => block.type === "toolCall");
}

export type AssistantFields = Pick<
  AssistantMessage,
  "content" | "api" | "provider" | "model" | "usage" | "stopReason" | "timestamp" | "errorMessage"
> & { responseId?: string };

/** An assistant message with pi-ai's fields in pi-ai's order; optional ones only when known. */
export function assistantMessage(fields: AssistantFields): AssistantMessage {
  const message: AssistantMessage = {
    role: "assistant",
    content: fields.content,
    api: fields.api,
    provider: fields.provider,
    model: fields.model,
    usage: fields.usage,
    stopReason: fields.stopReason,
    timestamp: fields.timestamp,
  };
  if (fields.responseId) message.responseId = fields.responseId;
  if (fields.errorMessage) message.errorMessage = fields.errorMessage;
  return message;
}

/**
 * The API, provider and model a reply read from a format is recorded under: the caller's model
 * (`options.model`) where it says (an empty model id says nothing), else the format's API and
 * provider and the model the response names ("" when it names none).
 */
export function replySource(
  options: ReadOptions,
  api: string,
  provider: string,
  model = "",
): Pick<AssistantMessage, "api" | "provider" | "model"> {
  return {
    api: options.model?.api ?? api,
    provider: options.model?.provider ?? provider,
    model: options.model?.modelId || model,
  };
}

/**
 * A reply as a request's history holds it, without the usage or stop reason a response carries:
 * no usage, and `toolUse` when it calls tools. `api` and `provider` are the format's (see
 * `replySource`).
 */
export function historyReply(
  content: AssistantMessage["content"],
  api: string,
  provider: string,
  options: ReadOptions,
  timestamp: number,
): AssistantMessage {
  return assistantMessage({
    content,
    ...replySource(options, api, provider),
    usage: NO_USAGE,
    stopReason: hasToolCall(content) ? "toolUse" : "stop",
    timestamp,
  });
}

export function toolResultMessage(
  toolCallId: string,
  toolName: string,
  content: ToolResultMessage["content"],
  isError: boolean,
  timestamp: number,
): ToolResultMessage {
  return { role: "toolResult", toolCallId, toolName, content, isError, timestamp };
}

/** The calls of the conversation's last model turn still waiting for a result. */
export class WaitingCalls {
  private readonly calls: Array<{ id: string; name: string; answered: boolean }> = [];

  constructor(history: readonly AgentMessage[] = []) {
    const answered = new Set<string>();
    for (const message of lastTurnOf(history)) {
      if (message.role === "toolResult") answered.add((message as ToolResultMessage).toolCallId);
      else if (message.role === "assistant") {
        for (const block of (message as AssistantMessage).content) {
          if (block.type === "toolCall") this.calls.push({ id: block.id, name: block.name, answered: false });
        }
      }
    }
    for (const call of this.calls) call.answered = answered.has(call.id);
  }

  /**
   * The waiting call a result for `id` answers, as stored (pi-ai stores OpenAI Responses calls as
   * `call_id|item_id`, and their results name the `call_id` only; a format that cannot send an id
   * as stored, such as `functions.read:0`, sent it made valid, and its result names it so);
   * undefined when there is none.
   */
  answer(id: string): { id: string; name: string } | undefined {
    const call =
      this.calls.find((c) => c.id === id && !c.answered) ??
      this.calls.find((c) => c.id.startsWith(`${id}|`) && !c.answered) ??
      this.calls.find((c) => !c.answered && isWireIdOf(id, c.id));
    if (!call) return undefined;
    call.answered = true;
    return { id: call.id, name: call.name };
  }

  /** The result message for `id`, under the id and name of the waiting call it answers. */
  result(
    id: string,
    content: ToolResultMessage["content"],
    isError: boolean,
    timestamp: number,
  ): ToolResultMessage {
    const call = this.answer(id);
    return toolResultMessage(call?.id ?? id, call?.name ?? "", content, isError, timestamp);
  }

  /** The ids of the calls still waiting for a result, in call order. */
  waiting(): string[] {
    return this.calls.filter((call) => !call.answered).map((call) => call.id);
  }

  /** The id of the first unanswered call of `name`, for a result that does not carry one. */
  answerByName(name: string): string | undefined {
    const call = this.calls.find((c) => c.name === name && !c.answered);
    if (!call) return undefined;
    call.answered = true;
    return call.id;
  }
}

/** A short stable hash (53-bit, base 36): the same text always gives the same value. */
export function stableHash(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

/**
 * A schema that reads objects by their `key` field: a known value must match its schema (issues
 * keep their paths), any other passes as it is, for the caller to skip.
 */
export function byKind<T extends z.ZodType>(base: T, key: string, schemas: Record<string, z.ZodType>): T {
  // Looked up among the table's own names only: `constructor` is an unknown kind like any other.
  const known = new Map(Object.entries(schemas));
  return base.superRefine((value, ctx) => {
    const kind = (value as Record<string, unknown>)[key];
    const schema = typeof kind === "string" ? known.get(kind) : undefined;
    if (!schema) return;
    const result = schema.safeParse(value);
    if (result.success) return;
    for (const issue of result.error.issues) ctx.addIssue({ ...issue, path: issue.path } as never);
  }) as unknown as T;
}
