import type { SessionEntry } from "./entries";
import { Timestamp } from "./entries";
import { isValidId } from "./ids";
import type { ImportedSession, ImportWarning } from "./interchange";
import { checkImportEntries } from "./interchange";
import { tryParseJson } from "./json";
import type { ImageContent, TextContent, ThinkingLevel } from "./messages";
import { THINKING_LEVELS } from "./messages";
import { lineError, ndjsonLines, parseLine } from "./ndjson";
import { isRecord } from "./providers/incoming";
import { parseDataUrl } from "./providers/text";

/*
 * What the Claude Code and Codex CLI codecs share: reading an agent's own JSONL log as leniently
 * as the agent itself does, and the small conversions both need.
 */

export interface LogLine {
  line: number;
  value: Record<string, unknown>;
}

/** What a user message or a tool result read from a log holds: text and images. */
export type InputContent = TextContent | ImageContent;

/**
 * Every line of a log, parsed. A last line cut short by a crash (not valid JSON, no newline after
 * it) is dropped with a warning, as the agents drop it; a line that is not JSON anywhere else
 * refuses the file, naming the line.
 */
export function readLogLines(text: string): { lines: LogLine[]; warnings: ImportWarning[] } {
  const numbered = [...ndjsonLines(text)];
  const lines: LogLine[] = [];
  const warnings: ImportWarning[] = [];
  numbered.forEach((line, index) => {
    const last = index === numbered.length - 1;
    if (last && !/\n\s*$/.test(text) && tryParseJson(line.text) === undefined) {
      warnings.push({ line: line.line, message: "torn last line (cut short while written) dropped" });
      return;
    }
    lines.push({ line: line.line, value: parseLine(line) });
  });
  if (lines.length === 0) throw lineError(1, "empty file: expected an agent's session log");
  return { lines, warnings };
}

export { isRecord };

export function asString(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** `value` when it is an ISO 8601 timestamp our entries accept, else `fallback`. */
export function entryTimestamp(value: unknown, fallback: string): string {
  return typeof value === "string" && Timestamp.safeParse(value).success ? value : fallback;
}

/** A session id made from a source session id, or a refusal naming the line it came from. */
export function derivedSessionId(prefix: string, sourceId: string, line: number): string {
  const id = `${prefix}-${sourceId}`;
  if (!isValidId(id)) {
    throw lineError(
      line,
      `session id ${JSON.stringify(sourceId)} cannot name a session (1-128 of A-Z a-z 0-9 . _ : -)`,
    );
  }
  return id;
}

export function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0;
}

/** An agent's reasoning effort as our thinking level (`none` is off); undefined when unknown. */
export function thinkingLevel(effort: unknown): ThinkingLevel | undefined {
  if (effort === "none") return "off";
  return (THINKING_LEVELS as readonly unknown[]).includes(effort) ? (effort as ThinkingLevel) : undefined;
}

/** `record` without its undefined fields. */
export function defined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
}

/** `record` without `keys` (shallow). */
export function without(record: Record<string, unknown>, ...keys: string[]): Record<string, unknown> {
  // Entries, not assignments: a key named `__proto__` stays a key.
  return Object.fromEntries(Object.entries(record).filter(([key]) => !keys.includes(key)));
}

/** An image from a base64 data URL, as our image content. */
export function dataUrlImage(url: unknown): ImageContent | undefined {
  const image = typeof url === "string" ? parseDataUrl(url) : undefined;
  return image && { type: "image", mimeType: image.mimeType, data: image.data };
}

/**
 * An agent's log as an imported session: the agent's own fields under `agent` in the metadata
 * (those it did not write left out), and its working folder under `pi` too, where pi export finds it.
 */
export function agentSession(
  agent: string,
  header: {
    id: string;
    createdAt: string;
    /** The name, and the line that gave it (`entryId`: its entry's id, when not `l<line>`). */
    name?: { value: string; line: number; entryId?: string } | undefined;
    systemPrompt?: string | undefined;
  },
  fields: Record<string, unknown>,
  read: { entries: SessionEntry[]; lines: number[]; leafId: string | null },
  warnings: ImportWarning[],
): ImportedSession {
  const { id, createdAt, systemPrompt } = header;
  const name = header.name?.value;
  // The line that named the session is the entry named after it, when it is one of its own.
  const namedBy = header.name && (header.name.entryId ?? `l${header.name.line}`);
  const metadata = { [agent]: defined(fields), pi: { cwd: asString(fields.cwd) ?? "" } };
  return {
    header: {
      id,
      createdAt,
      metadata,
      ...(name === undefined ? {} : { name }),
      ...(systemPrompt ? { systemPrompt } : {}),
    },
    entries: checkImportEntries(read.entries, read.lines),
    leafId: read.leafId,
    warnings,
    ...(namedBy !== undefined && read.entries.some((e) => e.id === namedBy) ? { namedBy } : {}),
  };
}
