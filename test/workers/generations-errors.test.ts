import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_GENERATION_BYTES } from "../../src/core/generations/generation-schemas";
import { newId } from "../../src/core/ids";
import { sessionObjectName } from "../../src/durable/internal";
import { StreamStore } from "../../src/durable/stream/store";
import {
  appendEvents,
  appendText,
  endGeneration,
  openGeneration,
  sessionWithQuestion,
  snapshot,
} from "./generation-helpers";
import { api, expectError, info, KEY_A_READ, KEY_B } from "./helpers";
import { call, expectStreamError, readAll } from "./stream-helpers";

/*
 * What a generation refuses, with a clear 4xx and nothing written: appends to a closed or stopped
 * stream, the wrong content type, bad offsets, producer gaps, chunks over the limits, unknown ids;
 * read-only keys that write; other tenants.
 */

const MiB = 1024 * 1024;

describe("bad input to a generation changes nothing", () => {
  it("refuses appends after it completed, of the wrong content type, and of the wrong shape", async () => {
    const { id } = await sessionWithQuestion();
    const text = await openGeneration(id);
    await appendText(text.stream, "kept");
    const before = await snapshot(id, text.stream);
    expectStreamError(
      await appendEvents(text.stream, { type: "text-delta", delta: "x" }),
      409,
      "content_type_mismatch",
    );
    expectStreamError(await appendText(text.stream, new Uint8Array([0xff, 0xfe])), 400, "invalid_request");
    expectStreamError(
      await appendText(text.stream, "closing", { "Stream-Closed": "true" }),
      400,
      "invalid_request",
    );
    expectStreamError(
      await call("PUT", text.stream, { headers: { "Content-Type": "text/plain" } }),
      400,
      "invalid_request",
    );
    expectStreamError(await call("DELETE", text.stream), 400, "invalid_request");
    expectStreamError(
      await call("POST", text.stream, { body: new TextEncoder().encode("no type") }),
      400,
      "invalid_request",
    );
    expect(await snapshot(id, text.stream)).toEqual(before);

    await endGeneration(id, text.id, "complete");
    const done = await snapshot(id, text.stream);
    const late = await appendText(text.stream, "late");
    expectStreamError(late, 409, "stream_closed");
    expect(late.json.error.message).toMatch(/completed/);
    expect(await snapshot(id, text.stream)).toEqual(done);

    const events = await openGeneration(id, { format: "ai-sdk-ui" });
    const empty = await snapshot(id, events.stream);
    expectStreamError(await appendText(events.stream, "plain"), 409, "content_type_mismatch");
    expectStreamError(await appendEvents(events.stream, [{ delta: "no type" }]), 400, "invalid_request");
    expectStreamError(await appendEvents(events.stream, [1, 2]), 400, "invalid_request");
    expectStreamError(
      await call("POST", events.stream, {
        body: "{not json",
        headers: { "Content-Type": "application/json" },
      }),
      400,
      "invalid_request",
    );
    expect(await snapshot(id, events.stream)).toEqual(empty);
  });

  it("refuses offsets past the end or malformed", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "abc");
    const past = "0000000000000009_0000000000000099";
    expectStreamError(await call("GET", `${generation.stream}?offset=${past}`), 400, "invalid_request");
    expectStreamError(await call("GET", `${generation.stream}?offset=banana`), 400, "invalid_request");
    expectStreamError(
      await call("GET", `${generation.stream}?offset=-1&live=sideways`),
      400,
      "invalid_request",
    );
  });

  it("serves its stream under a path spelled with percent-escapes, and refuses ids that are not ids", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "abc");
    const escaped = `/v1/sessions/${id}/%67enerations/${generation.id}/%73tream`;
    expect((await readAll(escaped)).text).toBe("abc");
    expect((await appendText(escaped, "def")).status).toBe(204);
    expect((await readAll(generation.stream)).text).toBe("abcdef");
    const before = await snapshot(id, generation.stream);
    for (const gid of ["a%2Fb", `${generation.id}%20`, "%3A%3A%3A".repeat(50)]) {
      const path = `/v1/sessions/${id}/generations/${gid}/stream`;
      expectStreamError(await call("GET", path), 400, "invalid_request");
      expectStreamError(await appendText(path, "x"), 400, "invalid_request");
    }
    expectStreamError(
      await appendText(`/v1/sessions/not%20an%20id/generations/${generation.id}/%73tream`, "x"),
      400,
      "invalid_request",
    );
    expect(await snapshot(id, generation.stream)).toEqual(before);
  });

  it("refuses a producer's sequence gap, and answers its retry as a duplicate written once", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    const producer = (seq: number) => ({
      "Producer-Id": "agent",
      "Producer-Epoch": "0",
      "Producer-Seq": String(seq),
    });
    expect((await appendText(generation.stream, "a", producer(0))).status).toBe(200);
    expect((await appendText(generation.stream, "b", producer(1))).status).toBe(200);
    const before = await snapshot(id, generation.stream);
    const gap = await appendText(generation.stream, "d", producer(3));
    expectStreamError(gap, 409, "sequence_conflict");
    expect(gap.headers.get("Producer-Expected-Seq")).toBe("2");
    expect((await appendText(generation.stream, "b", producer(1))).status).toBe(204);
    expect(await snapshot(id, generation.stream)).toEqual(before);
    expect((await readAll(generation.stream)).text).toBe("ab");
  });

  it(`refuses an append over 1 MiB, and chunks past ${MAX_GENERATION_BYTES / MiB} MiB in all`, async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    const empty = await snapshot(id, generation.stream);
    expectStreamError(await appendText(generation.stream, "x".repeat(MiB + 1)), 413, "payload_too_large");
    expect(await snapshot(id, generation.stream)).toEqual(empty);
    const chunk = "y".repeat(MiB);
    for (let i = 0; i < MAX_GENERATION_BYTES / MiB; i++) {
      expect((await appendText(generation.stream, chunk)).status).toBe(204);
    }
    const full = await snapshot(id, generation.stream);
    const over = await appendText(generation.stream, "z");
    expectStreamError(over, 413, "payload_too_large");
    expect(await snapshot(id, generation.stream)).toEqual(full);
    // It still completes, with everything it holds.
    const done = await endGeneration(id, generation.id, "complete");
    expect(done.status).toBe(201);
    expect(done.body.entries[0].message.content[0].text).toHaveLength(MAX_GENERATION_BYTES);
  }, 60_000);

  it("answers a producer's retry of its last chunk as a duplicate, near the limits, and still ends", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    const producer = { "Producer-Id": "agent", "Producer-Epoch": "0", "Producer-Seq": "0" };
    // 6 MiB of the answer's JSON: written again, it would pass the limit.
    const control = "\u0001".repeat(MiB);
    expect((await appendText(generation.stream, control, producer)).status).toBe(200);
    const written = await snapshot(id, generation.stream);
    const retry = await appendText(generation.stream, control, producer);
    expect(retry.status, retry.text).toBe(204);
    expect(retry.headers.get("Producer-Seq")).toBe("0");
    expect(await snapshot(id, generation.stream)).toEqual(written);
    // The duplicate took none of the room: plain text still fits beside it.
    const next = { ...producer, "Producer-Seq": "1" };
    expect((await appendText(generation.stream, "x".repeat(MiB), next)).status).toBe(200);
    const stopped = await endGeneration(id, generation.id, "stop");
    expect(stopped.status).toBe(201);
    expect(stopped.body.entries[0].message.content[0].text).toHaveLength(2 * MiB);
  }, 60_000);

  it("refuses when appended a chunk its answer could not be made of, and still ends", async () => {
    const { id } = await sessionWithQuestion();
    const pi = await openGeneration(id, { format: "pi-ai" });
    expect(
      (await appendEvents(pi.stream, { type: "text_delta", contentIndex: 0, delta: "kept" })).status,
    ).toBe(204);
    const before = await snapshot(id, pi.stream);
    for (const bad of [
      { type: "done", message: { nope: 1 } },
      { type: "text_delta", contentIndex: 500_000_000, delta: "x" },
      { type: "text_delta", contentIndex: 4_294_967_294, delta: "x" },
      { type: "thinking_delta", contentIndex: -1, delta: "x" },
      // One bad event refuses the whole append.
      [
        { type: "text_delta", contentIndex: 1, delta: "fine" },
        { type: "toolcall_end", contentIndex: 2 },
      ],
    ]) {
      expectStreamError(await appendEvents(pi.stream, bad), 400, "invalid_request");
    }
    expect(await snapshot(id, pi.stream)).toEqual(before);
    const stopped = await endGeneration(id, pi.id, "stop");
    expect(stopped.status).toBe(201);
    expect(stopped.body.entries[0].message.content).toEqual([{ type: "text", text: "kept" }]);

    let input: unknown = "deep";
    for (let i = 0; i < 200; i++) input = { a: input };
    const ui = await openGeneration(id, { format: "ai-sdk-ui" });
    const call = { type: "tool-input-available", toolCallId: "c1", toolName: "t", input };
    expectStreamError(await appendEvents(ui.stream, call), 400, "invalid_request");
    // A number past the largest a double holds would be stored as null: refused, as in any body.
    const huge = '[{"type":"tool-input-available","toolCallId":"c1","toolName":"t","input":{"n":1e400}}]';
    const beforeHuge = await snapshot(id, ui.stream);
    const refused = await appendEvents(ui.stream, undefined, {}, undefined, huge);
    expectStreamError(refused, 400, "invalid_request");
    expect(refused.json.error.message).toContain("holds a number too large to store");
    expect(await snapshot(id, ui.stream)).toEqual(beforeHuge);
    expect((await endGeneration(id, ui.id, "stop")).status).toBe(201);
  });

  it("refuses the chunk that would make its answer too large to store, escapes counted, and still ends", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    // 1 MiB of a control character is 6 MiB of the answer's JSON: a second one does not fit.
    const control = "\u0001".repeat(MiB);
    expect((await appendText(generation.stream, control)).status).toBe(204);
    const before = await snapshot(id, generation.stream);
    const over = await appendText(generation.stream, control);
    expectStreamError(over, 413, "payload_too_large");
    expect(over.json.error.message).toMatch(/answer/);
    expect(await snapshot(id, generation.stream)).toEqual(before);
    // Plain text still fits beside it.
    expect((await appendText(generation.stream, "x".repeat(MiB))).status).toBe(204);
    const stopped = await endGeneration(id, generation.id, "stop");
    expect(stopped.status).toBe(201);
    expect(stopped.body.entries[0].message.content[0].text).toHaveLength(2 * MiB);
  }, 60_000);

  it("counts an AI SDK tool call's name each time the answer copies it, and still ends", async () => {
    const { id } = await sessionWithQuestion();
    const name = "x".repeat(1_000_000);
    // Parts without a name take their call's: 1,000 of them would make an answer of a gigabyte.
    const inputs = await openGeneration(id, { format: "ai-sdk-ui" });
    expect(
      (await appendEvents(inputs.stream, { type: "tool-input-start", toolCallId: "a", toolName: name }))
        .status,
    ).toBe(204);
    const started = await snapshot(id, inputs.stream);
    const unnamed = { type: "tool-input-available", toolCallId: "a", toolName: "", input: {} };
    const copies = await appendEvents(
      inputs.stream,
      Array.from({ length: 1000 }, () => unnamed),
    );
    expectStreamError(copies, 413, "payload_too_large");
    expect(await snapshot(id, inputs.stream)).toEqual(started);
    const completed = await endGeneration(id, inputs.id, "complete");
    expect(completed.status, completed.text).toBe(201);
    // Each result of a call takes its name too.
    const outputs = await openGeneration(id, { format: "ai-sdk-ui" });
    const call = { type: "tool-input-available", toolCallId: "b", toolName: name, input: {} };
    expect((await appendEvents(outputs.stream, call)).status).toBe(204);
    const called = await snapshot(id, outputs.stream);
    const output = { type: "tool-output-available", toolCallId: "b", output: "ok" };
    const results = await appendEvents(
      outputs.stream,
      Array.from({ length: 10 }, () => output),
    );
    expectStreamError(results, 413, "payload_too_large");
    expect(await snapshot(id, outputs.stream)).toEqual(called);
    const stopped = await endGeneration(id, outputs.id, "stop");
    expect(stopped.status, stopped.text).toBe(201);
  }, 60_000);

  it("ends cut short a stream whose answer is more than an entry holds, or cannot be made at all", async () => {
    const { id } = await sessionWithQuestion();
    const object = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    /** Writes `records` to a generation's stream as it stores them, past what its appends check. */
    const planted = async (records: string[]) => {
      const generation = await openGeneration(id, { format: "ai-sdk-ui" });
      await runInDurableObject(object, (_instance, state) => {
        const store = new StreamStore(state.storage.sql);
        const stream = store.get(`generation/${generation.id}`);
        if (!stream) throw new Error("no stream");
        const encoded = records.map((record) => new TextEncoder().encode(record));
        store.append(stream, {
          records: encoded,
          close: false,
          producer: null,
          streamSeq: null,
          now: Date.now(),
        });
      });
      await evictDurableObject(object);
      return generation;
    };
    // 1,000 tool calls named with the same megabyte.
    const start = { type: "tool-input-start", toolCallId: "a", toolName: "x".repeat(1_000_000) };
    const unnamed = { type: "tool-input-available", toolCallId: "a", toolName: "", input: {} };
    const huge = await planted(
      [start, ...Array.from({ length: 1000 }, () => unnamed)].map((e) => JSON.stringify(e)),
    );
    const broken = await planted([
      JSON.stringify({ type: "text-delta", id: "t", delta: "lost" }),
      "{not json",
    ]);
    for (const [generation, code] of [
      [huge, "entry_too_large"],
      [broken, "internal"],
    ] as const) {
      const completed = await endGeneration(id, generation.id, "complete");
      expect(completed.status, completed.text).toBe(201);
      const [entry] = completed.body.entries;
      expect(entry.message).toMatchObject({ role: "assistant", stopReason: "length", content: [] });
      expect(entry.message.errorMessage).toContain(`${code}:`);
      expect(completed.body.generation).toMatchObject({ state: "finished", entryIds: [entry.id] });
    }
  }, 60_000);

  it("answers 404 for unknown generation ids, and 422 for a parent that does not exist", async () => {
    const { id } = await sessionWithQuestion();
    const unknown = "01890a5d-ac96-774b-bcce-b302099a8057";
    const entries = (await info(id)).entryCount;
    expectError(await api("GET", `/v1/sessions/${id}/generations/${unknown}`), 404, "not_found");
    expectError(await endGeneration(id, unknown, "complete"), 404, "not_found");
    expectError(await endGeneration(id, unknown, "stop"), 404, "not_found");
    const stream = `/v1/sessions/${id}/generations/${unknown}/stream`;
    expectStreamError(await call("GET", stream), 404, "not_found");
    expectStreamError(await appendText(stream, "x"), 404, "not_found");
    expectError(
      await api("POST", `/v1/sessions/${id}/generations`, { body: { parentId: "nope" } }),
      422,
      "parent_not_found",
    );
    expectError(
      await api("POST", `/v1/sessions/${id}/generations`, { body: { format: "mp3" } }),
      415,
      "unsupported_format",
    );
    expectError(
      await api("POST", `/v1/sessions/${id}/generations`, { body: { abandonAfterSeconds: 0 } }),
      400,
      "invalid_request",
    );
    expectError(
      await endGeneration(id, unknown, "complete", { message: 1, extra: true }),
      400,
      "invalid_request",
    );
    expect((await info(id)).entryCount).toBe(entries);
    expect((await api("GET", `/v1/sessions/${id}/generations`)).body.generations).toEqual([]);
  });

  it("reads and writes a generation's stream through a path with percent-encoded segments", async () => {
    const { id } = await sessionWithQuestion();
    const text = await openGeneration(id);
    await appendText(text.stream, "one ");
    // `%73tream` is `stream`, `%2D` a `-` of the ids: the same resource, as the router matches it.
    const encoded = text.stream.replace(/\/stream$/, "/%73tream").replaceAll("-", "%2D");
    expect(encoded).not.toBe(text.stream);
    expect((await appendText(encoded, "two")).status).toBe(204);
    const read = await readAll(encoded, "-1");
    expect(read.text).toBe("one two");
    expectStreamError(await call("GET", encoded.replace("/%73tream", "/%73trea")), 404, "not_found");
  });

  it("refuses a complete whose message is not an answer, and leaves the generation open", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "words");
    const before = await snapshot(id, generation.stream);
    const user = { role: "user", content: "not an answer", timestamp: 1 };
    expectError(
      await endGeneration(id, generation.id, "complete", { message: user }),
      400,
      "invalid_request",
    );
    const ui = await openGeneration(id, { format: "ai-sdk-ui" });
    expectError(
      await endGeneration(id, ui.id, "complete", { message: { role: "user", parts: [] } }),
      400,
      "invalid_request",
    );
    expect(await snapshot(id, generation.stream)).toEqual(before);
  });
});

