import { isEditableEntry } from "./context-edits";
import type { ImportWarning } from "./interchange";
import { isRecord } from "./providers/incoming";

/*
 * What pi 1.6 reads from a session file without complaint though it is not what pi writes, and
 * how it reads it, applied to a file's entries before they are checked (each with a warning at
 * its line):
 *
 * - a message whose content is null or missing (old versions, forks, hand-edited files): pi reads
 *   no blocks for user, assistant and tool-result messages, no content for custom messages; the
 *   entry is stored that way. A system message keeps its null content (any role but those three
 *   is kept as written), and its context shows it as an empty prompt, as pi does.
 * - a system message section that is not a string, a context edit whose target is not in the file
 *   or is not a message pi lets an edit name: kept as written, with the effect pi gives them (the
 *   section is not rendered; the edit applies to nothing, or as pi applies it).
 */

interface Line {
  line: number;
  entry: Record<string, unknown>;
}

const BLOCK_ROLES = new Set(["user", "assistant", "toolResult"]);

/** Gives null or missing content the value pi reads it as; a warning for each. */
export function fillMissingContent(lines: readonly Line[], warnings: ImportWarning[]): void {
  for (const { line, entry } of lines) {
    if (entry.type === "custom_message" && entry.content == null) {
      entry.content = [];
      warnings.push({
        line,
        message: "a custom message without content: read as no content, as pi reads it",
      });
      continue;
    }
    const message = entry.type === "message" ? entry.message : undefined;
    if (!isRecord(message) || message.content != null || typeof message.role !== "string") continue;
    if (!BLOCK_ROLES.has(message.role)) continue;
    message.content = [];
    warnings.push({
      line,
      message: `a ${message.role} message without content: read as no content blocks, as pi reads it`,
    });
  }
}

/** Warnings for what is kept as written but that pi's own appends never write. */
export function noteOddities(lines: readonly Line[], warnings: ImportWarning[]): void {
  const byId = new Map<unknown, Record<string, unknown>>();
  for (const { entry } of lines) byId.set(entry.id, entry);
  for (const { line, entry } of lines) {
    const message = entry.type === "message" && isRecord(entry.message) ? entry.message : undefined;
    if (message?.role === "system" && isRecord(message.sections)) {
      for (const [name, value] of Object.entries(message.sections)) {
        if (typeof value === "string" || value === null) continue;
        warnings.push({
          line,
          message: `system message section ${JSON.stringify(name)} is not a string: kept, and not part of the prompt (pi does not render it either)`,
        });
      }
    }
    if (entry.type !== "context_edit") continue;
    const target = byId.get(entry.targetId);
    if (!target) {
      warnings.push({
        line,
        message: `context edit of ${String(entry.targetId)}, which names no entry of the file: kept, it changes nothing`,
      });
    } else if (!isEditableEntry(target)) {
      warnings.push({
        line,
        message: `context edit of ${String(entry.targetId)}, a ${describe(target)}: kept, applied as pi applies it (null leaves the entry's messages out, content changes nothing)`,
      });
    }
  }
}

function describe(entry: Record<string, unknown>): string {
  const role = isRecord(entry.message) ? entry.message.role : undefined;
  return entry.type === "message" ? `${String(role)} message` : `${String(entry.type)} entry`;
}
