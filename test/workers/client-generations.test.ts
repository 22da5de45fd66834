import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { GenerationChunk } from "../../src/client";
import { createClient } from "../../src/client";
import { SessionError } from "../../src/core/errors";
import { user } from "../conformance/fixtures";
import { KEY_A, sid } from "./helpers";

/*
 * Generations from the typed client: a writer whose appends carry producer headers (a retry after
 * a lost answer is written once), complete and stop; a reader that follows from an offset and
 * resumes where it left off.
 */

const worker = (request: Request) => exports.default.fetch(request);

describe("client: generations", () => {
  it("writes an answer, completes it into the session, and follows it from any offset", async () => {
    const client = createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker });
    const session = await client.create({ id: sid() });
    const questionId = await session.appendMessage(user("Count to five"));
    const writer = await session.generate({ model: "openai/gpt-5" });
    expect(writer.info.parentId).toBe(questionId);
    const chunks: GenerationChunk[] = [];
    const reading = (async () => {
      for await (const chunk of session.follow(writer.id)) chunks.push(chunk);
    })();
    // Appends made without waiting go in order.
    const sent = ["one ", "two ", "three ", "four ", "five"].map((chunk) => writer.append(chunk));
    await Promise.all(sent);
    const result = await writer.complete();
    await reading;
    expect(chunks.map((chunk) => chunk.text).join("")).toBe("one two three four five");
    expect(result.entries[0]?.message).toMatchObject({
      content: [{ type: "text", text: "one two three four five" }],
    });
    expect(await session.getLeafId()).toBe(writer.id);

    // From the offset a chunk gave: the rest, nothing before it.
    const first = chunks[0] as GenerationChunk;
    const resumed: string[] = [];
    for await (const chunk of session.follow(writer.id, { offset: first.offset })) resumed.push(chunk.text);
    expect(first.text + resumed.join("")).toBe("one two three four five");
    const whole: string[] = [];
    for await (const chunk of session.follow(result.generation)) whole.push(chunk.text);
    expect(whole.join("")).toBe("one two three four five");
  });

  it("follows an answer that starts with U+FEFF, giving it whole", async () => {
    const client = createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker });
    const session = await client.create({ id: sid() });
    await session.appendMessage(user("Say it"));
    const writer = await session.generate({});
    await writer.append("\ufeffHi");
    await writer.append(" there");
    const result = await writer.complete();
    const chunks: string[] = [];
    for await (const chunk of session.follow(result.generation)) chunks.push(chunk.text);
    expect(chunks.join("")).toBe("\ufeffHi there");
  });

  it("retries an append whose answer was lost, and the service writes it once", async () => {
    let drops = 0;
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      retryDelayMs: 1,
      fetch: async (request) => {
        const response = await worker(request);
        // Every third append is written, but its answer never arrives.
        if (request.method === "POST" && request.url.endsWith("/stream") && ++drops % 3 === 0) {
          await response.body?.cancel();
          throw new TypeError("network connection lost");
        }
        return response;
      },
    });
    const session = await client.create({ id: sid() });
    await session.appendMessage(user("go"));
    const writer = await session.generate();
    const words = Array.from({ length: 12 }, (_, i) => `w${i} `);
    for (const word of words) await writer.append(word);
    expect(drops).toBeGreaterThan(12);
    const { entries } = await writer.complete();
    expect(entries[0]?.message).toMatchObject({ content: [{ type: "text", text: words.join("") }] });
  });

  it("takes an empty chunk as nothing to write: no request, no sequence number, the writer goes on", async () => {
    const appends: string[] = [];
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      fetch: (request) => {
        if (request.method === "POST" && request.url.endsWith("/stream")) appends.push(request.url);
        return worker(request);
      },
    });
    const session = await client.create({ id: sid() });
    await session.appendMessage(user("go"));
    // A streaming loop's first chunk often carries a role and no text.
    const text = await session.generate();
    for (const delta of ["", "Hello", "", " there", ""]) await text.append(delta);
    const answered = await text.complete();
    expect(answered.entries[0]?.message).toMatchObject({ content: [{ type: "text", text: "Hello there" }] });
    expect(appends).toHaveLength(2);

    await session.appendMessage(user("again"));
    const events = await session.generate({ format: "pi-ai" });
    await events.append([]);
    await events.append([
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "Hi" },
    ]);
    await events.append([]);
    const evented = await events.complete();
    expect(evented.entries[0]?.message).toMatchObject({ content: [{ type: "text", text: "Hi" }] });
    expect(appends).toHaveLength(3);
  });

  it("lists every generation across pages, or those in one state", async () => {
    // The service pages as it would past 200 generations: each listing asks for two at a time.
    const listings: string[] = [];
    const paging = (request: Request) => {
      const url = new URL(request.url);
      if (url.pathname.endsWith("/generations") && request.method === "GET") {
        expect(url.searchParams.get("limit")).toBe("200");
        url.searchParams.set("limit", "2");
        listings.push(url.search);
        return worker(new Request(url, request));
      }
      return worker(request);
    };
    const client = createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: paging });
    const session = await client.create({ id: sid() });
    await session.appendMessage(user("Answer five times"));
    const writers = [];
    for (let n = 0; n < 5; n++) writers.push(await session.generate());
    await writers[2]?.complete();
    const all = await session.generations();
    expect(all.map((generation) => generation.id)).toEqual(writers.map((writer) => writer.id));
    expect(listings).toHaveLength(3);
    const open = await session.generations({ state: "open" });
    expect(open.map((generation) => generation.id)).toEqual(
      [writers[0], writers[1], writers[3], writers[4]].map((writer) => writer?.id),
    );
    expect(listings.slice(3).every((search) => search.includes("state=open"))).toBe(true);
    const finished = await session.generations({ state: "finished" });
    expect(finished.map((generation) => generation.state)).toEqual(["finished"]);
  });

  it("aborts the writer's signal and refuses its appends once someone else stops the generation", async () => {
    const client = createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker });
    const session = await client.create({ id: sid() });
    await session.appendMessage(user("write a long story"));
    const writer = await session.generate({ format: "pi-ai" });
    await writer.append([
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "Once upon" },
    ]);
    const other = await client.open(session.id);
    const [open] = await other.generations();
    expect(open?.state).toBe("open");
    const stopped = await other.stopGeneration(writer.id);
    expect(stopped.entries[0]?.message).toMatchObject({
      stopReason: "aborted",
      content: [{ text: "Once upon" }],
    });
    const tail = stopped.generation.offset;
    const refused = await writer
      .append({ type: "text_delta", contentIndex: 0, delta: " a time" })
      .catch((e) => e);
    expect(refused).toBeInstanceOf(SessionError);
    expect(refused.code).toBe("stream_closed");
    expect(writer.signal.aborted).toBe(true);
    // Whatever was queued behind it fails the same way; nothing more is written.
    await expect(writer.append({ type: "text_delta", contentIndex: 0, delta: "!" })).rejects.toThrow();
    expect((await other.generation(writer.id)).offset).toBe(tail);
  });
});
