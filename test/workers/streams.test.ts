import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LATEST_EXPIRES_AT } from "../../src/core/limits";
import {
  MAX_APPEND_BYTES,
  MAX_CONTENT_TYPE_CHARS,
  MAX_FORK_DEPTH,
  MAX_PRODUCER_ID_CHARS,
  MAX_STREAM_SEQ_CHARS,
  MAX_TTL_SECONDS,
  READ_PAGE_BYTES,
  STREAM_ROUTE,
  streamObjectName,
} from "../../src/durable/stream";
import worker from "../../src/worker";
import { firstDifference } from "../support/bytes";
import { KEY_A, KEY_A_READ, KEY_B } from "./helpers";
import {
  append,
  call,
  create,
  expectStreamError,
  head,
  readAll,
  type StreamAnswer,
  streamObjects,
  streamPath,
} from "./stream-helpers";

/** Asserts that the stream still holds exactly `text` and ends at `offset`. */
async function unchanged(path: string, text: string, offset: string): Promise<void> {
  const read = await readAll(path);
  expect(read.text).toBe(text);
  expect(read.offset).toBe(offset);
}

describe("streams through /v1/stream", () => {
  it("creates, appends, reads from any offset, and answers HEAD with the tail", async () => {
    const path = streamPath();
    const start = await create(path, { body: "hello" });
    const res = await append(path, " world");
    expect(res.status).toBe(204);
    const tail = res.headers.get("Stream-Next-Offset") as string;
    expect(tail > start).toBe(true);
    expect((await readAll(path)).text).toBe("hello world");
    expect((await readAll(path, start)).text).toBe(" world");
    expect((await readAll(path, tail)).text).toBe("");
    expect(await head(path)).toEqual({ status: 200, offset: tail, closed: false });
    const created = await call("PUT", path, { headers: { "Content-Type": "text/plain" } });
    expect(created.status).toBe(200);
  });

  it("keeps JSON messages one by one and reads them back as one array", async () => {
    const path = streamPath("json");
    await create(path, { contentType: "application/json", body: '[{"n":1},{"n":2}]' });
    expect((await append(path, '{"n":3}', { "Content-Type": "application/json" })).status).toBe(204);
    const read = await call("GET", path);
    expect(read.headers.get("Content-Type")).toBe("application/json");
    expect(read.json).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it("answers a catch-up read one bounded page at a time, the reader continuing from its end", async () => {
    const path = streamPath("pages");
    await create(path, { contentType: "application/octet-stream" });
    const chunk = new Uint8Array(600 * 1024).map((_, i) => i % 251);
    const appends = Math.ceil((READ_PAGE_BYTES * 2) / chunk.byteLength);
    for (let i = 0; i < appends; i++) {
      expect(
        (await call("POST", path, { body: chunk, headers: { "Content-Type": "application/octet-stream" } }))
          .status,
      ).toBe(204);
    }
    const first = await call("GET", path);
    expect(first.bytes.byteLength).toBeLessThanOrEqual(READ_PAGE_BYTES);
    expect(first.headers.get("Stream-Up-To-Date")).toBeNull();
    const all = await readAll(path);
    expect(all.bytes.byteLength).toBe(appends * chunk.byteLength);
    expect(all.pages).toBeGreaterThanOrEqual(3);
    const expected = new Uint8Array(appends * chunk.byteLength);
    for (let i = 0; i < appends; i++) expected.set(chunk, i * chunk.byteLength);
    expect(firstDifference(all.bytes, expected)).toBe(-1);
    // 8 MiB written and read back through the routes: slow on a loaded machine.
  }, 120_000);

  it("closes a stream: a last append and the close at once, then EOF at the tail", async () => {
    const path = streamPath("close");
    await create(path, { body: "a" });
    const closed = await append(path, "b", { "Stream-Closed": "true" });
    expect(closed.status).toBe(204);
    expect(closed.headers.get("Stream-Closed")).toBe("true");
    const read = await call("GET", path);
    expect(read.text).toBe("ab");
    expect(read.headers.get("Stream-Closed")).toBe("true");
    const poll = await call("GET", `${path}?offset=${read.headers.get("Stream-Next-Offset")}&live=long-poll`);
    expect(poll.status).toBe(204);
    expect(poll.headers.get("Stream-Closed")).toBe("true");
  });

  it("deletes a stream: 404 after, and the path can be used again", async () => {
    const path = streamPath("delete");
    await create(path, { body: "old" });
    expect((await call("DELETE", path)).status).toBe(204);
    expectStreamError(await call("GET", path), 404, "not_found");
    await create(path, { body: "new" });
    expect((await readAll(path)).text).toBe("new");
  });
});

describe("stream tenancy and access", () => {
  it("keeps each tenant's streams apart: another tenant sees none of them and forks none", async () => {
    const path = streamPath("tenant");
    const tail = await create(path, { body: "a's data" });
    expectStreamError(await call("GET", path, { key: KEY_B }), 404, "not_found");
    expect((await head(path, KEY_B)).status).toBe(404);
    expectStreamError(
      await call("POST", path, { key: KEY_B, body: "x", headers: { "Content-Type": "text/plain" } }),
      404,
      "not_found",
    );
    expectStreamError(await call("DELETE", path, { key: KEY_B }), 404, "not_found");
    const fork = await call("PUT", streamPath("fork"), {
      key: KEY_B,
      headers: { "Stream-Forked-From": path },
    });
    expectStreamError(fork, 404, "not_found");
    // The same path is another stream for tenant B.
    await create(path, { key: KEY_B, body: "b's data" });
    expect((await readAll(path, "-1", KEY_B)).text).toBe("b's data");
    await unchanged(path, "a's data", tail);
  });

  it("lets a read-only key read and follow, and refuses its writes with nothing written", async () => {
    const path = streamPath("read-only");
    const tail = await create(path, { body: "data" });
    expect((await readAll(path, "-1", KEY_A_READ)).text).toBe("data");
    expect((await head(path, KEY_A_READ)).status).toBe(200);
    const poll = await call("GET", `${path}?offset=${tail}&live=long-poll`, { key: KEY_A_READ });
    expect(poll.status).toBe(204);
    const writes: StreamAnswer[] = [
      await call("POST", path, { key: KEY_A_READ, body: "more", headers: { "Content-Type": "text/plain" } }),
      await call("POST", path, { key: KEY_A_READ, headers: { "Stream-Closed": "true" } }),
      await call("PUT", path, { key: KEY_A_READ, headers: { "Content-Type": "text/plain" } }),
      await call("PUT", streamPath("new"), { key: KEY_A_READ, headers: { "Content-Type": "text/plain" } }),
      await call("DELETE", path, { key: KEY_A_READ }),
    ];
    for (const res of writes) expectStreamError(res, 403, "forbidden");
    await unchanged(path, "data", tail);
    expect((await head(path)).closed).toBe(false);
  });

  it("answers 503 misconfigured in a Worker that binds no STREAMS, and serves sessions still", async () => {
    const unbound = { ...env, STREAMS: undefined };
    const request = (method: string, path: string) =>
      new Request(`http://sessions.test${path}`, { method, headers: { Authorization: `Bearer ${KEY_A}` } });
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
    const path = streamPath("unbound");
    const refused = await worker.fetch(request("PUT", path), unbound, ctx);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("misconfigured");
    expect((await worker.fetch(request("GET", "/v1/sessions"), unbound, ctx)).status).toBe(200);
    expectStreamError(await call("GET", path), 404, "not_found");
  });

  it("refuses requests without a key", async () => {
    expectStreamError(await call("GET", streamPath(), { key: null }), 401, "unauthorized");
  });

  it("serves what a tenant wrote sandboxed, and a type a browser runs as a page as a download", async () => {
    const types: Array<[string, boolean]> = [
      ["text/html", true],
      ["text/html; charset=utf-8", true],
      ["image/svg+xml", true],
      ["application/xhtml+xml", true],
      ["text/xml", true],
      ["text/plain", false],
      ["application/json", false],
      ["application/octet-stream", false],
    ];
    for (const [contentType, active] of types) {
      const path = streamPath("served");
      const body = contentType === "application/json" ? "[1]" : "<script>alert(1)</script>";
      await create(path, { contentType, body });
      const reads = [
        await call("GET", `${path}?offset=-1`),
        await call("GET", `${path}?offset=now`),
        await call("HEAD", path),
      ];
      for (const res of reads) {
        expect(res.status, contentType).toBe(200);
        expect(res.headers.get("Content-Security-Policy"), contentType).toBe("default-src 'none'; sandbox");
        expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
        expect(res.headers.get("Content-Disposition"), contentType).toBe(active ? "attachment" : null);
      }
    }
  });

  it("carries the browser safety headers on every answer, errors included", async () => {
    const answers = [await call("GET", streamPath()), await call("GET", streamPath(), { key: null })];
    for (const res of answers) {
      expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
      expect(res.headers.get("Cross-Origin-Resource-Policy")).toBe("same-origin");
    }
  });
});

describe("bad input to streams gets a clear 4xx and changes nothing", () => {
  it("refuses an append to a closed stream", async () => {
    const path = streamPath("closed");
    await create(path, { body: "done" });
    const closed = await append(path, "", { "Stream-Closed": "true" });
    const tail = closed.headers.get("Stream-Next-Offset") as string;
    const res = await append(path, "late");
    expectStreamError(res, 409, "stream_closed");
    expect(res.headers.get("Stream-Closed")).toBe("true");
    expect(res.headers.get("Stream-Next-Offset")).toBe(tail);
    await unchanged(path, "done", tail);
  });

  it("refuses an append of another content type, and a create over a stream of another configuration", async () => {
    const path = streamPath("type");
    const tail = await create(path, { body: "text" });
    expectStreamError(
      await append(path, "{}", { "Content-Type": "application/json" }),
      409,
      "content_type_mismatch",
    );
    const recreate = await call("PUT", path, {
      headers: { "Content-Type": "application/json" },
      body: "[1]",
    });
    expectStreamError(recreate, 409, "already_exists");
    const noType = await call("POST", path, { body: new Blob(["x"]) });
    expectStreamError(noType, 400, "invalid_request");
    await unchanged(path, "text", tail);
  });

  it("refuses malformed offsets, and offsets past the end or between records", async () => {
    const path = streamPath("offsets");
    const middle = await create(path, { body: "abc" });
    const tail = (await append(path, "def")).headers.get("Stream-Next-Offset") as string;
    const [records, bytes] = middle.split("_").map(Number) as [number, number];
    const pad = (n: number) => String(n).padStart(16, "0");
    const bad = [
      "abc",
      "0,1",
      "",
      "1e3",
      `${pad(records + 5)}_${pad(bytes)}`,
      `${pad(records)}_${pad(bytes + 1)}`,
      `${pad(records + 2)}_${pad(100)}`,
    ];
    for (const offset of bad) {
      for (const live of ["", "&live=long-poll", "&live=sse"]) {
        const res = await call("GET", `${path}?offset=${encodeURIComponent(offset)}${live}`);
        expectStreamError(res, 400, "invalid_request");
      }
    }
    expectStreamError(await call("GET", `${path}?offset=-1&offset=now`), 400, "invalid_request");
    expectStreamError(await call("GET", `${path}?live=sse`), 400, "invalid_request");
    expectStreamError(await call("GET", `${path}?offset=-1&live=websocket`), 400, "invalid_request");
    await unchanged(path, "abcdef", tail);
  });

  it("refuses a producer's sequence gap and a stale epoch, saying what it expected", async () => {
    const path = streamPath("producer");
    await create(path);
    const producer = (epoch: number, seq: number) => ({
      "Producer-Id": "writer-1",
      "Producer-Epoch": String(epoch),
      "Producer-Seq": String(seq),
    });
    expect((await append(path, "a", producer(1, 0))).status).toBe(200);
    const tail = (await append(path, "b", producer(1, 1))).headers.get("Stream-Next-Offset") as string;
    const gap = await append(path, "d", producer(1, 3));
    expectStreamError(gap, 409, "sequence_conflict");
    expect(gap.headers.get("Producer-Expected-Seq")).toBe("2");
    expect(gap.headers.get("Producer-Received-Seq")).toBe("3");
    const stale = await append(path, "z", producer(0, 2));
    expectStreamError(stale, 403, "stale_epoch");
    expect(stale.headers.get("Producer-Epoch")).toBe("1");
    expectStreamError(await append(path, "e", producer(2, 1)), 400, "invalid_request");
    expectStreamError(await append(path, "e", { "Producer-Id": "writer-1" }), 400, "invalid_request");
    expectStreamError(await append(path, "e", producer(1, -1)), 400, "invalid_request");
    await unchanged(path, "ab", tail);
  });

  it("refuses a Stream-Seq that does not rise", async () => {
    const path = streamPath("seq");
    await create(path);
    const tail = (await append(path, "a", { "Stream-Seq": "b" })).headers.get("Stream-Next-Offset") as string;
    expectStreamError(await append(path, "x", { "Stream-Seq": "b" }), 409, "sequence_conflict");
    expectStreamError(await append(path, "x", { "Stream-Seq": "a" }), 409, "sequence_conflict");
    await unchanged(path, "a", tail);
  });

  it(`refuses an append over ${MAX_APPEND_BYTES} bytes, declared or not`, async () => {
    const path = streamPath("large");
    const tail = await create(path, { contentType: "application/octet-stream", body: "x" });
    const big = new Uint8Array(MAX_APPEND_BYTES + 1);
    const declared = await call("POST", path, {
      body: big,
      headers: { "Content-Type": "application/octet-stream" },
    });
    expectStreamError(declared, 413, "payload_too_large");
    const streamed = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 5; i++) controller.enqueue(new Uint8Array(MAX_APPEND_BYTES / 4));
        controller.close();
      },
    });
    const undeclared = await call("POST", path, {
      body: streamed,
      headers: { "Content-Type": "application/octet-stream" },
    });
    expectStreamError(undeclared, 413, "payload_too_large");
    const create413 = await call("PUT", streamPath("large"), {
      body: big,
      headers: { "Content-Type": "text/plain" },
    });
    expectStreamError(create413, 413, "payload_too_large");
    await unchanged(path, "x", tail);
  });

  it("refuses invalid JSON, an empty array, and an empty body without a close", async () => {
    const path = streamPath("json-bad");
    const tail = await create(path, { contentType: "application/json", body: "[1]" });
    const json = { "Content-Type": "application/json" };
    expectStreamError(await append(path, "{not json", json), 400, "invalid_request");
    expectStreamError(await append(path, "[]", json), 400, "invalid_request");
    expectStreamError(await append(path, "", json), 400, "invalid_request");
    expectStreamError(
      await call("PUT", streamPath("json-bad"), { headers: json, body: "{" }),
      400,
      "invalid_request",
    );
    await unchanged(path, "[1]", tail);
  });

  it("refuses bad creates: TTL and Expires-At together, malformed or past expiry, fork headers alone", async () => {
    const path = streamPath("bad-create");
    const future = new Date(Date.now() + 60_000).toISOString();
    const bad: Record<string, string>[] = [
      { "Stream-TTL": "60", "Stream-Expires-At": future },
      { "Stream-TTL": "-1" },
      { "Stream-TTL": "01" },
      { "Stream-TTL": String(MAX_TTL_SECONDS + 1) },
      { "Stream-Expires-At": "tomorrow" },
      { "Stream-Expires-At": new Date(Date.now() - 1000).toISOString() },
      { "Stream-Fork-Offset": "0000000000000000_0000000000000000" },
      { "Stream-Fork-Sub-Offset": "0" },
    ];
    for (const headers of bad) {
      const res = await call("PUT", path, { headers: { "Content-Type": "text/plain", ...headers } });
      expectStreamError(res, 400, "invalid_request");
    }
    expectStreamError(await call("GET", path), 404, "not_found");
  });

  it(`refuses an expiry at or past ${LATEST_EXPIRES_AT}, as a session's, making nothing`, async () => {
    const path = streamPath("far-expiry");
    const latest = Date.parse(LATEST_EXPIRES_AT);
    const bad: Record<string, string>[] = [
      { "Stream-Expires-At": LATEST_EXPIRES_AT },
      { "Stream-Expires-At": "2300-01-01T00:00:00Z" },
      // A window that would end past it from now.
      { "Stream-TTL": String(Math.ceil((latest - Date.now()) / 1000) + 60) },
      { "Stream-TTL": String(MAX_TTL_SECONDS) },
    ];
    for (const headers of bad) {
      const res = await call("PUT", path, {
        body: "x",
        headers: { "Content-Type": "text/plain", ...headers },
      });
      expectStreamError(res, 400, "invalid_request");
      expect(res.json.error.message).toContain(LATEST_EXPIRES_AT);
    }
    expectStreamError(await call("GET", path), 404, "not_found");
    // Just before it is taken.
    const made = await call("PUT", path, {
      headers: { "Content-Type": "text/plain", "Stream-Expires-At": new Date(latest - 1000).toISOString() },
    });
    expect(made.status).toBe(201);
  });

  it("bounds a create's Content-Type as a backup holds it, making nothing past it", async () => {
    const path = streamPath("long-type");
    const typeOf = (chars: number) => `text/plain; x=${"a".repeat(chars - "text/plain; x=".length)}`;
    const long = await call("PUT", path, { headers: { "Content-Type": typeOf(MAX_CONTENT_TYPE_CHARS + 1) } });
    expectStreamError(long, 400, "invalid_request");
    expect(long.json.error.message).toContain(String(MAX_CONTENT_TYPE_CHARS));
    expectStreamError(await call("GET", path), 404, "not_found");
    const made = await call("PUT", path, { headers: { "Content-Type": typeOf(MAX_CONTENT_TYPE_CHARS) } });
    expect(made.status, made.text).toBe(201);
  });

  it("bounds a producer's id, a Stream-Seq and a chain of forks, writing nothing past them", async () => {
    const path = streamPath("bounds");
    const tail = await create(path, { body: "a" });
    const writer = (id: string) => ({ "Producer-Id": id, "Producer-Epoch": "0", "Producer-Seq": "0" });
    expectStreamError(
      await append(path, "b", writer("p".repeat(MAX_PRODUCER_ID_CHARS + 1))),
      400,
      "invalid_request",
    );
    expectStreamError(
      await append(path, "b", { "Stream-Seq": "s".repeat(MAX_STREAM_SEQ_CHARS + 1) }),
      400,
      "invalid_request",
    );
    await unchanged(path, "a", tail);
    expect((await append(path, "b", writer("p".repeat(MAX_PRODUCER_ID_CHARS)))).status).toBe(200);

    // Forks of forks, each of the one before: the last one the bound allows, then one too many.
    let source = path;
    for (let depth = 1; depth <= MAX_FORK_DEPTH; depth++) {
      const fork = streamPath(`chain-${depth}`);
      const res = await call("PUT", fork, {
        headers: { "Content-Type": "text/plain", "Stream-Forked-From": source },
      });
      expect(res.status, `depth ${depth}`).toBe(201);
      source = fork;
    }
    expect((await readAll(source)).text).toBe("ab");
    const tooDeep = streamPath("chain-too-deep");
    const refused = await call("PUT", tooDeep, {
      headers: { "Content-Type": "text/plain", "Stream-Forked-From": source },
    });
    expectStreamError(refused, 400, "invalid_request");
    expect(refused.text).toContain(`at most ${MAX_FORK_DEPTH} deep`);
    expectStreamError(await call("GET", tooDeep), 404, "not_found");
  });

  it("answers 404 for a stream that does not exist, whatever the method", async () => {
    const path = streamPath("missing");
    expectStreamError(await call("GET", path), 404, "not_found");
    expectStreamError(await call("GET", `${path}?offset=now&live=sse`), 404, "not_found");
    expectStreamError(await append(path, "x"), 404, "not_found");
    expectStreamError(await call("POST", path, { headers: { "Stream-Closed": "true" } }), 404, "not_found");
    expectStreamError(await call("DELETE", path), 404, "not_found");
    const missingHead = await call("HEAD", path);
    expect(missingHead.status).toBe(404);
    expect(missingHead.text).toBe("");
    expectStreamError(await call("GET", "/v1/stream/__ds/subscriptions/x"), 404, "not_found");
  });
});

