import { v7 as uuidv7 } from "uuid";
import { SessionError } from "./errors";

/**
 * Entry and session ids: 1–128 chars of `A-Z a-z 0-9 . _ : -` (pi's 8-hex ids fit), not only dots
 * (`.` and `..` would name folders in a file backend).
 */
export const ID_PATTERN = /^(?!\.+$)[A-Za-z0-9._:-]{1,128}$/;
/** The start of an id, as a listing filters by: the same characters, dots alone too. */
export const ID_PREFIX_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export function isValidId(value: unknown): value is string {
  return typeof value === "string" && ID_PATTERN.test(value);
}

/**
 * Session ids name objects, folders and URL segments, so every way in checks them here: an
 * `invalid_request` for anything but the id syntax.
 */
export function checkSessionId(id: string): string {
  if (!isValidId(id)) {
    throw new SessionError("invalid_request", "session id must be 1-128 characters of A-Z a-z 0-9 . _ : -", {
      id,
    });
  }
  return id;
}

// Random bytes drawn in bulk: one getRandomValues call per 1,024 ids instead of one per id
// (a batch of 1,000 entries spent more time there than anywhere else).
const pool = new Uint8Array(16 * 1024);
let pooled = pool.length;

// Ids made in the same millisecond count up from a random start, so they sort in creation
// order (as uuid's own v7 does).
let lastMs = Number.NEGATIVE_INFINITY;
let sequence = 0;

/** A fresh id, sorting in creation order (UUIDv7). */
export function newId(): string {
  if (pooled >= pool.length) {
    crypto.getRandomValues(pool);
    pooled = 0;
  }
  const random = pool.subarray(pooled, pooled + 16);
  pooled += 16;
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    sequence =
      (((random[6] as number) & 0x7f) << 24) |
      ((random[7] as number) << 16) |
      ((random[8] as number) << 8) |
      (random[9] as number);
  } else {
    sequence = (sequence + 1) | 0;
    if (sequence === 0) lastMs++;
  }
  return uuidv7({ random, msecs: lastMs, seq: sequence });
}

export function nowIso(): string {
  return new Date().toISOString();
}
