import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { GenerationInfo } from "../../src/client";
import { ConnectionError, createClient } from "../../src/client";
import { responseLines } from "../../src/client/response-lines";
import { UnexplainedAnswerError } from "../../src/client/transport";
import { SessionError } from "../../src/core/errors";
import { MAX_BODY_BYTES } from "../../src/core/limits";

/*
 * The client over HTTP as it arrives: answers in pieces split anywhere, and answers from what
 * stands before the service (a proxy's or a firewall's pages). A loopback server stands in for
 * them; each test tells it how to answer.
 */

let server: Server;
let baseUrl: string;
let answer: (req: IncomingMessage, res: ServerResponse) => void;

beforeAll(async () => {
  server = createServer((req, res) => answer(req, res));
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((closed) => server.close(closed));
});

/** A proxy's error page: HTML, not the service's error body. */
function page(res: ServerResponse, status: number): void {
  res.writeHead(status, { "Content-Type": "text/html" });
  res.end(`<html><body><h1>${status}</h1></body></html>`);
}

/** Answers the requests in turn, the last for every request after it; counts them. */
function inTurn(...answers: Array<(req: IncomingMessage, res: ServerResponse) => void>): { count: number } {
  const seen = { count: 0 };
  answer = (req, res) => (answers[Math.min(seen.count++, answers.length - 1)] as typeof answer)(req, res);
  return seen;
}

/** Settles with the promise, or with "still waiting" after 5 s. */
const within5s = <T>(promise: Promise<T>) =>
  Promise.race([
    promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    new Promise<"still waiting">((later) => setTimeout(() => later("still waiting"), 5000)),
  ]);

/** An answer whose body comes in the given pieces of bytes. */
function answerIn(pieces: Uint8Array[]): Response {
  return new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(piece);
        controller.close();
      },
    }),
  );
}

async function linesOf(response: Response): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of responseLines(response)) lines.push(line);
  return lines;
}

describe("reading an NDJSON answer in pieces", () => {
  it("gives the same lines wherever the body is split, a last line without its newline included", async () => {
    const bytes = new TextEncoder().encode('{"type":"session"}\n{"a":"é"}\n\n{"b":2}\n{"c":3}');
    const whole = ['{"type":"session"}\n', '{"a":"é"}\n', '{"b":2}\n', '{"c":3}\n'];
    expect(await linesOf(answerIn([bytes]))).toEqual(whole);
    // Two cuts anywhere, the two bytes of "é" apart included.
    for (let first = 0; first <= bytes.length; first++)
      for (let second = first; second <= bytes.length; second++) {
        const pieces = [bytes.slice(0, first), bytes.slice(first, second), bytes.slice(second)];
        expect(await linesOf(answerIn(pieces)), `cut at ${first} and ${second}`).toEqual(whole);
      }
    expect(await linesOf(answerIn([...bytes].map((byte) => Uint8Array.of(byte))))).toEqual(whole);
  });
});

describe("answers without the service's error body", () => {
  it("are told by their status: the code the service would give it", async () => {
    const client = createClient({ baseUrl, maxAttempts: 1 });
    for (const [status, code] of [
      [404, "not_found"],
      [413, "payload_too_large"],
      [429, "rate_limited"],
      [400, "invalid_request"],
      [502, "internal"],
    ] as const) {
      answer = (_req, res) => page(res, status);
      const error = await client
        .storage("s1")
        .getInfo()
        .catch((e: unknown) => e);
      expect(error, String(status)).toBeInstanceOf(UnexplainedAnswerError);
      expect(error).toMatchObject({ code, details: { status } });
    }
  });

  it("do not end a watch when they may pass (408, 429, 5xx); a 404 does", async () => {
    const client = createClient({ baseUrl, retryDelayMs: 1, maxAttempts: 1 });
    const requests = inTurn(
      (_req, res) => page(res, 429),
      (_req, res) => page(res, 408),
      (_req, res) => page(res, 502),
      (_req, res) => {
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        res.end(`id: 1\nevent: entry\ndata: ${JSON.stringify({ id: "a", seq: 1 })}\n\n`);
      },
    );
    const stop = new AbortController();
    for await (const event of client.storage("s1").watch({ signal: stop.signal, retryDelayMs: 1 })) {
      expect(event).toMatchObject({ event: "entry", id: 1 });
      stop.abort();
    }
    expect(requests.count).toBe(4);

    inTurn((_req, res) => page(res, 404));
    const ended = await client
      .storage("s1")
      .watch({ retryDelayMs: 1 })
      .next()
      .catch((e: unknown) => e);
    expect(ended).toBeInstanceOf(UnexplainedAnswerError);
    expect(ended).toMatchObject({ code: "not_found" });
  });

  it("do not end following a generation when they may pass", async () => {
    const client = createClient({ baseUrl, retryDelayMs: 1, maxAttempts: 1 });
    const requests = inTurn(
      (_req, res) => page(res, 429),
      (_req, res) => page(res, 408),
      (_req, res) => page(res, 503),
      (_req, res) => {
        res.writeHead(200, {
          "Content-Type": "text/plain",
          "Stream-Next-Offset": "0000000000000005",
          "Stream-Closed": "true",
        });
        res.end("Hello");
      },
    );
    const generation = { format: "text", stream: "/v1/sessions/s1/generations/g1/stream" } as GenerationInfo;
    const text: string[] = [];
    for await (const chunk of client.storage("s1").follow(generation, { retryDelayMs: 1 }))
      text.push(chunk.text);
    expect(text).toEqual(["Hello"]);
    expect(requests.count).toBe(4);
  });
});

