import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createClient, type RemoteRepo } from "../../src/client";
import type { AgentMessage } from "../../src/core";
import { prepareCompaction } from "../../src/core";
import { CfSessionsStore } from "../../src/frameworks/claude-agent-sdk";
import { CfSessionsSession } from "../../src/frameworks/openai-agents";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * One conversation through every door. The same exchange (a question with an image, reasoning and
 * a tool call, its result, the answer, then a second turn) is written through each way into the
 * service, and read back through every other: the context in each model API's shape, the Agents
 * SDK's items, the session's search and the input of its compaction. Each read is brought to one
 * plain transcript, so a door that turned a tool call into something the user said, or lost the
 * result, fails on the line where it did.
 *
 * Every door keeps the image. Reasoning goes back to a model API as reasoning only to the model
 * that gave it, and only with what that API checks (a signature, encrypted content); to any other
 * it is passed on as text, and Chat Completions takes none back (`replayedTo`). docs/frameworks.md
 * has the same table.
 */

const QUESTION = "What is the weather in Paris? Here is the sky.";
const THOUGHT = "The user wants the weather: ask the tool.";
const RESULT = "Sunny and 21 degrees under a heliotrope sky";
const ANSWER = "It is sunny in Paris.";
const FOLLOW_UP = "And tomorrow?";
const SECOND_ANSWER = "Rain is likely tomorrow.";
const CALL_ID = "call_weather_1";
const TOOL = "get_weather";
const ARGS = { city: "Paris" };
/** A 1×1 PNG. */
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const PNG_URL = `data:image/png;base64,${PNG}`;

/**
 * How a read shows the reasoning: as reasoning, or as the text of the answer it came with (how a
 * model API is sent the reasoning of another model, or reasoning it cannot check), or not at all.
 */
type Reasoning = "kept" | "text" | "none";

/**
 * The plain transcript every read is brought to: one line per message. `split`: the reasoning and
 * the call are two messages (as they were two lines of a transcript), not one.
 */
function transcript(reasoning: Reasoning, { split = false } = {}): string[] {
  const thought = { kept: `[thinking] ${THOUGHT} `, text: `${THOUGHT} `, none: "" }[reasoning];
  const call = `[call ${TOOL} ${JSON.stringify(ARGS)}]`;
  return [
    `user: ${QUESTION} [image]`,
    ...(split && reasoning !== "none"
      ? [`assistant: ${thought.trimEnd()}`, `assistant: ${call}`]
      : [`assistant: ${thought}${call}`]),
    `tool ${TOOL}: ${RESULT}`,
    `assistant: ${ANSWER}`,
    `user: ${FOLLOW_UP}`,
    `assistant: ${SECOND_ANSWER}`,
  ];
}

// --- bringing each shape to the transcript ---

type Json = Record<string, unknown>;
const records = (value: unknown): Json[] => (Array.isArray(value) ? (value as Json[]) : []);
const argsText = (value: unknown) => JSON.stringify(typeof value === "string" ? JSON.parse(value) : value);

/** Joins a message's parts, in order, into one line. */
function line(role: string, parts: string[]): string {
  return `${role}: ${parts.filter((part) => part !== "").join(" ")}`;
}

/** Names of the calls seen so far, by id: a tool's result is shown with its call's name. */
class Calls {
  readonly #names = new Map<string, string>();
  call(id: string, name: string, args: unknown): string {
    this.#names.set(id, name);
    return `[call ${name} ${argsText(args)}]`;
  }
  result(id: string, text: string): string {
    return `tool ${this.#names.get(id) ?? `(unknown call ${id})`}: ${text}`;
  }
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return records(content)
    .map((part) => (typeof part.text === "string" ? part.text : ""))
    .join("");
}

function fromOurs(messages: readonly AgentMessage[]): string[] {
  const calls = new Calls();
  const lines: string[] = [];
  for (const message of messages) {
    const m = message as unknown as Json;
    if (m.role === "toolResult") {
      lines.push(calls.result(String(m.toolCallId), textOf(m.content)));
      continue;
    }
    const parts = records(typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content);
    lines.push(
      line(
        String(m.role),
        parts.map((part) => {
          if (part.type === "text") return String(part.text);
          if (part.type === "image") return "[image]";
          if (part.type === "thinking") return `[thinking] ${part.thinking}`;
          if (part.type === "toolCall") return calls.call(String(part.id), String(part.name), part.arguments);
          return `[${part.type}]`;
        }),
      ),
    );
  }
  return lines;
}

