import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import type { AgentMessage, AssistantMessage, Session } from "../../src/core";
import { MemoryRepo } from "../../src/core/memory";
import { BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX } from "../../src/core/providers/pi-messages";
import { CfSessionsChatStore } from "../../src/frameworks/ai-sdk";
import { CfSessionsSaver } from "../../src/frameworks/langgraph";
import { CfSessionsSession } from "../../src/frameworks/openai-agents";

/*
 * A session another door wrote, read through each framework's door as a model would be sent it:
 * a call the conversation went on from without its result is answered "No result provided" (as
 * every context in a model API's shape answers it), a reply cut short is left out with its calls
 * and results where the framework replays history to a model, a tool's image is kept, and a call
 * at the end of the branch stays open for the framework's next step to run.
 */

/** A 1×1 PNG. */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const MODEL = { api: "openai-responses", provider: "openai", model: "gpt-5" } as const;
const USAGE = {
  input: 1,
  output: 1,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

function reply(
  content: AssistantMessage["content"],
  stopReason: AssistantMessage["stopReason"],
): AgentMessage {
  return { role: "assistant", content, ...MODEL, usage: USAGE, stopReason, timestamp: 2 };
}

const call = (id: string, name: string) => ({ type: "toolCall" as const, id, name, arguments: { id } });

/**
 * A screenshot and its image; a click the user interrupted; a reply cut short with a call and a
 * result of its own; and at the end a call waiting to run.
 */
async function written(repo: MemoryRepo, id: string): Promise<Session> {
  const session = await repo.create({ id });
  const messages: AgentMessage[] = [
    { role: "user", content: "Screenshot the page", timestamp: 1 },
    reply([call("call_1", "screenshot")], "toolUse"),
    {
      role: "toolResult",
      toolCallId: "call_1",
      toolName: "screenshot",
      content: [{ type: "image", mimeType: "image/png", data: PNG }],
      isError: false,
      timestamp: 3,
    },
    reply([{ type: "text", text: "A login form." }, call("call_2", "click")], "toolUse"),
    { role: "user", content: "Stop, don't click.", timestamp: 5 },
    reply([{ type: "text", text: "Scrolling" }, call("call_3", "scroll")], "aborted"),
    {
      role: "toolResult",
      toolCallId: "call_3",
      toolName: "scroll",
      content: [{ type: "text", text: "scrolled" }],
      isError: false,
      timestamp: 7,
    },
    { role: "user", content: "Read the title.", timestamp: 8 },
    reply([call("call_4", "read_title")], "toolUse"),
  ];
  for (const message of messages) await session.appendMessage(message);
  return session;
}

type Json = Record<string, unknown>;

describe("read through each framework's door, a session on a MemoryRepo", () => {
  it("answers as a model is sent it: calls paired, a cut-short reply out, images kept", async () => {
    const repo = new MemoryRepo();
    const session = await written(repo, "reads-responses");
    // What every context in a model API's shape holds: the door reads below agree with it.
    const { input } = (await session.contextIn("openai-responses")) as { input: Json[] };
    expect(input.filter((item) => item.type === "function_call_output").map((item) => item.output)).toEqual([
      [{ type: "input_image", image_url: `data:image/png;base64,${PNG}`, detail: "auto" }],
      "No result provided",
      "No result provided",
    ]);
  });

  it("as the Agents SDK's items", async () => {
    const repo = new MemoryRepo();
    await written(repo, "reads-agents");
    const items = (await new CfSessionsSession({ repo, sessionId: "reads-agents" }).getItems()) as Json[];
    const shown = items.map((item) =>
      item.type === "message"
        ? `${item.role}`
        : item.type === "function_call"
          ? `call ${item.callId}`
          : `result ${item.callId} ${JSON.stringify(item.output)}`,
    );
    expect(shown).toEqual([
      "user",
      "call call_1",
      `result call_1 [{"type":"input_image","image":"data:image/png;base64,${PNG}"}]`,
      "assistant",
      "call call_2",
      'result call_2 {"type":"text","text":"No result provided"}',
      "user",
      "user",
      "call call_4",
    ]);
  });

  it("as a LangGraph thread's messages", async () => {
    const repo = new MemoryRepo();
    await written(repo, "reads-langgraph");
    const saver = new CfSessionsSaver({ repo, threadIdIsSessionId: true });
    const tuple = await saver.getTuple({ configurable: { thread_id: "reads-langgraph" } });
    const messages = (tuple?.checkpoint.channel_values.messages ?? []) as Array<{
      getType(): string;
      content: unknown;
      tool_calls?: { id: string }[];
      tool_call_id?: string;
      status?: string;
    }>;
    const shown = messages.map((message) =>
      message.getType() === "tool"
        ? `tool ${message.tool_call_id} ${message.status} ${JSON.stringify(message.content)}`
        : `${message.getType()} ${(message.tool_calls ?? []).map((c) => c.id).join(",")}`.trimEnd(),
    );
    expect(shown).toEqual([
      "human",
      "ai call_1",
      `tool call_1 success [{"type":"image_url","image_url":{"url":"data:image/png;base64,${PNG}"}}]`,
      "ai call_2",
      'tool call_2 error "No result provided"',
      "human",
      "human",
      "ai call_4",
    ]);
    // Each message keeps an id of its own.
    const ids = messages.map((message) => (message as unknown as { id: string }).id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("as a LangGraph thread's messages: a system message as a SystemMessage, pi's messages as a model is sent them", async () => {
    const repo = new MemoryRepo();
    const id = "reads-langgraph-roles";
    await new CfSessionsSession({ repo, sessionId: id }).addItems([
      { type: "message", role: "system", content: "You are terse." },
      { type: "message", role: "user", content: "List the files." },
    ]);
    const session = await repo.open(id);
    await session.appendMessage({
      role: "bashExecution",
      command: "ls",
      output: "a.txt",
      exitCode: 0,
      cancelled: false,
      truncated: false,
      timestamp: 3,
    } as unknown as AgentMessage);
    await session.appendMessage({
      role: "bashExecution",
      command: "cat secret",
      output: "hidden",
      exitCode: 0,
      cancelled: false,
      truncated: false,
      excludeFromContext: true,
      timestamp: 4,
    } as unknown as AgentMessage);
    await session.appendBranchSummary({ summary: "Tried b.txt first.", fromId: "root" });
    const saver = new CfSessionsSaver({ repo, threadIdIsSessionId: true });
    const tuple = await saver.getTuple({ configurable: { thread_id: id } });
    const messages = (tuple?.checkpoint.channel_values.messages ?? []) as Array<{
      getType(): string;
      content: unknown;
    }>;
    expect(messages.map((message) => [message.getType(), message.content])).toEqual([
      ["system", "You are terse."],
      ["human", "List the files."],
      ["human", [{ type: "text", text: "Ran `ls`\n```\na.txt\n```" }]],
      [
        "human",
        [{ type: "text", text: `${BRANCH_SUMMARY_PREFIX}Tried b.txt first.${BRANCH_SUMMARY_SUFFIX}` }],
      ],
    ]);
  });

  it("as a LangGraph thread's messages, with tool-call ids every model API takes, each result under its call's", async () => {
    const repo = new MemoryRepo();
    const id = "reads-langgraph-call-ids";
    const callId = `call_${"b".repeat(35)}`;
    await new CfSessionsSession({ repo, sessionId: id }).addItems([
      { type: "message", role: "user", content: "Read the title twice." },
      { type: "function_call", id: `fc_${"a".repeat(50)}`, callId, name: "read_title", arguments: "{}" },
      { type: "function_call_result", callId, name: "read_title", status: "completed", output: "Home" },
    ]);
    const session = await repo.open(id);
    // Kimi's ids, one of them used again in the next turn; and one too long for any API.
    const long = `toolu_${"c".repeat(70)}`;
    await session.appendMessage(reply([call("functions.read:0", "read_title")], "toolUse"));
    await session.appendMessage({
      role: "toolResult",
      toolCallId: "functions.read:0",
      toolName: "read_title",
      content: [{ type: "text", text: "Home again" }],
      isError: false,
      timestamp: 3,
    });
    await session.appendMessage(
      reply([call("functions.read:0", "read_title"), call(long, "scroll")], "toolUse"),
    );
    await session.appendMessage({
      role: "toolResult",
      toolCallId: long,
      toolName: "scroll",
      content: [{ type: "text", text: "scrolled" }],
      isError: false,
      timestamp: 4,
    });
    await session.appendMessage({
      role: "toolResult",
      toolCallId: "functions.read:0",
      toolName: "read_title",
      content: [{ type: "text", text: "Home once more" }],
      isError: false,
      timestamp: 5,
    });
    const saver = new CfSessionsSaver({ repo, threadIdIsSessionId: true });
    const tuple = await saver.getTuple({ configurable: { thread_id: id } });
    const messages = (tuple?.checkpoint.channel_values.messages ?? []) as Array<{
      getType(): string;
      tool_calls?: { id: string }[];
      tool_call_id?: string;
    }>;
    const shown = messages.flatMap((message) =>
      message.getType() === "tool"
        ? [`result ${message.tool_call_id}`]
        : (message.tool_calls ?? []).map((c) => `call ${c.id}`),
    );
    expect(shown).toEqual([
      `call ${callId}`,
      `result ${callId}`,
      "call functions_read_0",
      "result functions_read_0",
      "call functions_read_0_2",
      `call ${long.slice(0, 40)}`,
      `result ${long.slice(0, 40)}`,
      "result functions_read_0_2",
    ]);
  });

  it("takes back a graph's result for a call another door left open, under that call", async () => {
    const repo = new MemoryRepo();
    const id = "reads-langgraph-answered";
    const callId = `call_${"b".repeat(35)}`;
    const agents = new CfSessionsSession({ repo, sessionId: id });
    await agents.addItems([
      { type: "message", role: "user", content: "Read the title." },
      { type: "function_call", id: `fc_${"a".repeat(50)}`, callId, name: "read_title", arguments: "{}" },
    ]);
    const saver = new CfSessionsSaver({ repo, threadIdIsSessionId: true });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("tools", ({ messages }) => {
        const call = (messages.at(-1) as AIMessage).tool_calls?.[0];
        return {
          messages: [
            new ToolMessage({ content: "Home", tool_call_id: String(call?.id), name: "read_title" }),
            new AIMessage("The title is Home."),
          ],
        };
      })
      .addEdge(START, "tools")
      .addEdge("tools", END)
      .compile({ checkpointer: saver });
    await graph.invoke({ messages: [] }, { configurable: { thread_id: id } });
    const items = (await agents.getItems()) as Json[];
    expect(items.map((item) => [item.type, item.callId, item.output])).toEqual([
      ["message", undefined, undefined],
      ["function_call", callId, undefined],
      ["function_call_result", callId, { type: "text", text: "Home" }],
      ["message", undefined, undefined],
    ]);
  });

  it("as the AI SDK's UI messages, the cut-short answer shown as far as it went", async () => {
    const repo = new MemoryRepo();
    await written(repo, "reads-chat");
    const chat = new CfSessionsChatStore({ repo, chatIdIsSessionId: true });
    const messages = (await chat.loadChat("reads-chat")) as unknown as { role: string; parts: Json[] }[];
    const tools = messages.flatMap((message) =>
      message.parts
        .filter((part) => String(part.type).startsWith("tool-"))
        .map(
          (part) =>
            `${part.toolCallId} ${part.state} ${JSON.stringify(part.output ?? part.errorText ?? null)}`,
        ),
    );
    expect(messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
    expect(tools).toEqual([
      `call_1 output-available [{"type":"image","mimeType":"image/png","data":"${PNG}"}]`,
      'call_2 output-error "No result provided"',
      'call_3 output-available "scrolled"',
      "call_4 input-available null",
    ]);
  });
});
