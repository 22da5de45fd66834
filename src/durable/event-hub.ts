import type { AutoCompactStatus, SessionEvent, SessionInfo, StoredEntry } from "../core";
import { entrySummary, SessionError, socketMessage, sseFrame } from "../core";

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
 * anyone else.
 */

/** Live events a stream may hold while its reader is slow, in characters; over it, it is closed. */
const MAX_QUEUED_CHARS = 8 * 1024 * 1024;
/** Bytes a WebSocket may have waiting to go out before it is closed as too slow. */
const MAX_SOCKET_BUFFERED = 8 * 1024 * 1024;
/** Entries one replay step reads (a page of SSE, one round of WebSocket replay). */
const REPLAY_PAGE = 256;
/** Entries a WebSocket replays in one go; past that, it asks to be sent `{after}` again. */
const SOCKET_REPLAY_LIMIT = 2048;
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
}

/** What a WebSocket watcher keeps across hibernation. */
interface SocketState {
  payload: boolean;
  /** The last seq it was sent (or replay reached). */
  cursor: number;
  /** Whether it is caught up and takes live events. */
  live: boolean;
}

class EventStream {
  readonly stream: ReadableStream<Uint8Array>;
  readonly payload: boolean;
  /** The last seq its replay covers: later writes reach it live, earlier ones through replay. */
  readonly bound: number;
  #queue: string[] = [];
  #queued = 0;
  #wake: (() => void) | undefined;
  #ended = false;
  #replay: Generator<string> | undefined;

