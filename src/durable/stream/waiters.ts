/*
 * Readers waiting at a stream's tail (long-polls, SSE connections), in the object's memory. A
 * waiter holds no data: woken when the stream changes (an append, a close, a delete), it reads
 * what is new from storage. Each stream's waiters are keyed by its incarnation, so a stream made
 * again under a deleted one's key wakes none of the old one's readers.
 */

export class TailWaiters {
  readonly #waiting = new Map<string, Set<() => void>>();

  /**
   * Resolves when the stream changes (true), or after `ms` or when `signal` aborts (false). It
   * registers synchronously: a change made after this call returns always wakes it.
   */
  wait(incarnation: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve(false);
      let waiters = this.#waiting.get(incarnation);
      if (!waiters) {
        waiters = new Set();
        this.#waiting.set(incarnation, waiters);
      }
      const set = waiters;
      const finish = (changed: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", aborted);
        set.delete(woken);
        if (set.size === 0 && this.#waiting.get(incarnation) === set) this.#waiting.delete(incarnation);
        resolve(changed);
      };
      const woken = () => finish(true);
      const aborted = () => finish(false);
      const timer = setTimeout(() => finish(false), ms);
      signal?.addEventListener("abort", aborted);
      set.add(woken);
    });
  }

  /** Wakes every reader waiting on any of the host's streams. */
  wakeAll(): void {
    for (const incarnation of [...this.#waiting.keys()]) this.wake(incarnation);
  }

  /** Wakes every reader waiting on the stream. */
  wake(incarnation: string): void {
    const waiters = this.#waiting.get(incarnation);
    if (!waiters) return;
    this.#waiting.delete(incarnation);
    for (const woken of [...waiters]) woken();
  }
}
