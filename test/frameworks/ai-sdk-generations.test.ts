import {
  AbstractChat,
  type ChatInit,
  type ChatState,
  type ChatStatus,
  convertToModelMessages,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  simulateReadableStream,
  stepCountIs,
  streamText,
  tool,
  type UIMessage,
  type UIMessageChunk,
} from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { createClient, type RemoteRepo } from "../../src/client";
import { fromAISDKUI } from "../../src/core/providers/from-ai-sdk-ui";
import { CfSessionsChatStore, CfSessionsChatTransport, pipeToGeneration } from "../../src/frameworks/ai-sdk";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * The AI SDK with generations, tested with the `ai` package itself: `streamText(…)
 * .toUIMessageStream()` piped into a session's generation by the server, and a `Chat` reading the
 * answer through `CfSessionsChatTransport`: whole; resumed after a disconnect from where the UI
 * stood, without a part missed or repeated; and from its start by a Chat made after a reload.
 */

const WORDS = Array.from({ length: 40 }, (_, i) => `word${i} `);
const ANSWER = WORDS.join("");

/** A model that streams ANSWER word by word, `delayMs` apart. */
function model(delayMs: number) {
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunkDelayInMs: delayMs,
        chunks: [
          { type: "stream-start", warnings: [] },
          { type: "text-start", id: "t1" },
          ...WORDS.map((delta) => ({ type: "text-delta" as const, id: "t1", delta })),
          { type: "text-end", id: "t1" },
          {
            type: "finish",
            finishReason: { unified: "stop", raw: "stop" },
            usage: {
              inputTokens: { total: 5, noCache: 5, cacheRead: 0, cacheWrite: 0 },
              outputTokens: { total: 40, text: 40, reasoning: 0 },
            },
          },
        ],
      }),
    }),
  });
}

/** A `ChatState` kept in plain arrays: what a UI framework's state would hold. */
class ArrayState<M extends UIMessage> implements ChatState<M> {
  status: ChatStatus = "ready";
  error: Error | undefined;
  messages: M[];

  constructor(messages: M[] = []) {
    this.messages = messages;
  }

  pushMessage = (message: M) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: M) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

class Chat extends AbstractChat<UIMessage> {
  constructor(
    options: Omit<ChatInit<UIMessage>, "transport"> & { id: string; transport: CfSessionsChatTransport },
  ) {
    const { messages, ...rest } = options;
    super({ ...rest, state: new ArrayState(messages) });
  }
}

