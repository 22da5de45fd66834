import * as z from "zod";
import type { AgentMessage } from "./messages";
import { blockText } from "./messages";

/*
 * pi 1.6's system messages: the prompt and the tools, carried in the conversation. The first one
 * declares the prompt (its `content`, then named `sections`) and the tools; later ones add
 * instructions, replace sections by name (`null` removes one) and add or remove tools. Replaying
 * them in order gives the current prompt. What pi would not write (a section that is not a string,
 * a tool without a name) is kept as written and ignored here, as pi's own rendering ignores it.
 */

export const SystemMessage = z.looseObject({ role: z.literal("system") }).meta({
  description:
    "pi's prompt and tool state: content, sections (null removes one), toolsAdded, toolsRemoved, timestamp",
});

export interface SystemMessage {
  role: "system";
  content?: unknown;
  sections?: unknown;
  toolsAdded?: unknown;
  toolsRemoved?: unknown;
  timestamp?: unknown;
  [key: string]: unknown;
}

export function isSystemMessage(message: AgentMessage): message is SystemMessage {
  return message.role === "system";
}

/** The sections pi can render, in order: string values, and `null` for a removal. */
export function systemSections(message: SystemMessage): Array<[string, string | null]> {
  const sections = message.sections;
  if (!sections || typeof sections !== "object" || Array.isArray(sections)) return [];
  return Object.entries(sections).filter((entry): entry is [string, string | null] => {
    const value = entry[1];
    return typeof value === "string" || value === null;
  });
}

/** A system message as a whole prompt: its content, then its sections (pi-ai's `getSystemMessageText`). */
export function systemMessageText(message: SystemMessage): string {
  const parts = [blockText(message.content)];
  for (const [, text] of systemSections(message)) if (text !== null) parts.push(text);
  return parts.filter((part) => part.length > 0).join("\n\n");
}

function toolName(tool: unknown): string | undefined {
  const name = tool && typeof tool === "object" ? (tool as { name?: unknown }).name : undefined;
  return typeof name === "string" ? name : undefined;
}

/**
 * Every system message of `messages` replayed into one holding the current prompt and tools
 * (pi-ai's `getCurrentSystemMessage`): contents appended, sections patched by name, tools added
 * and removed by name. Undefined when there is none.
 */
export function currentSystemMessage(messages: readonly AgentMessage[]): SystemMessage | undefined {
  const content: string[] = [];
  const sections = new Map<string, string>();
  const tools = new Map<string, unknown>();
  let timestamp: unknown;
  let seen = false;
  for (const message of messages) {
    if (!isSystemMessage(message)) continue;
    if (!seen) timestamp = message.timestamp;
    seen = true;
    const text = blockText(message.content);
    if (text.length > 0) content.push(text);
    for (const [name, value] of systemSections(message)) {
      if (value === null) sections.delete(name);
      else sections.set(name, value);
    }
    for (const tool of Array.isArray(message.toolsRemoved) ? message.toolsRemoved : []) {
      const name = toolName(tool);
      if (name !== undefined) tools.delete(name);
    }
    for (const tool of Array.isArray(message.toolsAdded) ? message.toolsAdded : []) {
      const name = toolName(tool);
      if (name !== undefined) tools.set(name, tool);
    }
  }
  if (!seen) return undefined;
  return {
    role: "system",
    content: content.join("\n\n"),
    ...(sections.size > 0 ? { sections: Object.fromEntries(sections) } : {}),
    ...(tools.size > 0 ? { toolsAdded: [...tools.values()] } : {}),
    timestamp: typeof timestamp === "number" ? timestamp : 0,
  };
}

/**
 * Whether `message` is a `developer` message: instructions an OpenAI agent keeps in the
 * conversation (a Codex rollout's sandbox permissions), which only OpenAI's APIs take in place.
 */
export function isDeveloperMessage(message: AgentMessage): boolean {
  return message.role === "developer";
}

/** The text of a `developer` message's content. */
export function developerMessageText(message: AgentMessage): string {
  return blockText((message as { content?: unknown }).content);
}

/**
 * The system prompt a model is sent for a context: the session's own prompt, then what the
 * context's system messages replay to (APIs without system messages mid-conversation get the
 * replayed prompt up front, as pi-ai sends it to them), then, for an API without a developer role
 * (`developerMessages`), the text of the context's developer messages in order.
 */
export function contextSystemPrompt(
  context: { systemPrompt: string; messages: readonly AgentMessage[] },
  options: { developerMessages?: boolean } = {},
): string {
  const current = currentSystemMessage(context.messages);
  const parts = [context.systemPrompt, current ? systemMessageText(current) : ""];
  if (options.developerMessages)
    for (const message of context.messages)
      if (isDeveloperMessage(message)) parts.push(developerMessageText(message));
  return parts.filter((part) => part.length > 0).join("\n\n");
}
