import type { AgentMessage, ImageContent, TextContent, UserMessage } from "../messages";

/*
 * pi's own message roles, turned into what pi sends a model for them: user messages, summaries
 * inside pi's wrappers. The wording is pi's (coding agent `convertToLlm`), so a model sees a
 * session the same way whether pi or this library sends it.
 */

export const COMPACTION_SUMMARY_PREFIX =
  "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
export const COMPACTION_SUMMARY_SUFFIX = "\n</summary>";
export const BRANCH_SUMMARY_PREFIX =
  "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
export const BRANCH_SUMMARY_SUFFIX = "</summary>";

interface BashExecution {
  command?: unknown;
  output?: unknown;
  exitCode?: unknown;
  cancelled?: unknown;
  truncated?: unknown;
  fullOutputPath?: unknown;
}

/** What pi tells the model about a command the user ran with `!`. */
export function bashExecutionText(message: BashExecution): string {
  let text = `Ran \`${String(message.command ?? "")}\`\n`;
  text += message.output ? `\`\`\`\n${String(message.output)}\n\`\`\`` : "(no output)";
  if (message.cancelled) text += "\n\n(command cancelled)";
  else if (typeof message.exitCode === "number" && message.exitCode !== 0) {
    text += `\n\nCommand exited with code ${message.exitCode}`;
  }
  if (message.truncated && message.fullOutputPath) {
    text += `\n\n[Output truncated. Full output: ${String(message.fullOutputPath)}]`;
  }
  return text;
}

function timestampOf(message: AgentMessage): number {
  const value = (message as { timestamp?: unknown }).timestamp;
  return typeof value === "number" ? value : 0;
}

function userText(text: string, message: AgentMessage): UserMessage {
  return { role: "user", content: [{ type: "text", text }], timestamp: timestampOf(message) };
}

function customContent(content: unknown): Array<TextContent | ImageContent> {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return [];
  return content.filter(
    (part): part is TextContent | ImageContent =>
      part !== null &&
      typeof part === "object" &&
      ((part.type === "text" && typeof part.text === "string") ||
        (part.type === "image" && typeof part.data === "string" && typeof part.mimeType === "string")),
  );
}

/**
 * The message a model is sent for `message`: user, assistant and tool results as they are; pi's
 * summaries, custom messages and `!` commands as user messages; undefined for what pi leaves out
 * (commands run with `!!`, and roles no model knows).
 */
export function toModelMessage(message: AgentMessage): AgentMessage | undefined {
  const m = message as Record<string, unknown>;
  switch (message.role) {
    case "user":
    case "assistant":
    case "toolResult":
      return message;
    case "custom":
      return { role: "user", content: customContent(m.content), timestamp: timestampOf(message) };
    case "bashExecution":
      return m.excludeFromContext ? undefined : userText(bashExecutionText(m), message);
    case "branchSummary":
      return userText(BRANCH_SUMMARY_PREFIX + String(m.summary ?? "") + BRANCH_SUMMARY_SUFFIX, message);
    case "compactionSummary":
      return userText(
        COMPACTION_SUMMARY_PREFIX + String(m.summary ?? "") + COMPACTION_SUMMARY_SUFFIX,
        message,
      );
    default:
      return undefined;
  }
}
