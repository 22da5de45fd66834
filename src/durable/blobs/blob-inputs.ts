import { mentionsBlobRef, parseBlobRef } from "../../core/blob-refs";
import { SessionError } from "../../core/errors";
import { utf8Length } from "../../core/json";
import { MAX_BODY_BYTES, MAX_ENTRY_BYTES } from "../../core/limits";
import { isProviderEntry } from "../../core/providers/provider-entries";
import { REF_JSON_CHARS } from "./blob-text";

/*
 * The inputs of a write, before it is planned: whether they hold values large enough to be blobs
 * or references a client wrote, how large they are once those are read back, and the references
 * read back into values.
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

/**
 * Every reference among the strings of `value`, with how often it appears; `invalid_request` for
 * one that is malformed.
 */
export function collectRefs(value: unknown, refs: Map<string, number>): void {
  if (typeof value === "string") {
    if (!mentionsBlobRef(value)) return;
    if (!parseBlobRef(value)) {
      throw new SessionError(
        "invalid_request",
        "a string opens like a blob reference (U+0000 then blob:) but is not one: \\u0000blob:<b64|txt>:<sha256 hex>",
      );
    }
    refs.set(value, (refs.get(value) ?? 0) + 1);
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

/**
 * Refuses inputs that would be too large once their references are read back, before any is read:
 * past what a body carries (`payload_too_large`), an entry holds (`entry_too_large`; a provider's
 * message, which may become several entries, is bounded as a whole only) or `withinRoom` takes.
 * `refs` are each input's references with their counts, `sizes` each blob's size in an entry (a
 * reference stands there as REF_JSON_CHARS). A few bytes of references must not make a write of
 * gigabytes.
 */
export function checkReadBackSize(
  inputs: readonly unknown[],
  refs: readonly ReadonlyMap<string, number>[],
  sizes: ReadonlyMap<string, number>,
  withinRoom?: (bytes: number) => void,
): void {
  let total = 0;
  inputs.forEach((input, index) => {
    let bytes = utf8Length(JSON.stringify(input));
    for (const [ref, count] of refs[index] ?? []) bytes += count * ((sizes.get(ref) ?? 0) - REF_JSON_CHARS);
    if (bytes > MAX_ENTRY_BYTES && !isProviderEntry(input)) {
      const id = (input as { id?: unknown } | null)?.id;
      throw new SessionError(
        "entry_too_large",
        `entry ${typeof id === "string" ? id : index} would be ${bytes} bytes serialized with its blobs read back; the limit is ${MAX_ENTRY_BYTES}`,
        { ...(typeof id === "string" ? { id } : { index }), bytes, limit: MAX_ENTRY_BYTES },
      );
    }
    total += bytes;
  });
  if (total > MAX_BODY_BYTES) {
    throw new SessionError(
      "payload_too_large",
      `the entries would be ${total} bytes with their blobs read back; a write carries at most ${MAX_BODY_BYTES}`,
      { bytes: total, limit: MAX_BODY_BYTES },
    );
  }
  withinRoom?.(total);
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
