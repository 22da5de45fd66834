/*
 * References to blobs as they stand in JSON text (a context, Server-Sent Events): a reference is a
 * JSON string of fixed length, its NUL escaped, so it is found, and answered, without parsing the
 * text around it.
 */

/** A reference as it stands in JSON text: the NUL escaped, within quotes; always REF_JSON_CHARS long. */
export const REF_IN_JSON = /"\\u0000blob:(b64|txt):([0-9a-f]{64})"/g;
export const REF_JSON_CHARS = 81;
const REF_OPENING = '"\\u0000blob:';
const REF_REST = /^(b(6(4)?)?|t(x(t)?)?|(b64|txt):[0-9a-f]{0,64})?$/;

/**
 * Where JSON text ends in the first part of a reference (cut between two chunks of a stream), or
 * its length. Only such a part waits for the next chunk: anything else is passed on at once, so a
 * stream's events are never held back.
 */
export function partialRefAt(text: string): number {
  for (let i = Math.max(0, text.length - (REF_JSON_CHARS - 1)); i < text.length; i++) {
    if (text[i] !== '"') continue;
    const tail = text.slice(i);
    if (
      tail.length <= REF_OPENING.length
        ? REF_OPENING.startsWith(tail)
        : tail.startsWith(REF_OPENING) && REF_REST.test(tail.slice(REF_OPENING.length))
    ) {
      return i;
    }
  }
  return text.length;
}

/** The references of JSON text, and the text with each replaced. */
export async function replaceInJson(
  text: string,
  replacement: (refs: string[]) => Promise<Map<string, string>>,
): Promise<string> {
  const found = refsInJson(text);
  if (found.size === 0) return text;
  const values = await replacement([...found]);
  return text.replace(REF_IN_JSON, (whole, kind: string, sha: string) => {
    const value = values.get(`\u0000blob:${kind}:${sha}`);
    return value === undefined ? whole : JSON.stringify(value);
  });
}

/** The references (as entries hold them) in JSON text. */
export function refsInJson(text: string): Set<string> {
  const found = new Set<string>();
  for (const match of text.matchAll(REF_IN_JSON)) found.add(`\u0000blob:${match[1]}:${match[2]}`);
  return found;
}

/**
 * A stream of JSON text with its references answered as it passes (`answers` gives what each
 * becomes): a chunk ending in the first part of a reference keeps that part for the next one.
 */
export function answerRefsInStream(
  stream: ReadableStream<Uint8Array>,
  answers: (refs: string[]) => Promise<Map<string, string>>,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let held = "";
  return stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      async transform(chunk, controller) {
        const text = held + decoder.decode(chunk, { stream: true });
        const end = partialRefAt(text);
        held = text.slice(end);
        const ready = text.slice(0, end);
        if (ready) controller.enqueue(encoder.encode(await replaceInJson(ready, answers)));
      },
      async flush(controller) {
        const rest = held + decoder.decode();
        if (rest) controller.enqueue(encoder.encode(await replaceInJson(rest, answers)));
      },
    }),
  );
}

/** Characters of a string one chunk of its stream carries. */
const SLICE_CHARS = 1024 * 1024;

/** A string in slices for a stream, never cut between the two halves of a surrogate pair. */
export function* slices(text: string): Generator<string> {
  for (let start = 0; start < text.length; ) {
    let end = Math.min(text.length, start + SLICE_CHARS);
    if (end < text.length && (text.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--;
    yield text.slice(start, end);
    start = end;
  }
}
