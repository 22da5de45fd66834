import type { AgentMessage } from "../core/messages";
import { contentText } from "../core/messages";
import { oneLine, terminalSafe } from "./output";

/* Entries and messages as the terminal shows them: one line each, safe to print (`terminalSafe`). */

/** A message's role and the start of what it says (a summary's text when it has no content). */
export function messageLine(message: AgentMessage, max = 100): string {
  const { content, summary } = message as { content?: unknown; summary?: unknown };
  return terminalSafe(`${message.role}: ${oneLine(contentText(content) || String(summary ?? ""), max)}`);
}

/** A line describing an entry's content. */
export function gist(entry: Record<string, unknown>): string {
  switch (entry.type) {
    case "message":
      return messageLine(entry.message as AgentMessage);
    case "model_change":
      return `${entry.provider}/${entry.modelId}`;
    case "thinking_level_change":
      return String(entry.thinkingLevel);
    case "label":
      return `${entry.targetId} = ${entry.label ?? "(cleared)"}`;
    case "leaf":
      return `→ ${entry.targetId ?? "(none)"}`;
    case "session_info":
      return String(entry.name ?? "(cleared)");
    case "compaction":
    case "branch_summary":
      return oneLine(String(entry.summary));
    case "context_edit": {
      const replacement = entry.replacement as { content?: unknown } | null;
      return `${entry.targetId} ${replacement ? `→ ${oneLine(contentText(replacement.content))}` : "left out"}`;
    }
    case "usage":
      return `${entry.kind}: ${entry.provider}/${entry.model}`;
    default:
      return String(entry.customType ?? "");
  }
}

/** An entry's seq, type, id and parent in aligned columns, then `text`. */
export function entryLine(
  entry: { seq: number; type: string; id: string; parentId: string | null },
  text: string,
): string {
  return terminalSafe(
    `${String(entry.seq).padStart(6)}  ${entry.type.padEnd(21)} ${entry.id}  ← ${entry.parentId ?? "-"}  ${text}`,
  );
}
