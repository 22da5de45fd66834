/*
 * Text as providers accept it. A lone UTF-16 surrogate (half of an emoji cut by a byte limit, a
 * tool's binary output) is valid in a JS string but not in UTF-8 JSON: providers answer 400, so
 * it is removed wherever text goes out. Paired surrogates (emoji) are kept.
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const ANY_SURROGATE = /[\uD800-\uDFFF]/;

export function stripLoneSurrogates(text: string): string {
  // Most text holds no surrogate at all; a native scan answers for it without rebuilding.
  if (!ANY_SURROGATE.test(text)) return text;
  return text.replace(LONE_SURROGATE, "");
}

/** `value` with lone surrogates stripped from every string in it; the same object when none had one. */
export function stripLoneSurrogatesDeep<T>(value: T): T {
  if (typeof value === "string") return stripLoneSurrogates(value) as T;
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, index) => {
      const clean = stripLoneSurrogatesDeep(item);
      if (clean !== item) {
        copy ??= [...value];
        copy[index] = clean;
      }
    });
    return (copy ?? value) as T;
  }
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const clean = stripLoneSurrogatesDeep(item);
    changed ||= clean !== item;
    return [key, clean] as const;
  });
  // Entries, not assignments: a key named `__proto__` stays a key.
  return (changed ? Object.fromEntries(entries) : value) as T;
}

/** A data URL for base64 bytes, as OpenAI's image inputs take them. */
export function dataUrl(mimeType: string, data: string): string {
  return `data:${mimeType};base64,${data}`;
}

/** Base64 bytes and their media type out of a `data:` URL; undefined for any other URL. */
export function parseDataUrl(url: string): { mimeType: string; data: string } | undefined {
  const match = /^data:([^;,]+)(?:;[^;,=]+=[^;,]*)*;base64,(.*)$/s.exec(url);
  if (!match) return undefined;
  return { mimeType: match[1] as string, data: match[2] as string };
}
