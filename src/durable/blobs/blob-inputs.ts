import { mentionsBlobRef, parseBlobRef } from "../../core/blob-refs";
import { SessionError } from "../../core/errors";
import { utf8Length } from "../../core/json";

/*
 * The inputs of a write, before it is planned: whether they hold values large enough to be blobs
 * or references a client wrote, and the references read back into values.
 */

/** What the inputs of a write hold: values large enough to be blobs, references. */
export function scan(value: unknown, minBytes: number, found: { large: boolean; refs: boolean }): void {
  if (typeof value === "string") {
    if (mentionsBlobRef(value)) found.refs = true;
    else if (!found.large && value.length * 3 >= minBytes && utf8Length(value) >= minBytes)
      found.large = true;
  } else if (Array.isArray(value)) {
    for (const item of value) scan(item, minBytes, found);
  } else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (mentionsBlobRef(key)) found.refs = true;
      scan(item, minBytes, found);
    }
  }
}

/** Every reference among the strings of `value`; `invalid_request` for one that is malformed. */
export function collectRefs(value: unknown, refs: Set<string>): void {
  if (typeof value === "string") {
    if (!mentionsBlobRef(value)) return;
    if (!parseBlobRef(value)) {
      throw new SessionError(
        "invalid_request",
        "a string opens like a blob reference (U+0000 then blob:) but is not one: \\u0000blob:<b64|txt>:<sha256 hex>",
      );
    }
    refs.add(value);
  } else if (Array.isArray(value)) {
    for (const item of value) collectRefs(item, refs);
  } else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (mentionsBlobRef(key))
        throw new SessionError("invalid_request", "a key cannot hold a blob reference");
      collectRefs(item, refs);
    }
  }
}

/** `value` with each reference replaced by its value (copied where something is replaced). */
export function replaceRefs(value: unknown, values: ReadonlyMap<string, string>): unknown {
  if (typeof value === "string") return values.get(value) ?? value;
  if (Array.isArray(value)) return value.map((item) => replaceRefs(item, values));
  if (typeof value === "object" && value !== null) {
    // Entries, not assignments: a key may be `__proto__`.
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replaceRefs(item, values)]));
  }
  return value;
}
