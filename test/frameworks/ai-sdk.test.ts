import { createUIMessageStream, type UIMessage, validateUIMessages } from "ai";
import { validateUIMessages as validateUIMessagesV5 } from "ai-v5";
import { beforeAll, describe, expect, it } from "vitest";
import type { SessionRepo } from "../../src/core/repo";
import type { Session } from "../../src/core/session";
import { type TreeNode, walkTree } from "../../src/core/tree";
import { CfSessionsChatStore } from "../../src/frameworks/ai-sdk";
import { adapterRepos } from "../support/adapter-repos";
import { earlierSession } from "./earlier-sessions";

/*
 * Chats of the AI SDK's UI kept as sessions: a server route answers with the SDK's own UI message
 * stream and saves what its onFinish gives; a regenerate (the UI sending the chat without its last
 * answer) makes a sibling branch; what loadChat answers passes validateUIMessages.
 */

type ChatMessage = UIMessage<{ model: string }, { weather: { city: string; sky: string } }>;

/** A chat route: streams an answer to `messages` and saves the chat when it is finished. */
async function answer(store: CfSessionsChatStore, chatId: string, messages: ChatMessage[], text: string) {
  let saved: Promise<void> | undefined;
  const stream = createUIMessageStream<ChatMessage>({
    originalMessages: messages,
    generateId: () => `msg-${crypto.randomUUID()}`,
    execute: ({ writer }) => {
      writer.write({ type: "start", messageMetadata: { model: "scripted" } });
      writer.write({ type: "data-weather", data: { city: "Paris", sky: "sun" } });
      writer.write({ type: "text-start", id: "t1" });
      writer.write({ type: "text-delta", id: "t1", delta: text });
      writer.write({ type: "text-end", id: "t1" });
    },
    onFinish: ({ messages: finished }) => {
      saved = store.saveChat({ chatId, messages: finished });
    },
  });
  // The UI would show the chunks; the route only has to run the stream to its end.
  const reader = stream.getReader();
  while (!(await reader.read()).done);
  await saved;
}

