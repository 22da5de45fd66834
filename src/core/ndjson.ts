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

const NEWLINE = 0x0a;

/**
 * A line's bytes as text, checked as UTF-8, without a byte order mark or a closing `\r`; a byte that
 * is not UTF-8 fails the line (`invalid_request`). No UTF-8 sequence holds a newline byte, so a
 * file cut at those bytes is checked a line at a time.
 */
export function decodeNdjsonLine(bytes: Uint8Array, line: number): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes).replace(/\r$/, "");
  } catch {
    throw lineError(line, "not valid UTF-8");
  }
}

/**
 * An NDJSON file's bytes as text, checked as UTF-8: a byte order mark before its first line is
 * dropped, and a byte that is not UTF-8 fails the file at its line (`invalid_request`), never
 * turned into U+FFFD.
 */
export function decodeNdjson(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    // Only now is it worth finding the line: each is decoded on its own until one fails.
    let line = 1;
    for (let start = 0; start <= bytes.byteLength; line++) {
      const newline = bytes.indexOf(NEWLINE, start);
      const end = newline < 0 ? bytes.byteLength : newline;
      decodeNdjsonLine(bytes.subarray(start, end), line);
      start = end + 1;
    }
    throw new SessionError("invalid_request", "not valid UTF-8");
  }
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
