import { mkdir, mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { isValidId, SessionError } from "../core";

/*
 * Where a JSONLRepo keeps its files under its root folder (SPEC §9):
 *
 *   sessions/<id>/metadata.json   the header and the figures `list` shows
 *   sessions/<id>/entries.jsonl   one native entry per line, in append order
 *   sessions/<id>/lock            who has the session open for writing
 *   tmp/                          sessions being created, and deleted ones being removed
 *
 * `tmp` sits beside `sessions` so that moving a folder between them is one atomic rename.
 */

export const METADATA_FILE = "metadata.json";
export const ENTRIES_FILE = "entries.jsonl";
export const LOCK_FILE = "lock";

export function sessionsFolder(root: string): string {
  return join(root, "sessions");
}

/** Whether `name` may be a session folder: a valid id that is not a relative path segment. */
export function isSessionFolderName(name: string): boolean {
  return isValidId(name) && name !== "." && name !== "..";
}

/** The folder of session `id`. Ids become path segments, so every path is built through this check. */
export function sessionFolder(root: string, id: string): string {
  if (!isSessionFolderName(id)) {
    throw new SessionError(
      "invalid_request",
      'session id must be 1-128 characters of A-Z a-z 0-9 . _ : -, and not "." or ".."',
      { id },
    );
  }
  return join(sessionsFolder(root), id);
}

/** A fresh, empty folder under `tmp/`, on the same file system as `sessions/`. */
export async function scratchFolder(root: string, purpose: string): Promise<string> {
  const tmp = join(root, "tmp");
  await mkdir(tmp, { recursive: true });
  return mkdtemp(join(tmp, `${purpose}-`));
}
