import {
  Agent,
  type AgentInputItem,
  type AgentOutputItem,
  type Session as AgentsSession,
  MemorySession,
  type Model,
  type ModelRequest,
  type ModelResponse,
  run,
  setTracingDisabled,
  tool,
  Usage,
} from "@openai/agents-core";
import { beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import type { AssistantMessage, MessageEntry } from "../../src/core";
import { MemoryRepo } from "../../src/core/memory";
import type { SessionRepo } from "../../src/core/repo";
import type { Session } from "../../src/core/session";
import { CfSessionsSession } from "../../src/frameworks/openai-agents";
import { adapterRepos } from "../support/adapter-repos";
import { earlierSession } from "./earlier-sessions";

/*
 * The Agents SDK's runner over several turns with function tools and reasoning items, the model a
 * script (no network): once with the SDK's own MemorySession, once with ours. The model must be
 * sent the same inputs and the sessions must hold the same items.
 */

setTracingDisabled(true);

/** The answers of the model, turn by turn: reasoning, then a tool call or a reply. */
function scriptedOutputs(): AgentOutputItem[][] {
  const reasoning = (text: string, id: string): AgentOutputItem => ({
    type: "reasoning",
    id,
    content: [{ type: "input_text", text }],
    providerData: { encryptedContent: `enc-${id}` },
  });
  const call = (callId: string, city: string): AgentOutputItem => ({
    type: "function_call",
    id: `fc-${callId}`,
    callId,
    name: "get_weather",
    arguments: JSON.stringify({ city }),
    status: "completed",
  });
  const reply = (id: string, text: string): AgentOutputItem => ({
    type: "message",
    id,
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text }],
  });
  return [
    [reasoning("The user wants the weather: ask the tool.", "rs-1"), call("call-1", "Paris")],
    [reasoning("The tool answered.", "rs-2"), reply("msg-1", "It is sunny in Paris.")],
    [call("call-2", "Lyon"), call("call-3", "Nice")],
    [reply("msg-2", "Rain in Lyon, sun in Nice.")],
    [reasoning("A thank-you needs no tool.", "rs-3"), reply("msg-3", "You are welcome.")],
  ];
}

/** A model that answers from the script and records every request's input. */
class ScriptedModel implements Model {
  readonly inputs: unknown[] = [];
  readonly #outputs = scriptedOutputs();

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.inputs.push(structuredClone(request.input));
    const output = this.#outputs.shift();
    if (!output) throw new Error("the script has no more answers");
    return { usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }), output };
  }

  // biome-ignore lint/correctness/useYield: the runner here never streams
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not streamed");
  }
}

const getWeather = tool({
  name: "get_weather",
  description: "The weather in a city",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => (city === "Lyon" ? `rain in ${city}` : `sun in ${city}`),
});

/** Three turns of a conversation through the runner; what the model saw, and what the session holds. */
async function conversation(session: AgentsSession) {
  const model = new ScriptedModel();
  const agent = new Agent({
    name: "weather",
    instructions: "Answer about the weather.",
    model,
    tools: [getWeather],
  });
  const finals: unknown[] = [];
  for (const input of ["Weather in Paris?", "And in Lyon and Nice?", "Thanks!"]) {
    const result = await run(agent, input, { session });
    finals.push(result.finalOutput);
  }
  return { inputs: model.inputs, finals, items: await session.getItems() };
}

let reference: Awaited<ReturnType<typeof conversation>>;
beforeAll(async () => {
  reference = await conversation(new MemorySession());
});

/** An Anthropic reply that calls a tool, appended through the API's shape, as another door writes it. */
function appendAnthropicReply(session: Session, content: unknown[]) {
  return session.appendProviderMessage(
    "anthropic",
    {
      type: "message",
      id: "msg_1",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content,
      stop_reason: "tool_use",
      usage: { input_tokens: 10, output_tokens: 5 },
    },
    { model: { provider: "anthropic", modelId: "claude-sonnet-4-5" } },
  );
}

const repos = adapterRepos();