function fromOpenAIChat(messages: readonly Json[]): string[] {
  const calls = new Calls();
  return messages.map((m) => {
    if (m.role === "tool") return calls.result(String(m.tool_call_id), textOf(m.content));
    const parts =
      typeof m.content === "string"
        ? [m.content]
        : records(m.content).map((part) =>
            part.type === "text"
              ? String(part.text)
              : part.type === "image_url"
                ? "[image]"
                : `[${part.type}]`,
          );
    const reasoning = typeof m.reasoning_content === "string" ? [`[thinking] ${m.reasoning_content}`] : [];
    const toolCalls = records(m.tool_calls).map((call) => {
      const fn = call.function as Json;
      return calls.call(String(call.id), String(fn.name), fn.arguments);
    });
    return line(String(m.role), [...reasoning, ...parts, ...toolCalls]);
  });
}

function fromAnthropic(messages: readonly Json[]): string[] {
  const calls = new Calls();
  const lines: string[] = [];
  for (const m of messages) {
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : records(m.content);
    const parts: string[] = [];
    for (const block of blocks) {
      if (block.type === "tool_result")
        lines.push(calls.result(String(block.tool_use_id), textOf(block.content)));
      else if (block.type === "text") parts.push(String(block.text));
      else if (block.type === "image") parts.push("[image]");
      else if (block.type === "thinking") parts.push(`[thinking] ${block.thinking}`);
      else if (block.type === "tool_use")
        parts.push(calls.call(String(block.id), String(block.name), block.input));
      else parts.push(`[${block.type}]`);
    }
    if (parts.length > 0) lines.push(line(String(m.role), parts));
  }
  return lines;
}

function fromResponses(items: readonly Json[]): string[] {
  const calls = new Calls();
  const lines: string[] = [];
  let assistant: string[] | undefined;
  const flush = () => {
    if (assistant) lines.push(line("assistant", assistant));
    assistant = undefined;
  };
  for (const item of items) {
    const type = item.type ?? "message";
    if (type === "message" && item.role !== "assistant") {
      flush();
      const parts =
        typeof item.content === "string"
          ? [item.content]
          : records(item.content).map((part) =>
              part.type === "input_text"
                ? String(part.text)
                : part.type === "input_image"
                  ? "[image]"
                  : `[${part.type}]`,
            );
      lines.push(line(String(item.role), parts));
    } else if (type === "function_call_output") {
      flush();
      lines.push(calls.result(String(item.call_id), textOf(item.output)));
    } else {
      // Reasoning, calls and an answer's text are one assistant turn until something else comes.
      assistant ??= [];
      if (type === "reasoning") {
        const summary = records(item.summary).map((part) => String(part.text));
        const content = records(item.content).map((part) => String(part.text));
        assistant.push(`[thinking] ${[...content, ...summary][0] ?? ""}`);
      } else if (type === "function_call") {
        assistant.push(calls.call(String(item.call_id), String(item.name), item.arguments));
      } else if (type === "message") {
        assistant.push(textOf(item.content));
      } else assistant.push(`[${type}]`);
    }
  }
  flush();
  return lines;
}

function fromGemini(contents: readonly Json[]): string[] {
  const names: string[] = [];
  const lines: string[] = [];
  for (const content of contents) {
    const parts: string[] = [];
    for (const part of records(content.parts)) {
      if (part.functionResponse) {
        const response = part.functionResponse as Json;
        const output = response.response as Json;
        lines.push(
          `tool ${response.name}: ${typeof output.output === "string" ? output.output : JSON.stringify(output)}`,
        );
      } else if (part.functionCall) {
        const call = part.functionCall as Json;
        names.push(String(call.name));
        parts.push(`[call ${call.name} ${argsText(call.args)}]`);
      } else if (part.inlineData) parts.push("[image]");
      else if (part.thought === true) parts.push(`[thinking] ${part.text}`);
      else if (typeof part.text === "string") parts.push(part.text);
      else parts.push(`[${Object.keys(part).join(",")}]`);
    }
    if (parts.length > 0)
      lines.push(line(content.role === "model" ? "assistant" : String(content.role), parts));
  }
  return lines;
}

