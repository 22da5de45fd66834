import { parseClaudeCode } from "./claude-code-format";
import { parseCodex } from "./codex-format";
import type { ImportedSession, ImportFormat, ParseOptions } from "./interchange";
import { tryParseJson } from "./json";
import { parseNative } from "./native-format";
import { parsePi } from "./pi-format";

/** Parses an import file of `format` (pi's and ours hold one entry a line already). */
export function parseImport(format: ImportFormat, text: string, options: ParseOptions = {}): ImportedSession {
  switch (format) {
    case "native":
      return parseNative(text);
    case "pi":
      return parsePi(text);
    case "claude-code":
      return parseClaudeCode(text, options);
    case "codex":
      return parseCodex(text, options);
  }
}

const CODEX_LINES = new Set(["session_meta", "response_item", "event_msg", "turn_context", "compacted"]);
/** Lines Claude Code also writes in files of their own beside its sessions, naming no session. */
const CLAUDE_CODE_ASIDES = new Set(["file-history-snapshot", "summary"]);
const CLAUDE_CODE_LINES = new Set(["user", "assistant", "system", "summary", "file-history-snapshot"]);

/** The format a file is in, told from its first lines; undefined when they match none. */
export function detectFormat(text: string, lines = 20): ImportFormat | undefined {
  let index = 0;
  for (const raw of text.split("\n")) {
    if (!raw.trim()) continue;
    if (index++ >= lines) break;
    const value = tryParseJson(raw);
    if (value === null || typeof value !== "object" || Array.isArray(value)) continue;
    const line = value as Record<string, unknown>;
    if (index === 1 && line.type === "session") return line.format === "cf-session" ? "native" : "pi";
    if (typeof line.type === "string" && CODEX_LINES.has(line.type) && "payload" in line) return "codex";
    // Codex before `payload` lines: a bare session meta line first.
    if (index === 1 && line.type === undefined && typeof line.id === "string" && "instructions" in line)
      return "codex";
    if (
      typeof line.sessionId === "string" &&
      (typeof line.uuid === "string" || CLAUDE_CODE_LINES.has(String(line.type)))
    ) {
      return "claude-code";
    }
    if (line.type === "summary" && typeof line.leafUuid === "string") return "claude-code";
  }
  return undefined;
}

/**
 * Whether a file holds no conversation: only lines Claude Code writes in files of their own beside
 * its sessions (file snapshots, session titles), none naming a session.
 */
export function holdsNoConversation(text: string): boolean {
  let lines = 0;
  for (const raw of text.split("\n")) {
    if (!raw.trim()) continue;
    const value = tryParseJson(raw);
    if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
    const line = value as Record<string, unknown>;
    if (!CLAUDE_CODE_ASIDES.has(String(line.type)) || "sessionId" in line) return false;
    lines++;
  }
  return lines > 0;
}