describe("a key a header cannot carry", () => {
  it("fails before anything is sent, not as a connection failure, and without the key in the message", async () => {
    const seen = inTurn((_req, res) => res.end("{}"));
    for (const token of ["csk_live_SECRET123\nsecond", "csk_live_SECRET123€"]) {
      const client = createClient({ baseUrl, token, retryDelayMs: 1 });
      const error = await client.list().catch((failed: unknown) => failed);
      expect(error).toBeInstanceOf(TypeError);
      expect(error).not.toBeInstanceOf(ConnectionError);
      expect((error as Error).message).toBe(
        "GET /v1/sessions: a header holds a character no header can carry (a line break, say); it is not sent",
      );
    }
    expect(seen.count).toBe(0);
  });
});

describe("a body past what the service takes", () => {
  it("fails before anything is sent, as the service would answer it, and the next request goes through", async () => {
    const seen = inTurn((_req, res) => {
      res.writeHead(201, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ entries: [], leafId: null, created: false }));
    });
    const client = createClient({ baseUrl, retryDelayMs: 1 });
    const storage = client.storage("s1");
    // Two characters of three bytes each per `€€`: 33 MiB of UTF-8 in 11 Mi characters.
    const text = "€".repeat(11 * 1024 * 1024);
    const error = await storage
      .appendEntries([{ type: "message", message: { role: "user", content: text, timestamp: 1 } }] as never)
      .catch((failed: unknown) => failed);
    expect(error).toBeInstanceOf(SessionError);
    expect((error as SessionError).code).toBe("payload_too_large");
    expect((error as SessionError).message).toMatch(
      /^POST \/v1\/sessions\/s1\/entries: the body is \d+ bytes, over the 32 MiB the service takes; it is not sent$/,
    );
    expect(seen.count).toBe(0);
    // Just within what the service takes, it is sent.
    const within = "x".repeat(MAX_BODY_BYTES - 1024);
    await storage.appendEntries([
      { type: "message", message: { role: "user", content: within, timestamp: 1 } },
    ] as never);
    expect(seen.count).toBe(1);
  });

  it("is refused before it is sent for a file's import too, and not for a tenant stream, which may be larger", async () => {
    const seen = inTurn((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ sessions: [], lines: 0 }));
      });
    });
    const client = createClient({ baseUrl, retryDelayMs: 1 });
    const line = JSON.stringify({
      type: "session",
      id: "s1",
      timestamp: "2026-01-01T00:00:00.000Z",
      pad: "x".repeat(1024 * 1024),
    });
    const text = Array.from({ length: 33 }, () => line).join("\n");
    const error = await client
      .importFile(text, { id: "s1", format: "native" })
      .catch((failed: unknown) => failed);
    expect((error as SessionError).code).toBe("payload_too_large");
    expect((error as SessionError).details).toEqual({ limit: MAX_BODY_BYTES });
    expect(seen.count).toBe(0);
    await client.importTenant(text);
    expect(seen.count).toBe(1);
  });
});

