import { listCursor, listedAfter } from "../../core/info";
import { sessionsPageLimit } from "../../core/paging";
import type { ListOptions, SessionInfo, SessionPage } from "../../core/session-schemas";
import type { Sql } from "../sql";

/*
 * The listing of one directory shard: its sessions newest first (by last update, or by creation),
 * from the cursor on, optionally only those of an id prefix or a project, read through the
 * listing's indexes a row at a time so that the rows past the page are never read.
 */

/** A row of the listing, with the key it is ordered by. */
type ListingRow = { id: string; sort_key: string; info: string };

/**
 * A page of the shard's listing: its first `limit` sessions after the cursor, or fewer when their
 * infos would pass `maxChars` of JSON (one at least), so that no answer grows with what sessions
 * hold (a system prompt, metadata).
 */
export function listShard(sql: Sql, options: ListOptions, maxChars: number): SessionPage {
  const limit = sessionsPageLimit(options);
  const cursor = options.cursor ? listedAfter(options.cursor, options) : undefined;
  const place: Place = {
    byCreated: options.order === "created",
    key: cursor?.key ?? "\uffff",
    after: cursor?.id ?? "\uffff",
    prefix: options.prefix ?? "",
  };
  const rows =
    options.project === undefined
      ? listAll(sql, place, limit + 1)
      : listProject(sql, place, limit + 1, options.project);
  const page: ListingRow[] = [];
  let chars = 0;
  let more = false;
  for (const row of rows) {
    if (page.length === limit || (page.length > 0 && chars + row.info.length > maxChars)) {
      more = true;
      break;
    }
    page.push(row);
    chars += row.info.length;
  }
  const last = page[page.length - 1];
  return {
    sessions: page.map((row) => JSON.parse(row.info) as SessionInfo),
    nextCursor: more && last ? listCursor(options, last.sort_key, last.id) : null,
  };
}

/** Where a page starts: the order, the cursor's key and id, and the ids' prefix. */
interface Place {
  byCreated: boolean;
  key: string;
  after: string;
  prefix: string;
}

/** The listing's rows after the cursor, newest first. */
function listAll(sql: Sql, { byCreated, key, after, prefix }: Place, limit: number) {
  // Prefixes are measured by SQLite's `length`, in characters as `substr` counts them.
  return byCreated
    ? sql<ListingRow>`
        SELECT id, created_at AS sort_key, info FROM sessions
        WHERE (created_at < ${key} OR (created_at = ${key} AND id < ${after}))
          AND substr(id, 1, length(${prefix})) = ${prefix}
        ORDER BY created_at DESC, id DESC LIMIT ${limit}`
    : sql<ListingRow>`
        SELECT id, updated_at AS sort_key, info FROM sessions
        WHERE (updated_at < ${key} OR (updated_at = ${key} AND id < ${after}))
          AND substr(id, 1, length(${prefix})) = ${prefix}
        ORDER BY updated_at DESC, id DESC LIMIT ${limit}`;
}

/**
 * The rows of a project's sessions (`inProject`: its own key, or a folder in it), read through
 * the project's index. The folders are the keys from `project/` up to `project0` ('0' follows '/').
 */
function listProject(sql: Sql, { byCreated, key, after, prefix }: Place, limit: number, project: string) {
  const folder = `${project}/`;
  const pastFolders = `${project}0`;
  return byCreated
    ? sql<ListingRow>`
        SELECT id, created_at AS sort_key, info FROM sessions
        WHERE (project = ${project} OR (project >= ${folder} AND project < ${pastFolders}))
          AND (created_at < ${key} OR (created_at = ${key} AND id < ${after}))
          AND substr(id, 1, length(${prefix})) = ${prefix}
        ORDER BY created_at DESC, id DESC LIMIT ${limit}`
    : sql<ListingRow>`
        SELECT id, updated_at AS sort_key, info FROM sessions
        WHERE (project = ${project} OR (project >= ${folder} AND project < ${pastFolders}))
          AND (updated_at < ${key} OR (updated_at = ${key} AND id < ${after}))
          AND substr(id, 1, length(${prefix})) = ${prefix}
        ORDER BY updated_at DESC, id DESC LIMIT ${limit}`;
}
