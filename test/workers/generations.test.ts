import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  appendEvents,
  appendText,
  endGeneration,
  openGeneration,
  sessionWithQuestion,
  snapshot,
} from "./generation-helpers";
import { api, expectError, info, KEY_A, userMessage } from "./helpers";
import { call, expectStreamError, head, openSse, readAll } from "./stream-helpers";

/*
 * Generations through the real routes: an answer written chunk by chunk to a stream kept in the
 * session's object, then completed or stopped into the session's entries, in one transaction with
 * the stream's close.
 */

const USAGE = {
  input: 3,
  output: 5,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 8,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

describe("a text generation", () => {
  it("opens under the leaf, takes chunks, and completes into one entry with exactly the streamed text", async () => {
    const { id, questionId } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    expect(generation).toMatchObject({ parentId: questionId, format: "text", state: "open" });
    expect(generation.stream).toBe(`/v1/sessions/${id}/generations/${generation.id}/stream`);
    for (const chunk of ["Hel", "lo ", "wörld"]) {
      expect((await appendText(generation.stream, chunk)).status).toBe(204);
    }
    expect((await readAll(generation.stream)).text).toBe("Hello wörld");
    expect((await head(generation.stream)).closed).toBe(false);
    // Nothing is in the session until it completes.
    expect((await info(id)).entryCount).toBe(1);

    const done = await endGeneration(id, generation.id, "complete");
    expect(done.status, done.text).toBe(201);
    expect(done.body.entries).toHaveLength(1);
    const [entry] = done.body.entries;
    expect(entry).toMatchObject({ id: generation.id, parentId: questionId, type: "message" });
    expect(entry.message).toMatchObject({
      role: "assistant",
      stopReason: "stop",
      content: [{ type: "text", text: "Hello wörld" }],
    });
    expect((await head(generation.stream)).closed).toBe(true);
    expect((await info(id)).leafId).toBe(generation.id);
    expect(done.body.generation).toMatchObject({ state: "finished", entryIds: [generation.id] });
    // The stream stays readable, whole, for its retention window.
    expect((await readAll(generation.stream)).text).toBe("Hello wörld");
  });

  it("keeps a U+FEFF its first chunk starts with, in its entry and for its stream's readers", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    expect((await appendText(generation.stream, "\ufeffHello")).status).toBe(204);
    expect((await readAll(generation.stream)).text).toBe("\ufeffHello");
    const sse = await openSse(generation.stream, "-1");
    expect(await sse.next()).toEqual({ event: "data", data: "\ufeffHello" });
    await sse.close();
    const done = await endGeneration(id, generation.id, "complete");
    expect(done.status, done.text).toBe(201);
    expect(done.body.entries[0].message.content).toEqual([{ type: "text", text: "\ufeffHello" }]);
  });

  it("records the model it was opened with, else the session's", async () => {
    const { id } = await sessionWithQuestion();
    const named = await openGeneration(id, {
      model: "anthropic/claude-sonnet-4-5",
      api: "anthropic-messages",
    });
    await appendText(named.stream, "a");
    const done = await endGeneration(id, named.id, "complete");
    expect(done.body.entries[0].message).toMatchObject({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      api: "anthropic-messages",
    });
    // The session's model is now that reply's: the next generation under it records it too.
    const next = await openGeneration(id);
    expect(next.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
  });

  it("completes with the message given instead of the chunks", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "draft");
    const message = {
      role: "assistant",
      content: [{ type: "text", text: "Final answer." }],
      api: "openai-responses",
      provider: "openai",
      model: "gpt-5",
      usage: USAGE,
      stopReason: "stop",
      timestamp: 1_700_000_000_000,
    };
    const done = await endGeneration(id, generation.id, "complete", { message });
    expect(done.status, done.text).toBe(201);
    expect(done.body.entries[0].message).toEqual(message);
  });

  it("stops into one entry of what was written, aborted, and refuses the writer's next append", async () => {
    const { id, questionId } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "Half an ");
    await appendText(generation.stream, "answer");
    const stopped = await endGeneration(id, generation.id, "stop");
    expect(stopped.status, stopped.text).toBe(201);
    expect(stopped.body.entries).toHaveLength(1);
    expect(stopped.body.entries[0]).toMatchObject({ id: generation.id, parentId: questionId });
    expect(stopped.body.entries[0].message).toMatchObject({
      stopReason: "aborted",
      content: [{ type: "text", text: "Half an answer" }],
    });
    expect(stopped.body.generation).toMatchObject({ state: "stopped", stoppedBy: "request" });

    const before = await snapshot(id, generation.stream);
    const late = await appendText(generation.stream, " and more");
    expectStreamError(late, 409, "stream_closed");
    expect(late.json.error.message).toMatch(/stopped/);
    expect(late.headers.get("Stream-Closed")).toBe("true");
    expect(await snapshot(id, generation.stream)).toEqual(before);
    expect((await readAll(generation.stream)).text).toBe("Half an answer");
  });

  it("answers a repeated complete or stop with the same outcome, and refuses the other one", async () => {
    const { id } = await sessionWithQuestion();
    const completed = await openGeneration(id);
    await appendText(completed.stream, "done");
    const first = await endGeneration(id, completed.id, "complete");
    const again = await endGeneration(id, completed.id, "complete");
    expect(again.status).toBe(200);
    expect(again.body.entries).toEqual(first.body.entries);
    const before = await snapshot(id, completed.stream);
    expectError(await endGeneration(id, completed.id, "stop"), 409, "stream_closed");
    expect(await snapshot(id, completed.stream)).toEqual(before);

    const stopped = await openGeneration(id);
    await endGeneration(id, stopped.id, "stop");
    expect((await endGeneration(id, stopped.id, "stop")).status).toBe(200);
    const res = await endGeneration(id, stopped.id, "complete");
    expectError(res, 409, "stream_closed");
    expect(res.body.error.message).toMatch(/stopped/);
  });

  it("keeps several generations open at once: two answers to one question become siblings", async () => {
    const { id, questionId } = await sessionWithQuestion();
    const a = await openGeneration(id);
    const b = await openGeneration(id, { parentId: questionId });
    const list = await api("GET", `/v1/sessions/${id}/generations`);
    expect(list.body.generations.map((g: { id: string }) => g.id)).toEqual([a.id, b.id]);
    await appendText(b.stream, "second");
    await appendText(a.stream, "first");
    await endGeneration(id, b.id, "complete");
    await endGeneration(id, a.id, "complete");
    const tree = await api("GET", `/v1/sessions/${id}/tree`);
    const children = tree.body.roots[0].children.map((node: { id: string }) => node.id).sort();
    expect(children).toEqual([a.id, b.id].sort());
    // The first to end took the head; the other is a branch beside it.
    expect((await info(id)).leafId).toBe(b.id);
  });

  it("lists its generations a page at a time, oldest first, all of them or those in one state", async () => {
    const { id } = await sessionWithQuestion();
    const opened = [];
    for (let n = 0; n < 5; n++) opened.push(await openGeneration(id));
    await endGeneration(id, opened[1]?.id as string, "complete");
    await endGeneration(id, opened[3]?.id as string, "stop");
    const ids = (generations: Array<{ id: string }>) => generations.map((generation) => generation.id);
    const pages = async (query: string) => {
      const seen = [];
      let cursor: string | null = null;
      do {
        const after: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
        const page = await api("GET", `/v1/sessions/${id}/generations?limit=2${query}${after}`);
        expect(page.status, page.text).toBe(200);
        expect(page.body.generations.length).toBeLessThanOrEqual(2);
        seen.push(page.body.generations);
        cursor = page.body.nextCursor;
      } while (cursor !== null);
      return seen;
    };
    const all = await pages("");
    expect(all.map(ids)).toEqual([
      [opened[0]?.id, opened[1]?.id],
      [opened[2]?.id, opened[3]?.id],
      [opened[4]?.id],
    ]);
    expect(
      (await pages("&state=open")).flat().map((g: { id: string; state: string }) => [g.id, g.state]),
    ).toEqual([opened[0], opened[2], opened[4]].map((g) => [g?.id, "open"]));
    expect(ids((await pages("&state=finished")).flat())).toEqual([opened[1]?.id]);
    expect(ids((await pages("&state=stopped")).flat())).toEqual([opened[3]?.id]);
    // Without a limit: the first 50.
    const whole = await api("GET", `/v1/sessions/${id}/generations`);
    expect(ids(whole.body.generations)).toEqual(opened.map((g) => g.id));
    expect(whole.body.nextCursor).toBeNull();
  });

  it("refuses a listing's bad query and a cursor of another state, writing nothing", async () => {
    const { id } = await sessionWithQuestion();
    const a = await openGeneration(id);
    await openGeneration(id);
    const before = await snapshot(id, a.stream);
    const first = await api("GET", `/v1/sessions/${id}/generations?limit=1&state=open`);
    const cursor = encodeURIComponent(first.body.nextCursor);
    for (const query of [
      "state=ended",
      "limit=0",
      "limit=201",
      "limit=two",
      "cursor=not-a-cursor",
      `cursor=${cursor}`,
      `cursor=${cursor}&state=finished`,
    ]) {
      expectError(await api("GET", `/v1/sessions/${id}/generations?${query}`), 400, "invalid_request");
    }
    expect((await api("GET", `/v1/sessions/${id}/generations?state=open&cursor=${cursor}`)).status).toBe(200);
    expect(await snapshot(id, a.stream)).toEqual(before);
  });

  it("opens under an empty session's root, and under any entry given", async () => {
    const empty = await api("POST", "/v1/sessions", { body: {} });
    const root = await openGeneration(empty.body.id);
    expect(root.parentId).toBeNull();
    await appendText(root.stream, "first words");
    const done = await endGeneration(empty.body.id, root.id, "complete");
    expect(done.body.entries[0].parentId).toBeNull();
  });

  it("leaves the stream open when a message given cannot be written: the entry exists exactly when it is closed", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "words");
    // Another entry took the id the answer would take.
    const taken = await api("POST", `/v1/sessions/${id}/entries`, {
      body: { ...userMessage("squatter"), id: generation.id },
    });
    expect(taken.status).toBe(201);
    const before = await snapshot(id, generation.stream);
    const message = {
      role: "assistant",
      content: [{ type: "text", text: "given" }],
      api: "a",
      provider: "p",
      model: "m",
      usage: USAGE,
      stopReason: "stop",
      timestamp: 1,
    };
    const res = await endGeneration(id, generation.id, "complete", { message });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("already_exists");
    expect(await snapshot(id, generation.stream)).toEqual(before);
    expect(before.closed).toBe(false);
    const state = await api("GET", `/v1/sessions/${id}/generations/${generation.id}`);
    expect(state.body.state).toBe("open");
    // Assembled from its chunks, the answer takes an id of its own: the generation ends.
    const done = await endGeneration(id, generation.id, "complete");
    expect(done.status).toBe(201);
    const [entry] = done.body.entries;
    expect(entry.id).not.toBe(generation.id);
    expect(entry.message.content).toEqual([{ type: "text", text: "words" }]);
    expect(done.body.generation).toMatchObject({ state: "finished", entryIds: [entry.id] });
    expect((await snapshot(id, generation.stream)).closed).toBe(true);
  });
});

