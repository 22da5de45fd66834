import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/*
 * A stand-in for a model API on 127.0.0.1: records each request as it arrived (path, headers,
 * raw body) and answers with the next canned response, so a test sees exactly what an official
 * client put on the wire.
 */

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  raw: string;
  body: Record<string, unknown>;
}

export interface RecordingServer {
  url: string;
  requests: RecordedRequest[];
  /** Answers the next request with `body` (JSON, status 200). */
  reply(body: unknown): void;
  close(): Promise<void>;
}

export async function startRecordingServer(): Promise<RecordingServer> {
  const requests: RecordedRequest[] = [];
  const replies: unknown[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      requests.push({
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        raw,
        body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {},
      });
      const body = replies.shift();
      res.writeHead(body === undefined ? 500 : 200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body ?? { error: { message: "no reply queued" } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reply: (body) => replies.push(body),
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}
