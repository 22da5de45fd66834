import { SessionError } from "./errors";

/** Deepest object/array nesting an entry may have; deeper input is refused, not recursed into. */
export const MAX_JSON_DEPTH = 128;

/**
 * Throws `invalid_request` when `value` nests deeper than `max` levels (`MAX_JSON_DEPTH`; less for
 * a value that an entry will hold deeper down), checked without recursion.
 */
export function assertJsonDepth(value: unknown, what = "entry", max = MAX_JSON_DEPTH): void {
  if (nestsDeeperThan(value, max)) {
    throw new SessionError("invalid_request", `${what} nests deeper than ${max} levels`);
  }
}

/** Whether `value` nests deeper than `max` levels of objects and arrays, found without recursion. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  return walkJson(value, max, false) !== undefined;
}

/**
 * What is wrong with a value parsed from JSON text, if anything: nesting deeper than `max` levels,
 * or a number past the largest a double holds (parsed as Infinity, it would be stored as null).
 */
export function parsedJsonProblem(value: unknown, max = MAX_JSON_DEPTH): string | undefined {
  return walkJson(value, max, true);
}

/** Throws `invalid_request` when JSON text parsed into `value` has a `parsedJsonProblem`. */
export function assertParsedJson(value: unknown, what: string, max = MAX_JSON_DEPTH): void {
  const problem = parsedJsonProblem(value, max);
  if (problem !== undefined) throw new SessionError("invalid_request", `${what} ${problem}`);
}

/** The first problem of `value` (its depth, and its numbers when `numbers`), found without recursion. */
function walkJson(value: unknown, max: number, numbers: boolean): string | undefined {
  const tooLarge = "holds a number too large to store";
  if (numbers && typeof value === "number" && !Number.isFinite(value)) return tooLarge;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (current === null || typeof current !== "object") continue;
    if (depth >= max) return `nests deeper than ${max} levels`;
    const children = Array.isArray(current) ? current : Object.values(current);
    for (const child of children) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
      else if (numbers && typeof child === "number" && !Number.isFinite(child)) return tooLarge;
    }
  }
  return undefined;
}

/** A `"__proto__":` key in JSON text, its letters escaped or not. */
const PROTO_KEY =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/g;

function protoKeys(text: string): number {
  return text.match(PROTO_KEY)?.length ?? 0;
}

/**
 * Throws `invalid_request` when a key named `__proto__` in the JSON `text` is missing from
 * `validated`, the value its schema made of it: schemas rebuild the objects whose fields they know
 * (and drop such a key there without a word), while values they do not look into keep it as data.
 * Costs one scan of the text when it has no such key.
 */
export function assertProtoKeysKept(text: string, validated: unknown, what: string): void {
  const sent = protoKeys(text);
  if (sent === 0 || protoKeys(JSON.stringify(validated)) >= sent) return;
  throw new SessionError(
    "invalid_request",
    `${what} has a key named __proto__ where it cannot be kept (in a message, entry or metadata object itself; inside their values it is kept as data)`,
  );
}

/** The value of JSON `text`, or undefined when it is not JSON (no JSON text stands for undefined). */
export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * JSON text found inside a field (a tool call's `arguments`, a cursor, a signature) as a value,
 * held to the same rules as a body (`assertJsonDepth`); `undefined` when it is not JSON.
 */
export function parseJsonField(text: string, what: string): unknown {
  const value = tryParseJson(text);
  assertJsonDepth(value, what);
  return value;
}

/**
 * JSON with object keys sorted at every level: two values are the same content exactly when their
 * canonical forms are equal. Undefined properties are dropped, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? "null" : canonicalJson(item))).join(",")}]`;
  }
  const record = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(record).sort()) {
    const item = record[key];
    if (item === undefined || typeof item === "function") continue;
    parts.push(`${JSON.stringify(key)}:${canonicalJson(item)}`);
  }
  return `{${parts.join(",")}}`;
}

const NON_ASCII = /[\u0080-\uffff]/;

/** Bytes of `text` encoded as UTF-8, counted without encoding it. */
export function utf8Length(text: string): number {
  // Most entries are ASCII: a native scan answers for them.
  if (!NON_ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
