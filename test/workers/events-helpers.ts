import { exports } from "cloudflare:workers";
import { SseReader } from "../../src/core/sse";
import { KEY_A } from "./helpers";

export interface ReadEvent {
  event: string;
  id?: string;
  data: any;
}

/** An open Server-Sent Events stream of a session, read event by event. */
export interface EventWatch {
  status: number;
  headers: Headers;
  /** The next event (heartbeats skipped); undefined once the stream ended. */
  next(timeoutMs?: number): Promise<ReadEvent | undefined>;
  /** Events until one matches `until` (included). */
  until(until: (event: ReadEvent) => boolean, timeoutMs?: number): Promise<ReadEvent[]>;
  close(): Promise<void>;
  text: string;
}

export async function watchEvents(
  id: string,
  options: { after?: number; lastEventId?: string; key?: string; payload?: boolean } = {},
): Promise<EventWatch> {
  const query = new URLSearchParams();
  if (options.after !== undefined) query.set("after", String(options.after));
  if (options.payload === false) query.set("payload", "false");
  const headers: Record<string, string> = { Authorization: `Bearer ${options.key ?? KEY_A}` };
  if (options.lastEventId !== undefined) headers["Last-Event-ID"] = options.lastEventId;
  const res = await exports.default.fetch(`http://sessions.test/v1/sessions/${id}/events?${query}`, {
    headers,
  });
  if (res.status !== 200 || !res.body) {
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      text,
      next: async () => undefined,
      until: async () => [],
      close: async () => {},
    };
  }
  const reader = res.body.getReader();
  const sse = new SseReader();
  const decoder = new TextDecoder();
  const buffered: ReadEvent[] = [];
  let done = false;
  async function next(timeoutMs = 5000): Promise<ReadEvent | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (buffered.length === 0 && !done) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("no event in time");
      const read = await Promise.race([
        reader.read(),
        new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), left)),
      ]);
      if (read === "timeout") throw new Error("no event in time");
      if (read.done) {
        done = true;
        break;
      }
      for (const event of sse.push(decoder.decode(read.value, { stream: true }))) {
        buffered.push({ ...event, data: JSON.parse(event.data) });
      }
    }
    return buffered.shift();
  }
  return {
    status: res.status,
    headers: res.headers,
    text: "",
    next,
    async until(match, timeoutMs) {
      const seen: ReadEvent[] = [];
      for (;;) {
        const event = await next(timeoutMs);
        if (!event) return seen;
        seen.push(event);
        if (match(event)) return seen;
      }
    },
    async close() {
      await reader.cancel().catch(() => undefined);
    },
  };
}
