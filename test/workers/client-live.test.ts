import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient } from "../../src/client";
import type { SessionEvent } from "../../src/core/events";
import { assistant, user } from "../conformance/fixtures";
import { KEY_A, sid } from "./helpers";

const worker = (request: Request) => exports.default.fetch(request);

describe("client: live sessions", () => {
  it("moves only the new messages when an agent loop builds its context again", async () => {
    const answers: Array<{ url: string; body: string }> = [];
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      fetch: async (request) => {
        const response = await worker(request);
        if (new URL(request.url).pathname.endsWith("/context")) {
          const body = await response.clone().text();
          answers.push({ url: request.url, body });
        }
        return response;
      },
    });
    const session = await client.create({ id: sid(), systemPrompt: "be brief" });
    for (let turn = 0; turn < 30; turn++)
      await session.appendMessage(user(`question ${turn} ${"x".repeat(200)}`));
    const first = await session.buildContext();
    expect(first.messages).toHaveLength(30);
    await session.appendMessage(assistant("the answer"));
    await session.appendMessage(user("thanks"));
    const second = await session.buildContext();
    const fresh = await createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker })
      .open(session.id)
      .then((s) => s.buildContext());
    expect(second).toEqual(fresh);
    const [full, delta] = answers;
    expect(full?.url).not.toContain("since=");
    expect(delta?.url).toContain("since=");
    expect(JSON.parse(delta?.body ?? "{}").append).toHaveLength(2);
    // The turn moved the two new messages, not the thirty before them.
    expect((delta?.body.length ?? 0) * 5).toBeLessThan(full?.body.length ?? 0);
    // What a caller gets is its own: changing it does not change what the next delta builds on.
    second.messages.length = 0;
    const third = await session.buildContext();
    expect(third.messages).toHaveLength(32);
    (third.messages[0] as { content: string }).content = "changed by the caller";
    await session.appendMessage(user("one more"));
    const fourth = await session.buildContext();
    expect((fourth.messages[0] as { content: string }).content).toMatch(/^question 0/);
    expect(fourth.messages).toHaveLength(33);
  });

  it("watches a session, resuming after a dropped connection without losing or repeating an entry", async () => {
    let connections = 0;
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      fetch: async (request) => {
        const response = await worker(request);
        if (!new URL(request.url).pathname.endsWith("/events") || ++connections > 1 || !response.body)
          return response;
        // The first connection breaks after its first chunk.
        const reader = response.body.getReader();
        let sent = false;
        return new Response(
          new ReadableStream({
            async pull(controller) {
              if (sent) {
                await reader.cancel();
                return controller.error(new Error("connection reset"));
              }
              const { value } = await reader.read();
              controller.enqueue(value);
              sent = true;
            },
          }),
          { headers: response.headers },
        );
      },
    });
    const session = await client.create({ id: sid() });
    for (let i = 0; i < 5; i++) await session.appendMessage(user(`before ${i}`));
    const controller = new AbortController();
    const seen: number[] = [];
    const events: SessionEvent[] = [];
    const watching = (async () => {
      for await (const event of session.watch({ after: 0, signal: controller.signal, retryDelayMs: 5 })) {
        events.push(event);
        if (event.event === "entry") seen.push(event.id);
        if (seen.length === 8) controller.abort();
      }
    })();
    for (let i = 0; i < 3; i++) await session.appendMessage(user(`after ${i}`));
    await watching;
    expect(connections).toBeGreaterThan(1);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(events[0]).toMatchObject({ event: "session", data: { id: session.id } });
  });

  it("resumes a watch started from now at the seq the stream started after, when it drops before any event", async () => {
    let connections = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      fetch: async (request) => {
        if (!new URL(request.url).pathname.endsWith("/events")) return worker(request);
        connections++;
        // The reconnection waits until entries were written while the watch was down.
        if (connections === 2) await gate;
        const response = await worker(request);
        if (connections > 1 || !response.body) return response;
        // The first connection breaks after its headers, before any event.
        await response.body.cancel();
        return new Response(new ReadableStream({ pull: (c) => c.error(new Error("connection reset")) }), {
          headers: response.headers,
        });
      },
    });
    const session = await client.create({ id: sid() });
    await session.appendMessage(user("before the watch"));
    const controller = new AbortController();
    const statuses: string[] = [];
    const seen: string[] = [];
    let reconnecting!: () => void;
    const dropped = new Promise<void>((resolve) => {
      reconnecting = resolve;
    });
    let relive!: () => void;
    const backLive = new Promise<void>((resolve) => {
      relive = resolve;
    });
    const watching = (async () => {
      for await (const event of session.watch({
        signal: controller.signal,
        retryDelayMs: 1,
        onStatus: (status) => {
          statuses.push(status);
          if (status === "reconnecting") reconnecting();
          if (status === "live" && statuses.length > 1) relive();
        },
      })) {
        if (event.event !== "entry" || !("message" in event.data)) continue;
        const text = (event.data.message as { content: string }).content;
        seen.push(text);
        if (text === "after reconnect") controller.abort();
      }
    })();
    await dropped;
    await session.appendMessage(user("during the gap 1"));
    await session.appendMessage(user("during the gap 2"));
    release();
    await backLive;
    await session.appendMessage(user("after reconnect"));
    await watching;
    expect(statuses).toEqual(["live", "reconnecting", "live"]);
    expect(seen).toEqual(["during the gap 1", "during the gap 2", "after reconnect"]);
  });

  it("ends a watch when the session is deleted", async () => {
    const client = createClient({ baseUrl: "http://sessions.test", token: KEY_A, fetch: worker });
    const session = await client.create({ id: sid() });
    const events: string[] = [];
    const watching = (async () => {
      for await (const event of session.watch()) {
        events.push(event.event);
        if (event.event === "leaf") await session.delete();
      }
    })();
    await watching;
    expect(events).toEqual(["session", "leaf", "deleted"]);
  });

  it("ends a watch quietly with deleted when the session is deleted while it reconnects", async () => {
    let connections = 0;
    let deleting: Promise<void> | undefined;
    const client = createClient({
      baseUrl: "http://sessions.test",
      token: KEY_A,
      fetch: async (request) => {
        if (!new URL(request.url).pathname.endsWith("/events")) return worker(request);
        // The reconnection asks after the session is gone.
        if (++connections > 1) await deleting;
        const response = await worker(request);
        if (connections > 1 || !response.body) return response;
        // The first connection breaks after its first chunk.
        const reader = response.body.getReader();
        let sent = false;
        return new Response(
          new ReadableStream({
            async pull(controller) {
              if (sent) {
                await reader.cancel();
                return controller.error(new Error("connection reset"));
              }
              const { value } = await reader.read();
              controller.enqueue(value);
              sent = true;
            },
          }),
          { headers: response.headers },
        );
      },
    });
    const session = await client.create({ id: sid() });
    await session.appendMessage(user("before"));
    const events: SessionEvent[] = [];
    for await (const event of session.watch({
      retryDelayMs: 1,
      onStatus: (status) => {
        if (status === "reconnecting") deleting ??= session.delete();
      },
    }))
      events.push(event);
    expect(connections).toBe(2);
    expect(events.at(-1)).toEqual({ event: "deleted", data: { id: session.id } });
  });
});
