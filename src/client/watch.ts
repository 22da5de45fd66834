import { SessionError } from "../core/errors";
import { EVENTS_AFTER_HEADER, type SessionEvent, type TenantEvent } from "../core/events";
import { SseReader } from "../core/sse";
import { retryDelay, sleep } from "./backoff";
import { endsFollowing, serviceJson, type Transport, UnexplainedAnswerError } from "./transport";

/*
 * Following an event stream from the client: reconnects with backoff when the connection drops
 * or the service closes it (a restart, a watcher that fell behind), and resumes after the last
 * seq it saw, so the caller gets every entry once, in order, whatever happened on the way. The
 * backoff grows only while connections fail fast: one that brought a new seq, or stayed open at
 * least as long as the wait after it would be, starts it afresh.
 */

export interface WatchOptions {
  /** Replay the entries after this seq first; without it, from now. */
  after?: number;
  /** false: entries without their payloads. */
  payload?: boolean;
  /** Stops watching (the iterator ends). */
  signal?: AbortSignal;
  /**
   * First wait before reconnecting, doubled on each failure in a row (default 500 ms, at most 30 s):
   * a connection that could not be made, or ended sooner than that wait, without a new seq.
   */
  retryDelayMs?: number;
  /** Told when a connection starts answering (`live`) and when it is lost (`reconnecting`). */
  onStatus?: (status: "live" | "reconnecting") => void;
}

/** Whether the service itself answered `code` (not a proxy's bare status). */
function serviceSays(error: unknown, code: string): boolean {
  return error instanceof SessionError && !(error instanceof UnexplainedAnswerError) && error.code === code;
}

/**
 * How a stream ends: the event after which nothing more comes, and the one that stands for its
 * source going away.
 */
export interface StreamEnd<E> {
  last: (event: E) => boolean;
  /** Yielded, to end the stream, when a reconnection finds the source gone (`not_found`). */
  gone: E;
}

/**
 * The events of a stream at `path`; `end` tells the event after which nothing more comes (a
 * session's `deleted`), and the one that ends it when its source was deleted while reconnecting.
 */
export async function* watchStream<E extends SessionEvent | TenantEvent>(
  http: Transport,
  path: string,
  options: WatchOptions = {},
  end?: StreamEnd<E>,
): AsyncGenerator<E> {
  const { signal } = options;
  let after = options.after;
  let failures = 0;
  let connected = false;
  const baseDelay = options.retryDelayMs ?? 500;
  while (!signal?.aborted) {
    let body: ReadableStream<Uint8Array> | null = null;
    try {
      const response = await http.send("GET", path, {
        query: { after, payload: options.payload === false ? "false" : undefined },
        headers: { Accept: "text/event-stream" },
        signal,
      });
      body = response.body;
      // A stream with seqs says the one it starts after: a connection that drops before its first
      // event with an id resumes there, not from a later "now".
      const start = response.headers.get(EVENTS_AFTER_HEADER);
      if (body && start !== null && /^\d{1,15}$/.test(start)) after = Number(start);
    } catch (error) {
      if (signal?.aborted) return;
      // The service says it is gone since it was followed: deleted while the connection was down.
      if (connected && end && serviceSays(error, "not_found")) {
        yield end.gone;
        return;
      }
      if (endsFollowing(error)) throw error;
    }
    const opened = Date.now();
    if (body) {
      connected = true;
      options.onStatus?.("live");
      const reader = body.getReader();
      // Node's fetch loses the link from `signal` to the body once the request it made is
      // collected, and the stream would go on: stopping cancels the body here as well.
      const stop = () => void reader.cancel().catch(() => undefined);
      signal?.addEventListener("abort", stop, { once: true });
      if (signal?.aborted) stop();
      const sse = new SseReader();
      const decoder = new TextDecoder();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const raw of sse.push(decoder.decode(value, { stream: true }))) {
            const event = {
              event: raw.event,
              data: serviceJson(raw.data, "the service sent an event that is not JSON"),
            } as E;
            if (raw.id !== undefined) {
              const seq = Number(raw.id);
              // Only progress resets the backoff: a stream that fails as soon as it opens
              // keeps backing off.
              if (after === undefined || seq > after) failures = 0;
              after = seq;
              (event as { id?: number }).id = after;
            }
            yield event;
            if (end?.last(event)) return;
          }
        }
      } catch (error) {
        if (error instanceof SessionError) throw error;
        // The connection dropped: resume below.
      } finally {
        signal?.removeEventListener("abort", stop);
        await reader.cancel().catch(() => undefined);
      }
    }
    if (signal?.aborted) return;
    options.onStatus?.("reconnecting");
    // A stream without seqs (the tenant's) shows no progress but this: it stayed open a while.
    if (body && Date.now() - opened >= retryDelay(baseDelay, failures + 1)) failures = 0;
    failures++;
    await sleep(retryDelay(baseDelay, failures), signal);
  }
}
