import type { ErrorBody, Result } from "../../core/errors";
import { capture, ERROR_STATUS, SessionError } from "../../core/errors";
import type { GenerationInfo } from "../../core/generations/generation-schemas";
import { EventHub } from "./event-hub";
import { readWatcherMessage } from "./event-sockets";
import type { ForkCopy } from "./fork-copy";
import type { SessionBlobs } from "./session-blobs";
import type { SessionCalls } from "./session-calls";
import type { SessionStore } from "./session-store";
import type { SessionTelemetry } from "./session-telemetry";
import { SocketTickets } from "./socket-tickets";

/*
 * The session's watchers as the object takes them: Server-Sent Events streams, and WebSockets
 * (opened by the router, or by a browser with a one-time ticket) whose messages wake the object
 * from hibernation. The event hub (event-hub.ts) sends them what they watch; here a watcher is
 * admitted, counted in a metric, and given its entries' blobs as values: a stream's as they pass,
 * a socket's read ahead for each round of replay, since a round is sent at once.
 */

function errorAnswer(error: ErrorBody): Response {
  return Response.json({ error }, { status: ERROR_STATUS[error.code] });
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

  constructor(parts: {
    ctx: DurableObjectState;
    session: SessionStore;
    blobs: SessionBlobs;
    calls: SessionCalls;
    /** A fork's copy: a replay from the part still to copy waits for it. */
    copy: ForkCopy;
    telemetry: SessionTelemetry;
    /** Answers being written now (a watcher is told of each when it starts watching). */
    openGenerations: () => GenerationInfo[];
  }) {
    const { ctx, session, blobs, telemetry } = parts;
    this.#session = session;
    this.#blobs = blobs;
    this.#calls = parts.calls;
    this.#copy = parts.copy;
    this.#telemetry = telemetry;
    this.#tickets = new SocketTickets(ctx.storage);
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
        openGenerations: parts.openGenerations,
      },
      (error) => void telemetry.logFailure("event_fan_out", error),
    );
    // Watchers' pings are answered without waking a hibernating session.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /** The session's events after `after` (a seq; now when absent), as Server-Sent Events. */
  events(after: number | undefined, payload: boolean): Promise<Result<ReadableStream<Uint8Array>>> {
    return capture(async () => {
      this.#calls.checkListed();
      if (after !== undefined) await this.#copy.replaying(after);
      const stream = this.hub.openStream(after ?? this.#session.lastSeq(), payload);
      void this.#watcherMetric("sse");
      // Entries replayed from storage come with references: their values are put back as they pass.
      return this.#blobs.rehydrateStream(stream, { urls: false });
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

  /** Whether a ticket is good, using it up either way. */
  async redeemTicket(ticket: string): Promise<boolean> {
    return (await this.#tickets.redeem(ticket)) && this.#calls.listed;
  }

  /** A watcher's WebSocket (the router has authenticated it): `?after=<seq>&payload=false`. */
  async acceptSocket(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return errorAnswer({ code: "invalid_request", message: "expected a WebSocket upgrade" });
    }
    const url = new URL(request.url);
    const pair = new WebSocketPair();
    const answer = await capture(async () => {
      this.#calls.checkListed();
      const after = Number(url.searchParams.get("after") ?? this.#session.lastSeq());
      await this.#copy.replaying(after);
      await this.#blobs.warm(after);
      this.#socketRound = true;
      try {
        return this.hub.sockets.accept(pair[1], after, url.searchParams.get("payload") !== "false");
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
    // An `{after}` message resumes from that seq: the round's blobs are read ahead.
    if (typeof request.after === "number") {
      try {
        await this.#copy.replaying(request.after);
        await this.#blobs.warm(request.after);
      } catch (error) {
        // The round could not be sent whole: the watcher reconnects (with its backoff) and resumes.
        await this.#telemetry.logFailure("read_blobs", error);
        socket.close(1011, "blobs unavailable: resume from the last seq");
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
