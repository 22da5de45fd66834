import { exports } from "cloudflare:workers";
import { KEY_A } from "./helpers";

export interface Message {
  event: string;
  id?: number;
  data: any;
}

/** A WebSocket to a session's events, its messages collected as they arrive. */
export async function connect(
  path: string,
  headers: Record<string, string> = { Authorization: `Bearer ${KEY_A}` },
) {
  const res = await exports.default.fetch(`http://sessions.test${path}`, {
    headers: { Upgrade: "websocket", ...headers },
  });
  const socket = res.webSocket;
  if (!socket) return { status: res.status, text: await res.text(), live: undefined };
  socket.accept();
  const messages: Message[] = [];
  let waiting: (() => void) | undefined;
  let closed: { code: number; reason: string } | undefined;
  socket.addEventListener("message", (event) => {
    messages.push(JSON.parse(event.data as string));
    waiting?.();
  });
  socket.addEventListener("close", (event) => {
    closed = { code: event.code, reason: event.reason };
    waiting?.();
  });
  async function until(match: (m: Message) => boolean, timeoutMs = 5000): Promise<Message[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const at = messages.findIndex(match);
      if (at >= 0) return messages.splice(0, at + 1);
      if (closed) throw new Error(`closed: ${closed.code} ${closed.reason}`);
      if (Date.now() > deadline) throw new Error(`no matching message; have ${JSON.stringify(messages)}`);
      await new Promise<void>((resolve) => {
        waiting = resolve;
        setTimeout(resolve, 50);
      });
    }
  }
  return { status: res.status, text: "", live: { socket, until } };
}

/** A WebSocket that must open. */
export async function open(path: string, headers?: Record<string, string>) {
  const { status, text, live } = await connect(path, headers);
  if (!live) throw new Error(`expected 101, got ${status}: ${text}`);
  return { status, ...live };
}