function user(id: string, text: string): ChatMessage {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

const repos = adapterRepos();

describe.each(repos)("CfSessionsChatStore on %s", (_name, makeRepo) => {
  let repo: SessionRepo;
  let store: CfSessionsChatStore;
  beforeAll(async () => {
    repo = await makeRepo();
    store = new CfSessionsChatStore({ repo });
  });

  it("saves and loads a chat exactly, and what it loads passes validateUIMessages", async () => {
    const chatId = await store.createChat();
    expect(await store.loadChat(chatId)).toEqual([]);
    await answer(store, chatId, [user("u1", "Weather in Paris?")], "Sunny.");
    const first = await store.loadChat<ChatMessage>(chatId);
    await answer(store, chatId, [...first, user("u2", "And tomorrow?")], "Rain.");
    const chat = await store.loadChat<ChatMessage>(chatId);
    expect(chat.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(chat[1]).toMatchObject({
      metadata: { model: "scripted" },
      parts: [
        { type: "data-weather", data: { city: "Paris", sky: "sun" } },
        { type: "text", text: "Sunny." },
      ],
    });
    expect(chat.slice(0, 2)).toEqual(first);
    expect(await validateUIMessages({ messages: chat })).toEqual(chat);
    expect(await validateUIMessagesV5({ messages: chat as never })).toEqual(chat);
    // Saving the same chat again writes nothing.
    const session = await repo.open(await store.sessionIdFor(chatId));
    const count = (await session.getInfo()).entryCount;
    await store.saveChat({ chatId, messages: chat });
    expect((await session.getInfo()).entryCount).toBe(count);
  });

  it("keeps a regenerated answer beside the old one: a sibling branch, the head on the new one", async () => {
    const chatId = `chat/${crypto.randomUUID()}`;
    await answer(store, chatId, [user("u1", "Name a colour")], "Red.");
    const before = await store.loadChat<ChatMessage>(chatId);
    // The UI regenerates: it sends the chat without its last answer.
    await answer(store, chatId, before.slice(0, -1), "Blue.");
    const after = await store.loadChat<ChatMessage>(chatId);
    expect(after.length).toBe(2);
    expect(after[0]).toEqual(before[0]);
    expect(after[1]?.id).not.toBe(before[1]?.id);
    expect(after[1]?.parts.at(-1)).toMatchObject({ type: "text", text: "Blue." });

    const session = await repo.open(await store.sessionIdFor(chatId));
    const nodes = [...walkTree(await session.getTree())];
    const question = nodes.find((node) => node.children.length === 2) as TreeNode;
    // Each answer is the message it reads as, the UI message kept beside it.
    const answers = await Promise.all(question.children.map((child) => session.getEntry(child.id)));
    expect(answers.map((entry) => entry?.type)).toEqual(["message", "message"]);
    const kept = (entry: unknown) =>
      (entry as { original: { records: ChatMessage[] } }).original.records[0]?.id;
    expect(answers.map(kept).sort()).toEqual([before[1]?.id, after[1]?.id].sort());

    // An edited first message (same id, new text) branches from the root; the old chat stays.
    await store.saveChat({ chatId, messages: [user("u1", "Name a fruit")] });
    expect(await store.loadChat(chatId)).toEqual([user("u1", "Name a fruit")]);
    expect((await session.getTree()).length).toBe(2);
    // Saving a chat cut short moves the head back to where it agrees.
    await store.saveChat({ chatId, messages: [] });
    expect(await store.loadChat(chatId)).toEqual([]);
    // Nothing was overwritten: the four messages saved are all in the tree.
    expect((await session.getEntries({ type: "message" })).length).toBe(4);
  });

  it("writes a chat as the conversation it is: a tool call and its result read as such in every shape", async () => {
    const chatId = `tools-${crypto.randomUUID()}`;
    const messages = [
      user("u1", "Weather in Paris?"),
      {
        id: "a1",
        role: "assistant",
        parts: [
          { type: "step-start" },
          {
            type: "tool-weather",
            toolCallId: "c1",
            state: "output-available",
            input: { city: "Paris" },
            output: "sunny",
          },
          { type: "step-start" },
          { type: "text", text: "Sunny.", state: "done" },
        ],
      },
    ] as ChatMessage[];
    await store.saveChat({ chatId, messages });
    expect(await store.loadChat(chatId)).toEqual(messages);
    const session = await repo.open(await store.sessionIdFor(chatId));
    const chat = await session.contextIn("openai-chat", { model: { provider: "openai", modelId: "gpt-4o" } });
    expect(chat.messages).toEqual([
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "sunny" },
      { role: "assistant", content: "Sunny." },
    ]);
  });

  it("opens any session as a chat by its id, and goes on with it", async () => {
    const byId = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const session = await repo.create({ id: `http-chat-${crypto.randomUUID()}` });
    await session.appendMessage({
      role: "user",
      content: [
        { type: "text", text: "What is on this picture?" },
        { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
      ],
      timestamp: 1,
    });
    await session.appendMessage({
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Look at it." },
        { type: "toolCall", id: "t1", name: "zoom", arguments: { factor: 2 } },
      ],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude",
      usage: {
        input: 1,
        output: 1,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 2,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "toolUse",
      timestamp: 2,
    });
    await session.appendMessage({
      role: "toolResult",
      toolCallId: "t1",
      toolName: "zoom",
      content: [{ type: "text", text: "a cat" }],
      isError: false,
      timestamp: 3,
    });
    const chat = await byId.loadChat<ChatMessage>(session.id);
    expect(chat.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(chat[0]?.parts).toEqual([
      { type: "text", text: "What is on this picture?" },
      { type: "file", mediaType: "image/png", url: "data:image/png;base64,iVBORw0KGgo=" },
    ]);
    expect(chat[1]?.parts).toEqual([
      { type: "step-start" },
      { type: "reasoning", text: "Look at it.", state: "done" },
      {
        type: "tool-zoom",
        toolCallId: "t1",
        state: "output-available",
        input: { factor: 2 },
        output: "a cat",
      },
    ]);
    expect(await validateUIMessages({ messages: chat })).toEqual(chat);
    // The UI goes on: what it sends back is the same chat and one message more.
    await byId.saveChat({ chatId: session.id, messages: [...chat, user("u2", "Thanks")] });
    const branch = await session.getBranch();
    expect(branch).toHaveLength(4);
    expect(await byId.loadChat(session.id)).toEqual([...chat, user("u2", "Thanks")]);
    await expect(byId.loadChat("not a session id")).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("leaves the session's model as it was, so a model API's reply appended after a saved chat keeps its own", async () => {
    const byId = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const session = await repo.create({ id: `model-chat-${crypto.randomUUID()}` });
    const model = "claude-sonnet-4-5-20250929";
    const response = (id: string, content: unknown[]) => ({
      type: "message",
      id,
      role: "assistant",
      model,
      content,
      stop_reason: content.some((block) => (block as { type: string }).type === "tool_use")
        ? "tool_use"
        : "end_turn",
      usage: { input_tokens: 10, output_tokens: 5 },
    });
    await session.appendProviderMessage("anthropic", { role: "user", content: "Hi" });
    await session.appendProviderMessage("anthropic", response("msg_0", [{ type: "text", text: "Hello." }]));
    // The chat goes on in the UI: its answer is saved without the model that wrote it.
    await answer(
      byId,
      session.id,
      [...(await byId.loadChat<ChatMessage>(session.id)), user("u2", "And now?")],
      "Sure.",
    );
    const chat = await byId.loadChat<ChatMessage>(session.id);
    await byId.saveChat({ chatId: session.id, messages: [...chat, user("u3", "Read a.txt")] });
    const [reply] = await session.appendProviderMessage(
      "anthropic",
      response("msg_1", [
        { type: "thinking", thinking: "Let me read", signature: "sig-1" },
        { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a.txt" } },
      ]),
    );
    expect(reply?.message).toMatchObject({ provider: "anthropic", model });
    await session.appendProviderMessage("anthropic", {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hello" }],
    });
    // The request for the session's model sends the signed thinking back as thinking.
    expect((await session.buildContext()).model).toEqual({ provider: "anthropic", modelId: model });
    const request = await session.contextIn("anthropic");
    expect(request.messages.at(-2)?.content).toContainEqual({
      type: "thinking",
      thinking: "Let me read",
      signature: "sig-1",
    });
  });

  it("keeps on the chat's branch what another door wrote after its last message: a model change, a label", async () => {
    const byId = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const session = await repo.create({ id: `settings-chat-${crypto.randomUUID()}` });
    // Before the chat's first message, and after its last one.
    const first = await session.appendModelChange("anthropic", "claude-sonnet-4-5");
    await answer(byId, session.id, [user("u1", "Hi")], "Hello.");
    expect((await session.getBranch()).map((entry) => entry.id)).toContain(first);
    const chat = await byId.loadChat<ChatMessage>(session.id);
    const answered = (await session.getLeafId()) as string;
    const changed = await session.appendModelChange("openai", "gpt-5");
    const label = await session.appendLabel(answered, "greeting");
    await answer(byId, session.id, [...chat, user("u2", "And now?")], "Sure.");
    const branch = (await session.getBranch()).map((entry) => entry.id);
    expect(branch).toContain(first);
    expect(branch).toContain(changed);
    expect(branch).toContain(label);
    expect((await session.buildContext()).model).toEqual({ provider: "openai", modelId: "gpt-5" });
    expect((await byId.loadChat<ChatMessage>(session.id)).map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
  });

  it("writes a tool output the UI added to an answer it loaded, and an edit of a loaded message", async () => {
    const byId = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const session = await repo.create({ id: `ui-output-${crypto.randomUUID()}` });
    await session.appendMessage({ role: "user", content: "Weather in Paris?", timestamp: 1 });
    await session.appendMessage({
      role: "assistant",
      content: [{ type: "toolCall", id: "call_w", name: "weather", arguments: { city: "Paris" } }],
      api: "openai-completions",
      provider: "openai",
      model: "gpt-4o",
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 },
      stopReason: "toolUse",
      timestamp: 2,
    } as never);
    const chat = await byId.loadChat<ChatMessage>(session.id);
    expect(chat[1]?.parts.at(-1)).toMatchObject({ toolCallId: "call_w", state: "input-available" });

    // The browser runs the tool (addToolOutput), then the user goes on.
    const answered = {
      ...chat[1],
      parts: chat[1]?.parts.map((part) =>
        "toolCallId" in part ? { ...part, state: "output-available", output: { sky: "sun" } } : part,
      ),
    } as ChatMessage;
    const withOutput = [chat[0] as ChatMessage, answered, user("u2", "Thanks")];
    await byId.saveChat({ chatId: session.id, messages: withOutput });
    const results = (await session.getBranch()).flatMap((entry) =>
      entry.type === "message" && entry.message.role === "toolResult" ? [entry.message] : [],
    );
    expect(results).toMatchObject([{ toolCallId: "call_w", toolName: "weather", isError: false }]);
    const context = await session.contextIn("openai-chat", {
      model: { provider: "openai", modelId: "gpt-4o" },
    });
    expect(context.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(context.messages[2]).toMatchObject({ role: "tool", tool_call_id: "call_w" });
    expect(JSON.stringify(context.messages[2])).toContain("sun");
    expect(JSON.stringify(context.messages[2])).not.toContain("No result provided");
    // Saved again as it loads: nothing changes.
    const count = (await session.getInfo()).entryCount;
    await byId.saveChat({ chatId: session.id, messages: await byId.loadChat<ChatMessage>(session.id) });
    await byId.saveChat({ chatId: session.id, messages: withOutput });
    expect((await session.getInfo()).entryCount).toBe(count);

    // The first message edited in the UI (sendMessage with its id): a branch beside it.
    const before = await session.getLeafId();
    const edited = {
      ...(chat[0] as ChatMessage),
      parts: [{ type: "text" as const, text: "Weather in Rome?" }],
    };
    await byId.saveChat({ chatId: session.id, messages: [edited] });
    const texts = (await session.buildContext()).messages.map((message) =>
      JSON.stringify((message as { content: unknown }).content),
    );
    expect(texts).toEqual([JSON.stringify([{ type: "text", text: "Weather in Rome?" }])]);
    expect((await session.buildContext({ leafId: before })).messages).toHaveLength(4);
  });

  it("shows a tool's result another door appended in the saved answer's tool part, and goes on under it", async () => {
    const chatId = await store.createChat();
    const session = await repo.open(await store.sessionIdFor(chatId));
    const asked: ChatMessage = {
      id: "a1",
      role: "assistant",
      parts: [
        { type: "step-start" },
        { type: "tool-weather", toolCallId: "c1", state: "input-available", input: { city: "Paris" } },
      ],
    };
    const failed: ChatMessage = {
      id: "a2",
      role: "assistant",
      parts: [
        { type: "step-start" },
        { type: "tool-weather", toolCallId: "c2", state: "input-available", input: { city: "Rome" } },
      ],
    };
    await store.saveChat({ chatId, messages: [user("u1", "Weather in Paris?"), asked] });
    // The tool ran elsewhere: its result appended over HTTP, as any door appends one.
    await session.appendMessage({
      role: "toolResult",
      toolCallId: "c1",
      toolName: "weather",
      content: [{ type: "text", text: "Sunny." }],
      isError: false,
      timestamp: 3,
    });
    const chat = await store.loadChat<ChatMessage>(chatId);
    expect(chat.map((message) => message.id)).toEqual(["u1", "a1"]);
    expect(chat[1]?.parts[1]).toEqual({
      type: "tool-weather",
      toolCallId: "c1",
      state: "output-available",
      input: { city: "Paris" },
      output: "Sunny.",
    });
    expect(await validateUIMessages({ messages: chat })).toEqual(chat);

    // The UI goes on with what it loaded, or with its copy from before the result came: under the
    // result, nothing written twice.
    const count = (await session.getInfo()).entryCount;
    const head = await session.getLeafId();
    await store.saveChat({ chatId, messages: chat });
    await store.saveChat({ chatId, messages: [user("u1", "Weather in Paris?"), asked] });
    expect((await session.getInfo()).entryCount).toBe(count);
    expect(await session.getLeafId()).toBe(head);
    await store.saveChat({ chatId, messages: [...chat, user("u2", "And Rome?"), failed] });
    await session.appendMessage({
      role: "toolResult",
      toolCallId: "c2",
      toolName: "weather",
      content: [{ type: "text", text: "no station" }],
      isError: true,
      timestamp: 5,
    });
    const next = await store.loadChat<ChatMessage>(chatId);
    expect(next.map((message) => message.id)).toEqual(["u1", "a1", "u2", "a2"]);
    expect(next[3]?.parts[1]).toMatchObject({
      toolCallId: "c2",
      state: "output-error",
      errorText: "no station",
    });
    await store.saveChat({ chatId, messages: [...next, user("u3", "Thanks")] });
    expect(await session.getTree()).toHaveLength(1);
    const roles = (await session.getBranch()).map(
      (entry) => (entry as { message?: { role: string } }).message?.role,
    );
    expect(roles).toEqual(["user", "assistant", "toolResult", "user", "assistant", "toolResult", "user"]);
  });

  it("goes on from a compaction or a context edit another door wrote while the UI still holds what they replaced", async () => {
    const byId = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const reply = (id: string, text: string) =>
      ({ id, role: "assistant", parts: [{ type: "text", text, state: "done" }] }) as ChatMessage;
    const texts = async (session: Session) =>
      (await session.buildContext()).messages.map((message) => {
        if (message.role === "compactionSummary") return `summary: ${message.summary}`;
        const content = (message as { content: string | Array<{ text?: string }> }).content;
        return typeof content === "string" ? content : content.map((block) => block.text).join("");
      });
    const entryOf = async (session: Session, messageId: string) =>
      (await session.getBranch()).find(
        (entry) =>
          (entry as { original?: { records: ChatMessage[] } }).original?.records[0]?.id === messageId,
      )?.id as string;
    const counted = [user("q1", "One?"), reply("a1", "One."), user("q2", "Two?"), reply("a2", "Two.")];
    const more = [user("q3", "Three?"), reply("a3", "Three.")];

    // A compaction keeping the second exchange.
    const compacted = await repo.create({ id: `compacted-chat-${crypto.randomUUID()}` });
    await byId.saveChat({ chatId: compacted.id, messages: counted });
    const compaction = await compacted.appendCompaction({
      summary: "They counted to one.",
      tokensBefore: 10,
      firstKeptEntryId: await entryOf(compacted, "q2"),
    });
    await byId.saveChat({ chatId: compacted.id, messages: [...counted, ...more] });
    expect(await compacted.getTree()).toHaveLength(1);
    expect((await compacted.getBranch()).map((entry) => entry.id)).toContain(compaction);
    expect(await texts(compacted)).toEqual([
      "summary: They counted to one.",
      "Two?",
      "Two.",
      "Three?",
      "Three.",
    ]);
    // The chat as it loads now (the summary in place of what it replaced) is the same chat.
    const count = (await compacted.getInfo()).entryCount;
    await byId.saveChat({ chatId: compacted.id, messages: await byId.loadChat(compacted.id) });
    await byId.saveChat({ chatId: compacted.id, messages: [...counted, ...more] });
    expect((await compacted.getInfo()).entryCount).toBe(count);

    // Edits: another door's question changed (the UI shows it by its entry's id), an answer left
    // out, a question the chat wrote changed.
    const edited = await repo.create({ id: `edited-chat-${crypto.randomUUID()}` });
    await edited.appendMessage({ role: "user", content: "One?", timestamp: 1 });
    await byId.saveChat({
      chatId: edited.id,
      messages: [...(await byId.loadChat<ChatMessage>(edited.id)), reply("a1", "One.")],
    });
    const loaded = await byId.loadChat<ChatMessage>(edited.id);
    await byId.saveChat({ chatId: edited.id, messages: [...loaded, ...counted.slice(2)] });
    const edits = [
      await edited.appendContextEdit(loaded[0]?.id as string, { content: "First?" }),
      await edited.appendContextEdit(await entryOf(edited, "a1"), null),
      await edited.appendContextEdit(await entryOf(edited, "q2"), { content: "Second?" }),
    ];
    await byId.saveChat({ chatId: edited.id, messages: [...loaded, ...counted.slice(2), ...more] });
    expect(await edited.getTree()).toHaveLength(1);
    expect((await edited.getBranch()).map((entry) => entry.id)).toEqual(expect.arrayContaining(edits));
    expect(await texts(edited)).toEqual(["First?", "Second?", "Two.", "Three?", "Three."]);
    const before = (await edited.getInfo()).entryCount;
    await byId.saveChat({ chatId: edited.id, messages: await byId.loadChat(edited.id) });
    expect((await edited.getInfo()).entryCount).toBe(before);
  });

  it("shows another door's tool calls by ids every provider takes, its reasoning with signatures, each message by an id of its own", async () => {
    const byId = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const session = await repo.create({ id: `foreign-ids-${crypto.randomUUID()}` });
    const stored = `call_${"b".repeat(24)}|fc_${"a".repeat(50)}`;
    const reply = (content: unknown[], api: string) =>
      ({
        role: "assistant",
        content,
        api,
        provider: "p",
        model: "m",
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 },
        stopReason: "toolUse",
        timestamp: 2,
      }) as never;
    await session.appendCompaction({
      summary: "They talked about the sky.",
      tokensBefore: 100,
      retainedTail: [
        { role: "user", content: "Is it blue?", timestamp: 1 },
        reply([{ type: "text", text: "Yes." }], "openai-completions"),
        { role: "user", content: "Always?", timestamp: 1 },
      ],
    });
    await session.appendMessage(
      reply(
        [
          { type: "thinking", thinking: "Check the weather.", thinkingSignature: "sig-1" },
          { type: "toolCall", id: stored, name: "weather", arguments: { city: "Paris" } },
        ],
        "anthropic-messages",
      ),
    );
    const chat = await byId.loadChat<ChatMessage>(session.id);
    const ids = chat.map((message) => message.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(chat.map((message) => message.role)).toEqual(["user", "user", "assistant", "user", "assistant"]);
    const answer = chat.at(-1) as ChatMessage;
    expect(answer.parts).toContainEqual({
      type: "reasoning",
      text: "Check the weather.",
      state: "done",
      providerMetadata: { anthropic: { signature: "sig-1" } },
    });
    const call = answer.parts.find((part) => "toolCallId" in part) as { toolCallId: string };
    expect(call.toolCallId).toMatch(/^[A-Za-z0-9_-]{1,40}$/);
    expect(await validateUIMessages({ messages: chat })).toEqual(chat);

    // The browser runs the tool: its result answers the stored call.
    const answered = {
      ...answer,
      parts: answer.parts.map((part) =>
        "toolCallId" in part ? { ...part, state: "output-available", output: "sun" } : part,
      ),
    } as ChatMessage;
    await byId.saveChat({ chatId: session.id, messages: [...chat.slice(0, -1), answered] });
    const last = (await session.getBranch()).at(-1);
    expect(last).toMatchObject({ type: "message", message: { role: "toolResult", toolCallId: stored } });
    const context = await session.buildContext();
    expect(JSON.stringify(context.messages)).not.toContain("No result provided");
    expect((await byId.loadChat<ChatMessage>(session.id)).at(-1)).toEqual(answered);

    // A framework that sent only the call_id part of such a call answers it by that part.
    await session.appendMessage(
      reply(
        [{ type: "toolCall", id: "call_c|fc_d", name: "weather", arguments: { city: "Rome" } }],
        "openai-responses",
      ),
    );
    await session.appendMessage({
      role: "toolResult",
      toolCallId: "call_c",
      toolName: "weather",
      content: [{ type: "text", text: "rain" }],
      isError: false,
      timestamp: 3,
    });
    const rome = (await byId.loadChat<ChatMessage>(session.id)).at(-1) as ChatMessage;
    expect(rome.parts.at(-1)).toMatchObject({
      toolCallId: "call_c",
      state: "output-available",
      output: "rain",
    });
  });

  it("reads a chat cf-sessions 0.1 wrote: the same messages, and a conversation in every shape", async () => {
    const byId = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const { session, expected } = await earlierSession<{ messages: ChatMessage[] }>(repo, "ai-sdk-0.1.0");
    expect(await byId.loadChat(session.id)).toEqual(expected.messages);
    const chat = await session.contextIn("openai-chat", { model: { provider: "openai", modelId: "gpt-4o" } });
    expect(chat.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "assistant",
    ]);
  });

  it("refuses a bad chat id or messages with invalid_request, writing nothing", async () => {
    const chatId = `bad-${crypto.randomUUID()}`;
    const bad: unknown[] = [
      { chatId: "", messages: [] },
      { chatId: 7, messages: [] },
      { chatId, messages: "hi" },
      { chatId, messages: [{ id: "x", role: "user" }] },
      { chatId, messages: [{ id: "", role: "user", parts: [] }] },
      { chatId, messages: [{ id: "x", role: "robot", parts: [] }] },
      { chatId, messages: [{ id: "x", role: "user", parts: [{ text: "no type" }] }] },
    ];
    for (const options of bad) {
      await expect(store.saveChat(options as never)).rejects.toMatchObject({ code: "invalid_request" });
    }
    await expect(store.loadChat("")).rejects.toMatchObject({ code: "invalid_request" });
    expect(await store.loadChat(chatId)).toEqual([]);
    await expect(repo.open(await store.sessionIdFor(chatId))).rejects.toMatchObject({ code: "not_found" });
  });
});
