import type { StoredEntry } from "../../core/entries";
import type { ErrorBody, Result } from "../../core/errors";
import { capture, ERROR_STATUS, SessionError } from "../../core/errors";
import type { LeafEvent, SessionEvent } from "../../core/events";
import { sseFrame } from "../../core/events";
import type { GenerationInfo } from "../../core/generations/generation-schemas";
import { SSE_KEEP_ALIVE } from "../../core/sse";
import type { EntryEvent, EventSource, WrittenEvents } from "./event-sockets";
import {
  checkResumePoint,
  closeSocket,
  EventSockets,
  entryEvent,
  RETRY_WATCH_SECONDS,
  readWatcherMessage,
  replayPage,
  SOCKET_TICKET_HEADER,
  SocketTickets,
  socketTakesPayloads,
} from "./event-sockets";
import type { ForkCopy } from "./fork-copy";
import type { SessionObjectState, SessionTelemetry } from "./object-state";
import type { SessionBlobs } from "./session-blobs";
import type { SessionCalls } from "./session-calls";
import type { SessionStore } from "./session-store";

/*
 * The session's watchers as the object takes them: Server-Sent Events streams, and WebSockets
 * (opened by the router, or by a browser with a one-time ticket) whose messages wake the object
 * from hibernation. The event hub (below) sends them what they watch; here a watcher is
 * admitted, counted in a metric, and given its entries' blobs as values: a stream's as they pass,
 * a socket's read ahead for each round of replay, since a round is sent at once.
 * Below: the hub that sends every watcher its events, one Server-Sent Events stream, and the
 * frames the streams have waiting, each encoded once for all of them.
 */

function errorAnswer(error: ErrorBody): Response {
  return Response.json({ error }, { status: ERROR_STATUS[error.code] });
}

/** A session's Server-Sent Events stream and the seq it starts after. */
export interface SessionEventStream {
  body: ReadableStream<Uint8Array>;
  after: number;
}

export class SessionWatchers {
  /** Sends the watchers the session's events. */
  readonly hub: EventHub;
  readonly #session: SessionStore;
  readonly #blobs: SessionBlobs;
  readonly #calls: SessionCalls;
  readonly #copy: ForkCopy;
  readonly #telemetry: SessionTelemetry;
  readonly #tickets: SocketTickets;
  /** True while a WebSocket's replay round runs: its entries come with their blobs read ahead. */
  #socketRound = false;

