import { SessionError } from "../core/errors";

/*
 * Failures that are not the request's fault, turned into answers a client can act on instead of
 * `internal`: the runtime's (an object overloaded, reset in the middle of a call, a connection to
 * it lost) and SQLite's passing ones become `unavailable` (503 with Retry-After); storage that is
 * full becomes `session_full`. `details.outcome` says whether the request may have been applied:
 * `"not_applied"` (refused before it ran, or its transaction rolled back) or `"unknown"` (the
 * object went away while the call ran), which only a request that is safe to repeat may retry.
 */

/** Seconds a client is asked to wait before trying again. */
export const RETRY_AFTER_SECONDS = 1;

/** SQLite result codes of failures that pass; the transaction they hit rolled back. */
const PASSING_SQLITE = /\bSQLITE_(BUSY|LOCKED|IOERR|NOMEM|INTERRUPT|PROTOCOL)\b/;
/** The database reached the platform's limit (SQLITE_FULL); the write rolled back. */
const FULL_SQLITE = /\bSQLITE_FULL\b|database or disk is full/i;

/** What the Workers runtime sets on the errors of a call to a Durable Object. */
interface RuntimeFlags {
  /** The object had too many requests queued: this one never ran. */
  overloaded?: unknown;
  /** The failure may pass (a connection lost, an object restarted). */
  retryable?: unknown;
  /** The object was reset while the call ran. */
  durableObjectReset?: unknown;
}

export type Outcome = "not_applied" | "unknown";

export function unavailable(message: string, outcome: Outcome): SessionError {
  return new SessionError("unavailable", message, { retryAfterSeconds: RETRY_AFTER_SECONDS, outcome });
}

/** A transient failure as the error to answer with; undefined for anything else (a bug is `internal`). */
export function transientError(error: unknown): SessionError | undefined {
  if (error instanceof SessionError || !(error instanceof Error)) return undefined;
  const flags = error as Error & RuntimeFlags;
  if (flags.overloaded === true) {
    return unavailable("the session is overloaded; try again", "not_applied");
  }
  if (flags.durableObjectReset === true || flags.retryable === true) {
    return unavailable("the session restarted while it answered; try again", "unknown");
  }
  if (FULL_SQLITE.test(error.message)) {
    return new SessionError("session_full", "the session's storage is full: it takes no more entries", {
      reason: "platform_limit",
    });
  }
  if (PASSING_SQLITE.test(error.message)) {
    return unavailable("a storage operation failed and was rolled back; try again", "not_applied");
  }
  return undefined;
}

/**
 * The error to answer with when part of a request was applied and could not be undone (a fork
 * whose new session could not be removed): a transient failure says its outcome is unknown, not
 * that nothing was applied, so that no client sends it again blindly.
 */
export function partlyApplied(error: unknown): unknown {
  const transient = error instanceof SessionError ? error : transientError(error);
  const outcome = (transient?.details as { outcome?: unknown } | undefined)?.outcome;
  if (transient?.code !== "unavailable" || outcome !== "not_applied") return error;
  return unavailable(transient.message, "unknown");
}

/**
 * Runs storage work inside an object: a transient failure leaves it as its `SessionError` (what
 * the work wrote rolled back with its transaction); anything else is rethrown as it is.
 */
export function storageWork<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw transientError(error) ?? error;
  }
}