function fromAISDK(messages: readonly Json[]): string[] {
  const calls = new Calls();
  const lines: string[] = [];
  for (const m of messages) {
    const parts = typeof m.content === "string" ? [{ type: "text", text: m.content }] : records(m.content);
    if (m.role === "tool") {
      for (const part of parts) {
        const output = part.output as Json;
        lines.push(
          calls.result(
            String(part.toolCallId),
            typeof output.value === "string" ? output.value : JSON.stringify(output.value),
          ),
        );
      }
      continue;
    }
    lines.push(
      line(
        String(m.role),
        parts.map((part) => {
          if (part.type === "text") return String(part.text);
          if (part.type === "image" || part.type === "file") return "[image]";
          if (part.type === "reasoning") return `[thinking] ${part.text}`;
          if (part.type === "tool-call")
            return calls.call(String(part.toolCallId), String(part.toolName), part.input);
          return `[${part.type}]`;
        }),
      ),
    );
  }
  return lines;
}

function fromAgentsItems(items: readonly Json[]): string[] {
  return fromResponses(
    items.map((item) => {
      // The Agents SDK names Responses' fields in camel case.
      if (item.type === "function_call") return { ...item, call_id: item.callId };
      if (item.type === "function_call_result") {
        const output = item.output as Json | string;
        return {
          type: "function_call_output",
          call_id: item.callId,
          output: typeof output === "string" ? output : (output.text ?? JSON.stringify(output)),
        };
      }
      return item;
    }),
  );
}

// --- the doors that write ---

let server: DevServer;
let repo: RemoteRepo;

async function post(path: string, body: unknown, contentType = "application/json"): Promise<void> {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": contentType },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
}

/** Appends a model API's messages over HTTP, one request for the whole exchange. */
async function appendOverHttp(
  id: string,
  format: string,
  model: string,
  messages: unknown[],
): Promise<string> {
  await post("/v1/sessions", { id });
  await post(`/v1/sessions/${id}/entries`, {
    entries: messages.map((message) => ({ type: "message", format, message, model })),
  });
  return id;
}

const jsonl = (lines: unknown[]) => `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`;

