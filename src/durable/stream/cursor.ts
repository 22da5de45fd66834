/*
 * `Stream-Cursor` (PROTOCOL.md 10.1): the number of the 20-second interval since 2024-10-09
 * 00:00 UTC. Readers echo it in their next live read, so the URLs caches key on move on as time
 * does; a reader that echoes a cursor not behind the current interval gets one strictly ahead of
 * it (jittered by up to an hour), so a cached answer can never lead a reader back to itself.
 */

const INTERVAL_SECONDS = 20;
const EPOCH_MS = Date.UTC(2024, 9, 9);
const MAX_JITTER_SECONDS = 3600;

export function streamCursor(now: number, echoed: string | null): string {
  const current = Math.floor((now - EPOCH_MS) / (INTERVAL_SECONDS * 1000));
  const previous = echoed !== null && /^\d{1,15}$/.test(echoed) ? Number(echoed) : undefined;
  if (previous === undefined || previous < current) return String(current);
  const jitterSeconds = 1 + Math.floor(Math.random() * MAX_JITTER_SECONDS);
  return String(previous + Math.max(1, Math.ceil(jitterSeconds / INTERVAL_SECONDS)));
}