describe("generations in the JSON formats", () => {
  it("assembles pi-ai assistant-message events: text, thinking and a tool call", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id, { format: "pi-ai" });
    const partial = {
      role: "assistant",
      content: [],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage: USAGE,
      stopReason: "stop",
      timestamp: 1,
    };
    const events = [
      { type: "start", partial },
      { type: "thinking_start", contentIndex: 0 },
      { type: "thinking_delta", contentIndex: 0, delta: "Let me " },
      { type: "thinking_delta", contentIndex: 0, delta: "look." },
      { type: "thinking_end", contentIndex: 0, content: "Let me look." },
      { type: "text_start", contentIndex: 1 },
      { type: "text_delta", contentIndex: 1, delta: "Checking " },
      { type: "text_delta", contentIndex: 1, delta: "the file." },
      { type: "toolcall_start", contentIndex: 2 },
      { type: "toolcall_delta", contentIndex: 2, delta: '{"path":' },
      {
        type: "toolcall_end",
        contentIndex: 2,
        toolCall: { type: "toolCall", id: "call-1", name: "read", arguments: { path: "a.txt" } },
      },
    ];
    expect((await appendEvents(generation.stream, events.slice(0, 5))).status).toBe(204);
    for (const event of events.slice(5))
      expect((await appendEvents(generation.stream, event)).status).toBe(204);
    const read = await call("GET", `${generation.stream}?offset=-1`);
    expect(read.json).toEqual(events);
    const done = await endGeneration(id, generation.id, "complete");
    expect(done.body.entries[0].message).toMatchObject({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      stopReason: "toolUse",
      content: [
        { type: "thinking", thinking: "Let me look." },
        { type: "text", text: "Checking the file." },
        { type: "toolCall", id: "call-1", name: "read", arguments: { path: "a.txt" } },
      ],
    });
  });

  it("takes a pi-ai done event's message whole, and a stop keeps a half-written tool call out", async () => {
    const { id } = await sessionWithQuestion();
    const whole = await openGeneration(id, { format: "pi-ai" });
    const message = {
      role: "assistant",
      content: [{ type: "text", text: "All of it." }],
      api: "openai-completions",
      provider: "openai",
      model: "gpt-4.1",
      usage: USAGE,
      stopReason: "stop",
      timestamp: 2,
    };
    await appendEvents(whole.stream, [
      { type: "text_delta", contentIndex: 0, delta: "All of it." },
      { type: "done", reason: "stop", message },
    ]);
    expect((await endGeneration(id, whole.id, "complete")).body.entries[0].message).toEqual(message);

    const cut = await openGeneration(id, { format: "pi-ai" });
    await appendEvents(cut.stream, [
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "Partly" },
      { type: "toolcall_start", contentIndex: 1 },
      { type: "toolcall_delta", contentIndex: 1, delta: '{"pa' },
    ]);
    const stopped = await endGeneration(id, cut.id, "stop");
    expect(stopped.body.entries[0].message).toMatchObject({
      stopReason: "aborted",
      content: [{ type: "text", text: "Partly" }],
    });
  });

  it("assembles AI SDK UI message stream parts: a tool step, its result, then the answer", async () => {
    const { id, questionId } = await sessionWithQuestion();
    const generation = await openGeneration(id, { format: "ai-sdk-ui", model: "openai/gpt-5" });
    const parts = [
      { type: "start", messageId: "m1" },
      { type: "start-step" },
      { type: "tool-input-start", toolCallId: "t1", toolName: "weather" },
      { type: "tool-input-delta", toolCallId: "t1", inputTextDelta: '{"city":"Paris"}' },
      { type: "tool-input-available", toolCallId: "t1", toolName: "weather", input: { city: "Paris" } },
      { type: "tool-output-available", toolCallId: "t1", output: { sky: "sun" } },
      { type: "finish-step" },
      { type: "start-step" },
      { type: "reasoning-start", id: "r1" },
      { type: "reasoning-delta", id: "r1", delta: "Sunny, so" },
      { type: "reasoning-end", id: "r1" },
      { type: "text-start", id: "x1" },
      { type: "text-delta", id: "x1", delta: "It is " },
      { type: "text-delta", id: "x1", delta: "sunny." },
      { type: "text-end", id: "x1" },
      { type: "finish-step" },
      { type: "finish", finishReason: "stop" },
    ];
    await appendEvents(generation.stream, parts);
    const done = await endGeneration(id, generation.id, "complete");
    expect(done.status, done.text).toBe(201);
    const entries = done.body.entries;
    expect(entries.map((e: { id: string }) => e.id)).toEqual([
      generation.id,
      `${generation.id}:1`,
      `${generation.id}:2`,
    ]);
    expect(entries[0].parentId).toBe(questionId);
    expect(entries[1].parentId).toBe(generation.id);
    expect(entries[0].message).toMatchObject({
      role: "assistant",
      provider: "openai",
      model: "gpt-5",
      stopReason: "toolUse",
      content: [{ type: "toolCall", id: "t1", name: "weather", arguments: { city: "Paris" } }],
    });
    expect(entries[1].message).toMatchObject({
      role: "toolResult",
      toolCallId: "t1",
      toolName: "weather",
      isError: false,
      content: [{ type: "text", text: '{"sky":"sun"}' }],
    });
    expect(entries[2].message).toMatchObject({
      role: "assistant",
      stopReason: "stop",
      content: [
        { type: "thinking", thinking: "Sunny, so" },
        { type: "text", text: "It is sunny." },
      ],
    });
    expect(done.body.generation.entryIds).toEqual(entries.map((e: { id: string }) => e.id));
  });

  it("completes an AI SDK generation with the UIMessage the SDK built", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id, { format: "ai-sdk-ui" });
    await appendEvents(generation.stream, { type: "text-delta", id: "x", delta: "ignored draft" });
    const message = {
      id: "msg-1",
      role: "assistant",
      parts: [{ type: "step-start" }, { type: "text", text: "The final text.", state: "done" }],
    };
    const done = await endGeneration(id, generation.id, "complete", { message });
    expect(done.body.entries).toHaveLength(1);
    expect(done.body.entries[0].message).toMatchObject({
      stopReason: "stop",
      content: [{ type: "text", text: "The final text." }],
    });
  });
});

