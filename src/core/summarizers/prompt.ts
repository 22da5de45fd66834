import type { AgentMessage } from "../messages";
import { contentText } from "../messages";
import type { SummaryRequest } from "./summarizer";

/*
 * The prompt model-backed summarizers send: the conversation serialized as text (so the model
 * summarizes it instead of continuing it), with tool results cut to 2,000 characters.
 */

export const TOOL_RESULT_MAX_CHARS = 2000;

export const SUMMARIZATION_SYSTEM_PROMPT =
  "You are a context summarization assistant. You read a conversation between a user and an AI assistant and write a structured summary in the exact format asked for. Do not continue the conversation and do not answer questions in it: only write the summary.";

const FORMAT = `Use this exact format:

## Goal
[What the user is trying to accomplish.]

## Constraints & Preferences
- [Constraints, preferences or requirements the user stated, or "(none)"]

## Progress
### Done
- [x] [Completed work]
### In Progress
- [ ] [Current work]
### Blocked
- [What is blocking progress, if anything]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [What should happen next]

## Critical Context
- [Data, examples or references needed to continue, or "(none)"]

Keep each section concise. Preserve exact file paths, function names and error messages.`;

const INSTRUCTIONS = {
  compaction: `The conversation above is to be summarized into a checkpoint another model will use to continue the work.\n\n${FORMAT}`,
  update: `The conversation above is NEW: update the summary in <previous-summary> with it. Keep everything still relevant from the previous summary, add new progress, decisions and context, and move finished items to Done.\n\n${FORMAT}`,
  branch: `The conversation above is a branch of work the user is leaving to continue from an earlier point. Summarize what was tried and learned in it, so the work can continue without it.\n\n${FORMAT}`,
};

function truncate(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}\n\n[... ${text.length - max} more characters truncated]`;
}

export function serializeConversation(messages: readonly AgentMessage[]): string {
  const parts: string[] = [];
  for (const message of messages) {
    const m = message as Record<string, unknown>;
    switch (message.role) {
      case "user":
      case "custom": {
        const text = contentText(m.content);
        if (text) parts.push(`[User]: ${text}`);
        break;
      }
      case "assistant": {
        const content = Array.isArray(m.content) ? (m.content as Array<Record<string, unknown>>) : [];
        const thinking = content.filter((p) => p.type === "thinking").map((p) => String(p.thinking));
        const text = content.filter((p) => p.type === "text").map((p) => String(p.text));
        const calls = content
          .filter((p) => p.type === "toolCall")
          .map((p) => {
            const args = Object.entries((p.arguments ?? {}) as Record<string, unknown>).map(
              ([k, v]) => `${k}=${JSON.stringify(v)}`,
            );
            return `${String(p.name)}(${args.join(", ")})`;
          });
        if (thinking.length > 0) parts.push(`[Assistant thinking]: ${thinking.join("\n")}`);
        if (text.length > 0) parts.push(`[Assistant]: ${text.join("\n")}`);
        if (calls.length > 0) parts.push(`[Assistant tool calls]: ${calls.join("; ")}`);
        break;
      }
      case "toolResult": {
        const text = contentText(m.content);
        if (text) parts.push(`[Tool result]: ${truncate(text, TOOL_RESULT_MAX_CHARS)}`);
        break;
      }
      case "bashExecution":
        parts.push(
          `[User ran]: ${String(m.command)}\n${truncate(String(m.output ?? ""), TOOL_RESULT_MAX_CHARS)}`,
        );
        break;
      case "branchSummary":
      case "compactionSummary":
        parts.push(`[Earlier summary]: ${String(m.summary)}`);
        break;
    }
  }
  return parts.join("\n\n");
}

/** The user prompt for a summary request (the system prompt is `SUMMARIZATION_SYSTEM_PROMPT`). */
export function summaryPrompt(request: SummaryRequest): string {
  const messages = [...request.messages, ...(request.turnPrefix ?? [])];
  let prompt = `<conversation>\n${serializeConversation(messages)}\n</conversation>\n\n`;
  if (request.previousSummary)
    prompt += `<previous-summary>\n${request.previousSummary}\n</previous-summary>\n\n`;
  prompt +=
    request.kind === "branch"
      ? INSTRUCTIONS.branch
      : request.previousSummary
        ? INSTRUCTIONS.update
        : INSTRUCTIONS.compaction;
  if (request.turnPrefix?.length) {
    prompt +=
      "\n\nThe last messages are the start of a turn whose end is kept: say what that turn asked for.";
  }
  if (request.customInstructions) prompt += `\n\nAdditional focus: ${request.customInstructions}`;
  return prompt;
}
