import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { SessionRepo } from "../../src/core/repo";
import { CfSessionsChatStore } from "../../src/frameworks/ai-sdk";
import { CfSessionsStore } from "../../src/frameworks/claude-agent-sdk";
import { CfSessionsSaver } from "../../src/frameworks/langgraph";
import { CfSessionsSession } from "../../src/frameworks/openai-agents";

/*
 * One conversation, written through each door into the service: HTTP in our own messages and in
 * each model API's, the pi, Claude Code and Codex imports, and the framework adapters. Each writes
 * the same exchange (a question with an image, reasoning and a tool call, its result, the answer,
 * then a second turn) as that door takes it, so every other part of the product can be checked to
 * read it as the same conversation (test/frameworks/door-matrix.test.ts, the viewer's browser test).
 */

export const QUESTION = "What is the weather in Paris? Here is the sky.";
export const THOUGHT = "The user wants the weather: ask the tool.";
export const RESULT = "Sunny and 21 degrees under a heliotrope sky";
export const ANSWER = "It is sunny in Paris.";
export const FOLLOW_UP = "And tomorrow?";
export const SECOND_ANSWER = "Rain is likely tomorrow.";
export const CALL_ID = "call_weather_1";
export const TOOL = "get_weather";
export const ARGS = { city: "Paris" };
/** A 1×1 PNG. */
export const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
export const PNG_URL = `data:image/png;base64,${PNG}`;

type Json = Record<string, unknown>;

/** The service a door writes to: its address, and a client of it. */
export interface Target {
  url: string;
  repo: SessionRepo;
}