describe("watching generations", () => {
  it("announces a generation started, then its entry, then finished; a late watcher learns of the open one", async () => {
    const { id } = await sessionWithQuestion();
    const events = await openSse(`/v1/sessions/${id}/events`, "now");
    expect((await events.next())?.event).toBe("session");
    expect((await events.next())?.event).toBe("leaf");
    const generation = await openGeneration(id);
    const started = await events.next();
    expect(started?.event).toBe("generation");
    expect(JSON.parse(started?.data as string)).toMatchObject({
      id: generation.id,
      state: "open",
      stream: generation.stream,
    });

    const late = await openSse(`/v1/sessions/${id}/events`, "now");
    expect((await late.next())?.event).toBe("session");
    const known = await late.next();
    expect(known?.event).toBe("generation");
    expect(JSON.parse(known?.data as string)).toMatchObject({ id: generation.id, state: "open" });
    await late.close();

    await appendText(generation.stream, "watched");
    await endGeneration(id, generation.id, "complete");
    const after = [await events.next(), await events.next(), await events.next()];
    expect(after.map((event) => event?.event)).toEqual(["entry", "leaf", "generation"]);
    expect(JSON.parse(after[0]?.data as string).message.content[0].text).toBe("watched");
    expect(JSON.parse(after[2]?.data as string)).toMatchObject({
      state: "finished",
      entryIds: [generation.id],
    });
    await events.close();
  });

  it("tells a WebSocket watcher of the answers in flight as it connects, then of each end", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    const res = await exports.default.fetch(`http://sessions.test/v1/sessions/${id}/ws`, {
      headers: { Upgrade: "websocket", Authorization: `Bearer ${KEY_A}` },
    });
    const socket = res.webSocket as WebSocket;
    socket.accept();
    const messages: Array<{ event: string; data: { id?: string; state?: string } }> = [];
    socket.addEventListener("message", (event) => messages.push(JSON.parse(event.data as string)));
    const until = async (match: (m: (typeof messages)[number]) => boolean) => {
      for (let tries = 0; tries < 100 && !messages.some(match); tries++)
        await new Promise((r) => setTimeout(r, 50));
      expect(messages.some(match), JSON.stringify(messages)).toBe(true);
    };
    await until((m) => m.event === "leaf");
    expect(messages.slice(0, 2).map((m) => m.event)).toEqual(["session", "generation"]);
    expect(messages[1]?.data).toMatchObject({ id: generation.id, state: "open" });
    await endGeneration(id, generation.id, "stop");
    await until((m) => m.event === "generation" && m.data.state === "stopped");
    socket.close(1000, "done");
  });

  it("wakes a reader at the tail with each chunk, and ends it when the generation completes", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    const reader = await openSse(generation.stream, "-1");
    expect((await reader.next())?.event).toBe("control");
    await appendText(generation.stream, "live");
    expect(await reader.next()).toEqual({ event: "data", data: "live" });
    expect((await reader.next())?.event).toBe("control");
    await endGeneration(id, generation.id, "complete");
    const closing = await reader.next();
    expect(JSON.parse(closing?.data as string)).toMatchObject({ streamClosed: true });
    expect(await reader.next()).toBeUndefined();
  });

  for (const purge of [false, true]) {
    it(`ends its live readers when its session is ${purge ? "purged" : "deleted"}, as a deleted stream's`, async () => {
      const { id } = await sessionWithQuestion();
      const generation = await openGeneration(id);
      await appendText(generation.stream, "first");
      const tail = (await head(generation.stream)).offset as string;
      const sse = await openSse(generation.stream, tail);
      expect((await sse.next())?.event).toBe("control");
      const poll = call("GET", `${generation.stream}?offset=${tail}&live=long-poll`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await api("DELETE", `/v1/sessions/${id}${purge ? "?purge=true" : ""}`)).status).toBe(204);
      expect(await sse.next(2000)).toBeUndefined();
      const polled = await poll;
      expect(polled.status, polled.text).toBe(404);
      expect(polled.json.error.code).toBe("not_found");
      expect((await call("GET", `${generation.stream}?offset=${tail}&live=long-poll`)).status).toBe(404);
      if (purge) return;
      // Restored, its generation is read and written again.
      expect((await api("POST", `/v1/sessions/${id}/restore`, { body: {} })).status).toBe(200);
      expect((await appendText(generation.stream, " then")).status).toBe(204);
      expect((await readAll(generation.stream)).text).toBe("first then");
    });
  }
});
