import type {
  AutoCompactStatus,
  GenerationInfo,
  LeafEvent,
  SessionEvent,
  SessionInfo,
  StoredEntry,
} from "../../core/internal";
import { entrySummary, SessionError, socketMessage, sseFrame } from "../../core/internal";
import { EventStream } from "./event-stream";

/*
 * The watchers of one session and what they are sent. Two kinds: Server-Sent Events streams (held
 * in memory; the object stays awake while one is open) and WebSockets accepted with the
 * hibernation API (their state in their attachment, so an idle session sleeps and the next write
 * wakes it with its watchers).
 *
 * The rules: a watcher is registered and its replay bound taken in one synchronous step, so no
 * write falls between the two; replay reads entries after the watcher's resume point up to that
 * bound from storage, live events (all after the bound) wait until replay is done; events of a
 * write go out only once the write is durable, in order; a watcher that falls too far behind is
 * closed with a reason (it resumes from its last seq), so it never holds back the writer or
 * anyone else. The runtime does not say how much a WebSocket has waiting to go out, so a socket's
 * watcher acknowledges what it has read: live events to a socket are counted, every
 * SOCKET_ACK_CHARS a `leaf` event asks for an acknowledgement (`ack`: a token the watcher sends
 * back), and a socket with more than SOCKET_WINDOW_CHARS sent and not acknowledged is closed.
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
/** Entries one replay step reads (a page of SSE, one round of WebSocket replay). */
const REPLAY_PAGE = 256;
/** Characters of entries a WebSocket is sent in one round of replay (at least one entry). */
const SOCKET_REPLAY_CHARS = 1024 * 1024;
/** Watching sockets one session takes; more are refused until some leave. */
const MAX_SOCKETS = 2000;
/**
 * Server-Sent Events streams one session takes: each is held in the object's memory and keeps it
 * awake, so fewer than sockets, which hibernate.
 */
const MAX_STREAMS = 500;
/** How long a refused watcher is asked to wait before trying again. */
const RETRY_WATCH_SECONDS = 10;
const HEARTBEAT_MS = 15_000;

/** The tag of event sockets (see `ctx.getWebSockets`). */
export const EVENT_SOCKET_TAG = "events";
/** Code a socket is closed with when it falls behind; it should resume from its last seq. */
export const SLOW_WATCHER_CODE = 4008;

/** What the hub reads of its session. */
export interface EventSource {
  lastSeq(): number;
  leafId(): string | null;
  info(): SessionInfo;
  /** Entries with `after < seq <= bound`, in order, a page of at most `limit`. */
  entriesAfter(after: number, bound: number, limit: number): StoredEntry[];
  /** Answers being written now: a watcher is told of each when it starts watching. */
  openGenerations(): GenerationInfo[];
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

function newToken(): string {
  return [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export class EventHub {
  readonly #ctx: DurableObjectState;
  readonly #source: EventSource;
  readonly #streams = new Set<EventStream>();
  /** Writes waiting to be durable before their events go out, in order. */
  #delivery: Promise<void> = Promise.resolve();
  #heartbeat: ReturnType<typeof setInterval> | undefined;

  readonly #onFailure: (error: unknown) => void;

  /** `onFailure` hears of events that could not be sent (to log them). */
  constructor(ctx: DurableObjectState, source: EventSource, onFailure: (error: unknown) => void) {
    this.#ctx = ctx;
    this.#source = source;
    this.#onFailure = onFailure;
  }

  /** Watchers now: streams and sockets. */
  get watchers(): number {
    return this.#streams.size + this.#sockets().length;
  }

  #sockets(): WebSocket[] {
    return this.#ctx.getWebSockets(EVENT_SOCKET_TAG);
  }

  get watching(): boolean {
    return this.#streams.size > 0 || this.#sockets().length > 0;
  }

  /** Checks a resume point: a seq the session has reached (0: from the start). */
  #checkAfter(after: number): number {
    const last = this.#source.lastSeq();
    if (!Number.isInteger(after) || after < 0 || after > last) {
      throw new SessionError("invalid_request", `resume after a seq from 0 to ${last}; ${after} is not one`, {
        after,
        lastSeq: last,
      });
    }
    return last;
  }

  /**
   * Frames of the replay after `after` up to `bound`, read a page at a time, then the head as it
   * was at `bound`. Entries read here were committed before the stream opened; what leaves the
   * object is held by its output gate until they are durable, as for any answer.
   */
  *#replay(
    after: number,
    bound: number,
    leafId: string | null,
    payload: boolean,
    encode: (event: SessionEvent) => string,
  ) {
    for (let cursor = after; cursor < bound; ) {
      const page = this.#source.entriesAfter(cursor, bound, REPLAY_PAGE);
      if (page.length === 0) break;
      yield page.map((entry) => encode(entryEvent(entry, payload))).join("");
      cursor = (page[page.length - 1] as StoredEntry).seq;
    }
    yield encode({ event: "leaf", id: bound, data: { leafId } });
  }