describe.each(repos)("CfSessionsSession on %s", (_name, makeRepo) => {
  let repo: SessionRepo;
  beforeAll(async () => {
    repo = await makeRepo();
  });

  it("runs a conversation with tools and reasoning exactly as the SDK's MemorySession does", async () => {
    const ours = await conversation(new CfSessionsSession({ repo }));
    expect(reference.items.some((item) => item.type === "reasoning")).toBe(true);
    expect(reference.items.filter((item) => item.type === "function_call").length).toBe(3);
    expect(ours.inputs).toEqual(reference.inputs);
    expect(ours.finals).toEqual(reference.finals);
    expect(ours.items).toEqual(reference.items);
  });

  it("keeps items exactly, answers the most recent ones in order, and pops the last", async () => {
    const sessionId = `agents-${crypto.randomUUID()}`;
    const ours = new CfSessionsSession({ repo, sessionId });
    const theirs = new MemorySession({ sessionId });
    const items: AgentInputItem[] = [
      {
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: "hi" }],
        providerData: { a: [1, { b: null }] },
      },
      {
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "hello" }],
      },
      { type: "function_call", callId: "c1", name: "f", arguments: "{}", status: "completed" },
      {
        type: "function_call_result",
        callId: "c1",
        name: "f",
        status: "completed",
        output: { type: "text", text: "42" },
      },
    ];
    for (const session of [ours, theirs]) {
      await session.addItems(items.slice(0, 2));
      await session.addItems(items.slice(2));
    }
    expect(await ours.getSessionId()).toBe(sessionId);
    expect(await ours.getItems()).toEqual(items);
    for (const limit of [0, 1, 3, 10])
      expect(await ours.getItems(limit)).toEqual(await theirs.getItems(limit));
    expect(await ours.popItem()).toEqual(await theirs.popItem());
    expect(await ours.getItems()).toEqual(await theirs.getItems());
    // The popped item is still in the tree, on a branch the head left.
    const session = await repo.open(sessionId);
    expect((await session.getEntries({ type: "message" })).length).toBe(4);
    expect((await session.getBranch()).length).toBe(3);
    await ours.clearSession();
    await theirs.clearSession();
    expect(await ours.getItems()).toEqual([]);
    expect(await ours.popItem()).toBeUndefined();
    await ours.addItems([items[0] as AgentInputItem]);
    expect(await ours.getItems()).toEqual([items[0]]);
  });

  it("stores a compaction as ours: the history is the replacement, and the tree keeps what it replaced", async () => {
    const sessionId = `agents-compacted-${crypto.randomUUID()}`;
    const ours = new CfSessionsSession({ repo, sessionId });
    const said = (text: string): AgentInputItem => ({ type: "message", role: "user", content: text });
    await ours.addItems([said("one"), said("two"), said("three")]);
    const replacement: AgentInputItem[] = [
      { type: "compaction", encrypted_content: "opaque-summary" } as AgentInputItem,
      said("three"),
    ];
    await ours.replaceHistoryWithCompaction(replacement);
    await ours.addItems([said("four")]);
    expect(await ours.getItems()).toEqual([...replacement, said("four")]);
    expect(await ours.getItems(2)).toEqual([said("three"), said("four")]);
    const session = await repo.open(sessionId);
    const branch = await session.getBranch();
    expect(branch.map((entry) => entry.type)).toEqual([
      "message",
      "message",
      "message",
      "compaction",
      "message",
    ]);
    // The context is the replacement's messages (the SDK's opaque compaction item has none), then the rest.
    const context = await session.buildContext();
    expect(context.messages.map((m) => [m.role, m.content])).toEqual([
      ["compactionSummary", undefined],
      ["user", "three"],
      ["user", "four"],
    ]);
    // Other doors are told that what follows is what was kept, not that it is all there was.
    expect(context.messages[0]).toMatchObject({
      summary:
        "Earlier turns of this conversation were compacted by the OpenAI Agents SDK; what it kept of them follows.",
    });
    // Popping into what the compaction kept writes a new compaction without it.
    expect(await ours.popItem()).toEqual(said("four"));
    expect(await ours.popItem()).toEqual(said("three"));
    expect(await ours.getItems()).toEqual(replacement.slice(0, 1));
    // An item of no message (the SDK's opaque summary) is popped all the same.
    expect(await ours.popItem()).toEqual(replacement[0]);
    expect(await ours.getItems()).toEqual([]);
    // Kept after a message, it is popped however soon after the compaction.
    await ours.addItems([said("five")]);
    await ours.replaceHistoryWithCompaction([said("five"), replacement[0] as AgentInputItem]);
    expect(await ours.popItem()).toEqual(replacement[0]);
    expect(await ours.getItems()).toEqual([said("five")]);
  });

  it("writes items as the conversation they are: each provider's shape has their roles", async () => {
    const sessionId = `agents-roles-${crypto.randomUUID()}`;
    const ours = new CfSessionsSession({ repo, sessionId });
    await ours.addItems([
      { type: "message", role: "user", content: "Weather in Paris?" },
      {
        type: "function_call",
        callId: "c1",
        name: "weather",
        arguments: '{"city":"Paris"}',
        status: "completed",
      },
      { type: "function_call_result", callId: "c1", name: "weather", status: "completed", output: "sunny" },
      {
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "Sunny." }],
      },
    ]);
    const session = await repo.open(sessionId);
    const model = { provider: "openai", modelId: "gpt-4o" };
    const chat = await session.contextIn("openai-chat", { model });
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
    const anthropic = await session.contextIn("anthropic", {
      model: { provider: "anthropic", modelId: "claude" },
    });
    expect(anthropic.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(JSON.stringify(anthropic.messages[2])).toContain("tool_result");
  });

  it("pairs a result added apart from its call: every door reads the call answered", async () => {
    const sessionId = `agents-split-${crypto.randomUUID()}`;
    const ours = new CfSessionsSession({ repo, sessionId });
    const call: AgentInputItem = {
      type: "function_call",
      id: "fc_1",
      callId: "call_1",
      name: "weather",
      arguments: '{"city":"Paris"}',
      status: "completed",
    };
    const result: AgentInputItem = {
      type: "function_call_result",
      callId: "call_1",
      name: "weather",
      status: "completed",
      output: { type: "text", text: "sunny" },
    };
    const reply: AgentInputItem = {
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Sunny." }],
    };
    await ours.addItems([{ type: "message", role: "user", content: "Weather in Paris?" }]);
    await ours.addItems([call]);
    await ours.addItems([result]);
    await ours.addItems([reply]);
    const session = await repo.open(sessionId);
    const context = await session.buildContext();
    expect(context.messages.map((m) => [m.role, "toolCallId" in m ? m.toolCallId : undefined])).toEqual([
      ["user", undefined],
      ["assistant", undefined],
      ["toolResult", "call_1|fc_1"],
      ["assistant", undefined],
    ]);
    const chat = await session.contextIn("openai-chat", { model: { provider: "openai", modelId: "gpt-4o" } });
    expect(chat.messages).toContainEqual({ role: "tool", tool_call_id: "call_1", content: "sunny" });
    expect(JSON.stringify(chat.messages)).not.toContain("No result provided");
    const items = await ours.getItems();
    expect(items.filter((item) => item.type === "function_call_result")).toHaveLength(1);
    expect(JSON.stringify(items)).not.toContain("No result provided");
  });

  it("answers its own call another door went on past, as the Responses shape does", async () => {
    const sessionId = `agents-passed-${crypto.randomUUID()}`;
    const ours = new CfSessionsSession({ repo, sessionId });
    const call: AgentInputItem = {
      type: "function_call",
      id: "fc_1",
      callId: "call_1",
      name: "weather",
      arguments: '{"city":"Paris"}',
      status: "completed",
    };
    await ours.addItems([{ type: "message", role: "user", content: "Weather in Paris?" }, call]);
    const session = await repo.open(sessionId);
    await session.appendMessage({ role: "user", content: "Never mind.", timestamp: 1 });
    const noResult = {
      type: "function_call_result",
      callId: "call_1",
      name: "weather",
      status: "completed",
      output: { type: "text", text: "No result provided" },
    };
    expect(await ours.getItems()).toEqual([
      { type: "message", role: "user", content: "Weather in Paris?" },
      call,
      noResult,
      { type: "message", role: "user", content: "Never mind." },
    ]);
    const { input } = (await session.contextIn("openai-responses", {
      model: { provider: "openai", modelId: "gpt-5" },
    })) as { input: unknown[] };
    expect(input).toContainEqual(
      expect.objectContaining({
        type: "function_call_output",
        call_id: "call_1",
        output: "No result provided",
      }),
    );
  });

  it("answers any session as items, whoever wrote it", async () => {
    const session = await repo.create({ id: `agents-foreign-${crypto.randomUUID()}` });
    await session.appendMessage({
      role: "user",
      content: [{ type: "text", text: "Read a.txt" }],
      timestamp: 1,
    });
    await session.appendMessage({
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Read it." },
        { type: "toolCall", id: "t1", name: "read", arguments: { path: "a.txt" } },
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
      toolName: "read",
      content: [{ type: "text", text: "hello" }],
      isError: false,
      timestamp: 3,
    });
    const ours = new CfSessionsSession({ repo, sessionId: session.id });
    expect(await ours.getItems()).toEqual([
      { type: "message", role: "user", content: [{ type: "input_text", text: "Read a.txt" }] },
      {
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "Read it." }],
      },
      {
        type: "function_call",
        callId: "t1",
        name: "read",
        arguments: '{"path":"a.txt"}',
        status: "completed",
      },
      {
        type: "function_call_result",
        callId: "t1",
        name: "read",
        status: "completed",
        output: { type: "text", text: "hello" },
      },
    ]);
    // Popping the call leaves the thinking before it, now an entry of its own.
    await ours.popItem();
    const call = await ours.popItem();
    expect(call).toMatchObject({ type: "function_call", callId: "t1" });
    expect((await ours.getItems()).map((item) => item.type)).toEqual(["message", "message"]);
    expect((await session.getBranch()).map((entry) => entry.type)).toEqual(["message", "message"]);
  });

  it("pops an item of another door's reply by writing the reply again without its block, as it was otherwise", async () => {
    const session = await repo.create({ id: `agents-pop-foreign-${crypto.randomUUID()}` });
    await session.appendProviderMessage("anthropic", { role: "user", content: "Plan it." });
    await appendAnthropicReply(session, [
      { type: "thinking", thinking: "secret plan", signature: "sig-1" },
      { type: "text", text: "first" },
      { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a.txt" } },
    ]);
    const [user, reply] = (await session.getBranch()) as unknown as [MessageEntry, MessageEntry];
    const ours = new CfSessionsSession({ repo, sessionId: session.id });
    expect(await ours.popItem()).toMatchObject({ type: "function_call", callId: "toolu_1" });
    const rest = (await session.getBranch()).at(-1) as MessageEntry;
    expect(rest.id).not.toBe(reply.id);
    expect(rest.parentId).toBe(user.id);
    const { content, ...kept } = reply.message as AssistantMessage;
    expect(rest.message).toEqual({ ...kept, content: content.slice(0, 2) });
    expect(rest.message).toMatchObject({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      content: [{ type: "thinking", thinking: "secret plan", thinkingSignature: "sig-1" }, { type: "text" }],
    });
    expect(rest).not.toHaveProperty("original");
    // The session's model is still the reply's: the Anthropic shape needs none named.
    expect(JSON.stringify(await session.contextIn("anthropic"))).toContain('"signature":"sig-1"');
    expect(await ours.popItem()).toMatchObject({ content: [{ type: "output_text", text: "first" }] });
    expect(((await session.getBranch()).at(-1) as MessageEntry).message).toMatchObject({
      content: [{ type: "thinking", thinking: "secret plan", thinkingSignature: "sig-1" }],
    });
    // The item that is all its message stands for leaves the message behind.
    const before = (await session.getEntries({ type: "message" })).length;
    expect(await ours.popItem()).toMatchObject({ content: [{ type: "output_text", text: "secret plan" }] });
    expect((await session.getBranch()).map((entry) => entry.id)).toEqual([user.id]);
    expect(await ours.popItem()).toMatchObject({ role: "user" });
    expect(await session.getBranch()).toEqual([]);
    expect((await session.getEntries({ type: "message" })).length).toBe(before);
  });

  it("pops an item of another door's reply a context edit changed as the items show it, undoing no edit", async () => {
    const session = await repo.create({ id: `agents-pop-edited-${crypto.randomUUID()}` });
    await session.appendProviderMessage("anthropic", { role: "user", content: "Plan it." });
    await appendAnthropicReply(session, [
      { type: "text", text: "the secret plan" },
      { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a.txt" } },
    ]);
    const [user, reply] = (await session.getBranch()) as unknown as [MessageEntry, MessageEntry];
    await session.appendEntries([
      { type: "context_edit", targetId: reply.id, replacement: { content: "redacted" } },
    ]);
    const ours = new CfSessionsSession({ repo, sessionId: session.id });
    expect(await ours.popItem()).toMatchObject({ content: [{ type: "output_text", text: "redacted" }] });
    const messages = (await session.getEntries({ type: "message" })).length;
    expect((await session.getBranch()).map((entry) => entry.id)).toEqual([user.id]);
    expect(JSON.stringify(await session.buildContext())).not.toContain("secret");
    expect(messages).toBe(2);
  });

  it("pops a message of another door that went on past its own call, leaving the call", async () => {
    const sessionId = `agents-pop-passed-${crypto.randomUUID()}`;
    const ours = new CfSessionsSession({ repo, sessionId });
    const call: AgentInputItem = {
      type: "function_call",
      callId: "call_1",
      name: "weather",
      arguments: "{}",
      status: "completed",
    };
    await ours.addItems([{ type: "message", role: "user", content: "Weather?" }, call]);
    const session = await repo.open(sessionId);
    await session.appendMessage({ role: "user", content: "Never mind.", timestamp: 1 });
    const entries = (await session.getEntries({ type: "message" })).length;
    expect(await ours.popItem()).toEqual({ type: "message", role: "user", content: "Never mind." });
    expect(await ours.getItems()).toEqual([{ type: "message", role: "user", content: "Weather?" }, call]);
    expect((await session.getEntries({ type: "message" })).length).toBe(entries);
  });

  it("gives reasoning items only for a Responses reasoning item, other thinking as the answer's text", async () => {
    const session = await repo.create({ id: `agents-thinking-${crypto.randomUUID()}` });
    await session.appendProviderMessage("anthropic", { role: "user", content: "Read a.txt" });
    await appendAnthropicReply(session, [
      { type: "thinking", thinking: "Let me read", signature: "sig-1" },
      { type: "redacted_thinking", data: "opaque" },
      { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a.txt" } },
    ]);
    await session.appendProviderMessage("anthropic", {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hello" }],
    });
    await session.appendProviderMessage(
      "openai-responses",
      {
        id: "resp_1",
        object: "response",
        created_at: 1767225600,
        model: "gpt-5",
        status: "completed",
        output: [
          {
            type: "reasoning",
            id: "rs_1",
            summary: [{ type: "summary_text", text: "It says hello." }],
            encrypted_content: "enc-1",
          },
          {
            type: "message",
            id: "msg_2",
            role: "assistant",
            content: [{ type: "output_text", text: "Hello." }],
          },
        ],
      },
      { model: { provider: "openai", modelId: "gpt-5" } },
    );
    const items = await new CfSessionsSession({ repo, sessionId: session.id }).getItems();
    expect(items.slice(1, 3)).toEqual([
      {
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "Let me read" }],
      },
      expect.objectContaining({ type: "function_call", callId: "toolu_1" }),
    ]);
    expect(items.slice(4)).toEqual([
      {
        type: "reasoning",
        id: "rs_1",
        content: [{ type: "input_text", text: "It says hello." }],
        providerData: { encryptedContent: "enc-1" },
      },
      expect.objectContaining({ type: "message", role: "assistant", id: "msg_2" }),
    ]);
    // Every reasoning item has the id the Responses API asks of one sent back.
    for (const item of items) if (item.type === "reasoning") expect(item.id).toBeTypeOf("string");
    expect(JSON.stringify(items)).not.toContain("[Reasoning redacted]");
  });

  it("reads a session cf-sessions 0.1 wrote: the same items, and a conversation in every shape", async () => {
    const { session, expected } = await earlierSession<{ items: AgentInputItem[] }>(
      repo,
      "openai-agents-0.1.0",
    );
    const ours = new CfSessionsSession({ repo, sessionId: session.id });
    expect(await ours.getItems()).toEqual(expected.items);
    const chat = await session.contextIn("openai-chat", { model: { provider: "openai", modelId: "gpt-4o" } });
    expect(chat.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "assistant",
      "tool",
      "tool",
      "assistant",
    ]);
    // The two parallel calls, kept as two items, are one turn answered by both results.
    expect(chat.messages[5]).toMatchObject({ tool_calls: [{ id: "call-2" }, { id: "call-3" }] });
    expect(chat.messages.slice(6, 8)).toEqual([
      { role: "tool", tool_call_id: "call-2", content: "rain in Lyon" },
      { role: "tool", tool_call_id: "call-3", content: "sun in Nice" },
    ]);
    expect(JSON.stringify(chat.messages[0])).toContain("image_url");
    // Going on writes the new shape after the old.
    await ours.addItems([{ type: "message", role: "user", content: "Thanks!" }]);
    expect(await ours.getItems()).toEqual([
      ...expected.items,
      { type: "message", role: "user", content: "Thanks!" },
    ]);
  });

  it("refuses what is not an item with invalid_request, writing nothing", async () => {
    const sessionId = `agents-bad-${crypto.randomUUID()}`;
    const ours = new CfSessionsSession({ repo, sessionId });
    await ours.addItems([{ type: "message", role: "user", content: "kept" }]);
    for (const bad of [[42], ["text"], [null], [{ type: "message", role: "user", content: 7 }]]) {
      await expect(ours.addItems(bad as AgentInputItem[])).rejects.toMatchObject({ code: "invalid_request" });
    }
    await expect(ours.addItems("x" as never)).rejects.toMatchObject({ code: "invalid_request" });
    await expect(ours.getItems(1.5)).rejects.toMatchObject({ code: "invalid_request" });
    expect(await ours.getItems()).toEqual([{ type: "message", role: "user", content: "kept" }]);
    expect(() => new CfSessionsSession({ repo, sessionId: "not a valid id" })).toThrow(
      expect.objectContaining({ code: "invalid_request" }),
    );
  });
});

