import { SseReader } from "../src/core/sse";

/** One Server-Sent Event as it arrived, with the time it did. */
export type TimedEvent = { event: string; id?: string; data: string };

/**
 * Reads a Server-Sent Events body in the background until it ends or is aborted, telling `onEvent`
 * each event with the time its bytes arrived, and `onRead` after each read.
 */
export function followSse(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: TimedEvent, now: number) => void,
  onRead?: () => void,
): void {
  const reader = body.getReader();
  const sse = new SseReader();
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        const now = performance.now();
        for (const event of sse.push(decoder.decode(value, { stream: true }))) onEvent(event, now);
        onRead?.();
      }
    } catch {
      // Stopped.
    }
  })();
}