  constructor(
    object: SessionObjectState,
    calls: SessionCalls,
    /** A fork's copy: a replay from the part still to copy waits for it. */
    copy: ForkCopy,
    /** Answers being written now (a watcher is told of each when it starts watching). */
    openGenerations: () => GenerationInfo[],
  ) {
    const { ctx, session, blobs, telemetry } = object;
    this.#session = session;
    this.#blobs = blobs;
    this.#calls = calls;
    this.#copy = copy;
    this.#telemetry = telemetry;
    this.#tickets = new SocketTickets(ctx.storage.kv);
    this.hub = new EventHub(
      ctx,
      {
        lastSeq: () => session.lastSeq(),
        leafId: () => session.state.leafId,
        info: () => session.info(),
        entriesAfter: (after, bound, limit) => {
          const entries = session.reads.entriesAfter(after, bound, limit);
          // A socket's round is sent at once, with values read ahead; a stream's passes `rehydrateStream`.
          return this.#socketRound ? blobs.fromWarm(entries) : entries;
        },
        summariesAfter: (after, bound, limit) => session.reads.summariesAfter(after, bound, limit),
        openGenerations,
      },
      (error) => void telemetry.logFailure("event_fan_out", error),
    );
    // Watchers' pings are answered without waking a hibernating session.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /**
   * The session's events after `after` (a seq; now when absent), as Server-Sent Events, and the
   * seq they start after (now's, when `after` is absent).
   */
  events(after: number | undefined, payload: boolean): Promise<Result<SessionEventStream>> {
    return capture(async () => {
      this.#calls.checkListed();
      if (after !== undefined) await this.#copy.replaying(after);
      // Deleted meanwhile, the session told its watchers so already: this one would never hear it.
      this.#calls.checkListed();
      const start = after ?? this.#session.lastSeq();
      const stream = this.hub.openStream(start, payload);
      try {
        // Entries replayed from storage come with references: their values are put back as they
        // pass. Summaries hold none.
        const answered = payload ? await this.#blobs.rehydrateStream(stream, { urls: false }) : stream;
        void this.#watcherMetric("sse");
        return { body: answered, after: start };
      } catch (error) {
        // A stream never returned would keep its place among the session's streams, and the heartbeat.
        await stream.cancel();
        throw error;
      }
    });
  }

  #watcherMetric(transport: "sse" | "websocket"): Promise<void> {
    return this.#telemetry.metric({
      kind: "watcher",
      sessionId: this.#session.state.header.id,
      transport,
      watchers: this.hub.watchers,
    });
  }

  /** A one-time ticket that opens this session's WebSocket (for browsers). */
  mintTicket(): Promise<Result<{ ticket: string; expiresAt: string }>> {
    return capture(() => {
      if (!this.#calls.listed) throw new SessionError("not_found", "session does not exist");
      return this.#tickets.mint();
    });
  }

  /** Whether a ticket is good for this session's WebSocket; the socket it opens uses it up. */
  checkTicket(ticket: string): boolean {
    return this.#tickets.isGood(ticket) && this.#calls.listed;
  }

  /**
   * A watcher's WebSocket (the router has authenticated it): `?after=<seq>&payload=false`. One
   * opened with a ticket (SOCKET_TICKET_HEADER) uses it up once nothing else refuses the upgrade.
   */
  async acceptSocket(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return errorAnswer({ code: "invalid_request", message: "expected a WebSocket upgrade" });
    }
    const url = new URL(request.url);
    const ticket = request.headers.get(SOCKET_TICKET_HEADER);
    const pair = new WebSocketPair();
    const answer = await capture(async () => {
      this.#calls.checkListed();
      const after = Number(url.searchParams.get("after") ?? this.#session.lastSeq());
      const payload = url.searchParams.get("payload") !== "false";
      await this.#copy.replaying(after);
      if (payload) await this.#blobs.warm(after);
      // Deleted meanwhile, the session told its watchers so already: this one would never hear it.
      this.#calls.checkListed();
      this.hub.sockets.checkAdmission(after);
      // Used up in the step that accepts: a refused upgrade keeps it good, two at once open one socket.
      if (ticket !== null && !this.#tickets.redeem(ticket)) {
        throw new SessionError("unauthorized", "the ticket is unknown, used or expired");
      }
      this.#socketRound = true;
      try {
        return this.hub.sockets.accept(pair[1], after, payload);
      } finally {
        this.#socketRound = false;
      }
    });
    if (!answer.ok) return errorAnswer(answer.error);
    void this.#watcherMetric("websocket");
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  async socketMessage(socket: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const request = readWatcherMessage(message);
    // An `{after}` message resumes from that seq: the round's blobs are read ahead (summaries hold none).
    if (typeof request.after === "number") {
      try {
        await this.#copy.replaying(request.after);
        if (socketTakesPayloads(socket)) await this.#blobs.warm(request.after);
      } catch (error) {
        // The round could not be sent whole: the watcher reconnects (with its backoff) and resumes.
        await this.#telemetry.logFailure("read_blobs", error);
        closeSocket(socket, 1011, "blobs unavailable: resume from the last seq");
        return;
      }
    }
    this.#socketRound = true;
    try {
      this.hub.sockets.message(socket, request);
    } finally {
      this.#socketRound = false;
    }
  }
}

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
 * anyone else. A write's frames are encoded once for all the streams, and what they have waiting
 * together stays within MAX_SESSION_QUEUED_BYTES: a write that would take it past lets go of the
 * streams furthest behind.
 */

/**
 * Server-Sent Events streams one session takes: each is held in the object's memory and keeps it
 * awake, so fewer than sockets, which hibernate.
 */
const MAX_STREAMS = 500;
const HEARTBEAT_MS = 15_000;
/**
 * Bytes of live events the session's streams may have waiting together, each frame counted once:
 * room for two writes of the largest entry. A write is sent all the same to streams with nothing
 * waiting.
 */
const MAX_SESSION_QUEUED_BYTES = 32 * 1024 * 1024;

export class EventHub {
  readonly #ctx: DurableObjectState;
  readonly #source: EventSource;
  readonly #streams = new Set<EventStream>();
  /** The frames the streams have waiting. */
  readonly #frames = new QueuedFrames();
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
    this.sockets = new EventSockets(ctx, source, onFailure);
  }

  /** Watchers now: streams and sockets. */
  get watchers(): number {
    return this.#streams.size + this.sockets.all().length;
  }

  get watching(): boolean {
    return this.#streams.size > 0 || this.sockets.all().length > 0;
  }

  /** Bytes of live events the streams have waiting, each frame counted once. */
  get queuedBytes(): number {
    return this.#frames.bytes;
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
      const page = replayPage(this.#source, cursor, bound, payload);
      if (page.length === 0) break;
      yield page.map(encode).join("");
      cursor = (page[page.length - 1] as EntryEvent).id;
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
    const stream: EventStream = new EventStream(payload, bound, opening(), this.#frames, () =>
      this.#drop(stream),
    );
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
      const frame = this.#frames.frame(SSE_KEEP_ALIVE);
      this.#makeRoom(frame.bytes.length);
      for (const stream of this.#streams) if (!stream.push(frame)) this.#drop(stream);
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
    // Where the head is as of this change: where a live socket is when the event reaches it.
    const head: LeafEvent = {
      event: "leaf",
      id: this.#source.lastSeq(),
      data: { leafId: this.#source.leafId() },
    };
    this.#afterDurable(() => this.#deliverAll(event, head));
  }

  /**
   * The session is gone: replays stop reading now (its storage is about to go), and after the
   * events of writes made before it, every watcher gets `deleted` and is closed.
   */
  deleted(id: string): void {
    for (const stream of this.#streams) stream.stopReplay();
    const event: SessionEvent = { event: "deleted", data: { id } };
    this.#delivery = this.#delivery
      .then(() => {
        const frame = this.#frames.frame(sseFrame(event));
        for (const stream of this.#streams) stream.push(frame, true);
        this.#streams.clear();
        this.#stopHeartbeat();
        this.sockets.closeAll(event);
      })
      .catch((error: unknown) => this.#onFailure(error));
  }

  #afterDurable(send: () => void): void {
    this.#delivery = this.#delivery
      .then(() => this.#ctx.storage.sync())
      .then(send)
      .catch((error: unknown) => this.#onFailure(error));
  }

  #deliver(write: WrittenEvents, first: number, last: number): void {
    // A stream opened after this write was committed replays it from storage.
    const taking = [...this.#streams].filter((stream) => stream.bound < last);
    const tail = write.info ? [write.leaf, write.info] : [write.leaf];
    const frameOf = (events: SessionEvent[]) =>
      this.#frames.frame([...events, ...tail].map(sseFrame).join(""));
    // Each made once, and only for the streams that take it: with payloads, or without.
    const full = taking.some((stream) => stream.payload) ? frameOf(write.full) : undefined;
    const light = taking.some((stream) => !stream.payload) ? frameOf(write.light) : undefined;
    this.#makeRoom((full?.bytes.length ?? 0) + (light?.bytes.length ?? 0));
    for (const stream of taking) {
      if (!stream.push((stream.payload ? full : light) as LiveFrame)) this.#drop(stream);
    }
    this.sockets.deliver(write, first, last);
  }

  #deliverAll(event: SessionEvent, head: LeafEvent): void {
    const frame = this.#frames.frame(sseFrame(event));
    this.#makeRoom(frame.bytes.length);
    for (const stream of this.#streams) if (!stream.push(frame)) this.#drop(stream);
    this.sockets.deliverAll(event, head);
  }

  /**
   * Lets go of the streams furthest behind (the oldest frame waiting first) until `bytes` more
   * fit within MAX_SESSION_QUEUED_BYTES, or no stream has anything waiting.
   */
  #makeRoom(bytes: number): void {
    if (this.#frames.bytes + bytes <= MAX_SESSION_QUEUED_BYTES) return;
    const behind = [...this.#streams]
      .filter((stream) => stream.oldestWaiting !== undefined)
      .sort((a, b) => (a.oldestWaiting as number) - (b.oldestWaiting as number));
    for (const stream of behind) {
      if (this.#frames.bytes + bytes <= MAX_SESSION_QUEUED_BYTES) return;
      stream.letGo();
      this.#drop(stream);
    }
  }
}

/*
 * One watcher's Server-Sent Events stream, as an object serves it: what it replays is read from
 * storage as the reader pulls, live events wait in a queue (frames shared with the other streams,
 * `QueuedFrames` below) until it reads them. A reader too far behind (over MAX_QUEUED_BYTES waiting)
 * is sent `closed` and let go, so it never holds back the writer or the other watchers; it resumes
 * from its last event id.
 */

/** Live events a stream may hold while its reader is slow, in bytes; over it, it is closed. */
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;
/** Why a stream too far behind is let go. */
const SLOW_REASON = "slow: resume from the last event id";

export class EventStream {
  readonly stream: ReadableStream<Uint8Array>;
  readonly payload: boolean;
  /** The last seq its replay covers: later writes reach it live, earlier ones through replay. */
  readonly bound: number;
  readonly #frames: QueuedFrames;
  #queue: LiveFrame[] = [];
  #queued = 0;
  #wake: (() => void) | undefined;
  #ended = false;
  #replay: Generator<string> | undefined;
  /** Its replay stopped before the end: no live event may follow it. */
  #cutShort = false;

  /**
   * `frames` counts what the object's streams have queued; `onEnd` hears that the stream ended:
   * its reader cancelled it, or it closed.
   */
  constructor(
    payload: boolean,
    bound: number,
    replay: Generator<string>,
    frames: QueuedFrames,
    onEnd: () => void,
  ) {
    this.payload = payload;
    this.bound = bound;
    this.#replay = replay;
    this.#frames = frames;
    const encoder = new TextEncoder();
    this.stream = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        for (;;) {
          // An ended stream (the session was deleted) reads no more of its replay.
          if (this.#replay && !this.#ended) {
            let next: IteratorResult<string>;
            try {
              next = this.#replay.next();
            } catch {
              // A read failed: the reader resumes from the last entry it got.
              this.#replay = undefined;
              this.#closeWith("replay failed: resume from the last event id");
              continue;
            }
            if (!next.done) return controller.enqueue(encoder.encode(next.value));
            this.#replay = undefined;
          }
          const frame = this.#queue.shift();
          if (frame) {
            this.#queued -= frame.bytes.length;
            this.#frames.release(frame);
            // The bytes every stream sending this frame shares: the reader only reads them.
            return controller.enqueue(frame.bytes);
          }
          if (this.#ended) {
            onEnd();
            return controller.close();
          }
          await new Promise<void>((resolve) => {
            this.#wake = resolve;
          });
        }
      },
      cancel: () => {
        this.#ended = true;
        this.#clear();
        onEnd();
      },
    });
  }

  /** The order of the oldest frame it has waiting (`QueuedFrames`), if any. */
  get oldestWaiting(): number | undefined {
    return this.#queue[0]?.order;
  }

  /**
   * Stops reading the replay: the session is going. A replay stopped before its end sends none of
   * the live events behind it, only the last (`deleted`).
   */
  stopReplay(): void {
    if (!this.#replay) return;
    this.#replay = undefined;
    this.#cutShort = true;
    this.#clear();
  }

  /** Queues a frame; false when this stream fell too far behind and was closed. */
  push(frame: LiveFrame, end = false): boolean {
    if (this.#ended) return false;
    if (this.#cutShort && !end) return true;
    if (this.#queued > 0 && this.#queued + frame.bytes.length > MAX_QUEUED_BYTES) {
      this.#closeWith(SLOW_REASON);
      return false;
    }
    this.#enqueue(frame);
    if (end) this.#end();
    else this.#notify();
    return true;
  }

  /** Sends `closed` in place of what waits for it, as to a reader too far behind. */
  letGo(): void {
    if (!this.#ended) this.#closeWith(SLOW_REASON);
  }

  /**
   * Ends the stream with `closed` in place of the events waiting: its reader resumes from its last
   * event id, which no live event sent after a gap may move past entries it never got.
   */
  #closeWith(reason: string): void {
    this.#clear();
    this.#enqueue(this.#frames.frame(sseFrame({ event: "closed", data: { reason } })));
    this.#end();
  }

  #enqueue(frame: LiveFrame): void {
    this.#frames.hold(frame);
    this.#queue.push(frame);
    this.#queued += frame.bytes.length;
  }

  #clear(): void {
    for (const frame of this.#queue) this.#frames.release(frame);
    this.#queue = [];
    this.#queued = 0;
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

/*
 * The live events an object's Server-Sent Events streams have waiting, as frames: each is encoded
 * once, and every stream that sends it queues the same bytes. A frame counts toward what waits
 * from the moment a stream queues it until no stream has it queued any more (each has handed it to
 * its reader, or was let go); however many streams wait for it, it counts once.
 */

/** One frame of events, encoded once for every stream that sends it. */
export interface LiveFrame {
  readonly bytes: Uint8Array;
  /** Frames in the order they were made: a stream whose first waiting frame is older is further behind. */
  readonly order: number;
  /** Streams that have it queued now. */
  holders: number;
}

export class QueuedFrames {
  readonly #encoder = new TextEncoder();
  #made = 0;
  #bytes = 0;

  /** Bytes of the frames some stream has queued, each counted once. */
  get bytes(): number {
    return this.#bytes;
  }

  /** A frame of Server-Sent Events text, encoded. */
  frame(text: string): LiveFrame {
    return { bytes: this.#encoder.encode(text), order: this.#made++, holders: 0 };
  }

  /** A stream queued `frame`. */
  hold(frame: LiveFrame): void {
    if (frame.holders++ === 0) this.#bytes += frame.bytes.length;
  }

  /** A stream no longer has `frame` queued. */
  release(frame: LiveFrame): void {
    if (--frame.holders === 0) this.#bytes -= frame.bytes.length;
  }
}
