import { sseFrame } from "../../core/events";

/*
 * One watcher's Server-Sent Events stream, as an object serves it: what it replays is read from
 * storage as the reader pulls, live events wait in a queue until it reads them. A reader too far
 * behind (over MAX_QUEUED_CHARS waiting) is sent `closed` and let go, so it never holds back the
 * writer or the other watchers; it resumes from its last event id.
 */

/** Live events a stream may hold while its reader is slow, in characters; over it, it is closed. */
const MAX_QUEUED_CHARS = 8 * 1024 * 1024;

export class EventStream {
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
          // An ended stream (the session was deleted) reads no more of its replay.
          if (this.#replay && !this.#ended) {
            let next: IteratorResult<string>;
            try {
              next = this.#replay.next();
            } catch {
              // The session went while replaying (its `deleted` comes through the queue).
              next = { done: true, value: undefined };
            }
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

  /** Stops reading the replay: the session is going. */
  stopReplay(): void {
    this.#replay = undefined;
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
