import type { Session, StoredEntry } from "../../core";
import { sha256Hex } from "../../core/bytes";

/*
 * The checkpoint id of a session's head: the checkpoint a session's context at an entry stands for
 * when no checkpoint of the thread is there. LangGraph names a checkpoint's tasks by UUIDs in the
 * namespace of its id, so the id is a UUID, laid out as LangGraph's own (version 6, its time the
 * entry's, so it sorts among them) but of version 8, which no LangGraph id has: after the time, a
 * digest of the entry's id, then the entry's place in its session (`seq`), so any saver reads it
 * back to its entry.
 */

/** 100-nanosecond intervals from the Gregorian calendar's start to the Unix epoch. */
const GREGORIAN_OFFSET = 122_192_928_000_000_000n;

const HEAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-([0-9a-f]{12})$/;

/** What the checkpoint id of a head was before it was a UUID; the entry id follows. */
const LEGACY_HEAD = "session-head:";

/** The checkpoint id of the session's head at `entry`. */
export async function headCheckpointId(
  entry: Pick<StoredEntry, "id" | "seq" | "timestamp">,
): Promise<string> {
  const ms = BigInt(Date.parse(entry.timestamp) || 0);
  const time = ((ms * 10_000n + GREGORIAN_OFFSET) >> 12n).toString(16).padStart(12, "0").slice(-12);
  const digest = await sha256Hex(entry.id);
  const variant = (8 | (Number.parseInt(digest.charAt(3), 16) & 3)).toString(16);
  const seq = entry.seq.toString(16).padStart(12, "0");
  return `${time.slice(0, 8)}-${time.slice(8)}-8${digest.slice(0, 3)}-${variant}${digest.slice(4, 7)}-${seq}`;
}

/** Whether a checkpoint id names a session's head (then `headEntry` finds its entry). */
export function isHeadCheckpointId(checkpointId: string): boolean {
  return HEAD_ID.test(checkpointId) || checkpointId.startsWith(LEGACY_HEAD);
}

/** The entry a head's checkpoint id names; undefined when the session has no such entry. */
export async function headEntry(session: Session, checkpointId: string): Promise<StoredEntry | undefined> {
  if (checkpointId.startsWith(LEGACY_HEAD)) return session.getEntry(checkpointId.slice(LEGACY_HEAD.length));
  const seq = Number.parseInt(HEAD_ID.exec(checkpointId)?.[1] ?? "0", 16);
  if (seq < 1) return undefined;
  const [entry] = await session.getEntries({ after: seq - 1, limit: 1 });
  return entry?.seq === seq && (await headCheckpointId(entry)) === checkpointId ? entry : undefined;
}
