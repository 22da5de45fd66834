import { randomHex } from "../../core/bytes";
import type { StoredEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import type { EntrySummary, LeafEvent, SessionEvent } from "../../core/events";
import { entrySummary, socketMessage } from "../../core/events";
import type { GenerationInfo } from "../../core/generations/generation-schemas";
import { tryParseJson } from "../../core/json";
import type { SessionInfo } from "../../core/session-schemas";

/*
 * The WebSocket watchers of one session, accepted with the hibernation API: their state is in
 * their attachment, so an idle session sleeps and the next write wakes it with its watchers.
 * Replay goes in rounds, each read synchronously and ended with a token the socket sends back to
 * ask for the next, so a socket never has more than one round unread. The runtime does not say
 * how much a WebSocket has waiting to go out, so a socket's watcher acknowledges what it has read:
 * live events to a socket are counted, every SOCKET_ACK_CHARS a `leaf` event asks for an
 * acknowledgement (`ack`: a token the watcher sends back; after an event besides entries, the head
 * is sent again to ask), and a socket with more than
 * SOCKET_WINDOW_CHARS sent and not acknowledged is closed (it resumes from its last seq).
 * Below: what both kinds of watcher read of the session, and the one-time tickets that open a
 * socket.
 */

/** Bytes a WebSocket may have waiting to go out before it is closed as too slow (where the runtime says). */
const MAX_SOCKET_BUFFERED = 8 * 1024 * 1024;
/**
 * Characters of live events a socket may have sent and not acknowledged; a write that would take
 * it past this is not sent, and the socket is closed as too slow (a write is always sent to a
 * socket that has acknowledged everything, however large).
 */
export const SOCKET_WINDOW_CHARS = 1024 * 1024;
/** Characters sent after the last acknowledgement at which a `leaf` event asks for the next one. */
export const SOCKET_ACK_CHARS = 256 * 1024;
/** Characters of entries a WebSocket is sent in one round of replay (at least one entry). */
const SOCKET_REPLAY_CHARS = 1024 * 1024;
/** Watching sockets one session takes; more are refused until some leave. */
const MAX_SOCKETS = 2000;

/** The tag of event sockets (see `ctx.getWebSockets`). */
export const EVENT_SOCKET_TAG = "events";
/** Code a socket is closed with when it falls behind; it should resume from its last seq. */
export const SLOW_WATCHER_CODE = 4008;

/** A watcher's message: `{after, token}` asks for a round of replay, `{ack}` acknowledges live events. */
export interface WatcherMessage {
  after?: unknown;
  token?: unknown;
  ack?: unknown;
}

/** Reads a watcher's message (once): anything but a JSON object (null included) has no fields. */
export function readWatcherMessage(message: string | ArrayBuffer): WatcherMessage {
  const text = typeof message === "string" ? message : new TextDecoder().decode(message);
  return (tryParseJson(text) ?? {}) as WatcherMessage;
}

/** What a WebSocket watcher keeps across hibernation. */
interface SocketState {
  payload: boolean;
  /** The last seq it was sent (or replay reached). */
  cursor: number;
  /** Whether it is caught up and takes live events. */
  live: boolean;
  /**
   * Sent with the message that ends each round of replay (`leaf` or `more`); the next `{after}`
   * must carry it. A socket that asks again has read the round before, so it never has more
   * than one round unread.
   */
  token: string;
  /** Characters of live events sent since it caught up, and the part of them it acknowledged. */
  sent: number;
  acked: number;
  /** The acknowledgement asked for: its token, and `sent` when it was asked. */
  ask?: { token: string; at: number };
}

export class EventSockets {
  readonly #ctx: DurableObjectState;
  readonly #source: EventSource;
  readonly #onFailure: (error: unknown) => void;

  /** `onFailure` hears of a socket that could not be sent to (it is closed, the others still served). */
  constructor(ctx: DurableObjectState, source: EventSource, onFailure: (error: unknown) => void) {
    this.#ctx = ctx;
    this.#source = source;
    this.#onFailure = onFailure;
  }

  /** The sockets watching now (those the object woke with included). */
  all(): WebSocket[] {
    return this.#ctx.getWebSockets(EVENT_SOCKET_TAG);
  }

  /** Throws unless a socket resuming after `after` can be accepted now. */
  checkAdmission(after: number): void {
    checkResumePoint(this.#source, after);
    if (this.all().length >= MAX_SOCKETS) {
      throw new SessionError("rate_limited", `this session has ${MAX_SOCKETS} watching sockets already`, {
        retryAfterSeconds: RETRY_WATCH_SECONDS,
      });
    }
  }

  /**
   * Accepts an event WebSocket (admitted by `checkAdmission` in the same synchronous step) and
   * sends it what it missed after `after`.
   */
  accept(socket: WebSocket, after: number, payload: boolean): void {
    this.#ctx.acceptWebSocket(socket, [EVENT_SOCKET_TAG]);
    const state: SocketState = { payload, cursor: after, live: false, token: "", sent: 0, acked: 0 };
    this.#sendStanding(socket);
    this.#catchUp(socket, state);
  }

  /**
   * Where the session stands apart from its entries: its info (automatic compaction's status
   * included) and each answer being written.
   */
  #sendStanding(socket: WebSocket): void {
    socket.send(socketMessage({ event: "session", data: this.#source.info() }));
    for (const generation of this.#source.openGenerations()) {
      socket.send(socketMessage({ event: "generation", data: generation }));
    }
  }

  /**
   * A message from a watcher: `{after, token}` replays from `after` (a resume, or the rest of a
   * replay that stopped with `more`), with the token of the last round it was sent.
   */
  message(socket: WebSocket, request: WatcherMessage): void {
    // Messages sent before a close arrive after it (a refusal's among them): none is answered.
    if (socket.readyState !== WebSocket.OPEN) return;
    const state = socket.deserializeAttachment() as SocketState | null;
    if (state && typeof request.ack === "string" && request.after === undefined) {
      // A repeated acknowledgement, or one a resume overtook, changes nothing.
      if (request.ack === state.ask?.token) {
        const { ask: _answered, ...rest } = state;
        socket.serializeAttachment({ ...rest, acked: state.ask.at });
      }
      return;
    }
    if (!state || typeof request.after !== "number") {
      refuse(socket, 'send {"after": <seq>, "token": <the last leaf or more message\'s token>} to resume');
      return;
    }
    if (request.token !== state.token) {
      refuse(socket, "send the token of the last leaf or more message with {after}");
      return;
    }
    try {
      checkResumePoint(this.#source, request.after);
    } catch (error) {
      refuse(socket, (error as Error).message);
      return;
    }
    this.#catchUp(socket, { ...state, cursor: request.after, live: false });
    // Changes besides entries (header, answers, compaction) reached only live sockets while it
    // replayed: on catching up it hears where the session stands now.
    if ((socket.deserializeAttachment() as SocketState).live) this.#sendStanding(socket);
  }

  /**
   * Replays one round of entries (at most SOCKET_REPLAY_CHARS of them) synchronously, so no
   * write comes between, and makes the socket live when that reaches the end; otherwise it is
   * told where to ask again. Either way the round ends with a token for the next request.
   */
  #catchUp(socket: WebSocket, state: SocketState): void {
    const bound = this.#source.lastSeq();
    let cursor = state.cursor;
    let chars = 0;
    while (cursor < bound && chars < SOCKET_REPLAY_CHARS) {
      const page = replayPage(this.#source, cursor, bound, state.payload);
      if (page.length === 0) break;
      for (const event of page) {
        if (chars >= SOCKET_REPLAY_CHARS) break;
        const message = socketMessage(event);
        socket.send(message);
        chars += message.length;
        cursor = event.id;
      }
    }
    const token = randomHex(8);
    const caughtUp = cursor >= bound;
    if (caughtUp) {
      socket.send(
        socketMessage({ event: "leaf", id: bound, data: { leafId: this.#source.leafId(), token } }),
      );
    } else {
      socket.send(JSON.stringify({ event: "more", data: { after: cursor, token } }));
    }
    const { ask: _dropped, ...rest } = state;
    socket.serializeAttachment({
      ...rest,
      cursor: caughtUp ? bound : cursor,
      live: caughtUp,
      token,
      sent: 0,
      acked: 0,
    });
  }

  /** A durable write's events (seqs `first` to `last`), to each live socket that has read up to it. */
  deliver(write: WrittenEvents, first: number, last: number): void {
    let messages: { full: string[]; light: string[]; info: string[] } | undefined;
    this.#eachOpen((socket) => {
      const state = socket.deserializeAttachment() as SocketState | null;
      // A socket still replaying (or told to ask again) reads these from storage itself.
      if (!state?.live || state.cursor !== first - 1) return;
      messages ??= {
        full: write.full.map(socketMessage),
        light: write.light.map(socketMessage),
        info: write.info ? [socketMessage(write.info)] : [],
      };
      const entries = state.payload ? messages.full : messages.light;
      this.#sendLive(socket, state, entries, write.leaf, messages.info, last);
    });
  }

  /**
   * Sends a write's events to a live socket within its window: its entries, its `leaf` (asking for
   * an acknowledgement when one is due) and the rest. A socket that has not acknowledged enough
   * to take them is closed instead, to resume from its last seq.
   */
  #sendLive(
    socket: WebSocket,
    state: SocketState,
    entries: readonly string[],
    leaf: LeafEvent,
    after: readonly string[],
    last: number,
  ): void {
    let size = 0;
    for (const message of [...entries, ...after]) size += message.length;
    if (!this.#takes(socket, state, size)) return;
    const { message: leafMessage, ask } = leafAsking(state, leaf, size);
    for (const message of entries) socket.send(message);
    socket.send(leafMessage);
    for (const message of after) socket.send(message);
    const sent = state.sent + size + leafMessage.length;
    socket.serializeAttachment({ ...state, cursor: last, sent, ...(ask ? { ask } : {}) });
  }

  /** Whether a live socket can take `size` more characters; one that cannot is closed as too slow. */
  #takes(socket: WebSocket, state: SocketState, size: number): boolean {
    const outstanding = state.sent - state.acked;
    const buffered = typeof socket.bufferedAmount === "number" && socket.bufferedAmount > MAX_SOCKET_BUFFERED;
    if (buffered || (outstanding > 0 && outstanding + size > SOCKET_WINDOW_CHARS)) {
      closeSocket(socket, SLOW_WATCHER_CODE, "slow: resume from the last seq");
      return false;
    }
    return true;
  }

  /**
   * An event besides entries for every live socket, within its window as a write's events are.
   * `head` is the session's `leaf` as of the change: a socket there that the event brings to an
   * acknowledgement is sent it again, unchanged but for the `ack` it carries.
   */
  deliverAll(event: SessionEvent, head: LeafEvent): void {
    const message = socketMessage(event);
    this.#eachOpen((socket) => {
      const state = socket.deserializeAttachment() as SocketState | null;
      if (!state?.live || !this.#takes(socket, state, message.length)) return;
      socket.send(message);
      let sent = state.sent + message.length;
      let ask = state.ask;
      if (state.cursor === head.id) {
        const asking = leafAsking(state, head, message.length);
        if (asking.ask) {
          socket.send(asking.message);
          sent += asking.message.length;
          ask = asking.ask;
        }
      }
      socket.serializeAttachment({ ...state, sent, ...(ask ? { ask } : {}) });
    });
  }

  /** The session is gone: every socket gets `event` (`deleted`) and is closed. */
  closeAll(event: SessionEvent): void {
    const message = socketMessage(event);
    this.#eachOpen((socket) => {
      socket.send(message);
      socket.close(1000, "deleted");
    });
  }

  /**
   * Runs `send` for each socket still open. One this side closed stays listed until its watcher
   * answers the close, and sending to it throws; a socket that fails is closed, and the sockets
   * after it are served all the same.
   */
  #eachOpen(send: (socket: WebSocket) => void): void {
    for (const socket of this.all()) {
      if (socket.readyState !== WebSocket.OPEN) continue;
      try {
        send(socket);
      } catch (error) {
        this.#onFailure(error);
        closeSocket(socket, 1011, "could not be sent to: resume from the last seq");
      }
    }
  }
}

/**
 * The `leaf` a live socket is sent after `size` more characters: asking for an acknowledgement
 * (with the ask to remember) once SOCKET_ACK_CHARS are outstanding and none is asked for yet.
 */
function leafAsking(
  state: SocketState,
  leaf: LeafEvent,
  size: number,
): { message: string; ask?: { token: string; at: number } } {
  if (state.ask || state.sent - state.acked + size < SOCKET_ACK_CHARS)
    return { message: socketMessage(leaf) };
  const token = randomHex(8);
  const message = socketMessage({ ...leaf, data: { ...leaf.data, ack: token } });
  return { message, ask: { token, at: state.sent + size + message.length } };
}

/** Whether a socket's watcher takes entries with their payloads (`?payload=false` when it opened: not). */
export function socketTakesPayloads(socket: WebSocket): boolean {
  return (socket.deserializeAttachment() as SocketState | null)?.payload !== false;
}

/**
 * Closes a socket from this side. It is saved as not live first: it stays listed until its
 * watcher answers the close, and must take no more events.
 */
export function closeSocket(socket: WebSocket, code: number, reason: string): void {
  if (socket.readyState !== WebSocket.OPEN) return;
  const state = socket.deserializeAttachment() as SocketState | null;
  if (state?.live) socket.serializeAttachment({ ...state, live: false });
  socket.close(code, reason);
}

/**
 * Ends a socket that sent what the protocol does not allow: the reason as a `closed` event, then a
 * close with 1008, so that no number of bad messages is ever answered more than once.
 */
function refuse(socket: WebSocket, reason: string): void {
  socket.send(socketMessage({ event: "closed", data: { reason } }));
  // Close reasons are limited to 123 bytes.
  closeSocket(socket, 1008, reason.slice(0, 120));
}

/*
 * The session as its watchers see it, for both kinds of watcher (the hub in session-watchers.ts, the sockets above):
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
  /** The same entries' summaries, read without their payloads. */
  summariesAfter(after: number, bound: number, limit: number): EntrySummary[];
  /** Answers being written now: a watcher is told of each when it starts watching (a socket, again when it catches up). */
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

export type EntryEvent = Extract<SessionEvent, { event: "entry" }>;

export function entryEvent(entry: StoredEntry, payload: boolean): EntryEvent {
  return { event: "entry", id: entry.seq, data: payload ? entry : entrySummary(entry) };
}

/**
 * A page of replay after `after` up to `bound` (REPLAY_PAGE entries at most) as entry events: a
 * watcher without payloads is sent summaries, read without a payload or a blob.
 */
export function replayPage(
  source: EventSource,
  after: number,
  bound: number,
  payload: boolean,
): EntryEvent[] {
  if (!payload) {
    return source
      .summariesAfter(after, bound, REPLAY_PAGE)
      .map((summary) => ({ event: "entry", id: summary.seq, data: summary }));
  }
  return source.entriesAfter(after, bound, REPLAY_PAGE).map((entry) => entryEvent(entry, true));
}

/*
 * One-time tickets that open a session's WebSocket (browsers cannot set headers on one, and a key
 * in a URL ends up in logs): minted for a caller who may read the session, good once within
 * TICKET_MS, kept in the object's storage so any instance redeems them. The router hands them out
 * sealed with the tenant and the session (http/socket-ticket.ts), checks that seal before it asks
 * the object, and names the ticket to it in SOCKET_TICKET_HEADER; the object uses it up in the step
 * that accepts its socket, so an upgrade refused before that leaves it good for the retry. A
 * ticket begins with its expiry, so the stored ones are in the order they expire: each mint drops
 * the expired ones from the front, reading no other, and a count beside them keeps a session to
 * MAX_TICKETS waiting at once.
 */

/** How long a WebSocket ticket stays good. */
const TICKET_MS = 60_000;
/** Tickets one session keeps waiting to be used, as many as it takes sockets; more are refused. */
const MAX_TICKETS = MAX_SOCKETS;
/** `socket-ticket:<ticket>` holds a ticket's expiry; `socket-ticket-count` how many are stored. */
const PREFIX = "socket-ticket:";
const COUNT_KEY = "socket-ticket-count";
/** Tickets of the earlier layout, in no order: dropped unread when a session's tickets are counted. */
const UNORDERED_PREFIX = "ticket:";
/** The ticket an upgrade was authenticated with, as the router hands it to the object. */
export const SOCKET_TICKET_HEADER = "x-socket-ticket";

/** A time as the first 12 hex digits of a ticket: in the order of the times. */
function timeHex(ms: number): string {
  return ms.toString(16).padStart(12, "0");
}

export class SocketTickets {
  readonly #kv: SyncKvStorage;

  constructor(kv: SyncKvStorage) {
    this.#kv = kv;
  }

  /**
   * A new ticket (48 hex digits: its expiry, then 36 random); the expired ones are dropped on the
   * way. `rate_limited` while MAX_TICKETS wait, with the seconds until the first of them expires.
   */
  mint(): { ticket: string; expiresAt: string } {
    const now = Date.now();
    const stored = this.#dropExpired(now);
    if (stored >= MAX_TICKETS) {
      const [, firstExpiry = now] = [...this.#kv.list<number>({ prefix: PREFIX, limit: 1 })][0] ?? [];
      throw new SessionError("rate_limited", `this session has ${MAX_TICKETS} tickets waiting to be used`, {
        retryAfterSeconds: Math.max(1, Math.ceil((firstExpiry - now) / 1000)),
      });
    }
    const expiry = now + TICKET_MS;
    const ticket = `${timeHex(expiry)}${randomHex(18)}`;
    this.#kv.put(`${PREFIX}${ticket}`, expiry);
    this.#kv.put(COUNT_KEY, stored + 1);
    return { ticket, expiresAt: new Date(expiry).toISOString() };
  }

  /** Drops the expired tickets, the first in order: how many are left. */
  #dropExpired(now: number): number {
    const counted = this.#kv.get<number>(COUNT_KEY);
    let stored = counted ?? this.#countStored();
    for (const [key] of [...this.#kv.list({ prefix: PREFIX, end: `${PREFIX}${timeHex(now)}` })]) {
      this.#kv.delete(key);
      stored--;
    }
    if (stored !== counted) this.#kv.put(COUNT_KEY, stored);
    return stored;
  }

  /** The stored tickets, counted once while a session has no count. */
  #countStored(): number {
    for (const [key] of [...this.#kv.list({ prefix: UNORDERED_PREFIX })]) this.#kv.delete(key);
    return [...this.#kv.list({ prefix: PREFIX })].length;
  }

  /** Whether a ticket is good (it stays so). */
  isGood(ticket: string): boolean {
    const expiry = this.#kv.get<number>(`${PREFIX}${ticket}`);
    return expiry !== undefined && expiry >= Date.now();
  }

  /** Whether a ticket is good, using it up either way. */
  redeem(ticket: string): boolean {
    const good = this.isGood(ticket);
    const stored = this.#kv.get<number>(COUNT_KEY);
    if (this.#kv.delete(`${PREFIX}${ticket}`) && stored !== undefined) this.#kv.put(COUNT_KEY, stored - 1);
    return good;
  }
}
