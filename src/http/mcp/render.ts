import type { SessionInfo, StoredEntry, TenantSearchResult } from "../../core/internal";

/*
 * What a model reads from a tool: short lines led by the ids it can pass to the next tool. The
 * structured content beside it carries the same answer whole.
 */

/** At most this many characters of one entry's text; the rest is named, never dropped silently. */
export const MAX_ENTRY_CHARS = 4000;

function clip(text: string, max = MAX_ENTRY_CHARS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)} […${text.length - max} more characters: read_entry gives it whole]`;
}

/** The text of a message's content, string or blocks: text as it is, other blocks named. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: { type?: string; text?: string; thinking?: string; name?: string; arguments?: unknown }) => {
      if (block.type === "text") return block.text ?? "";
      if (block.type === "thinking") return "";
      if (block.type === "toolCall")
        return `[tool call ${block.name}: ${JSON.stringify(block.arguments ?? {})}]`;
      return `[${block.type}]`;
    })
    .filter((text) => text !== "")
    .join("\n");
}

/** One entry of a path as a model reads it, or undefined for one that shapes no text. */
export function entryLine(entry: StoredEntry): string | undefined {
  const head = `[${entry.id}]`;
  switch (entry.type) {
    case "message": {
      const message = entry.message as { role: string; content?: unknown; toolName?: string };
      const who =
        message.role === "toolResult" ? `tool result (${message.toolName ?? "tool"})` : message.role;
      return `${head} ${who}: ${clip(contentText(message.content))}`;
    }
    case "compaction":
      return `${head} summary of what came before: ${clip(entry.summary)}`;
    case "branch_summary":
      return `${head} summary of a branch left: ${clip(entry.summary)}`;
    case "custom_message":
      return `${head} ${entry.customType}: ${clip(contentText(entry.content))}`;
    case "label":
      return entry.label ? `${head} label on ${entry.targetId}: ${entry.label}` : undefined;
    case "session_info":
      return entry.name ? `${head} named: ${entry.name}` : undefined;
    default:
      return undefined;
  }
}

export function sessionLine(info: SessionInfo): string {
  const name = info.name ? ` "${info.name}"` : "";
  const preview = info.preview ? ` — ${clip(info.preview, 200)}` : "";
  return `${info.id}${name} (updated ${info.updatedAt}, ${info.entryCount} entries)${preview}`;
}

export function searchResultLine(result: TenantSearchResult): string {
  const matches = result.matches.map((match) => `  ${match.field}: ${match.snippet}`).join("\n");
  return `${sessionLine(result.session)}\n${matches}`;
}