let server: DevServer;
let client: RemoteRepo;
let store: CfSessionsChatStore;
beforeAll(async () => {
  server = await startDevServer();
  client = createClient({ baseUrl: server.url });
  store = new CfSessionsChatStore({ repo: client });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

/** The app's server: saves the chat, opens a generation, and pipes the model's answer into it. */
function chatServer(delayMs: number) {
  const piped: Promise<unknown>[] = [];
  const start = async ({ chatId, messages }: { chatId: string; messages: UIMessage[] }) => {
    await store.saveChat({ chatId, messages });
    const session = await client.open(await store.sessionIdFor(chatId));
    const writer = await session.generate({ format: "ai-sdk-ui", model: "mock/streaming" });
    const result = streamText({
      model: model(delayMs),
      messages: await convertToModelMessages(messages),
      abortSignal: writer.signal,
    });
    piped.push(pipeToGeneration(result.toUIMessageStream(), writer));
    return { generationId: writer.id };
  };
  return { start, piped };
}

function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");
}

const user = (id: string, text: string): UIMessage => ({ id, role: "user", parts: [{ type: "text", text }] });

describe("generations with the AI SDK", () => {
  it("pipes streamText into a generation, whose answer the chat store loads under the generation's id", async () => {
    const app = chatServer(0);
    const chatId = await store.createChat();
    const { generationId } = await app.start({ chatId, messages: [user("u1", "Say forty words")] });
    const [outcome] = (await Promise.all(app.piped)) as Array<{
      entries: Array<{ id: string; message: unknown }>;
    }>;
    expect(outcome?.entries[0]?.id).toBe(generationId);
    expect(outcome?.entries[0]?.message).toMatchObject({
      role: "assistant",
      stopReason: "stop",
      content: [{ type: "text", text: ANSWER }],
    });
    const chat = await store.loadChat(chatId);
    expect(chat.map((message) => message.id)).toEqual(["u1", generationId]);
    expect(textOf(chat[1])).toBe(ANSWER);
    // The next turn goes on under the answer: no branch beside it.
    await store.saveChat({ chatId, messages: [...chat, user("u2", "Thanks")] });
    const session = await client.open(await store.sessionIdFor(chatId));
    const tree = await session.getTree();
    expect(tree).toHaveLength(1);
    expect((await store.loadChat(chatId)).map((message) => message.id)).toEqual(["u1", generationId, "u2"]);
  });

  it("gives a Chat the whole answer through the transport", async () => {
    const app = chatServer(2);
    const chatId = await store.createChat();
    const sessionId = await store.sessionIdFor(chatId);
    const transport = new CfSessionsChatTransport({
      session: () => client.open(sessionId),
      start: (request) => app.start(request),
    });
    const chat = new Chat({ id: chatId, transport });
    await chat.sendMessage({ text: "Say forty words" });
    await Promise.all(app.piped);
    expect(chat.status).toBe("ready");
    expect(chat.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(textOf(chat.messages[1])).toBe(ANSWER);
  });

  it("keeps the signatures an answer's stream carried, and the Chat's copy of the answer is the stored one", async () => {
    const chatId = await store.createChat();
    const sessionId = await store.sessionIdFor(chatId);
    const piped: Promise<unknown>[] = [];
    // A model's answer with reasoning Anthropic signed and text OpenAI named by its item.
    async function* signed(): AsyncGenerator<UIMessageChunk> {
      yield { type: "start" };
      yield { type: "start-step" };
      yield { type: "reasoning-start", id: "r1" };
      yield { type: "reasoning-delta", id: "r1", delta: "Count them." };
      yield { type: "reasoning-end", id: "r1", providerMetadata: { anthropic: { signature: "sig-1" } } };
      yield { type: "text-start", id: "t1" };
      yield { type: "text-delta", id: "t1", delta: "Forty." };
      yield { type: "text-end", id: "t1", providerMetadata: { openai: { itemId: "msg_1" } } };
      yield { type: "finish-step" };
      yield { type: "finish", finishReason: "stop" };
    }
    const transport = new CfSessionsChatTransport({
      session: () => client.open(sessionId),
      start: async ({ chatId, messages }) => {
        await store.saveChat({ chatId, messages });
        const session = await client.open(sessionId);
        const writer = await session.generate({
          format: "ai-sdk-ui",
          model: "anthropic/claude-sonnet-4-5",
          api: "anthropic-messages",
        });
        piped.push(pipeToGeneration(signed(), writer));
        return { generationId: writer.id };
      },
    });
    const chat = new Chat({ id: chatId, transport });
    await chat.sendMessage({ text: "How many words?" });
    await Promise.all(piped);
    expect(chat.messages[1]?.parts).toContainEqual(
      expect.objectContaining({ type: "reasoning", providerMetadata: { anthropic: { signature: "sig-1" } } }),
    );

    // The next turn: the Chat's messages as it holds them, and one more.
    await store.saveChat({ chatId, messages: [...chat.messages, user("u2", "Thanks")] });
    const session = await client.open(sessionId);
    expect(await session.getTree()).toHaveLength(1);
    const branch = await session.getBranch();
    expect(branch).toHaveLength(3);
    expect((await session.getInfo()).entryCount).toBe(3);
    expect(branch[1]?.id).toBe(chat.messages[1]?.id);
    const request = await session.contextIn("anthropic");
    expect(request.messages[1]?.content).toContainEqual({
      type: "thinking",
      thinking: "Count them.",
      signature: "sig-1",
    });
  });

  it("resumes after a disconnect from where the UI stood: no part missed or repeated", async () => {
    const app = chatServer(15);
    const chatId = await store.createChat();
    const sessionId = await store.sessionIdFor(chatId);
    let offline = false;
    let reads = 0;
    const flaky = createClient({
      baseUrl: server.url,
      retryDelayMs: 1,
      fetch: async (request) => {
        if (offline && request.url.includes("/stream")) throw new TypeError("fetch failed: offline");
        if (request.url.includes("/stream") && ++reads === 4) offline = true;
        return fetch(request);
      },
    });
    const transport = new CfSessionsChatTransport({
      session: () => flaky.open(sessionId),
      start: (request) => app.start(request),
      maxFailures: 2,
    });
    const chat = new Chat({ id: chatId, transport });
    await chat.sendMessage({ text: "Say forty words" });
    expect(chat.status).toBe("error");
    const partial = textOf(chat.messages.at(-1));
    expect(ANSWER.startsWith(partial)).toBe(true);
    expect(partial.length).toBeLessThan(ANSWER.length);

    offline = false;
    await chat.resumeStream();
    await Promise.all(app.piped);
    expect(chat.status).toBe("ready");
    expect(chat.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    const answer = chat.messages[1] as UIMessage;
    expect(textOf(answer)).toBe(ANSWER);
    expect(answer.parts.filter((part) => part.type === "text")).toHaveLength(1);
  });

  it("finds the answer in flight after a reload, and reads it from its start", async () => {
    const app = chatServer(20);
    const chatId = await store.createChat();
    const sessionId = await store.sessionIdFor(chatId);
    const { generationId } = await app.start({ chatId, messages: [user("u1", "Say forty words")] });
    const session = await client.open(sessionId);
    // The first words are written before the page comes back.
    for await (const chunk of session.follow(generationId)) if (chunk.text.includes("word3 ")) break;

    // The reloaded page: the chat as stored (the answer still in flight), and a new transport.
    const transport = new CfSessionsChatTransport({
      session: () => client.open(sessionId),
      start: (request) => app.start(request),
    });
    const chat = new Chat({ id: chatId, transport, messages: await store.loadChat(chatId) });
    expect(chat.messages.map((message) => message.id)).toEqual(["u1"]);
    await chat.resumeStream();
    await Promise.all(app.piped);
    expect(chat.messages.map((message) => message.id)).toEqual(["u1", generationId]);
    expect(textOf(chat.messages[1])).toBe(ANSWER);
    // Nothing is in flight any more.
    expect(await transport.reconnectToStream({ chatId })).toBeNull();
  });

  it("ends the Chat's answer as aborted when the generation is stopped elsewhere", async () => {
    // Words far enough apart (2.4 s in all) that the stop lands mid-answer on a slow machine.
    const app = chatServer(60);
    const chatId = await store.createChat();
    const sessionId = await store.sessionIdFor(chatId);
    const transport = new CfSessionsChatTransport({
      session: () => client.open(sessionId),
      start: async (request) => {
        const started = await app.start(request);
        setTimeout(
          () => void client.open(sessionId).then((s) => s.stopGeneration(started.generationId)),
          200,
        );
        return started;
      },
    });
    const finishes: Array<{ isAbort: boolean; isDisconnect: boolean }> = [];
    const chat = new Chat({ id: chatId, transport, onFinish: (finish) => finishes.push(finish) });
    await chat.sendMessage({ text: "Say forty words" });
    const [outcome] = (await Promise.all(app.piped)) as Array<{ generation: { state: string } }>;
    expect(outcome?.generation.state).toBe("stopped");
    const partial = textOf(chat.messages.at(-1));
    expect(ANSWER.startsWith(partial) && partial.length < ANSWER.length).toBe(true);
    const stored = await store.loadChat(chatId);
    expect(textOf(stored.at(-1))).toBe(partial);
    expect(chat.status).toBe("ready");
    expect(finishes).toHaveLength(1);
  });

  it("keeps a generator tool's final output as its one result, not the outputs it yielded on the way", async () => {
    const usage = {
      inputTokens: { total: 5, noCache: 5, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 5, text: 5, reasoning: 0 },
    };
    // The first step calls the tool, the second answers.
    const toolStep = simulateReadableStream({
      chunks: [
        { type: "stream-start" as const, warnings: [] },
        { type: "tool-call" as const, toolCallId: "c1", toolName: "count", input: "{}" },
        { type: "finish" as const, finishReason: { unified: "tool-calls" as const, raw: "tool_use" }, usage },
      ],
    });
    const textStep = simulateReadableStream({
      chunks: [
        { type: "stream-start" as const, warnings: [] },
        { type: "text-start" as const, id: "t1" },
        { type: "text-delta" as const, id: "t1", delta: "Counted." },
        { type: "text-end" as const, id: "t1" },
        { type: "finish" as const, finishReason: { unified: "stop" as const, raw: "stop" }, usage },
      ],
    });
    let calls = 0;
    const counter = new MockLanguageModelV3({
      doStream: async () => (calls++ === 0 ? { stream: toolStep } : { stream: textStep }),
    });
    const session = await client.create();
    const writer = await session.generate({ format: "ai-sdk-ui", model: "mock/counter" });
    const result = streamText({
      model: counter,
      prompt: "Count to three",
      tools: {
        count: tool({
          inputSchema: z.object({}),
          async *execute() {
            yield "one";
            yield "one, two";
            yield "one, two, three";
          },
        }),
      },
      stopWhen: stepCountIs(2),
      abortSignal: writer.signal,
    });
    const outcome = (await pipeToGeneration(result.toUIMessageStream(), writer)) as {
      entries: Array<{ message: { role: string; content: unknown } }>;
    };
    const messages = outcome.entries.map((entry) => entry.message);
    expect(messages.map((message) => message.role)).toEqual(["assistant", "toolResult", "assistant"]);
    expect(messages[1]).toMatchObject({
      toolCallId: "c1",
      toolName: "count",
      content: [{ type: "text", text: "one, two, three" }],
    });
    expect(messages[2]?.content).toEqual([{ type: "text", text: "Counted." }]);
  });

  it("appends parts that piled up in as many appends as 1 MiB each needs", async () => {
    const session = await client.create();
    const writer = await session.generate({ format: "ai-sdk-ui" });
    const delta = "w".repeat(600_000);
    // All at once: the first goes while the rest pile up, 1.8 MB of them.
    async function* parts(): AsyncGenerator<UIMessageChunk> {
      yield { type: "start" };
      yield { type: "text-start", id: "t" };
      for (let i = 0; i < 3; i++) yield { type: "text-delta", id: "t", delta };
      yield { type: "text-end", id: "t" };
      yield { type: "finish", finishReason: "stop" };
    }
    const outcome = (await pipeToGeneration(parts(), writer)) as {
      generation: { state: string };
      entries: Array<{ message: { content: Array<{ text: string }> } }>;
    };
    expect(outcome.generation.state).toBe("finished");
    expect(outcome.entries[0]?.message.content[0]?.text).toBe(delta.repeat(3));
  });

  it("stops the generation, keeping what was written, when a part is refused or more than one append takes", async () => {
    const session = await client.create();
    let deep: unknown = "deep";
    for (let i = 0; i < 200; i++) deep = { a: deep };
    const refused: UIMessageChunk = {
      type: "tool-input-available",
      toolCallId: "c",
      toolName: "t",
      input: deep,
    };
    const oversize: UIMessageChunk = { type: "text-delta", id: "t", delta: "x".repeat(1024 * 1024) };
    for (const [last, code] of [
      [refused, "invalid_request"],
      [oversize, "payload_too_large"],
    ] as const) {
      const writer = await session.generate({ format: "ai-sdk-ui" });
      async function* parts(): AsyncGenerator<UIMessageChunk> {
        yield { type: "text-start", id: "t" };
        yield { type: "text-delta", id: "t", delta: "kept" };
        // Written before the last part comes.
        await new Promise((resolve) => setTimeout(resolve, 200));
        yield last;
        yield { type: "finish", finishReason: "stop" };
      }
      await expect(pipeToGeneration(parts(), writer)).rejects.toMatchObject({ code });
      expect(writer.signal.aborted).toBe(true);
      const generation = await session.generation(writer.id);
      expect(generation).toMatchObject({ state: "stopped", stoppedBy: "request" });
      const [entryId] = generation.entryIds ?? [];
      const entry = (await session.getEntry(entryId as string)) as { message?: { content?: unknown } };
      expect(entry.message?.content).toEqual([{ type: "text", text: "kept" }]);
    }
  });
});

const USAGE = {
  inputTokens: { total: 5, noCache: 5, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** A model whose first step calls `name` (c1) and whose second answers `text`. */
function callThenAnswer(name: string, text: string) {
  const toolStep = () =>
    simulateReadableStream({
      chunks: [
        { type: "stream-start" as const, warnings: [] },
        { type: "tool-call" as const, toolCallId: "c1", toolName: name, input: "{}" },
        {
          type: "finish" as const,
          finishReason: { unified: "tool-calls" as const, raw: "tool_use" },
          usage: USAGE,
        },
      ],
    });
  const textStep = () =>
    simulateReadableStream({
      chunks: [
        { type: "stream-start" as const, warnings: [] },
        { type: "text-start" as const, id: "t1" },
        { type: "text-delta" as const, id: "t1", delta: text },
        { type: "text-end" as const, id: "t1" },
        { type: "finish" as const, finishReason: { unified: "stop" as const, raw: "stop" }, usage: USAGE },
      ],
    });
  let calls = 0;
  return new MockLanguageModelV3({
    doStream: async () => (calls++ === 0 ? { stream: toolStep() } : { stream: textStep() }),
  });
}

describe("an answer the chat goes on with after a tool's output or an approval", () => {
  /**
   * The app's server as the AI SDK's guide writes it: the chat saved, then `streamText` over its
   * messages with `toUIMessageStream({ originalMessages })`, piped into a generation. A Chat that
   * answers tools in the browser, or approvals, sends again by itself (`sendAutomaticallyWhen`).
   */
  async function converse(options: {
    tools: Parameters<typeof streamText>[0]["tools"];
    model: MockLanguageModelV3;
    chat: (transport: CfSessionsChatTransport, chatId: string) => Chat;
    /** What the browser does once the first answer is in: approve its call. */
    afterFirstAnswer?: (chat: Chat) => Promise<void>;
    /** Whether the server gives `toUIMessageStream` the chat's messages (default true). */
    originalMessages?: boolean;
  }) {
    const chatId = await store.createChat();
    const sessionId = await store.sessionIdFor(chatId);
    const piped: Promise<unknown>[] = [];
    const transport = new CfSessionsChatTransport({
      session: () => client.open(sessionId),
      start: async ({ chatId, messages }) => {
        await store.saveChat({ chatId, messages });
        const session = await client.open(sessionId);
        const writer = await session.generate({ format: "ai-sdk-ui", model: "mock/tools" });
        const result = streamText({
          model: options.model,
          messages: await convertToModelMessages(messages),
          tools: options.tools,
          abortSignal: writer.signal,
        });
        const parts = result.toUIMessageStream(
          options.originalMessages === false ? {} : { originalMessages: messages },
        );
        piped.push(pipeToGeneration(parts, writer));
        return { generationId: writer.id };
      },
    });
    const chat = options.chat(transport, chatId);
    await chat.sendMessage({ text: "Where am I?" });
    await options.afterFirstAnswer?.(chat);
    await vi.waitFor(() => expect(piped).toHaveLength(2), { timeout: 10_000 });
    await Promise.all(piped);
    await vi.waitFor(() => expect(chat.status).toBe("ready"));
    return { chat, chatId, session: await client.open(sessionId) };
  }

  /** The chat saved once more with a next question, as the UI sends it: what the session then holds. */
  async function nextTurn(chat: Chat, chatId: string, session: Awaited<ReturnType<RemoteRepo["open"]>>) {
    const gen1 = chat.messages[1]?.id as string;
    expect(chat.messages.map((message) => message.id)).toEqual([chat.messages[0]?.id, gen1]);
    expect((await store.loadChat(chatId)).map((message) => message.id)).toEqual(
      chat.messages.map((message) => message.id),
    );
    await store.saveChat({ chatId, messages: [...chat.messages, user("u2", "Thanks")] });
    const request = await session.contextIn("anthropic");
    const uses = request.messages.flatMap((message) =>
      Array.isArray(message.content) ? message.content.filter((block) => block.type === "tool_use") : [],
    );
    expect(uses).toHaveLength(1);
    expect(request.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
    ]);
    expect(request.messages[2]?.content).toContainEqual(
      expect.objectContaining({ type: "tool_result", tool_use_id: uses[0]?.id }),
    );
    const stored = (await session.getBranch()).map(
      (entry) => (entry as { message?: { role: string } }).message?.role,
    );
    expect(stored).toEqual(["user", "assistant", "toolResult", "assistant", "user"]);
    expect((await session.getInfo()).entryCount).toBe(5);
  }

  it("keeps the answer one message when a tool the browser ran sends the chat again", async () => {
    const { chat, chatId, session } = await converse({
      model: callThenAnswer("where", "You are in Paris."),
      tools: { where: tool({ inputSchema: z.object({}) }) },
      chat: (transport, id) => {
        const made: Chat = new Chat({
          id,
          transport,
          sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
          onToolCall: ({ toolCall }) => {
            void made.addToolOutput({ tool: "where", toolCallId: toolCall.toolCallId, output: "Paris" });
          },
        });
        return made;
      },
    });
    const answer = chat.messages[1] as UIMessage;
    expect(answer.parts).toContainEqual(
      expect.objectContaining({
        type: "tool-where",
        toolCallId: "c1",
        state: "output-available",
        output: "Paris",
      }),
    );
    expect(textOf(answer)).toBe("You are in Paris.");
    await nextTurn(chat, chatId, session);
  });

  it("keeps the answer one message through the transport when the server's stream does not name it", async () => {
    const { chat, chatId, session } = await converse({
      model: callThenAnswer("where", "You are in Paris."),
      tools: { where: tool({ inputSchema: z.object({}) }) },
      originalMessages: false,
      chat: (transport, id) => {
        const made: Chat = new Chat({
          id,
          transport,
          sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
          onToolCall: ({ toolCall }) => {
            void made.addToolOutput({ tool: "where", toolCallId: toolCall.toolCallId, output: "Paris" });
          },
        });
        return made;
      },
    });
    expect(textOf(chat.messages[1])).toBe("You are in Paris.");
    await nextTurn(chat, chatId, session);
  });

  it("keeps the answer one message when an approval sends the chat again", async () => {
    const { chat, chatId, session } = await converse({
      model: callThenAnswer("where", "You are in Paris."),
      tools: {
        where: tool({ inputSchema: z.object({}), needsApproval: true, execute: async () => "Paris" }),
      },
      chat: (transport, id) =>
        new Chat({
          id,
          transport,
          sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
        }),
      afterFirstAnswer: async (chat) => {
        const asked = chat.messages[1]?.parts.find((part) => part.type === "tool-where");
        expect(asked).toMatchObject({ state: "approval-requested" });
        const { approval } = asked as { approval: { id: string } };
        await chat.addToolApprovalResponse({ id: approval.id, approved: true });
      },
    });
    const answer = chat.messages[1] as UIMessage;
    expect(answer.parts).toContainEqual(
      expect.objectContaining({
        type: "tool-where",
        toolCallId: "c1",
        state: "output-available",
        output: "Paris",
      }),
    );
    expect(textOf(answer)).toBe("You are in Paris.");
    await nextTurn(chat, chatId, session);
  });
});

/** A model that searched the web itself (the provider ran the tool) and answers from what it found. */
function searchingModel() {
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: "stream-start" as const, warnings: [] },
          {
            type: "tool-call" as const,
            toolCallId: "ws1",
            toolName: "web_search",
            input: JSON.stringify({ query: "capital of France" }),
            providerExecuted: true,
          },
          {
            type: "tool-result" as const,
            toolCallId: "ws1",
            toolName: "web_search",
            result: [{ url: "https://example.com/paris", title: "Paris" }],
          },
          { type: "text-start" as const, id: "t1" },
          { type: "text-delta" as const, id: "t1", delta: "Found it." },
          { type: "text-end" as const, id: "t1" },
          { type: "finish" as const, finishReason: { unified: "stop" as const, raw: "stop" }, usage: USAGE },
        ],
      }),
    }),
  });
}

