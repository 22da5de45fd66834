import { SessionError } from "./errors";
import { parsedJsonProblem, tryParseJson } from "./json";

/** One non-blank line of a file, with its 1-based line number. */
export interface NumberedLine {
  line: number;
  text: string;
}

/** The non-blank lines of NDJSON text (`\n` or `\r\n`), numbered from 1. */
export function* ndjsonLines(text: string): Generator<NumberedLine> {
  let start = 0;
  let line = 1;
  while (start <= text.length) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    const raw = text.slice(start, end);
    const trimmed = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (trimmed.trim()) yield { line, text: trimmed };
    start = end + 1;
    line++;
  }
}

/** A file refused at a line: `invalid_request`, naming the 1-based line. */
export function lineError(
  line: number,
  message: string,
  details: Record<string, unknown> = {},
): SessionError {
  return new SessionError("invalid_request", `line ${line}: ${message}`, { line, ...details });
}

export function parseLine(line: NumberedLine): Record<string, unknown> {
  const value = tryParseJson(line.text);
  if (value === undefined) throw lineError(line.line, "not valid JSON (truncated or malformed)");
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw lineError(line.line, "not a JSON object");
  }
  const problem = parsedJsonProblem(value);
  if (problem !== undefined) throw lineError(line.line, problem);
  return value as Record<string, unknown>;
}
