import type { StoredEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import type { LeafEvent, SessionEvent } from "../../core/events";
import { entrySummary } from "../../core/events";
import type { GenerationInfo } from "../../core/generations/generation-schemas";
import type { SessionInfo } from "../../core/session-schemas";

/*
 * The session as its watchers see it, for both kinds of watcher (event-hub.ts, event-sockets.ts):
 * what they read of it, where they may resume from, and its entries and writes as events.
 */

/** Entries one replay step reads (a page of SSE, one round of WebSocket replay). */
export const REPLAY_PAGE = 256;
/** How long a refused watcher is asked to wait before trying again. */
export const RETRY_WATCH_SECONDS = 10;

/** What the watchers read of their session. */
export interface EventSource {
  lastSeq(): number;
  leafId(): string | null;
  info(): SessionInfo;
  /** Entries with `after < seq <= bound`, in order, a page of at most `limit`. */
  entriesAfter(after: number, bound: number, limit: number): StoredEntry[];
  /** Answers being written now: a watcher is told of each when it starts watching. */
  openGenerations(): GenerationInfo[];
}

/** The events of one write: its entries (with and without payloads), its `leaf`, and the session's info when it renamed it. */
export interface WrittenEvents {
  full: SessionEvent[];
  light: SessionEvent[];
  leaf: LeafEvent;
  info: SessionEvent | undefined;
}

/** Checks a resume point: a seq the session has reached (0: from the start). Answers the last seq. */
export function checkResumePoint(source: EventSource, after: number): number {
  const last = source.lastSeq();
  if (!Number.isInteger(after) || after < 0 || after > last) {
    throw new SessionError("invalid_request", `resume after a seq from 0 to ${last}; ${after} is not one`, {
      after,
      lastSeq: last,
    });
  }
  return last;
}

export function entryEvent(entry: StoredEntry, payload: boolean): SessionEvent {
  return { event: "entry", id: entry.seq, data: payload ? entry : entrySummary(entry) };
}