describe("who may touch a generation", () => {
  it("lets a read-only key read it but not open, append, complete or stop one", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "visible");
    const before = await snapshot(id, generation.stream);
    expect((await readAll(generation.stream, "-1", KEY_A_READ)).text).toBe("visible");
    expect((await call("HEAD", generation.stream, { key: KEY_A_READ })).status).toBe(200);
    expect(
      (await api("GET", `/v1/sessions/${id}/generations/${generation.id}`, { key: KEY_A_READ })).status,
    ).toBe(200);
    expectStreamError(await appendText(generation.stream, "no", {}, KEY_A_READ), 403, "forbidden");
    expectError(await endGeneration(id, generation.id, "complete", {}, KEY_A_READ), 403, "forbidden");
    expectError(await endGeneration(id, generation.id, "stop", {}, KEY_A_READ), 403, "forbidden");
    expectError(
      await api("POST", `/v1/sessions/${id}/generations`, { body: {}, key: KEY_A_READ }),
      403,
      "forbidden",
    );
    expect(await snapshot(id, generation.stream)).toEqual(before);
  });

  it("is not there for another tenant", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "private");
    const before = await snapshot(id, generation.stream);
    expectStreamError(await call("GET", generation.stream, { key: KEY_B }), 404, "not_found");
    expectStreamError(await appendText(generation.stream, "intrusion", {}, KEY_B), 404, "not_found");
    expectError(
      await api("GET", `/v1/sessions/${id}/generations/${generation.id}`, { key: KEY_B }),
      404,
      "not_found",
    );
    expectError(await endGeneration(id, generation.id, "stop", {}, KEY_B), 404, "not_found");
    expectError(await endGeneration(id, generation.id, "complete", {}, KEY_B), 404, "not_found");
    expectError(
      await api("POST", `/v1/sessions/${id}/generations`, { body: {}, key: KEY_B }),
      404,
      "not_found",
    );
    expectError(await api("GET", `/v1/sessions/${id}/generations`, { key: KEY_B }), 404, "not_found");
    expect(await snapshot(id, generation.stream)).toEqual(before);
  });

  it("has no listing for a session that does not exist, or no longer does", async () => {
    expectError(await api("GET", `/v1/sessions/${newId()}/generations`), 404, "not_found");
    const { id } = await sessionWithQuestion();
    await openGeneration(id);
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expectError(await api("GET", `/v1/sessions/${id}/generations`), 404, "not_found");
  });

  it("is gone with its deleted session", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "soon gone");
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expectStreamError(await call("GET", generation.stream), 404, "not_found");
    expectError(await endGeneration(id, generation.id, "stop"), 404, "not_found");
  });
});