describe("following that retrying cannot mend", () => {
  const generation = { format: "text", stream: "/v1/sessions/s1/generations/g1/stream" } as GenerationInfo;

  // Stops what the tests follow, should it go on reconnecting.
  let stop: AbortController;
  beforeEach(() => {
    stop = new AbortController();
  });
  afterEach(() => stop.abort());

  it("ends a watch and a generation's reader on a request that cannot be sent, sending nothing", async () => {
    const seen = inTurn((_req, res) => res.end("{}"));
    for (const options of [{ baseUrl, token: "abc\ndef" }, { baseUrl: "not a url" }]) {
      const storage = createClient({ ...options, retryDelayMs: 1 }).storage("s1");
      const statuses: string[] = [];
      const watched = await within5s(
        storage
          .watch({ retryDelayMs: 1, signal: stop.signal, onStatus: (status) => statuses.push(status) })
          .next(),
      );
      expect(watched, options.baseUrl).toEqual({ error: expect.any(TypeError) });
      expect((watched as { error: Error }).error).not.toBeInstanceOf(ConnectionError);
      expect(statuses).toEqual([]);
      const followed = await within5s(
        storage.follow(generation, { retryDelayMs: 1, signal: stop.signal }).next(),
      );
      expect(followed, options.baseUrl).toEqual({ error: expect.any(TypeError) });
    }
    expect(seen.count).toBe(0);
  });

  it("ends a watch and a generation's reader on the service's refusal with any 4xx code, after one request", async () => {
    const refusal = (res: ServerResponse) => {
      res.writeHead(409, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: { code: "wrong_jurisdiction", message: "pinned elsewhere" } }));
    };
    const client = createClient({ baseUrl, retryDelayMs: 1, maxAttempts: 1 });
    let requests = inTurn((_req, res) => refusal(res));
    const watched = await within5s(
      client.storage("s1").watch({ retryDelayMs: 1, signal: stop.signal }).next(),
    );
    expect(watched).toEqual({ error: expect.objectContaining({ code: "wrong_jurisdiction" }) });
    expect(requests.count).toBe(1);
    requests = inTurn((_req, res) => refusal(res));
    const followed = await within5s(
      client.storage("s1").follow(generation, { retryDelayMs: 1, signal: stop.signal }).next(),
    );
    expect(followed).toEqual({ error: expect.objectContaining({ code: "wrong_jurisdiction" }) });
    expect(requests.count).toBe(1);
  });

  it("asks a generation's stream again after an answer whose body broke off", async () => {
    const client = createClient({ baseUrl, retryDelayMs: 1, maxAttempts: 1 });
    const requests = inTurn(
      (_req, res) => {
        res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": "100" });
        res.write("He", () => res.socket?.destroy());
      },
      (_req, res) => {
        res.writeHead(200, {
          "Content-Type": "text/plain",
          "Stream-Next-Offset": "0000000000000005",
          "Stream-Closed": "true",
        });
        res.end("Hello");
      },
    );
    const text: string[] = [];
    for await (const chunk of client
      .storage("s1")
      .follow(generation, { retryDelayMs: 1, signal: stop.signal }))
      text.push(chunk.text);
    expect(text).toEqual(["Hello"]);
    expect(requests.count).toBe(2);
  });

  it("goes on after the service's answers that may pass (429, 503 with its error body)", async () => {
    const said = (status: number, code: string) => (_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: { code, message: "later" } }));
    };
    const client = createClient({ baseUrl, retryDelayMs: 1, maxAttempts: 1 });
    const requests = inTurn(said(429, "rate_limited"), said(503, "unavailable"), (_req, res) => {
      res.writeHead(200, {
        "Content-Type": "text/plain",
        "Stream-Next-Offset": "0000000000000002",
        "Stream-Closed": "true",
      });
      res.end("Hi");
    });
    const text: string[] = [];
    for await (const chunk of client.storage("s1").follow(generation, { retryDelayMs: 1 }))
      text.push(chunk.text);
    expect(text).toEqual(["Hi"]);
    expect(requests.count).toBe(3);
  });
});

