import { SessionError } from "../../core";

/** How long a write waits for the put of its checkpoint when that has not come yet. */
const ARRIVAL_MS = 30_000;

/**
 * The order of a saver's writes, by session and checkpoint (`key`). LangGraph puts checkpoints in
 * the background, so the writes of a step (or the next checkpoint) can come before the put of the
 * checkpoint they hang under, and an entry's parent must be stored before it.
 */
export class CheckpointArrivals {
  /** Puts not yet written. */
  readonly #writing = new Map<string, Promise<unknown>>();
  /** Writes waiting for the put of their checkpoint. */
  readonly #arrivals = new Map<string, { arrived: Promise<void>; arrive: () => void }>();
  /** Whether the checkpoint of a key is known to be stored (put or read here). */
  readonly #stored: (key: string) => boolean;

  constructor(stored: (key: string) => boolean) {
    this.#stored = stored;
  }

  /** Tracks the put of a checkpoint until it is written; writes waiting for it go on then. */
  async put<T>(key: string, written: Promise<T>): Promise<T> {
    this.#writing.set(key, written);
    try {
      return await written;
    } finally {
      if (this.#writing.get(key) === written) this.#writing.delete(key);
      this.#arrivals.get(key)?.arrive();
      this.#arrivals.delete(key);
    }
  }

  /**
   * Runs a write that hangs under the checkpoint of `key` (none: a root) once that checkpoint is
   * stored: after its put here, or, when the write meets a missing parent, once that put comes
   * (up to `ARRIVAL_MS`).
   */
  async after<T>(key: string | undefined, write: () => Promise<T>): Promise<T> {
    if (key === undefined) return write();
    // A failed put fails its own caller; this write then meets the missing parent itself.
    await this.#writing.get(key)?.catch(() => undefined);
    try {
      return await write();
    } catch (error) {
      if (!(error instanceof SessionError && error.code === "parent_not_found")) throw error;
      if (!(await this.#arrival(key))) throw error;
      return write();
    }
  }

  /** Whether the put of a checkpoint was made here, waiting up to `ARRIVAL_MS` for it to come. */
  async #arrival(key: string): Promise<boolean> {
    if (this.#stored(key)) return true;
    const writing = this.#writing.get(key);
    if (writing) return writing.then(() => true).catch(() => false);
    let waiting = this.#arrivals.get(key);
    if (!waiting) {
      let arrive = () => {};
      const arrived = new Promise<void>((resolve) => {
        arrive = resolve;
      });
      waiting = { arrived, arrive };
      this.#arrivals.set(key, waiting);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ARRIVAL_MS);
    });
    try {
      return await Promise.race([waiting.arrived.then(() => this.#stored(key)), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}
