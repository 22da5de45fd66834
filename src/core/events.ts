import type { StoredEntry } from "./entries";
import type { GenerationInfo } from "./generations/generation-schemas";
import type { AutoCompactStatus, SessionInfo } from "./session-schemas";
import { sseText } from "./sse";

/*
 * A session's log made live. Every entry is an `entry` event whose id is its seq, so a watcher
 * that saw seq n resumes after n and misses nothing. Other events carry what changed without
 * being entries: `leaf` after each write that moved the head (its id the write's last seq),
 * `session` when the name, system prompt or metadata changed (and once when a stream opens),
 * `compaction` when automatic compaction starts, finishes or fails, `generation` when an answer
 * starts being written, finishes or is stopped (and for each one open when a stream opens, so a
 * watcher that joins late finds it), `deleted` last of all.
 */

/**
 * The answer header of a session's event stream that gives the seq it starts after: a watcher whose
 * connection drops before the first event with an id resumes from it, so nothing written since is lost.
 */
export const EVENTS_AFTER_HEADER = "Events-After";

/** An entry without its payload: what `?payload=false` sends. */
export interface EntrySummary {
  id: string;
  parentId: string | null;
  type: StoredEntry["type"];
  seq: number;
  timestamp: string;
  role?: string;
}

/**
 * The head after a write or a replay. On a WebSocket, `token` is what the next `{after}` sends
 * back, and `ack` asks the watcher to send `{"ack": <it>}` once it has read this far.
 */
export type LeafEvent = {
  event: "leaf";
  id: number;
  data: { leafId: string | null; token?: string; ack?: string };
};

export type SessionEvent =
  | { event: "entry"; id: number; data: StoredEntry | EntrySummary }
  | LeafEvent
  | { event: "session"; data: SessionInfo }
  | { event: "compaction"; data: AutoCompactStatus }
  /** `state`: open (started), finished or stopped; `stream` is where its chunks are read. */
  | { event: "generation"; data: GenerationInfo }
  | { event: "deleted"; data: { id: string } }
  | { event: "closed"; data: { reason: string } };

/**
 * A tenant's sessions made live, as its listing sees them: `created` and `updated` carry the
 * listing row (a session's info as it last reported), `deleted` its id.
 */
export type TenantEvent =
  | { event: "created"; data: SessionInfo }
  | { event: "updated"; data: SessionInfo }
  | { event: "deleted"; data: { id: string } }
  | { event: "closed"; data: { reason: string } };

export function entrySummary(entry: StoredEntry): EntrySummary {
  const { id, parentId, type, seq, timestamp } = entry;
  const summary: EntrySummary = { id, parentId, type, seq, timestamp };
  if (entry.type === "message") summary.role = entry.message.role;
  return summary;
}

/** One event as Server-Sent Events text (its data is one line of JSON). */
export function sseFrame(event: SessionEvent | TenantEvent): string {
  return sseText({
    event: event.event,
    id: "id" in event ? event.id : undefined,
    data: JSON.stringify(event.data),
  });
}

/** The same event as one WebSocket message. */
export function socketMessage(event: SessionEvent): string {
  return JSON.stringify(event);
}
