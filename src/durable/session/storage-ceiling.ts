import { SessionError } from "../../core/errors";
import type { DurableEnv } from "../env";
import { numberSetting } from "../settings";

/*
 * The most a session's object stores before it refuses new entries (`session_full`): a ceiling
 * below the platform's own limit per object (10 GB of SQLite), so the session never meets that
 * limit in the middle of a write and what lies between the two keeps it working: it is read,
 * exported, forked, compacted (a compaction's entry is small and always written), navigated and
 * deleted like any other. Measured on the database itself (rows, indexes, search index), not on
 * the entries' bytes alone.
 */

/** Bytes of SQLite at which a session is full, unless SESSION_FULL_BYTES says otherwise. */
export const DEFAULT_SESSION_FULL_BYTES = 9_000_000_000;

export function sessionFullBytes(env: Pick<DurableEnv, "SESSION_FULL_BYTES">): number {
  return numberSetting(env.SESSION_FULL_BYTES, DEFAULT_SESSION_FULL_BYTES, { min: 1 });
}

/**
 * Refuses a write (`session_full`) once the session's database has reached its ceiling. One write
 * below it adds at most a request's worth (32 MiB, with its indexes), far less than the room left
 * under the platform's limit.
 */
export function checkNotFull(sql: SqlStorage, env: Pick<DurableEnv, "SESSION_FULL_BYTES">): void {
  const ceiling = sessionFullBytes(env);
  const size = sql.databaseSize;
  if (size < ceiling) return;
  throw new SessionError(
    "session_full",
    `the session's storage reached its ceiling of ${ceiling} bytes: it takes no more entries, and can still be read, exported, forked and compacted`,
    { ceiling, size },
  );
}
