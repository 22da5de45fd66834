import type { AgentMessage } from "../messages";
import { fromAISDK } from "./from-ai-sdk";
import type { ReadOptions } from "./incoming";
import { isRecord } from "./incoming";
import { parseDataUrl } from "./text";

/*
 * AI SDK UI messages (`UIMessage`, what `useChat` keeps) in: turned into the model messages the
 * AI SDK's own `convertToModelMessages` makes of them (an assistant message per step, then the
 * results of the tools it called), and read by the AI SDK reader. Images sent as `data:` URLs are
 * kept; other files, data parts and sources, which no model message carries, are left out, as are
 * tools the provider ran and calls still streaming their input.
 */

type Part = Record<string, unknown>;
type ModelMessage = Record<string, unknown>;

const withOptions = (part: Part, metadata: unknown): Part =>
  isRecord(metadata) ? { ...part, providerOptions: metadata } : part;

function isToolPart(part: Part): boolean {
  return typeof part.type === "string" && (part.type.startsWith("tool-") || part.type === "dynamic-tool");
}

function toolName(part: Part): string {
  return part.type === "dynamic-tool" ? String(part.toolName ?? "") : String(part.type).slice("tool-".length);
}

function userParts(parts: readonly Part[]): Part[] {
  const out: Part[] = [];
  for (const part of parts) {
    if (part.type === "text" && typeof part.text === "string") {
      out.push({ type: "text", text: part.text });
    } else if (part.type === "file" && typeof part.url === "string" && typeof part.mediaType === "string") {
      if (part.mediaType.startsWith("image/") && parseDataUrl(part.url)) {
        out.push({ type: "file", mediaType: part.mediaType, data: part.url });
      }
    }
  }
  return out;
}

/** The result of a tool call the UI denied, when it gave no reason: the AI SDK's own words. */
export const DENIED_TOOL_CALL = "Tool call execution denied.";

/** The text of a denied call's result: the reason the UI gave for the denial, or `DENIED_TOOL_CALL`. */
export function deniedText(reason: unknown): string {
  return typeof reason === "string" ? reason : DENIED_TOOL_CALL;
}

/** Whether a tool part or stream part stands for a tool the provider ran (a web search): no model message holds it. */
export function isProviderRun(part: Record<string, unknown>): boolean {
  return part.providerExecuted === true;
}

/** The tool's result as the AI SDK sends it to a model (`createToolModelOutput` without a tool of its own). */
function toolOutput(part: Part): Part | undefined {
  if (part.state === "output-error") return { type: "error-text", value: String(part.errorText ?? "") };
  if (part.state === "output-denied") {
    const approval = isRecord(part.approval) ? part.approval : {};
    return { type: "error-text", value: deniedText(approval.reason) };
  }
  if (part.state !== "output-available") return undefined;
  return typeof part.output === "string"
    ? { type: "text", value: part.output }
    : { type: "json", value: part.output ?? null };
}

/** One step of an assistant message: its model message, then its tool results. */
function step(parts: readonly Part[], out: ModelMessage[]): void {
  const content: Part[] = [];
  const results: Part[] = [];
  for (const part of parts) {
    if ((part.type === "text" || part.type === "reasoning") && typeof part.text === "string") {
      content.push(withOptions({ type: part.type, text: part.text }, part.providerMetadata));
    } else if (isToolPart(part) && part.state !== "input-streaming" && typeof part.toolCallId === "string") {
      if (isProviderRun(part)) continue;
      const call = {
        type: "tool-call",
        toolCallId: part.toolCallId,
        toolName: toolName(part),
        input: part.input,
      };
      content.push(withOptions(call, part.callProviderMetadata));
      const output = toolOutput(part);
      if (output)
        results.push({ type: "tool-result", toolCallId: part.toolCallId, toolName: toolName(part), output });
    }
  }
  if (content.length > 0) out.push({ role: "assistant", content });
  if (results.length > 0) out.push({ role: "tool", content: results });
}

/** The model messages of one UI message, as `convertToModelMessages` makes them. */
function modelMessages(message: Record<string, unknown>): ModelMessage[] {
  const parts = (Array.isArray(message.parts) ? message.parts : []).filter(isRecord);
  if (message.role === "user") {
    const content = userParts(parts);
    return content.length > 0 ? [{ role: "user", content }] : [];
  }
  const out: ModelMessage[] = [];
  let block: Part[] = [];
  for (const part of parts) {
    if (part.type === "step-start") {
      step(block, out);
      block = [];
    } else block.push(part);
  }
  step(block, out);
  return out;
}

/**
 * The messages an AI SDK UI message reads as: a user message, a system message, or an assistant
 * message's steps with their tool results (none when it holds nothing a model reads).
 */
export function fromAISDKUI(message: unknown, options: ReadOptions = {}): AgentMessage[] {
  if (!isRecord(message)) return [];
  const timestamp = options.timestamp ?? Date.now();
  if (message.role === "system") {
    const parts = (Array.isArray(message.parts) ? message.parts : []).filter(isRecord);
    const content = parts.flatMap((part) =>
      part.type === "text" && typeof part.text === "string" ? [part.text] : [],
    );
    return [{ role: "system", content: content.join(""), timestamp }];
  }
  if (message.role !== "user" && message.role !== "assistant") return [];
  const converted = modelMessages(message);
  return converted.length > 0 ? fromAISDK(converted, { ...options, timestamp }) : [];
}