  /**
   * A Server-Sent Events stream of the session after `after`: its info, the replay, then live
   * events. The bound is taken and the stream registered here, synchronously.
   */
  openStream(after: number, payload: boolean): ReadableStream<Uint8Array> {
    const bound = this.#checkAfter(after);
    if (this.#streams.size >= MAX_STREAMS) {
      throw new SessionError("rate_limited", `this session has ${MAX_STREAMS} event streams open already`, {
        retryAfterSeconds: RETRY_WATCH_SECONDS,
      });
    }
    const info = this.#source.info();
    const generations = this.#source.openGenerations();
    const replay = this.#replay(after, bound, this.#source.leafId(), payload, sseFrame);
    function* opening(): Generator<string> {
      yield sseFrame({ event: "session", data: info });
      for (const generation of generations) yield sseFrame({ event: "generation", data: generation });
      yield* replay;
    }
    const stream: EventStream = new EventStream(payload, bound, opening(), () => this.#drop(stream));
    this.#streams.add(stream);
    this.#startHeartbeat();
    return stream.stream;
  }

  #drop(stream: EventStream): void {
    this.#streams.delete(stream);
    if (this.#streams.size === 0) this.#stopHeartbeat();
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat === undefined) return;
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  #startHeartbeat(): void {
    if (this.#heartbeat !== undefined) return;
    this.#heartbeat = setInterval(() => {
      for (const stream of this.#streams) stream.push(": keep-alive\n\n");
    }, HEARTBEAT_MS);
  }