describe("waits between tries", () => {
  /** A client, and a promise kept once its first answer came (before its body is read). */
  function watchedClient(options: { retryDelayMs?: number; maxAttempts?: number } = {}) {
    let answered!: () => void;
    const firstAnswer = new Promise<void>((seen) => {
      answered = seen;
    });
    const client = createClient({
      baseUrl,
      ...options,
      fetch: async (request) => {
        const response = await fetch(request);
        answered();
        return response;
      },
    });
    return { client, firstAnswer };
  }

  it("end when the call's signal aborts, with its reason: a Retry-After wait is cut short", async () => {
    const requests = inTurn((_req, res) => {
      res.writeHead(429, { "Content-Type": "text/html", "Retry-After": "30" });
      res.end("<html>slow down</html>");
    });
    const compacts = watchedClient();
    const stop = new AbortController();
    const compacting = within5s(compacts.client.storage("s1").compact({ signal: stop.signal }));
    await compacts.firstAnswer;
    const reason = new Error("the caller went away");
    stop.abort(reason);
    expect(await compacting).toEqual({ error: reason });
    expect(requests.count).toBe(1);

    // A watch waiting out a 503's Retry-After ends as well.
    const unavailable = inTurn((_req, res) => {
      res.writeHead(503, { "Content-Type": "text/html", "Retry-After": "30" });
      res.end("<html>down for maintenance</html>");
    });
    const watches = watchedClient();
    const watching = new AbortController();
    const next = within5s(watches.client.storage("s1").watch({ signal: watching.signal }).next());
    await watches.firstAnswer;
    watching.abort();
    expect(await next).toEqual({ value: { done: true, value: undefined } });
    expect(unavailable.count).toBe(1);
  });

  it("are at most 30 s however large the first wait and the doubling make them", async () => {
    // A wait past 2^31 ms would fire at once in Node, and the tries would follow each other at once.
    const { client, firstAnswer } = watchedClient({ retryDelayMs: 2 ** 31, maxAttempts: 3 });
    const requests = inTurn((_req, res) => page(res, 503));
    const stop = new AbortController();
    const reading = within5s(client.storage("s1").watch({ signal: stop.signal }).next());
    await firstAnswer;
    await new Promise((later) => setTimeout(later, 300));
    expect(requests.count).toBe(1);
    stop.abort();
    expect(await reading).toEqual({ value: { done: true, value: undefined } });
  });
});

describe("an export read in part", () => {
  /** An export that never ends: a line every 10 ms; `closed` is kept once the client hangs up. */
  function endlessExport(): { closed: Promise<void> } {
    let hungUp!: () => void;
    const closed = new Promise<void>((seen) => {
      hungUp = seen;
    });
    answer = (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/x-ndjson" });
      res.write(`${JSON.stringify({ type: "session", id: "s1" })}\n`);
      let n = 0;
      const more = setInterval(() => res.write(`${JSON.stringify({ n: n++ })}\n`), 10);
      res.on("close", () => {
        clearInterval(more);
        hungUp();
      });
    };
    return { closed };
  }

  const closedWithin5s = (closed: Promise<void>) =>
    Promise.race([
      closed.then(() => "closed"),
      new Promise((later) => setTimeout(() => later("still open"), 5000)),
    ]);

  it("closes its connection when the caller stops reading", async () => {
    const client = createClient({ baseUrl });
    const session = endlessExport();
    for await (const line of client.storage("s1").exportLines()) {
      expect(JSON.parse(line)).toMatchObject({ type: "session" });
      break;
    }
    expect(await closedWithin5s(session.closed)).toBe("closed");

    const tenant = endlessExport();
    const lines: string[] = [];
    for await (const line of client.exportTenant()) if (lines.push(line) === 3) break;
    expect(lines).toHaveLength(3);
    expect(await closedWithin5s(tenant.closed)).toBe("closed");
  });

  it("ends, and closes its connection, when its signal aborts", async () => {
    const client = createClient({ baseUrl });
    for (const read of [
      (signal: AbortSignal) => client.storage("s1").exportLines("native", { signal }),
      (signal: AbortSignal) => client.exportTenant(undefined, { signal }),
    ]) {
      const { closed } = endlessExport();
      const stop = new AbortController();
      const reason = new Error("enough");
      const lines: string[] = [];
      const reading = (async () => {
        for await (const line of read(stop.signal)) if (lines.push(line) === 2) stop.abort(reason);
      })();
      await expect(reading).rejects.toBe(reason);
      expect(lines.length).toBeGreaterThanOrEqual(2);
      expect(await closedWithin5s(closed)).toBe("closed");
    }
  });
});