interface Door {
  name: string;
  /** Writes the conversation into the session `id` (or one the door names): resolves to the session's id. */
  write(id: string): Promise<string>;
  /** The model that answered, as `<provider>/<modelId>`. */
  model: string;
  /** Whether its reasoning carries what its provider needs to take it back (a signature, encrypted content). */
  signed: boolean;
  /** Whether it keeps the reasoning at all. */
  reasoning: boolean;
  /**
   * Whether it keeps each line of a streamed answer as a message of its own: what it is handed
   * comes a line at a time, and an entry is never changed once written.
   */
  keepsLinesApart?: boolean;
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

const doors: Door[] = [
  {
    name: "HTTP, our own messages",
    model: "openai/gpt-4o",
    signed: false,
    reasoning: true,
    async write(id) {
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
      await post("/v1/sessions", { id });
      await post(`/v1/sessions/${id}/entries`, {
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
    write: (id) =>
      appendOverHttp(id, "openai-chat", "openai/gpt-4o", [
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
    write: (id) =>
      appendOverHttp(id, "openai-responses", "openai/gpt-4o", [
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
    write: (id) =>
      appendOverHttp(id, "anthropic", "anthropic/claude-sonnet-4-5", [
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
    write: (id) =>
      appendOverHttp(id, "gemini", "google/gemini-2.5-pro", [
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
    write: (id) =>
      appendOverHttp(id, "ai-sdk", "openai/gpt-4o", [
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
    async write(id) {
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
    async write(id) {
      await post(
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
    async write() {
      const store = new CfSessionsStore({ repo });
      const key = { projectKey: "/work/weather", sessionId: crypto.randomUUID() };
      await store.append(key, claudeCodeLines(key.sessionId) as never);
      return store.sessionIdFor(key);
    },
  },
  {
    name: "Codex import",
    model: "openai/gpt-5.1-codex",
    signed: false,
    reasoning: true,
    async write(id) {
      let second = 0;
      const at = () => `2026-01-01T00:00:${String(++second).padStart(2, "0")}.000Z`;
      const item = (payload: unknown) => ({ timestamp: at(), type: "response_item", payload });
      await post(
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
    async write(id) {
      await new CfSessionsSession({ repo, sessionId: id }).addItems([
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
];

// --- the doors that read ---

interface Reader {
  name: string;
  /** How it shows the reasoning of what a door wrote. */
  reasoning(door: Door): Reasoning;
  /** The lines it reads of the transcript (all unless said). */
  lines?: (all: string[]) => string[];
  /** Whether it shows each stored message apart; a model API's shape joins an answer's messages. */
  showsEachMessage?: boolean;
  read(id: string): Promise<string[]>;
}

async function contextOver(id: string, format: string, model: string): Promise<Json[]> {
  const response = await fetch(`${server.url}/v1/sessions/${id}/context?format=${format}&model=${model}`);
  if (!response.ok) throw new Error(`context ${format}: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as Json;
  return records(body.messages ?? body.input ?? body.contents);
}

/** Reasoning goes back as reasoning to the model that gave it, when it carries what that model checks. */
const replayedTo =
  (model: string, { needsSignature }: { needsSignature: boolean }) =>
  (door: Door): Reasoning =>
    !door.reasoning ? "none" : door.model === model && (door.signed || !needsSignature) ? "kept" : "text";
const asReasoning = (door: Door): Reasoning => (door.reasoning ? "kept" : "none");

const readers: Reader[] = [
  {
    name: "the context, our own shape",
    reasoning: asReasoning,
    showsEachMessage: true,
    read: async (id) => fromOurs((await (await repo.open(id)).buildContext()).messages),
  },
  {
    name: "the context as openai-chat",
    // Chat Completions takes no reasoning back.
    reasoning: (door) => (door.reasoning ? "text" : "none"),
    read: async (id) => fromOpenAIChat(await contextOver(id, "openai-chat", "openai/gpt-4o")),
  },
  {
    name: "the context as openai-responses",
    reasoning: replayedTo("openai/gpt-4o", { needsSignature: true }),
    read: async (id) => fromResponses(await contextOver(id, "openai-responses", "openai/gpt-4o")),
  },
  {
    name: "the context as anthropic",
    reasoning: replayedTo("anthropic/claude-sonnet-4-5", { needsSignature: true }),
    read: async (id) => fromAnthropic(await contextOver(id, "anthropic", "anthropic/claude-sonnet-4-5")),
  },
  {
    name: "the context as gemini",
    reasoning: replayedTo("google/gemini-2.5-pro", { needsSignature: true }),
    read: async (id) => fromGemini(await contextOver(id, "gemini", "google/gemini-2.5-pro")),
  },
  {
    name: "the context as ai-sdk",
    reasoning: replayedTo("openai/gpt-4o", { needsSignature: false }),
    read: async (id) => fromAISDK(await contextOver(id, "ai-sdk", "openai/gpt-4o")),
  },
  {
    name: "OpenAI Agents getItems",
    reasoning: asReasoning,
    read: async (id) =>
      fromAgentsItems((await new CfSessionsSession({ repo, sessionId: id }).getItems()) as unknown as Json[]),
  },
  {
    name: "compaction's input",
    reasoning: asReasoning,
    showsEachMessage: true,
    // The last answer is what a compaction keeps however little it keeps.
    lines: (all) => all.slice(0, -1),
    async read(id) {
      const path = await (await repo.open(id)).getBranch();
      const { messagesToSummarize, turnPrefixMessages } = prepareCompaction(path, { keepRecentTokens: 0 });
      return fromOurs([...messagesToSummarize, ...turnPrefixMessages]);
    },
  },
];

beforeAll(async () => {
  server = await startDevServer();
  repo = createClient({ baseUrl: server.url });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

describe.each(doors)("written through $name", (door) => {
  let id = `matrix-${door.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}-${crypto.randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    id = await door.write(id);
  }, 60_000);

  it.each(readers)("reads as the same conversation through $name", async (reader) => {
    const all = transcript(reader.reasoning(door), {
      split: door.keepsLinesApart === true && reader.showsEachMessage === true,
    });
    expect(await reader.read(id)).toEqual(reader.lines ? reader.lines(all) : all);
  });

  it("is found by a word of the tool's result", async () => {
    const page = await (await repo.open(id)).search("heliotrope");
    expect(page.hits.length).toBeGreaterThan(0);
    // The tenant's index hears of a session's writes shortly after them.
    await vi.waitFor(
      async () => {
        const tenant = await repo.search("heliotrope", { prefix: id });
        expect(tenant.results.map((result) => result.session.id)).toEqual([id]);
      },
      { timeout: 20_000, interval: 200 },
    );
  });
});
