import { v7 as uuidv7 } from "uuid";

/**
 * Entry and session ids: 1–128 chars of `A-Z a-z 0-9 . _ : -` (pi's 8-hex ids fit), not only dots
 * (`.` and `..` would name folders in a file backend).
 */
export const ID_PATTERN = /^(?!\.+$)[A-Za-z0-9._:-]{1,128}$/;

export function isValidId(value: unknown): value is string {
  return typeof value === "string" && ID_PATTERN.test(value);
}

/** A fresh, time-ordered id (UUIDv7). */
export function newId(): string {
  return uuidv7();
}

export function nowIso(): string {
  return new Date().toISOString();
}