  constructor(payload: boolean, bound: number, replay: Generator<string>, onCancel: () => void) {
    this.payload = payload;
    this.bound = bound;
    this.#replay = replay;
    const encoder = new TextEncoder();
    this.stream = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        for (;;) {
          if (this.#replay) {
            const next = this.#replay.next();
            if (!next.done) return controller.enqueue(encoder.encode(next.value));
            this.#replay = undefined;
          }
          if (this.#queue.length > 0) {
            const text = this.#queue.join("");
            this.#queue = [];
            this.#queued = 0;
            return controller.enqueue(encoder.encode(text));
          }
          if (this.#ended) return controller.close();
          await new Promise<void>((resolve) => {
            this.#wake = resolve;
          });
        }
      },
      cancel: () => {
        this.#ended = true;
        onCancel();
      },
    });
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Queues frames; false when this stream fell too far behind and was closed. */
  push(text: string, end = false): boolean {
    if (this.#ended) return false;
    if (this.#queued > 0 && this.#queued + text.length > MAX_QUEUED_CHARS) {
      this.#queue = [sseFrame({ event: "closed", data: { reason: "slow: resume from the last event id" } })];
      this.#queued = 0;
      this.#end();
      return false;
    }
    this.#queue.push(text);
    this.#queued += text.length;
    if (end) this.#end();
    else this.#notify();
    return true;
  }

  #end(): void {
    this.#ended = true;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

export class EventHub {
  readonly #ctx: DurableObjectState;
  readonly #source: EventSource;
  readonly #streams = new Set<EventStream>();
  /** Writes waiting to be durable before their events go out, in order. */
  #delivery: Promise<void> = Promise.resolve();
  #heartbeat: ReturnType<typeof setInterval> | undefined;

  constructor(ctx: DurableObjectState, source: EventSource) {
    this.#ctx = ctx;
    this.#source = source;
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

  /** Frames of the replay after `after` up to `bound`, read a page at a time, then the leaf. */
  *#replay(after: number, bound: number, payload: boolean, encode: (event: SessionEvent) => string) {
    for (let cursor = after; cursor < bound; ) {
      const page = this.#source.entriesAfter(cursor, bound, REPLAY_PAGE);
      if (page.length === 0) break;
      yield page.map((entry) => encode(entryEvent(entry, payload))).join("");
      cursor = (page[page.length - 1] as StoredEntry).seq;
    }
    yield encode({ event: "leaf", id: bound, data: { leafId: this.#source.leafId() } });
  }

  /**
   * A Server-Sent Events stream of the session after `after`: its info, the replay, then live
   * events. The bound is taken and the stream registered here, synchronously.
   */
  openStream(after: number, payload: boolean): ReadableStream<Uint8Array> {
    const bound = this.#checkAfter(after);
    const info = this.#source.info();
    const replay = this.#replay(after, bound, payload, sseFrame);
    function* opening(): Generator<string> {
      yield sseFrame({ event: "session", data: info });
      yield* replay;
    }
    const stream: EventStream = new EventStream(payload, bound, opening(), () => this.#drop(stream));
    this.#streams.add(stream);
    this.#startHeartbeat();
    return stream.stream;
  }

  #drop(stream: EventStream): void {
    this.#streams.delete(stream);
    if (this.#streams.size === 0 && this.#heartbeat !== undefined) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
    }
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
    this.#ctx.acceptWebSocket(socket, [EVENT_SOCKET_TAG]);
    const state: SocketState = { payload, cursor: after, live: false };
    socket.send(socketMessage({ event: "session", data: this.#source.info() }));
    this.#catchUp(socket, state);
  }

  /** A message from a watcher: `{after: seq}` resumes from there (after a replay that stopped short). */
  socketMessage(socket: WebSocket, message: string | ArrayBuffer): void {
    let after: unknown;
    try {
      after = (
        JSON.parse(typeof message === "string" ? message : new TextDecoder().decode(message)) as {
          after?: unknown;
        }
      ).after;
    } catch {
      after = undefined;
    }
    const state = socket.deserializeAttachment() as SocketState | null;
    if (!state || typeof after !== "number") {
      socket.send(socketMessage({ event: "closed", data: { reason: 'send {"after": <seq>} to resume' } }));
      return;
    }
    try {
      this.#checkAfter(after);
    } catch (error) {
      socket.send(socketMessage({ event: "closed", data: { reason: (error as Error).message } }));
      return;
    }
    this.#catchUp(socket, { ...state, cursor: after, live: false });
  }

  /**
   * Replays up to SOCKET_REPLAY_LIMIT entries synchronously (no write can come between) and makes
   * the socket live when that reaches the end; otherwise it is told where to ask again.
   */
  #catchUp(socket: WebSocket, state: SocketState): void {
    const bound = this.#source.lastSeq();
    let cursor = state.cursor;
    let sent = 0;
    while (cursor < bound && sent < SOCKET_REPLAY_LIMIT) {
      const page = this.#source.entriesAfter(cursor, bound, REPLAY_PAGE);
      if (page.length === 0) break;
      for (const entry of page) socket.send(socketMessage(entryEvent(entry, state.payload)));
      cursor = (page[page.length - 1] as StoredEntry).seq;
      sent += page.length;
    }
    const caughtUp = cursor >= bound;
    if (caughtUp)
      socket.send(socketMessage({ event: "leaf", id: bound, data: { leafId: this.#source.leafId() } }));
    else socket.send(JSON.stringify({ event: "more", data: { after: cursor } }));
    socket.serializeAttachment({ ...state, cursor: caughtUp ? bound : cursor, live: caughtUp });
  }

  /** After a committed write: its entries, and the head it left, once they are durable. */
  written(entries: readonly StoredEntry[], leafId: string | null): void {
    if (entries.length === 0 || !this.watching) return;
    const first = (entries[0] as StoredEntry).seq;
    const last = (entries[entries.length - 1] as StoredEntry).seq;
    const events: SessionEvent[] = entries.map((entry) => entryEvent(entry, true));
    const summaries: SessionEvent[] = entries.map((entry) => entryEvent(entry, false));
    const leaf: SessionEvent = { event: "leaf", id: last, data: { leafId } };
    const named = entries.some((entry) => entry.type === "session_info");
    const info = named ? this.#source.info() : undefined;
    this.#afterDurable(() => {
      const extra: SessionEvent[] = info ? [leaf, { event: "session", data: info }] : [leaf];
      this.#deliver([...events, ...extra], [...summaries, ...extra], first, last);
    });
  }

  /** The header changed (name, system prompt, metadata, automatic compaction settings). */
  sessionChanged(info: SessionInfo): void {
    if (!this.watching) return;
    this.#afterDurable(() => this.#deliverAll({ event: "session", data: info }));
  }

  compactionChanged(status: AutoCompactStatus): void {
    if (!this.watching) return;
    this.#afterDurable(() => this.#deliverAll({ event: "compaction", data: status }));
  }

  /** The session is gone: every watcher gets `deleted` and is closed. */
  deleted(id: string): void {
    const event: SessionEvent = { event: "deleted", data: { id } };
    for (const stream of this.#streams) stream.push(sseFrame(event), true);
    this.#streams.clear();
    for (const socket of this.#sockets()) {
      socket.send(socketMessage(event));
      socket.close(1000, "deleted");
    }
  }

  #afterDurable(send: () => void): void {
    this.#delivery = this.#delivery
      .then(() => this.#ctx.storage.sync())
      .then(send)
      .catch((error: unknown) => console.error("session: events could not be sent", String(error)));
  }

  #deliver(full: SessionEvent[], light: SessionEvent[], first: number, last: number): void {
    const frames = { full: full.map(sseFrame).join(""), light: light.map(sseFrame).join("") };
    for (const stream of this.#streams) {
      // A stream opened after this write was committed replays it from storage.
      if (stream.bound >= last) continue;
      if (!stream.push(stream.payload ? frames.full : frames.light)) this.#drop(stream);
    }
    let messages: { full: string[]; light: string[] } | undefined;
    for (const socket of this.#sockets()) {
      const state = socket.deserializeAttachment() as SocketState | null;
      // A socket still replaying (or told to ask again) reads these from storage itself.
      if (!state?.live || state.cursor !== first - 1) continue;
      if (socket.bufferedAmount > MAX_SOCKET_BUFFERED) {
        socket.close(SLOW_WATCHER_CODE, "slow: resume from the last seq");
        continue;
      }
      messages ??= { full: full.map(socketMessage), light: light.map(socketMessage) };
      for (const message of state.payload ? messages.full : messages.light) socket.send(message);
      socket.serializeAttachment({ ...state, cursor: last });
    }
  }

  #deliverAll(event: SessionEvent): void {
    const frame = sseFrame(event);
    for (const stream of this.#streams) if (!stream.push(frame)) this.#drop(stream);
    const message = socketMessage(event);
    for (const socket of this.#sockets()) {
      const state = socket.deserializeAttachment() as SocketState | null;
      if (state?.live) socket.send(message);
    }
  }
}

function entryEvent(entry: StoredEntry, payload: boolean): SessionEvent {
  return { event: "entry", id: entry.seq, data: payload ? entry : entrySummary(entry) };
}