  /** Accepts an event WebSocket and sends it what it missed after `after`. */
  acceptSocket(socket: WebSocket, after: number, payload: boolean): void {
    this.#checkAfter(after);
    if (this.#sockets().length >= MAX_SOCKETS) {
      throw new SessionError("rate_limited", `this session has ${MAX_SOCKETS} watching sockets already`, {
        retryAfterSeconds: RETRY_WATCH_SECONDS,
      });
    }
    this.#ctx.acceptWebSocket(socket, [EVENT_SOCKET_TAG]);
    const state: SocketState = { payload, cursor: after, live: false, token: "", sent: 0, acked: 0 };
    socket.send(socketMessage({ event: "session", data: this.#source.info() }));
    for (const generation of this.#source.openGenerations()) {
      socket.send(socketMessage({ event: "generation", data: generation }));
    }
    this.#catchUp(socket, state);
  }

  /**
   * A message from a watcher: `{after, token}` replays from `after` (a resume, or the rest of a
   * replay that stopped with `more`), with the token of the last round it was sent.
   */
  socketMessage(socket: WebSocket, message: string | ArrayBuffer): void {
    let request: { after?: unknown; token?: unknown; ack?: unknown } = {};
    try {
      request = JSON.parse(typeof message === "string" ? message : new TextDecoder().decode(message));
    } catch {
      request = {};
    }
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
      this.#checkAfter(request.after);
    } catch (error) {
      refuse(socket, (error as Error).message);
      return;
    }
    this.#catchUp(socket, { ...state, cursor: request.after, live: false });
    // Header changes while it was not live reached only live sockets: say where it stands now.
    if ((socket.deserializeAttachment() as SocketState).live) {
      socket.send(socketMessage({ event: "session", data: this.#source.info() }));
    }
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
      const page = this.#source.entriesAfter(cursor, bound, REPLAY_PAGE);
      if (page.length === 0) break;
      for (const entry of page) {
        if (chars >= SOCKET_REPLAY_CHARS) break;
        const message = socketMessage(entryEvent(entry, state.payload));
        socket.send(message);
        chars += message.length;
        cursor = entry.seq;
      }
    }
    const token = newToken();
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

  /** After a committed write: its entries, and the head it left, once they are durable. */
  written(entries: readonly StoredEntry[], leafId: string | null): void {
    if (entries.length === 0 || !this.watching) return;
    const first = (entries[0] as StoredEntry).seq;
    const last = (entries[entries.length - 1] as StoredEntry).seq;
    const events: SessionEvent[] = entries.map((entry) => entryEvent(entry, true));
    const summaries: SessionEvent[] = entries.map((entry) => entryEvent(entry, false));
    const leaf: LeafEvent = { event: "leaf", id: last, data: { leafId } };
    const named = entries.some((entry) => entry.type === "session_info");
    const info: SessionEvent | undefined = named
      ? { event: "session", data: this.#source.info() }
      : undefined;
    this.#afterDurable(() => this.#deliver({ full: events, light: summaries, leaf, info }, first, last));
  }

  /** The header changed (name, system prompt, metadata, automatic compaction settings). */
  sessionChanged(info: SessionInfo): void {
    if (!this.watching) return;
    this.#afterDurable(() => this.#deliverAll({ event: "session", data: info }));
  }

  /** An answer started being written, finished, or was stopped. */
  generationChanged(generation: GenerationInfo): void {
    if (!this.watching) return;
    this.#afterDurable(() => this.#deliverAll({ event: "generation", data: generation }));
  }

  compactionChanged(status: AutoCompactStatus): void {
    if (!this.watching) return;
    this.#afterDurable(() => this.#deliverAll({ event: "compaction", data: status }));
  }

  /**
   * The session is gone: replays stop reading now (its storage is about to go), and after the
   * events of writes made before it, every watcher gets `deleted` and is closed.
   */
  deleted(id: string): void {
    for (const stream of this.#streams) stream.stopReplay();
    const event: SessionEvent = { event: "deleted", data: { id } };
    this.#delivery = this.#delivery.then(() => {
      for (const stream of this.#streams) stream.push(sseFrame(event), true);
      this.#streams.clear();
      this.#stopHeartbeat();
      for (const socket of this.#sockets()) {
        socket.send(socketMessage(event));
        socket.close(1000, "deleted");
      }
    });
  }

  #afterDurable(send: () => void): void {
    this.#delivery = this.#delivery
      .then(() => this.#ctx.storage.sync())
      .then(send)
      .catch((error: unknown) => this.#onFailure(error));
  }

  #deliver(write: WrittenEvents, first: number, last: number): void {
    const tail = write.info ? [write.leaf, write.info] : [write.leaf];
    const frames = {
      full: [...write.full, ...tail].map(sseFrame).join(""),
      light: [...write.light, ...tail].map(sseFrame).join(""),
    };
    for (const stream of this.#streams) {
      // A stream opened after this write was committed replays it from storage.
      if (stream.bound >= last) continue;
      if (!stream.push(stream.payload ? frames.full : frames.light)) this.#drop(stream);
    }
    let messages: { full: string[]; light: string[]; info: string[] } | undefined;
    for (const socket of this.#sockets()) {
      const state = socket.deserializeAttachment() as SocketState | null;
      // A socket still replaying (or told to ask again) reads these from storage itself.
      if (!state?.live || state.cursor !== first - 1) continue;
      messages ??= {
        full: write.full.map(socketMessage),
        light: write.light.map(socketMessage),
        info: write.info ? [socketMessage(write.info)] : [],
      };
      const entries = state.payload ? messages.full : messages.light;
      this.#sendLive(socket, state, entries, write.leaf, messages.info, last);
    }
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
    const outstanding = state.sent - state.acked;
    const buffered = typeof socket.bufferedAmount === "number" && socket.bufferedAmount > MAX_SOCKET_BUFFERED;
    if (buffered || (outstanding > 0 && outstanding + size > SOCKET_WINDOW_CHARS)) {
      socket.close(SLOW_WATCHER_CODE, "slow: resume from the last seq");
      return;
    }
    let ask = state.ask;
    let leafMessage: string;
    if (!ask && outstanding + size >= SOCKET_ACK_CHARS) {
      const token = newToken();
      leafMessage = socketMessage({ ...leaf, data: { ...leaf.data, ack: token } });
      ask = { token, at: state.sent + size + leafMessage.length };
    } else {
      leafMessage = socketMessage(leaf);
    }
    for (const message of entries) socket.send(message);
    socket.send(leafMessage);
    for (const message of after) socket.send(message);
    const sent = state.sent + size + leafMessage.length;
    socket.serializeAttachment({ ...state, cursor: last, sent, ...(ask ? { ask } : {}) });
  }

  #deliverAll(event: SessionEvent): void {
    const frame = sseFrame(event);
    for (const stream of this.#streams) if (!stream.push(frame)) this.#drop(stream);
    const message = socketMessage(event);
    for (const socket of this.#sockets()) {
      const state = socket.deserializeAttachment() as SocketState | null;
      if (!state?.live) continue;
      socket.send(message);
      socket.serializeAttachment({ ...state, sent: state.sent + message.length });
    }
  }
}

/** The events of one write: its entries (with and without payloads), its `leaf`, and the session's info when it renamed it. */
interface WrittenEvents {
  full: SessionEvent[];
  light: SessionEvent[];
  leaf: LeafEvent;
  info: SessionEvent | undefined;
}

/**
 * Ends a socket that sent what the protocol does not allow: the reason as a `closed` event, then a
 * close with 1008, so that no number of bad messages is ever answered more than once.
 */
function refuse(socket: WebSocket, reason: string): void {
  // Messages sent before the close arrive after it: the first is answered, the rest are not.
  if (socket.readyState !== WebSocket.OPEN) return;
  socket.send(socketMessage({ event: "closed", data: { reason } }));
  // Close reasons are limited to 123 bytes.
  socket.close(1008, reason.slice(0, 120));
}

function entryEvent(entry: StoredEntry, payload: boolean): SessionEvent {
  return { event: "entry", id: entry.seq, data: payload ? entry : entrySummary(entry) };
}
