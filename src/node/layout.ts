import { mkdir, mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { checkSessionId } from "../core/ids";

/*
 * Where a JSONLRepo keeps its files under its root folder:
 *
 *   sessions/<id>/metadata.json   the header and the figures `list` shows
 *   sessions/<id>/entries.jsonl   one native entry per line, in append order
 *   sessions/<id>/last-batch      where the last append of several lines starts and ends
 *   sessions/<id>/lock            who has the session open for writing
 *   tmp/                          sessions being created, and deleted ones being removed
 *
 * `tmp` sits beside `sessions` so that moving a folder between them is one atomic rename.
 */

export const METADATA_FILE = "metadata.json";
export const ENTRIES_FILE = "entries.jsonl";
export const LAST_BATCH_FILE = "last-batch";
export const LOCK_FILE = "lock";

export function sessionsFolder(root: string): string {
  return join(root, "sessions");
}

/** The folder of session `id`. Ids become path segments, so every path is built through this check. */
export function sessionFolder(root: string, id: string): string {
  return join(sessionsFolder(root), checkSessionId(id));
}

/** A fresh, empty folder under `tmp/`, on the same file system as `sessions/`. */
export async function scratchFolder(root: string, purpose: string): Promise<string> {
  const tmp = join(root, "tmp");
  await mkdir(tmp, { recursive: true });
  return mkdtemp(join(tmp, `${purpose}-`));
}
