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