/** The messages of a stored answer as a model reads them: roles and content, nothing of when or who. */
function asRead(messages: readonly unknown[]) {
  return messages.map((message) => {
    const { role, content, toolCallId, isError } = message as Record<string, unknown>;
    return { role, content, toolCallId, isError };
  });
}

describe("an AI SDK answer read alike from its generation and from its UIMessage", () => {
  it("leaves out a tool the provider ran, as the UI's message reads, so the next save goes on under it", async () => {
    const chatId = await store.createChat();
    const sessionId = await store.sessionIdFor(chatId);
    const piped: Promise<unknown>[] = [];
    const transport = new CfSessionsChatTransport({
      session: () => client.open(sessionId),
      start: async ({ chatId, messages }) => {
        await store.saveChat({ chatId, messages });
        const writer = await (await client.open(sessionId)).generate({
          format: "ai-sdk-ui",
          model: "mock/search",
        });
        const result = streamText({
          model: searchingModel(),
          messages: await convertToModelMessages(messages),
          tools: {
            web_search: tool({
              type: "provider",
              id: "anthropic.web_search",
              args: {},
              inputSchema: z.object({ query: z.string() }),
            }),
          },
          abortSignal: writer.signal,
        });
        piped.push(pipeToGeneration(result.toUIMessageStream({ originalMessages: messages }), writer));
        return { generationId: writer.id };
      },
    });
    const chat = new Chat({ id: chatId, transport });
    await chat.sendMessage({ text: "What is the capital of France?" });
    const [outcome] = (await Promise.all(piped)) as Array<{ entries: Array<{ message: unknown }> }>;
    const answer = chat.messages[1] as UIMessage;
    expect(answer.parts).toContainEqual(
      expect.objectContaining({ type: "tool-web_search", providerExecuted: true }),
    );

    // The generation stored what the UI's message reads as.
    const stored = (outcome?.entries ?? []).map((entry) => entry.message);
    expect(asRead(stored)).toEqual(asRead(fromAISDKUI(answer)));
    expect(asRead(stored)).toEqual([
      {
        role: "assistant",
        content: [{ type: "text", text: "Found it." }],
        toolCallId: undefined,
        isError: undefined,
      },
    ]);
    // And so does an answer completed with the UIMessage whole.
    const session = await client.open(sessionId);
    const whole = await (await client.create()).generate({ format: "ai-sdk-ui" });
    const completed = (await whole.complete(answer)) as { entries: Array<{ message: unknown }> };
    expect(asRead(completed.entries.map((entry) => entry.message))).toEqual(asRead(stored));

    await store.saveChat({ chatId, messages: [...chat.messages, user("u2", "Thanks")] });
    expect((await session.getInfo()).entryCount).toBe(3);
    const request = await session.contextIn("anthropic");
    expect(request.messages.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(request.messages[1]?.content).toEqual([{ type: "text", text: "Found it." }]);
  });

  it("gives a denied call the same result from the generation, from a UIMessage given whole and from the UI's message", async () => {
    const chatId = await store.createChat();
    const sessionId = await store.sessionIdFor(chatId);
    const piped: Promise<unknown>[] = [];
    const model = callThenAnswer("where", "I will not look.");
    const transport = new CfSessionsChatTransport({
      session: () => client.open(sessionId),
      start: async ({ chatId, messages }) => {
        await store.saveChat({ chatId, messages });
        const writer = await (await client.open(sessionId)).generate({
          format: "ai-sdk-ui",
          model: "mock/tools",
        });
        const result = streamText({
          model,
          messages: await convertToModelMessages(messages),
          tools: {
            where: tool({ inputSchema: z.object({}), needsApproval: true, execute: async () => "Paris" }),
          },
          abortSignal: writer.signal,
        });
        piped.push(pipeToGeneration(result.toUIMessageStream({ originalMessages: messages }), writer));
        return { generationId: writer.id };
      },
    });
    const chat = new Chat({
      id: chatId,
      transport,
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: "Where am I?" });
    const asked = chat.messages[1]?.parts.find((part) => part.type === "tool-where") as {
      approval: { id: string };
    };
    // The UI says why; the AI SDK's stream does not carry it.
    await chat.addToolApprovalResponse({ id: asked.approval.id, approved: false, reason: "Not now" });
    await vi.waitFor(() => expect(piped).toHaveLength(2), { timeout: 10_000 });
    const [, outcome] = (await Promise.all(piped)) as Array<{ entries: Array<{ message: unknown }> }>;
    await vi.waitFor(() => expect(chat.status).toBe("ready"));
    const answer = chat.messages[1] as UIMessage;
    expect(answer.parts).toContainEqual(
      expect.objectContaining({ type: "tool-where", state: "output-denied" }),
    );
    const denied = { type: "text", text: "Tool call execution denied." };
    expect(asRead(outcome?.entries.map((entry) => entry.message) ?? [])[0]).toEqual({
      role: "toolResult",
      content: [denied],
      toolCallId: "c1",
      isError: true,
    });

    // A UIMessage with a denial but no reason reads the same whole, and through the UI's reader.
    const withoutReason = {
      ...answer,
      parts: answer.parts.map((part) =>
        part.type === "tool-where" ? { ...part, approval: { id: asked.approval.id, approved: false } } : part,
      ),
    };
    const whole = await (await client.create()).generate({ format: "ai-sdk-ui" });
    const completed = (await whole.complete(withoutReason)) as { entries: Array<{ message: unknown }> };
    expect(asRead(completed.entries.map((entry) => entry.message))).toEqual(
      asRead(fromAISDKUI(withoutReason)),
    );
    expect(asRead(completed.entries.map((entry) => entry.message))[1]).toMatchObject({ content: [denied] });

    // The UI's copy keeps its reason; the chat goes on under the stored answer, not beside it.
    const session = await client.open(sessionId);
    await store.saveChat({ chatId, messages: [...chat.messages, user("u2", "Thanks")] });
    expect((await session.getInfo()).entryCount).toBe(5);
    expect(await session.getTree()).toHaveLength(1);
  });
});
