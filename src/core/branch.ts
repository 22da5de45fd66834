import type { EntryRef } from "./append";
import { SessionError } from "./errors";

/**
 * The rows of the path root → `start`, following parents through `lookup` (an index of the
 * session's entries without their payloads). A `leaf` record is never on a path, so naming one is
 * `not_found`, like naming no entry at all.
 */
export function branchRows<T extends EntryRef>(start: string, lookup: (id: string) => T | undefined): T[] {
  const first = lookup(start);
  if (!first || first.type === "leaf") {
    throw new SessionError("not_found", `entry ${start} does not exist`, { id: start });
  }
  const path: T[] = [];
  for (let row: T | undefined = first; row; row = row.parentId === null ? undefined : lookup(row.parentId)) {
    path.push(row);
  }
  return path.reverse();
}

/** Whether `ancestorId` is `fromId` or one of its ancestors, following parents through `lookup`. */
export function onBranch(
  ancestorId: string,
  fromId: string,
  lookup: (id: string) => EntryRef | undefined,
): boolean {
  for (let current: string | null = fromId; current !== null; current = lookup(current)?.parentId ?? null) {
    if (current === ancestorId) return true;
  }
  return false;
}
