import { SessionError } from "../../core/errors";
import type { TenantEvent } from "../../core/events";
import { sseFrame } from "../../core/events";
import type { SessionInfo } from "../../core/session-schemas";
import { EventStream, QueuedFrames } from "../session/session-watchers";

/*
 * The watchers of one directory shard: what its listing gains, changes and loses, live. Nothing is
 * replayed (a list view follows, then reads the listing); events go out once the shard's write is
 * durable, in order.
 */

/** Streams one directory shard holds open (each in memory, keeping the shard awake). */
const MAX_TENANT_STREAMS = 500;

export class TenantEventHub {
  readonly #ctx: DurableObjectState;
  readonly #failed: (error: unknown) => Promise<void>;
  readonly #streams = new Set<EventStream>();
  /** The frames the streams have waiting: each event encoded once for all of them. */
  readonly #frames = new QueuedFrames();
  #delivery: Promise<void> = Promise.resolve();

  /** `failed` logs a delivery that could not be made (the shard knows its tenant). */
  constructor(ctx: DurableObjectState, failed: (error: unknown) => Promise<void>) {
    this.#ctx = ctx;
    this.#failed = failed;
  }

  /** A stream of this shard's events from now; `rate_limited` when the shard has enough of them. */
  open(): ReadableStream<Uint8Array> {
    if (this.#streams.size >= MAX_TENANT_STREAMS) {
      throw new SessionError(
        "rate_limited",
        `this tenant has ${MAX_TENANT_STREAMS} event streams open already`,
        {
          retryAfterSeconds: 10,
        },
      );
    }
    function* nothing(): Generator<string> {}
    const stream: EventStream = new EventStream(true, 0, nothing(), this.#frames, () =>
      this.#streams.delete(stream),
    );
    this.#streams.add(stream);
    return stream.stream;
  }

  listed(info: SessionInfo, created: boolean): void {
    this.#send({ event: created ? "created" : "updated", data: info });
  }

  unlisted(id: string): void {
    this.#send({ event: "deleted", data: { id } });
  }

  #send(event: TenantEvent): void {
    if (this.#streams.size === 0) return;
    const frame = this.#frames.frame(sseFrame(event));
    this.#delivery = this.#delivery
      .then(() => this.#ctx.storage.sync())
      .then(() => {
        for (const stream of this.#streams) if (!stream.push(frame)) this.#streams.delete(stream);
      })
      .catch((error: unknown) => this.#failed(error));
  }
}
