import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * Clients that declare more body than they send, against the real local server (`wrangler dev`):
 * raw sockets, because an HTTP client library would not send a Content-Length it cannot back up.
 */

let server: DevServer;
let port: number;

beforeAll(async () => {
  server = await startDevServer();
  port = Number(new URL(server.url).port);
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

interface Sending {
  /** The answer, once it has arrived whole (rejects after `waitMs`). */
  head: Promise<{ status: number; afterMs: number; text: string }>;
  close(): void;
}

/** A request whose head declares `headers`, followed by `bodyStart` and then nothing. */
function startSending(
  path: string,
  headers: Record<string, string>,
  bodyStart: string,
  waitMs = 10_000,
): Sending {
  const socket: Socket = connect(port, "127.0.0.1");
  const started = Date.now();
  const lines = Object.entries({ Host: `127.0.0.1:${port}`, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.write(`POST ${path} HTTP/1.1\r\n${lines.join("")}\r\n${bodyStart}`);
  const head = new Promise<{ status: number; afterMs: number; text: string }>((resolve, reject) => {
    let received = "";
    const timer = setTimeout(() => reject(new Error(`no answer within ${waitMs} ms`)), waitMs);
    socket.on("data", (chunk) => {
      received += chunk.toString();
      const end = received.indexOf("\r\n\r\n");
      if (end === -1) return;
      const head = received.slice(0, end);
      const body = received.slice(end + 4);
      // Answers are sent with a Content-Length or in chunks (ending with an empty chunk).
      if (/\r\ntransfer-encoding: chunked/i.test(head)) {
        if (!body.startsWith("0\r\n\r\n") && !body.includes("\r\n0\r\n\r\n")) return;
      } else {
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (Buffer.byteLength(body) < length) return;
      }
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1]);
      resolve({ status, afterMs: Date.now() - started, text: received });
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  head.catch(() => {});
  return { head, close: () => socket.destroy() };
}

const HUGE = String(100 * 1024 * 1024);

describe("declared body sizes", () => {
  it("answers 413 at once to a body declared larger than 32 MiB, while the client is still sending", async () => {
    const cases: Array<[string, Record<string, string>]> = [
      ["/v1/sessions/import?format=pi", { "Content-Type": "application/x-ndjson" }],
      ["/v1/sessions", { "Content-Type": "application/json" }],
      // The size is refused before the credential is looked at.
      ["/v1/sessions", { "Content-Type": "application/json", Authorization: "Bearer not-a-key" }],
    ];
    for (const [path, headers] of cases) {
      const sending = startSending(path, { ...headers, "Content-Length": HUGE }, '{"type":');
      try {
        const answer = await sending.head;
        expect(answer.status, answer.text).toBe(413);
        expect(answer.text).toContain("payload_too_large");
        expect(answer.afterMs).toBeLessThan(3_000);
      } finally {
        sending.close();
      }
    }
  });

  it("answers a refused credential at once, without waiting for the body it declared", async () => {
    const sending = startSending(
      "/v1/sessions",
      { "Content-Type": "application/json", "Content-Length": "5000", Authorization: "Bearer not-a-key" },
      "{",
    );
    try {
      const answer = await sending.head;
      expect(answer.status).toBe(401);
      expect(answer.afterMs).toBeLessThan(3_000);
    } finally {
      sending.close();
    }
  });

  it("keeps answering other requests while clients hold bodies they never finish", async () => {
    const stalled = [
      startSending("/v1/sessions", { "Content-Type": "application/json", "Content-Length": "5000" }, "{"),
      startSending(
        "/v1/sessions/import",
        { "Content-Type": "application/x-ndjson", "Content-Length": "5000" },
        "{",
      ),
      startSending("/v1/sessions", { "Content-Type": "application/json", "Content-Length": HUGE }, "{"),
    ];
    try {
      await new Promise((r) => setTimeout(r, 200));
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const listed = await fetch(`${server.url}/v1/sessions`, { signal: AbortSignal.timeout(5_000) });
        expect(listed.status).toBe(200);
        await listed.body?.cancel();
        const created = await fetch(`${server.url}/v1/sessions`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: "{}",
          signal: AbortSignal.timeout(5_000),
        });
        expect(created.status).toBe(201);
        await created.body?.cancel();
        expect(Date.now() - started).toBeLessThan(3_000);
      }
      // The ones that declared a body within the limit are still waiting for it: nothing refused them.
      expect((await stalled[2]?.head)?.status).toBe(413);
      const pending = await Promise.race([
        stalled[0]?.head,
        new Promise((r) => setTimeout(() => r("waiting"), 100)),
      ]);
      expect(pending).toBe("waiting");
    } finally {
      for (const sending of stalled) sending.close();
    }
  });
});

describe("bodies and answers over the wire", () => {
  it("reads a JSON body sent in chunks, without a Content-Length", async () => {
    const id = `chunked-${Date.now()}`;
    const bytes = new TextEncoder().encode(JSON.stringify({ id, metadata: { via: "chunks" } }));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, 5));
        controller.enqueue(bytes.slice(5));
        controller.close();
      },
    });
    const created = await fetch(`${server.url}/v1/sessions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    expect(created.status, await created.clone().text()).toBe(201);
    expect(await created.json()).toMatchObject({ id, metadata: { via: "chunks" } });
  });

  it("sends an answer that is neither logged nor metered with its Content-Length", async () => {
    // npm start logs errors only and has no METRICS binding: nothing needs to count the bytes sent.
    const answer = await fetch(`${server.url}/healthz`, { headers: { "Accept-Encoding": "identity" } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-request-id")).toBeTruthy();
    expect(Number(answer.headers.get("content-length"))).toBe((await answer.arrayBuffer()).byteLength);
  });
});
