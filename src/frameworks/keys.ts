import { SessionError } from "../core";
import { sha256Hex } from "../core/bytes";

/*
 * Frameworks name their threads, sessions and checkpoints with any string; ours are 1-128
 * characters of `A-Z a-z 0-9 . _ : -`. A framework's name becomes one of ours by an escape (one
 * to one, so two names never meet), or by a digest when the escaped form is too long, so the same
 * name always finds the same session or entry.
 */

const MAX_ID = 128;
const KEPT = /[A-Za-z0-9-]/;
const encoder = new TextEncoder();

/** `value` in id characters: `A-Z a-z 0-9 -` stay, every other UTF-8 byte becomes `_` and two hex digits. */
function encodeKey(value: string): string {
  let out = "";
  for (const char of value) {
    if (KEPT.test(char)) out += char;
    else for (const byte of encoder.encode(char)) out += `_${byte.toString(16).padStart(2, "0")}`;
  }
  return out;
}

/**
 * The id `prefix` then the escaped `parts` joined by `:` (an escaped part holds no `:`), or, when
 * that is over 128 characters, `prefix` then `_h` and 64 hex digits of the parts' SHA-256 (no
 * escaped part starts with `_h`: an escape is `_` and hex digits).
 */
export async function keyedId(prefix: string, parts: readonly string[]): Promise<string> {
  const id = prefix + parts.map(encodeKey).join(":");
  if (id.length > 0 && id.length <= MAX_ID) return id;
  const hashed = `${prefix}_h${await sha256Hex(JSON.stringify(parts))}`;
  if (hashed.length > MAX_ID) {
    throw new SessionError("invalid_request", `the id prefix "${prefix}" leaves no room for a digest`);
  }
  return hashed;
}
