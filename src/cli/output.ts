/** Where the command line writes: results to stdout, errors and progress to stderr. */
export interface Output {
  out(text: string): void;
  /** Text to stdout as it is, without a line end (an answer's text as it is generated). */
  write(text: string): void;
  /**
   * Streamed text to stdout as it is, resolving once stdout takes more: a slow reader holds the
   * stream back rather than the stream piling up in memory.
   */
  stream(text: string): Promise<void>;
  err(text: string): void;
  /** Whether stderr is a terminal (progress redraws one line there). */
  isTTY: boolean;
}

/** A command line used wrongly: one line on stderr and exit code 2. */
export class UsageError extends Error {}

export function fail(message: string): never {
  throw new UsageError(message);
}

/** A flag's value, one of `allowed` (undefined when the flag is not given); anything else is a usage error. */
export function oneOf<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined || (allowed as readonly string[]).includes(value)) return value as T | undefined;
  fail(`--${flag} is ${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)}, not ${value}`);
}

/**
 * What a terminal obeys rather than shows: the C0 controls (line breaks, tabs and escape among
 * them), DEL, the C1 controls, the Unicode line and paragraph separators, and the bidirectional
 * marks, embeddings, overrides and isolates (which show the rest of a line reordered).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
const TERMINAL_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * `text` as a terminal shows it on one line, each control character written as its escape
 * (`\u001b`). Everything the service sends is printed through it in human output (names, labels,
 * messages, ids): text stored by anyone can neither retitle the terminal, clear it, move its
 * cursor, reorder what follows nor start a line that looks like output of its own.
 */
export function terminalSafe(text: string): string {
  return text.replace(TERMINAL_CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** `text` on one line for a terminal (its whitespace runs one space, see `terminalSafe`), cut to `max` characters. */
export function oneLine(text: string, max = 100): string {
  const flat = terminalSafe(text.replace(/\s+/g, " ").trim());
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * Rows of cells as aligned columns, each as wide as its widest cell (numbers in the columns named
 * by `right` aligned right); the last column is not padded.
 */
export function columns(rows: ReadonlyArray<readonly string[]>, right: readonly number[] = []): string[] {
  const length = (cell: string) => [...cell].length;
  const widths: number[] = [];
  for (const row of rows)
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, length(cell));
  return rows.map((row) =>
    row
      .map((cell, i) => {
        const pad = " ".repeat((widths[i] ?? 0) - length(cell));
        if (right.includes(i)) return pad + cell;
        return i === row.length - 1 ? cell : cell + pad;
      })
      .join("  ")
      .trimEnd(),
  );
}
