import { isRecord } from "./agent-log";

/*
 * Where Claude Code resumes a transcript. It takes the line written last among those of the main
 * conversation (no sidechain, team or progress line) that no such line hangs from, and resumes at
 * the nearest user or assistant line at or above it; the tree's other branches stay in the file
 * unread. A session's head elsewhere (moved back to an entry with entries under it, or to an older
 * branch) is told by a line after all others: a `system` note under the head's last line, which
 * Claude Code passes over on its way up to that line, and which the import reads as the head.
 */

/** The text of the note that tells Claude Code where the session's head is. */
export const HEAD_NOTE = "Resumed at the session's head";

/** Whether a line is the note that tells where the session's head is. */
export function isHeadNote(line: Record<string, unknown>): boolean {
  return line.type === "system" && line.subtype === "informational" && line.content === HEAD_NOTE;
}

/** The fields of the note under the head's last line. */
export function headNoteFields(): Record<string, unknown> {
  return { subtype: "informational", content: HEAD_NOTE, isMeta: true, level: "info" };
}

interface Node {
  parentUuid: string | null;
  message: boolean;
  main: boolean;
  position: number;
}

const NODE_TYPES = new Set(["user", "assistant", "progress", "system", "attachment"]);

/** The lines of a transcript as Claude Code reads them to resume it, noted as they are written. */
export class ResumeReader {
  readonly #nodes = new Map<string, Node>();
  #written = 0;

  note(text: string): void {
    const line = JSON.parse(text) as Record<string, unknown>;
    const type = line.type;
    if (typeof type !== "string" || !NODE_TYPES.has(type) || typeof line.uuid !== "string") return;
    const attachment = isRecord(line.attachment) ? line.attachment.type : undefined;
    this.#nodes.set(line.uuid, {
      parentUuid: typeof line.parentUuid === "string" ? line.parentUuid : null,
      message: type === "user" || type === "assistant",
      main:
        line.isSidechain !== true &&
        !line.teamName &&
        type !== "progress" &&
        !(type === "attachment" && attachment === "fork_briefing"),
      position: this.#written++,
    });
  }

  /** The line Claude Code resumes at when the conversation ends at line `uuid`: it, or the message line above it. */
  messageAt(uuid: string): string | undefined {
    const seen = new Set<string>();
    for (let at: string | null = uuid; at !== null && !seen.has(at); ) {
      const node = this.#nodes.get(at);
      if (!node) return undefined;
      if (node.message) return at;
      seen.add(at);
      at = node.parentUuid;
    }
    return undefined;
  }

  /** The line Claude Code resumes the transcript at. */
  resumed(): string | undefined {
    const parents = new Set<string>();
    for (const node of this.#nodes.values()) if (node.main && node.parentUuid) parents.add(node.parentUuid);
    const ends = [...this.#nodes]
      .filter(([uuid, node]) => node.main && !parents.has(uuid))
      .sort(([, a], [, b]) => b.position - a.position);
    const passed = new Set<string>();
    for (const [end] of ends) {
      const walked: string[] = [];
      for (let at: string | null = end; at !== null && !passed.has(at) && !walked.includes(at); ) {
        const node = this.#nodes.get(at);
        if (!node) break;
        if (node.message) return at;
        walked.push(at);
        at = node.parentUuid;
      }
      for (const uuid of walked) passed.add(uuid);
    }
    return undefined;
  }
}
