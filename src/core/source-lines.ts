import { canonicalJson } from "./json";
import { isRecord } from "./providers/incoming";

/*
 * What an entry made from an agent's log lines keeps of them, so that the lines can be written
 * back exactly as they were: each line without what the entry holds (`sourceLines`), and the
 * 1-based line of the file each stood at (`sourceLineNumbers`; a custom entry, whose `data` is its
 * whole line, records its line there too).
 *
 * Inside a kept line's content, a block the entry holds is a hole: an object without `type` that
 * holds only the block's fields the entry cannot give back (most often none: `{}`). A block the
 * entry holds but cannot give back as it was is kept whole. A block kept as written that could be
 * read as a hole (an object without `type`, or of the escape type itself) is wrapped in
 * `{type: "cf-sessions:kept", block}`.
 */

/** The fields an entry made from source lines records them in. */
export interface SourceFields {
  sourceLines?: unknown[];
  sourceLineNumbers?: number[];
}

const KEPT = "cf-sessions:kept";

export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** Whether a kept content item is a hole (a block the entry holds). */
export function isHole(item: unknown): item is Record<string, unknown> {
  return isRecord(item) && !Object.hasOwn(item, "type");
}

/** A block kept as written, wrapped when it could be read as a hole. */
export function keptItem(item: unknown): unknown {
  return isRecord(item) && (!Object.hasOwn(item, "type") || item.type === KEPT)
    ? { type: KEPT, block: item }
    : item;
}

/** A kept item as written (a wrapped one unwrapped); holes are filled by the caller. */
export function writtenItem(item: unknown): unknown {
  return isRecord(item) && item.type === KEPT ? item.block : item;
}

/**
 * The hole standing for `block`, given the block the entry gives back (`rebuilt`): the block's
 * fields that `rebuilt` does not give as they are (and always those named in `always`). Undefined
 * when `rebuilt` has another type or a field the block lacks: then the block is kept whole.
 */
export function holeFor(
  block: Record<string, unknown>,
  rebuilt: Record<string, unknown>,
  always: readonly string[] = [],
): Record<string, unknown> | undefined {
  if (block.type !== rebuilt.type) return undefined;
  for (const key of Object.keys(rebuilt)) if (!Object.hasOwn(block, key)) return undefined;
  return Object.fromEntries(
    Object.entries(block).filter(
      ([key, value]) => key !== "type" && (always.includes(key) || !sameJson(value, rebuilt[key])),
    ),
  );
}

/** A hole filled: the block given back, with the hole's fields over it. */
export function filledHole(hole: Record<string, unknown>, rebuilt: Record<string, unknown>): unknown {
  return Object.fromEntries([...Object.entries(rebuilt), ...Object.entries(hole)]);
}

/** The source lines an entry keeps, with their line numbers; undefined when it keeps none. */
export function sourceOf(
  entry: SourceFields,
): Array<{ line: Record<string, unknown>; number: number }> | undefined {
  const { sourceLines, sourceLineNumbers } = entry;
  if (!Array.isArray(sourceLines) || !Array.isArray(sourceLineNumbers)) return undefined;
  if (sourceLines.length !== sourceLineNumbers.length || sourceLines.length === 0) return undefined;
  if (!sourceLines.every(isRecord) || !sourceLineNumbers.every((n) => Number.isInteger(n))) return undefined;
  return sourceLines.map((line, index) => ({
    line: line as Record<string, unknown>,
    number: sourceLineNumbers[index] as number,
  }));
}
