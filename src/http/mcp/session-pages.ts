import * as z from "zod";
import { SessionError } from "../../core/errors";
import type { ObjectCalls, SessionObject } from "../../durable/internal";
import { MAX_MESSAGE_CHARS, shownLine } from "./render";
import { MAX_PAGE_CHARS } from "./tool-kit";

/* read_session's pages: what its cursors name, and a page of a session's context or tree read from them. */

/**
 * Where a page of read_session starts: the nextCursor of the page before, which names what the
 * first page read, so that every page reads the same thing however the session moves meanwhile.
 * Of the context, `<position>[.<lines>]@<leafId>`: the path to that entry (which never changes,
 * its entries being immutable) from the entry in that position, after as many of its lines. Of
 * the tree, `tree:<line>:<seq>`: the tree of the entries up to that seq from that line. A cursor of
 * the form earlier releases gave (`<n>[.<n>]`) names a place in the session as it was when read on,
 * in lines or in entries by release: it is refused, never read as a place it may not have meant.
 */
export const ReadCursor = z
  .string()
  .max(200)
  .regex(
    /^(\d{1,9}(\.\d{1,9})?(@[A-Za-z0-9._:-]{1,128})?|tree:\d{1,9}:\d{1,15})$/,
    "a nextCursor this tool gave",
  )
  .optional()
  .describe("nextCursor of the previous page: the next page of what the first page read");

/** A read_session cursor of an earlier release (see ReadCursor). */
const EARLIER_CURSOR = /^\d{1,9}(\.\d{1,9})?$/;

/** Where a page of a context starts: the path to `leafId`, from the entry in `position`, after `skip` of its lines. */
interface ContextCursor {
  leafId: string;
  position: number;
  skip: number;
}

function contextCursor({ leafId, position, skip }: ContextCursor): string {
  return `${position}${skip > 0 ? `.${skip}` : ""}@${leafId}`;
}

/** Refuses a cursor of the form earlier releases gave (see ReadCursor). */
export function refuseEarlierCursor(cursor: string | undefined): void {
  if (cursor !== undefined && EARLIER_CURSOR.test(cursor))
    throw badCursor(cursor, "it is from an earlier release: read again without a cursor, from the start");
}

/** What a context's `cursor` names; refused when it is the tree's. */
function readContextCursor(cursor: string): ContextCursor {
  const at = cursor.indexOf("@");
  if (at < 0) throw badCursor(cursor, 'it reads the tree: pass view "tree" with it');
  const [position = 0, skip = 0] = cursor.slice(0, at).split(".").map(Number);
  return { leafId: cursor.slice(at + 1), position, skip };
}

/**
 * A page of a session's context: without `cursor`, from the start of the path to `leafId`; with
 * it, from where it says on the path it names. The page holds the lines of its entries up to
 * `limit` lines and MAX_PAGE_CHARS, read by the session's object as one window of the context's
 * entries; `chosen` says `leafId` was asked for (entryId), so a cursor must name the same path.
 */
export async function contextPage(
  object: ObjectCalls<SessionObject>,
  leafId: string | null,
  chosen: boolean,
  cursor: string | undefined,
  limit: number,
): Promise<ReadPage> {
  const at = cursor === undefined ? undefined : readContextCursor(cursor);
  if (at && chosen && at.leafId !== leafId)
    throw badCursor(cursor, `it reads the path to ${at.leafId}, not to entryId ${leafId}`);
  const from = at?.position ?? 0;
  const skip = at?.skip ?? 0;
  const read = await object
    .getContextLines(at?.leafId ?? leafId, { from, skip, lines: limit }, MAX_MESSAGE_CHARS)
    .catch((error: unknown) => {
      const missing =
        error instanceof SessionError &&
        error.code === "not_found" &&
        (error.details as { id?: unknown } | undefined)?.id === at?.leafId;
      throw at && missing ? badCursor(cursor, `the session has no entry ${at.leafId}`) : error;
    });
  if (at && from >= read.total) throw badCursor(cursor, `the path it reads has ${read.total} entries`);
  const page: string[] = [];
  let chars = 0;
  // Where the next page starts: the position of an entry and how many of its lines came before.
  let next: [number, number] = [read.from + read.entries.length, 0];
  fill: for (const [i, entry] of read.entries.entries()) {
    const before = i === 0 ? skip : 0;
    for (const [n, line] of entry.lines.entries()) {
      const text = shownLine(entry.id, line);
      if (page.length > 0 && chars + text.length > MAX_PAGE_CHARS) {
        next = [read.from + i, before + n];
        break fill;
      }
      page.push(text);
      chars += text.length;
    }
    if (before + entry.lines.length < entry.count) {
      next = [read.from + i, before + entry.lines.length];
      break;
    }
  }
  const [entry, lines] = next;
  const last = lines > 0 ? entry + 1 : entry;
  const path = at?.leafId ?? leafId;
  return {
    page,
    shown: page.length ? `entries ${from + 1}-${last} of ${read.total}` : "no lines",
    nextCursor:
      entry < read.total && path !== null
        ? contextCursor({ leafId: path, position: entry, skip: lines })
        : null,
  };
}

/**
 * A page of a session's tree drawn as text: without `cursor`, its first lines; with it, from the
 * line it names of the tree of the entries it names (those up to a seq), read by the session's
 * object as one window.
 */
export async function treePage(
  object: ObjectCalls<SessionObject>,
  cursor: string | undefined,
  limit: number,
): Promise<ReadPage> {
  const named = cursor === undefined ? undefined : /^tree:(\d+):(\d+)$/.exec(cursor);
  if (named === null) throw badCursor(cursor, 'it reads the context: pass it without view "tree"');
  const from = named ? Number(named[1]) : 0;
  const bound = named ? Number(named[2]) : undefined;
  const read = await object.getTreeLines(from, limit, bound).catch((error: unknown) => {
    const unheld = error instanceof SessionError && error.code === "invalid_request";
    throw named && unheld ? badCursor(cursor, "the session has no such entry") : error;
  });
  if (named && from >= read.total) throw badCursor(cursor, `the tree it reads has ${read.total} lines`);
  const page: string[] = [];
  let chars = 0;
  for (const line of read.lines) {
    if (page.length > 0 && chars + line.length > MAX_PAGE_CHARS) break;
    page.push(line);
    chars += line.length;
  }
  const next = from + page.length;
  return {
    page,
    shown: page.length ? `lines ${from + 1}-${next} of ${read.total}` : "no lines",
    nextCursor: next < read.total ? `tree:${next}:${read.bound}` : null,
  };
}

/** A page of what read_session reads: its lines, what they are of the whole, and the next page's cursor. */
interface ReadPage {
  page: string[];
  shown: string;
  nextCursor: string | null;
}

/** A refusal of a read_session cursor that names no page this session can read. */
function badCursor(cursor: string | undefined, why: string): SessionError {
  return new SessionError("invalid_request", `the cursor names no page to read: ${why}`, { cursor });
}
