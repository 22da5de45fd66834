/*
 * Waiting between tries: how long a reader that lost its connection waits before the next one
 * (doubling from its base delay, at most MAX_RETRY_DELAY_MS), and a wait its signal cuts short.
 */

const MAX_RETRY_DELAY_MS = 30_000;

/** Waits `ms`, or until `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** The wait before reconnecting after `failures` failures in a row. */
export function reconnectDelay(baseDelay: number, failures: number): number {
  return Math.min(MAX_RETRY_DELAY_MS, baseDelay * 2 ** Math.min(failures - 1, 10));
}
