import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createClient } from "../../src/client";

/*
 * Stopping a watch ends it under Node's own fetch. That fetch follows the caller's signal through
 * the request it made, and once that request is collected the signal no longer reaches the body:
 * the stream would go on for ever. A loopback server stands in for the service's event stream.
 */

let server: Server;
let baseUrl: string;

/** Node's garbage collector, reached without starting Node with --expose-gc. */
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.write(`id: 1\nevent: entry\ndata: ${JSON.stringify({ id: "a", seq: 1 })}\n\n`);
    const ping = setInterval(() => res.write(": ping\n\n"), 50);
    req.on("close", () => clearInterval(ping));
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((closed) => server.close(closed));
});

it("ends a watch when its signal stops it, after its request was collected", async () => {
  const stop = new AbortController();
  const events = createClient({ baseUrl, token: "key" })
    .storage("s1")
    .watch({ signal: stop.signal, retryDelayMs: 10 });
  const first = await events.next();
  expect(first.value).toMatchObject({ event: "entry", id: 1 });
  for (let i = 0; i < 5; i++) {
    gc();
    await new Promise((later) => setTimeout(later, 10));
  }
  stop.abort();
  const ended = await Promise.race([
    events.next(),
    new Promise<"still going">((later) => setTimeout(() => later("still going"), 3000)),
  ]);
  expect(ended).toEqual({ done: true, value: undefined });
});
