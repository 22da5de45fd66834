import type { AgentMessage, AssistantMessage, Usage } from "./messages";
import { systemSections } from "./system-messages";

/*
 * Token estimates: about four characters a token; an image counts as 1,200
 * tokens; a tool call as its name and JSON arguments; thinking as its text; a system message as
 * its content, its sections and its added tools' JSON (pi 1.6). The same estimate drives
 * compaction on the server and `compactIfNeeded` in clients.
 */

export const IMAGE_TOKENS = 1200;

function partChars(part: unknown): number {
  if (!part || typeof part !== "object") return 0;
  const p = part as Record<string, unknown>;
  switch (p.type) {
    case "text":
      return typeof p.text === "string" ? p.text.length : 0;
    case "thinking":
      return typeof p.thinking === "string" ? p.thinking.length : 0;
    case "toolCall":
      return (
        (typeof p.name === "string" ? p.name.length : 0) + (JSON.stringify(p.arguments ?? {})?.length ?? 0)
      );
    case "image":
      return IMAGE_TOKENS * 4;
    default:
      return 0;
  }
}

function contentChars(content: unknown): number {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return 0;
  let chars = 0;
  for (const part of content) chars += partChars(part);
  return chars;
}

export function estimateTokens(message: AgentMessage): number {
  const m = message as Record<string, unknown>;
  let chars: number;
  switch (message.role) {
    case "bashExecution":
      chars = String(m.command ?? "").length + String(m.output ?? "").length;
      break;
    case "branchSummary":
    case "compactionSummary":
      chars = String(m.summary ?? "").length;
      break;
    case "system":
      chars = contentChars(m.content);
      for (const [, text] of systemSections(message as { role: "system" })) chars += text?.length ?? 0;
      if (Array.isArray(m.toolsAdded)) chars += JSON.stringify(m.toolsAdded).length;
      break;
    default:
      chars = contentChars(m.content);
  }
  return Math.ceil(chars / 4);
}

/**
 * Usage of an assistant message that finished normally and counted something: aborted and failed
 * replies have none worth trusting, and a usage of all zeros (a reply cut short before its
 * provider counted) says nothing of the context.
 */
export function assistantUsage(message: AgentMessage): Usage | undefined {
  if (message.role !== "assistant") return undefined;
  const assistant = message as AssistantMessage;
  if (assistant.stopReason === "aborted" || assistant.stopReason === "error") return undefined;
  const usage = assistant.usage;
  return usage && usageTokens(usage) > 0 ? usage : undefined;
}

export function usageTokens(usage: Usage): number {
  return usage.totalTokens || usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
}

/**
 * Size of a context: the last trustworthy assistant usage (what the provider counted), plus
 * estimates for the messages after it; all estimates when no reply reported usage.
 */
export function estimateContextTokens(messages: readonly AgentMessage[]): number {
  const last = messages.findLastIndex((message) => assistantUsage(message) !== undefined);
  let tokens = last >= 0 ? usageTokens(assistantUsage(messages[last] as AgentMessage) as Usage) : 0;
  for (let i = last + 1; i < messages.length; i++) tokens += estimateTokens(messages[i] as AgentMessage);
  return tokens;
}
