import { sha256Hex } from "./bytes";

/*
 * The UUIDs coding agents name sessions and lines with. A session or entry whose id is not one
 * gets a UUID made from it (name-based, version 8), so exporting it again names it the same.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === "string" && UUID.test(value);
}

/** A UUID made from `name`: the same name always gives the same UUID. */
export async function uuidFrom(name: string): Promise<string> {
  const digest = await sha256Hex(name);
  const variant = ((Number.parseInt(digest[16] as string, 16) & 0x3) | 0x8).toString(16);
  return [
    digest.slice(0, 8),
    digest.slice(8, 12),
    `8${digest.slice(13, 16)}`,
    `${variant}${digest.slice(17, 20)}`,
    digest.slice(20, 32),
  ].join("-");
}

/**
 * Whether a UUID is one `uuidFrom` makes (version 8). Coding agents name their lines with random
 * ones (version 4), so a line of such a UUID was written by an export.
 */
export function isMadeUuid(value: string): boolean {
  return isUuid(value) && value[14] === "8";
}

/** `id` when it is a UUID, else a UUID made from it. */
export async function uuidFor(id: string): Promise<string> {
  return isUuid(id) ? id : await uuidFrom(id);
}
