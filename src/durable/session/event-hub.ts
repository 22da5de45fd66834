import type { StoredEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import type { LeafEvent, SessionEvent } from "../../core/events";
import { sseFrame } from "../../core/events";
import { SSE_KEEP_ALIVE } from "../../core/sse";
import { EventSockets } from "./event-sockets";
import { EventStream } from "./event-stream";
import type { EventSource, WrittenEvents } from "./watched-session";
import { checkResumePoint, entryEvent, REPLAY_PAGE, RETRY_WATCH_SECONDS } from "./watched-session";

/*
 * The watchers of one session and what they are sent. Two kinds: Server-Sent Events streams (held
 * here, in memory; the object stays awake while one is open) and WebSockets accepted with the
 * hibernation API (event-sockets.ts: their state in their attachment, so an idle session sleeps
 * and the next write wakes it with its watchers). The hub fans each event out to both.
 *
 * The rules: a watcher is registered and its replay bound taken in one synchronous step, so no
 * write falls between the two; replay reads entries after the watcher's resume point up to that
 * bound from storage, live events (all after the bound) wait until replay is done; events of a
 * write go out only once the write is durable, in order; a watcher that falls too far behind is
 * closed with a reason (it resumes from its last seq), so it never holds back the writer or
 * anyone else.
 */

/**
 * Server-Sent Events streams one session takes: each is held in the object's memory and keeps it
 * awake, so fewer than sockets, which hibernate.
 */
const MAX_STREAMS = 500;
const HEARTBEAT_MS = 15_000;

export class EventHub {
  readonly #ctx: DurableObjectState;
  readonly #source: EventSource;
  readonly #streams = new Set<EventStream>();
  /** The WebSocket watchers (event-sockets.ts): accepted, and their messages taken, there. */
  readonly sockets: EventSockets;
  /** Writes waiting to be durable before their events go out, in order. */
  #delivery: Promise<void> = Promise.resolve();
  #heartbeat: ReturnType<typeof setInterval> | undefined;

  readonly #onFailure: (error: unknown) => void;

  /** `onFailure` hears of events that could not be sent (to log them). */
  constructor(ctx: DurableObjectState, source: EventSource, onFailure: (error: unknown) => void) {
    this.#ctx = ctx;
    this.#source = source;
    this.#onFailure = onFailure;
    this.sockets = new EventSockets(ctx, source);
  }

  /** Watchers now: streams and sockets. */
  get watchers(): number {
    return this.#streams.size + this.sockets.all().length;
  }

  get watching(): boolean {
    return this.#streams.size > 0 || this.sockets.all().length > 0;
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
    const bound = checkResumePoint(this.#source, after);
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
      for (const stream of this.#streams) stream.push(SSE_KEEP_ALIVE);
    }, HEARTBEAT_MS);
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

  /**
   * Something besides entries changed, once it is durable: the header (`session`: name, system
   * prompt, metadata, automatic compaction settings), an answer being written (`generation`:
   * started, finished or stopped), automatic compaction's state (`compaction`).
   */
  changed(event: Extract<SessionEvent, { event: "session" | "generation" | "compaction" }>): void {
    if (!this.watching) return;
    this.#afterDurable(() => this.#deliverAll(event));
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
      this.sockets.closeAll(event);
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
    this.sockets.deliver(write, first, last);
  }

  #deliverAll(event: SessionEvent): void {
    const frame = sseFrame(event);
    for (const stream of this.#streams) if (!stream.push(frame)) this.#drop(stream);
    this.sockets.deliverAll(event);
  }
}