it("gives each id-less Gemini call of a conversation an id of its own, the same on a resend", async () => {
  const repo = new MemoryRepo();
  const session = await repo.create({ id: `gemini-${crypto.randomUUID()}` });
  const model = { model: { provider: "google", modelId: "gemini-2.5-pro" } };
  const call = { role: "model", parts: [{ functionCall: { name: "get_time", args: {} } }] };
  const first = `${session.id}-call`;
  for (const [question, time, id] of [
    ["What time is it?", "10:00", first],
    ["And now?", "10:05", undefined],
  ] as const) {
    await session.appendProviderMessage("gemini", { role: "user", parts: [{ text: question }] });
    await session.appendProviderMessage("gemini", call, { ...model, ...(id ? { id } : {}) });
    await session.appendProviderMessage("gemini", {
      role: "user",
      parts: [{ functionResponse: { name: "get_time", response: { output: time } } }],
    });
    await session.appendProviderMessage(
      "gemini",
      { role: "model", parts: [{ text: `It is ${time}.` }] },
      model,
    );
  }
  const callIds = (messages: readonly unknown[]) =>
    (messages as AssistantMessage[]).flatMap((m) =>
      m.role === "assistant" ? m.content.flatMap((b) => (b.type === "toolCall" ? [b.id] : [])) : [],
    );
  const native = callIds((await session.buildContext()).messages);
  const items = (await new CfSessionsSession({ repo, sessionId: session.id }).getItems()) as Array<{
    type?: string;
    callId?: string;
  }>;
  const agents = items.flatMap((item) => (item.type === "function_call" ? [item.callId] : []));
  const anthropic = (
    (await session.contextIn("anthropic")) as { messages: Array<{ content: unknown }> }
  ).messages
    .flatMap((m) => (Array.isArray(m.content) ? (m.content as Array<{ type: string; id?: string }>) : []))
    .flatMap((block) => (block.type === "tool_use" ? [block.id] : []));
  expect({
    native: new Set(native).size,
    agents: new Set(agents).size,
    anthropic: new Set(anthropic).size,
  }).toEqual({
    native: 2,
    agents: 2,
    anthropic: 2,
  });
  // The first call sent again, after the session moved on, is a replay: its id is made the same.
  const [resent] = await session.appendProviderMessage("gemini", call, { ...model, id: first });
  expect(callIds([resent?.message])).toEqual([native[0]]);
});
