/*
 * Waiting between tries: how long a request that failed, or a reader that lost its connection,
 * waits before the next one (doubling from its base delay, at most MAX_RETRY_DELAY_MS), and a wait
 * its signal cuts short.
 */

const MAX_RETRY_DELAY_MS = 30_000;

/** Waits `ms`, or until `signal` aborts (not at all when it already has). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The wait before the next try after `failures` failures in a row. */
export function retryDelay(baseDelay: number, failures: number): number {
  return Math.min(MAX_RETRY_DELAY_MS, baseDelay * 2 ** Math.min(failures - 1, 10));
}