async function post(
  service: Pick<Target, "url">,
  path: string,
  body: unknown,
  contentType = "application/json",
): Promise<void> {
  const response = await fetch(`${service.url}${path}`, {
    method: "POST",
    headers: { "content-type": contentType },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
}

/** Appends a model API's messages over HTTP, one request for the whole exchange. */
async function appendOverHttp(
  service: Pick<Target, "url">,
  id: string,
  format: string,
  model: string,
  messages: unknown[],
): Promise<string> {
  await post(service, "/v1/sessions", { id });
  await post(service, `/v1/sessions/${id}/entries`, {
    entries: messages.map((message) => ({ type: "message", format, message, model })),
  });
  return id;
}

const jsonl = (lines: unknown[]) => `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`;

export interface Door {
  name: string;
  /** Writes the conversation into the session `id` (or one the door names): resolves to the session's id. */
  write(id: string, target: Target): Promise<string>;
  /** The model that answered, as `<provider>/<modelId>`. */
  model: string;
  /** Whether its reasoning carries what its provider needs to take it back (a signature, encrypted content). */
  signed: boolean;
  /** Whether it keeps the reasoning at all. */
  reasoning: boolean;
  /**
   * Whether its reasoning is a reasoning item the Responses API takes back: the Agents SDK's own
   * items (given back as they were added), or the API's own reasoning item, id and all.
   */
  reasoningItems?: boolean;
  /**
   * Whether it keeps each line of a streamed answer as a message of its own: what it is handed
   * comes a line at a time, and an entry is never changed once written.
   */
  keepsLinesApart?: boolean;
  /**
   * Whether the session's Claude Code transcript holds the lines it came from, where the answer's
   * reasoning and its call were streamed as two lines (a Claude Code import, the SDK's store).
   */
  hasStreamedLines?: boolean;
}

/**
 * A scripted agent as a LangGraph graph: a model node that answers from a script (its first answer
 * reasons and calls the tool), and a tool node. Its messages channel is what the saver stores.
 */
function scriptedAgent(saver: CfSessionsSaver) {
  const answers = (messages: BaseMessage[]) => messages.filter((m) => m.getType() === "ai").length;
  return new StateGraph(MessagesAnnotation)
    .addNode("model", ({ messages }) => {
      const turn = answers(messages);
      if (turn === 0) {
        return {
          messages: [
            new AIMessage({
              content: [{ type: "reasoning", reasoning: THOUGHT }],
              tool_calls: [{ id: CALL_ID, name: TOOL, args: ARGS }],
            }),
          ],
        };
      }
      const text = turn === 1 ? ANSWER : SECOND_ANSWER;
      return { messages: [new AIMessage({ content: text })] };
    })
    .addNode("tools", () => ({
      messages: [new ToolMessage({ content: RESULT, tool_call_id: CALL_ID, name: TOOL })],
    }))
    .addEdge(START, "model")
    .addConditionalEdges("model", ({ messages }) => {
      const last = messages.at(-1) as AIMessage | undefined;
      return last?.tool_calls?.length ? "tools" : END;
    })
    .addEdge("tools", "model")
    .compile({ checkpointer: saver });
}

/** The conversation as a Claude Code transcript's lines (the reasoning and the call streamed as two lines). */
function claudeCodeLines(sessionId: string): Json[] {
  const common = {
    isSidechain: false,
    userType: "external",
    cwd: "/work/weather",
    sessionId,
    version: "2.1.38",
    gitBranch: "main",
  };
  let parent: string | null = null;
  let n = 0;
  const next = (fields: Json) => {
    const uuid = `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`;
    const lineValue = {
      parentUuid: parent,
      ...common,
      ...fields,
      uuid,
      timestamp: `2026-01-01T00:00:0${n}.000Z`,
    };
    parent = uuid;
    return lineValue;
  };
  const assistant = (messageId: string, content: unknown[], stop: string | null) =>
    next({
      type: "assistant",
      message: {
        id: messageId,
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content,
        stop_reason: stop,
        stop_sequence: null,
        usage: {
          input_tokens: 10,
          output_tokens: 5,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    });
  return [
    next({
      type: "user",
      message: {
        role: "user",
        content: [
          { type: "text", text: QUESTION },
          { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
        ],
      },
    }),
    assistant("msg_1", [{ type: "thinking", thinking: THOUGHT, signature: "sig-1" }], null),
    assistant("msg_1", [{ type: "tool_use", id: CALL_ID, name: TOOL, input: ARGS }], "tool_use"),
    next({
      type: "user",
      message: {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: CALL_ID, content: RESULT }],
      },
      toolUseResult: RESULT,
    }),
    assistant("msg_2", [{ type: "text", text: ANSWER }], "end_turn"),
    next({ type: "user", message: { role: "user", content: FOLLOW_UP } }),
    assistant("msg_3", [{ type: "text", text: SECOND_ANSWER }], "end_turn"),
  ];
}

const usage = {
  input: 10,
  output: 5,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 15,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** The doors that write. */
export const CONVERSATION_DOORS: readonly Door[] = [
  {
    name: "HTTP, our own messages",
    model: "openai/gpt-4o",
    signed: false,
    reasoning: true,
    async write(id, target) {
      const assistant = (content: unknown[], stopReason: string) => ({
        role: "assistant",
        content,
        api: "openai-responses",
        provider: "openai",
        model: "gpt-4o",
        usage,
        stopReason,
        timestamp: 2,
      });
      await post(target, "/v1/sessions", { id });
      await post(target, `/v1/sessions/${id}/entries`, {
        entries: [
          {
            role: "user",
            content: [
              { type: "text", text: QUESTION },
              { type: "image", data: PNG, mimeType: "image/png" },
            ],
            timestamp: 1,
          },
          assistant(
            [
              { type: "thinking", thinking: THOUGHT },
              { type: "toolCall", id: CALL_ID, name: TOOL, arguments: ARGS },
            ],
            "toolUse",
          ),
          {
            role: "toolResult",
            toolCallId: CALL_ID,
            toolName: TOOL,
            content: [{ type: "text", text: RESULT }],
            isError: false,
            timestamp: 3,
          },
          assistant([{ type: "text", text: ANSWER }], "stop"),
          { role: "user", content: FOLLOW_UP, timestamp: 4 },
          assistant([{ type: "text", text: SECOND_ANSWER }], "stop"),
        ].map((message) => ({ type: "message", message })),
      });
      return id;
    },
  },
  {
    name: "HTTP, format=openai-chat",
    model: "openai/gpt-4o",
    signed: false,
    reasoning: false,
    write: (id, target) =>
      appendOverHttp(target, id, "openai-chat", "openai/gpt-4o", [
        {
          role: "user",
          content: [
            { type: "text", text: QUESTION },
            { type: "image_url", image_url: { url: PNG_URL } },
          ],
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: CALL_ID, type: "function", function: { name: TOOL, arguments: JSON.stringify(ARGS) } },
          ],
        },
        { role: "tool", tool_call_id: CALL_ID, content: RESULT },
        { role: "assistant", content: ANSWER },
        { role: "user", content: FOLLOW_UP },
        { role: "assistant", content: SECOND_ANSWER },
      ]),
  },
  {
    name: "HTTP, format=openai-responses",
    model: "openai/gpt-4o",
    signed: true,
    reasoning: true,
    reasoningItems: true,
    write: (id, target) =>
      appendOverHttp(target, id, "openai-responses", "openai/gpt-4o", [
        {
          type: "message",
          role: "user",
          content: [
            { type: "input_text", text: QUESTION },
            { type: "input_image", image_url: PNG_URL, detail: "auto" },
          ],
        },
        // What the API answered: a response, its output items.
        {
          id: "resp_1",
          object: "response",
          created_at: 1767225600,
          model: "gpt-4o",
          status: "completed",
          output: [
            {
              type: "reasoning",
              id: "rs_1",
              summary: [{ type: "summary_text", text: THOUGHT }],
              encrypted_content: "enc-1",
            },
            {
              type: "function_call",
              id: "fc_1",
              call_id: CALL_ID,
              name: TOOL,
              arguments: JSON.stringify(ARGS),
            },
          ],
        },
        { type: "function_call_output", call_id: CALL_ID, output: RESULT },
        {
          id: "resp_2",
          object: "response",
          created_at: 1767225601,
          model: "gpt-4o",
          status: "completed",
          output: [
            {
              type: "message",
              id: "msg_1",
              role: "assistant",
              content: [{ type: "output_text", text: ANSWER }],
            },
          ],
        },
        { type: "message", role: "user", content: FOLLOW_UP },
        {
          id: "resp_3",
          object: "response",
          created_at: 1767225602,
          model: "gpt-4o",
          status: "completed",
          output: [
            {
              type: "message",
              id: "msg_2",
              role: "assistant",
              content: [{ type: "output_text", text: SECOND_ANSWER }],
            },
          ],
        },
      ]),
  },
  {
    name: "HTTP, format=anthropic",
    model: "anthropic/claude-sonnet-4-5",
    signed: true,
    reasoning: true,
    write: (id, target) =>
      appendOverHttp(target, id, "anthropic", "anthropic/claude-sonnet-4-5", [
        {
          role: "user",
          content: [
            { type: "text", text: QUESTION },
            { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: THOUGHT, signature: "sig-1" },
            { type: "tool_use", id: CALL_ID, name: TOOL, input: ARGS },
          ],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: CALL_ID, content: RESULT }] },
        { role: "assistant", content: [{ type: "text", text: ANSWER }] },
        { role: "user", content: FOLLOW_UP },
        { role: "assistant", content: [{ type: "text", text: SECOND_ANSWER }] },
      ]),
  },
  {
    name: "HTTP, format=gemini",
    model: "google/gemini-2.5-pro",
    signed: true,
    reasoning: true,
    write: (id, target) =>
      appendOverHttp(target, id, "gemini", "google/gemini-2.5-pro", [
        { role: "user", parts: [{ text: QUESTION }, { inlineData: { mimeType: "image/png", data: PNG } }] },
        {
          role: "model",
          parts: [
            { text: THOUGHT, thought: true, thoughtSignature: "sig-1" },
            { functionCall: { id: CALL_ID, name: TOOL, args: ARGS } },
          ],
        },
        {
          role: "user",
          parts: [{ functionResponse: { id: CALL_ID, name: TOOL, response: { output: RESULT } } }],
        },
        { role: "model", parts: [{ text: ANSWER }] },
        { role: "user", parts: [{ text: FOLLOW_UP }] },
        { role: "model", parts: [{ text: SECOND_ANSWER }] },
      ]),
  },
  {
    name: "HTTP, format=ai-sdk",
    model: "openai/gpt-4o",
    signed: false,
    reasoning: true,
    write: (id, target) =>
      appendOverHttp(target, id, "ai-sdk", "openai/gpt-4o", [
        {
          role: "user",
          content: [
            { type: "text", text: QUESTION },
            { type: "image", image: PNG_URL, mediaType: "image/png" },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: THOUGHT },
            { type: "tool-call", toolCallId: CALL_ID, toolName: TOOL, input: ARGS },
          ],
        },
        {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: CALL_ID,
              toolName: TOOL,
              output: { type: "text", value: RESULT },
            },
          ],
        },
        { role: "assistant", content: [{ type: "text", text: ANSWER }] },
        { role: "user", content: FOLLOW_UP },
        { role: "assistant", content: [{ type: "text", text: SECOND_ANSWER }] },
      ]),
  },
  {
    name: "pi import",
    model: "anthropic/claude-sonnet-4-5",
    signed: false,
    reasoning: true,
    async write(id, target) {
      const message = (timestamp: string, body: unknown) => ({ type: "message", timestamp, message: body });
      const assistant = (content: unknown[], stopReason: string, timestamp: number) => ({
        role: "assistant",
        content,
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        usage,
        stopReason,
        timestamp,
      });
      await post(
        target,
        `/v1/sessions/import?format=pi&id=${id}`,
        jsonl([
          {
            type: "session",
            id,
            timestamp: "2026-01-01T00:00:00.000Z",
            cwd: "/work/weather",
            provider: "anthropic",
            modelId: "claude-sonnet-4-5",
            thinkingLevel: "off",
          },
          message("2026-01-01T00:00:01.000Z", {
            role: "user",
            content: [
              { type: "text", text: QUESTION },
              { type: "image", data: PNG, mimeType: "image/png" },
            ],
            timestamp: 1,
          }),
          message(
            "2026-01-01T00:00:02.000Z",
            assistant(
              [
                { type: "thinking", thinking: THOUGHT },
                { type: "toolCall", id: CALL_ID, name: TOOL, arguments: ARGS },
              ],
              "toolUse",
              2,
            ),
          ),
          message("2026-01-01T00:00:03.000Z", {
            role: "toolResult",
            toolCallId: CALL_ID,
            toolName: TOOL,
            content: [{ type: "text", text: RESULT }],
            isError: false,
            timestamp: 3,
          }),
          message("2026-01-01T00:00:04.000Z", assistant([{ type: "text", text: ANSWER }], "stop", 4)),
          message("2026-01-01T00:00:05.000Z", {
            role: "user",
            content: [{ type: "text", text: FOLLOW_UP }],
            timestamp: 5,
          }),
          message("2026-01-01T00:00:06.000Z", assistant([{ type: "text", text: SECOND_ANSWER }], "stop", 6)),
        ]),
        "application/x-ndjson",
      );
      return id;
    },
  },
  {
    name: "Claude Code import",
    model: "anthropic/claude-sonnet-4-5",
    signed: true,
    reasoning: true,
    hasStreamedLines: true,
    async write(id, target) {
      await post(
        target,
        `/v1/sessions/import?format=claude-code&id=${id}`,
        jsonl(claudeCodeLines(id)),
        "application/x-ndjson",
      );
      return id;
    },
  },
  {
    name: "Claude Agent SDK store",
    model: "anthropic/claude-sonnet-4-5",
    signed: true,
    reasoning: true,
    keepsLinesApart: true,
    hasStreamedLines: true,
    async write(id, target) {
      // The key's session id is the session's (keyIsSessionId), so other doors find it by that id.
      const store = new CfSessionsStore({ repo: target.repo, keyIsSessionId: true });
      const key = { projectKey: "-work-weather", sessionId: id };
      await store.append(key, claudeCodeLines(key.sessionId) as never);
      return store.sessionIdFor(key);
    },
  },
  {
    name: "Codex import",
    model: "openai/gpt-5.1-codex",
    signed: false,
    reasoning: true,
    async write(id, target) {
      let second = 0;
      const at = () => `2026-01-01T00:00:${String(++second).padStart(2, "0")}.000Z`;
      const item = (payload: unknown) => ({ timestamp: at(), type: "response_item", payload });
      await post(
        target,
        `/v1/sessions/import?format=codex&id=${id}`,
        jsonl([
          {
            timestamp: at(),
            type: "session_meta",
            payload: {
              id,
              timestamp: at(),
              cwd: "/work/weather",
              originator: "codex_cli_rs",
              cli_version: "0.58.0",
              source: "cli",
              model_provider: "openai",
            },
          },
          {
            timestamp: at(),
            type: "turn_context",
            payload: {
              cwd: "/work/weather",
              approval_policy: "never",
              sandbox_policy: { mode: "read-only" },
              model: "gpt-5.1-codex",
              summary: "auto",
            },
          },
          item({
            type: "message",
            role: "user",
            content: [
              { type: "input_text", text: QUESTION },
              { type: "input_image", image_url: PNG_URL },
            ],
          }),
          item({
            type: "reasoning",
            summary: [{ type: "summary_text", text: THOUGHT }],
            content: null,
            encrypted_content: null,
          }),
          item({ type: "function_call", name: TOOL, arguments: JSON.stringify(ARGS), call_id: CALL_ID }),
          item({ type: "function_call_output", call_id: CALL_ID, output: RESULT }),
          item({ type: "message", role: "assistant", content: [{ type: "output_text", text: ANSWER }] }),
          item({ type: "message", role: "user", content: [{ type: "input_text", text: FOLLOW_UP }] }),
          item({
            type: "message",
            role: "assistant",
            content: [{ type: "output_text", text: SECOND_ANSWER }],
          }),
        ]),
        "application/x-ndjson",
      );
      return id;
    },
  },
  {
    name: "OpenAI Agents addItems",
    // Items do not say which model answered.
    model: "unknown",
    signed: false,
    reasoning: true,
    reasoningItems: true,
    async write(id, target) {
      await new CfSessionsSession({ repo: target.repo, sessionId: id }).addItems([
        {
          type: "message",
          role: "user",
          content: [
            { type: "input_text", text: QUESTION },
            { type: "input_image", image: PNG_URL },
          ],
        },
        { type: "reasoning", content: [{ type: "input_text", text: THOUGHT }] },
        {
          type: "function_call",
          callId: CALL_ID,
          name: TOOL,
          arguments: JSON.stringify(ARGS),
          status: "completed",
        },
        { type: "function_call_result", callId: CALL_ID, name: TOOL, status: "completed", output: RESULT },
        {
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: ANSWER }],
        },
        { type: "message", role: "user", content: FOLLOW_UP },
        {
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: SECOND_ANSWER }],
        },
      ]);
      return id;
    },
  },
  {
    name: "LangGraph graph",
    // The script's messages do not say which model answered (a chat model's `response_metadata` would).
    model: "unknown",
    signed: false,
    reasoning: true,
    async write(id, target) {
      // The thread's session is named by the thread id itself.
      const saver = new CfSessionsSaver({ repo: target.repo, threadIdIsSessionId: true });
      const graph = scriptedAgent(saver);
      const config = { configurable: { thread_id: id } };
      const question = new HumanMessage({
        content: [
          { type: "text", text: QUESTION },
          { type: "image_url", image_url: { url: PNG_URL } },
        ],
      });
      await graph.invoke({ messages: [question] }, config);
      await graph.invoke({ messages: [new HumanMessage(FOLLOW_UP)] }, config);
      return saver.sessionIdFor(id);
    },
  },
  {
    name: "AI SDK chat store",
    // UI messages do not say which model answered.
    model: "unknown",
    signed: false,
    reasoning: true,
    async write(id, target) {
      const store = new CfSessionsChatStore({ repo: target.repo, chatIdIsSessionId: true });
      await store.saveChat({
        chatId: id,
        messages: [
          {
            id: "u1",
            role: "user",
            parts: [
              { type: "text", text: QUESTION },
              { type: "file", mediaType: "image/png", url: PNG_URL },
            ],
          },
          {
            id: "a1",
            role: "assistant",
            parts: [
              { type: "step-start" },
              { type: "reasoning", text: THOUGHT, state: "done" },
              {
                type: `tool-${TOOL}`,
                toolCallId: CALL_ID,
                state: "output-available",
                input: ARGS,
                output: RESULT,
              },
              { type: "step-start" },
              { type: "text", text: ANSWER, state: "done" },
            ],
          },
          { id: "u2", role: "user", parts: [{ type: "text", text: FOLLOW_UP }] },
          {
            id: "a2",
            role: "assistant",
            parts: [{ type: "step-start" }, { type: "text", text: SECOND_ANSWER, state: "done" }],
          },
        ],
      });
      return id;
    },
  },
];
