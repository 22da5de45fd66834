import { SessionError } from "../../core/errors";

/*
 * JSON mode (PROTOCOL.md 9.1): an append's body is one JSON value, and a top-level array is
 * flattened once, each element a message of its own. Each message is kept as the text it was
 * sent as (spaces around it trimmed), so numbers and escapes come back exactly as written.
 */

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/** The messages of a JSON body, as UTF-8 bytes each. An empty array gives none. */
export function jsonMessages(body: Uint8Array): Uint8Array[] {
  let text: string;
  try {
    text = decoder.decode(body);
    JSON.parse(text);
  } catch {
    throw new SessionError("invalid_request", "the body is not valid JSON");
  }
  const trimmed = text.trim();
  const values = trimmed.startsWith("[") ? arrayElements(trimmed) : [trimmed];
  return values.map((value) => encoder.encode(value));
}

/** The elements of a valid JSON array's text, each trimmed; found by tracking strings and nesting. */
function arrayElements(array: string): string[] {
  const elements: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 1;
  for (let i = 1; i < array.length; i++) {
    const char = array[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === "[" || char === "{") depth++;
    else if ((char === "]" || char === "}") && depth > 0) depth--;
    else if (depth === 0 && (char === "," || char === "]")) {
      const element = array.slice(start, i).trim();
      if (element) elements.push(element);
      start = i + 1;
    }
  }
  return elements;
}