describe("a fork's count on its source", () => {
  it("counts a fork by its token once, and counts it off once, however often either is asked", async () => {
    const source = streamPath("counted");
    await create(source, { body: "shared" });
    const key = decodeURIComponent(source.slice(STREAM_ROUTE.length));
    const object = streamObjects().getByName(streamObjectName("tenant-a", key));
    const asked = (token: string) => ({ offset: null, subOffset: 0, contentType: null, token });
    // A create that asked again (its first answer lost) is one fork; another create is another.
    expect(await object.forkPoint(key, asked("first"))).toMatchObject({ ok: true });
    expect(await object.forkPoint(key, asked("first"))).toMatchObject({ ok: true });
    expect(await object.forkPoint(key, asked("second"))).toMatchObject({ ok: true });
    expect((await call("DELETE", source)).status).toBe(204);
    expect((await head(source)).status).toBe(410);
    // A release of a fork never counted, or one told twice, takes off no other fork's count.
    await object.releaseFork(key, "never-counted");
    await object.releaseFork(key, "first");
    await object.releaseFork(key, "first");
    expect((await head(source)).status).toBe(410);
    // The last fork gone, so is the deleted source.
    await object.releaseFork(key, "second");
    expect((await head(source)).status).toBe(404);
  });

  it("leaves nothing to give back when the source refuses a fork: it counts none, the fork's object owes none", async () => {
    const source = streamPath("refusing");
    await create(source, { body: "text" });
    const fork = streamPath("refused");
    const refused = await call("PUT", fork, {
      headers: { "Content-Type": "application/json", "Stream-Forked-From": source },
    });
    expectStreamError(refused, 409, "content_type_mismatch");
    expect((await head(fork)).status).toBe(404);
    const forkKey = decodeURIComponent(fork.slice(STREAM_ROUTE.length));
    const owed = await runInDurableObject(
      streamObjects().getByName(streamObjectName("tenant-a", forkKey)),
      (_instance, state) => state.storage.sql.exec("SELECT * FROM stream_releases").toArray(),
    );
    expect(owed).toEqual([]);
    expect((await call("DELETE", source)).status).toBe(204);
    expect((await head(source)).status).toBe(404);
  });
});
