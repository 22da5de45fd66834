import { getSessionMessages } from "@anthropic-ai/claude-agent-sdk";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createClient, type RemoteRepo } from "../../src/client";
import type { AgentMessage } from "../../src/core";
import { prepareCompaction } from "../../src/core/public/compaction";
import { CfSessionsChatStore } from "../../src/frameworks/ai-sdk";
import { CfSessionsStore } from "../../src/frameworks/claude-agent-sdk";
import { CfSessionsSaver } from "../../src/frameworks/langgraph";
import { CfSessionsSession } from "../../src/frameworks/openai-agents";
import {
  ANSWER,
  ARGS,
  CONVERSATION_DOORS,
  type Door,
  FOLLOW_UP,
  QUESTION,
  RESULT,
  SECOND_ANSWER,
  THOUGHT,
  TOOL,
} from "../support/conversation-doors";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * One conversation through every door. The same exchange (a question with an image, reasoning and
 * a tool call, its result, the answer, then a second turn) is written through each way into the
 * service, and read back through every other: the context in each model API's shape, the Agents
 * SDK's items, the AI SDK's UI messages, the session's search and the input of its compaction.
 * Each read is brought to one plain transcript, so a door that turned a tool call into something
 * the user said, lost the result or the tool's name, fails on the line where it did.
 *
 * Every door keeps the image. Reasoning goes back to a model API as reasoning only to the model
 * that gave it, and only with what that API checks (a signature, encrypted content); to any other
 * it is passed on as text, and Chat Completions takes none back (`replayedTo`). docs/frameworks.md
 * has the same table.
 */

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

/**
 * Names of the calls seen so far, by id: a tool's result is shown with the name it carries, else
 * with its call's.
 */
class Calls {
  readonly #names = new Map<string, string>();
  call(id: string, name: string, args: unknown): string {
    this.#names.set(id, name);
    return `[call ${name} ${argsText(args)}]`;
  }
  result(id: string, text: string, name?: unknown): string {
    const named = typeof name === "string" ? name : this.#names.get(id);
    return `tool ${named ?? `(unknown call ${id})`}: ${text}`;
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
      lines.push(calls.result(String(m.toolCallId), textOf(m.content), m.toolName));
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
      lines.push(calls.result(String(item.call_id), textOf(item.output), item.name));
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

/** LangChain messages, as a graph's state holds them. */
function fromLangChain(messages: readonly Json[]): string[] {
  const calls = new Calls();
  const roles: Record<string, string> = { human: "user", ai: "assistant" };
  return messages.map((m) => {
    const type = (m as unknown as { getType(): string }).getType();
    if (type === "tool") return calls.result(String(m.tool_call_id), textOf(m.content), m.name);
    const parts =
      typeof m.content === "string"
        ? [m.content]
        : records(m.content).map((part) =>
            part.type === "text"
              ? String(part.text)
              : part.type === "image_url"
                ? "[image]"
                : part.type === "reasoning"
                  ? `[thinking] ${part.reasoning}`
                  : `[${part.type}]`,
          );
    const toolCalls = records(m.tool_calls).map((call) =>
      calls.call(String(call.id), String(call.name), call.args),
    );
    return line(roles[type] ?? type, [...parts, ...toolCalls]);
  });
}

/** The AI SDK's UI messages: an answer's steps are its assistant messages, a tool part its call and result. */
function fromUIMessages(messages: readonly Json[]): string[] {
  const lines: string[] = [];
  for (const m of messages) {
    const parts = records(m.parts);
    if (m.role !== "assistant") {
      lines.push(
        line(
          String(m.role),
          parts.map((part) =>
            part.type === "text" ? String(part.text) : part.type === "file" ? "[image]" : `[${part.type}]`,
          ),
        ),
      );
      continue;
    }
    let step: string[] = [];
    let results: string[] = [];
    const endStep = () => {
      if (step.length > 0) lines.push(line("assistant", step), ...results);
      step = [];
      results = [];
    };
    for (const part of parts) {
      const type = String(part.type);
      if (type === "step-start") endStep();
      else if (type === "text") step.push(String(part.text));
      else if (type === "reasoning") step.push(`[thinking] ${part.text}`);
      else if (type.startsWith("tool-")) {
        const name = type.slice("tool-".length);
        step.push(`[call ${name} ${argsText(part.input)}]`);
        if (part.state === "output-available")
          results.push(
            `tool ${name}: ${typeof part.output === "string" ? part.output : JSON.stringify(part.output)}`,
          );
      } else step.push(`[${type}]`);
    }
    endStep();
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
          name: item.name,
          output: typeof output === "string" ? output : (output.text ?? JSON.stringify(output)),
        };
      }
      return item;
    }),
  );
}

let server: DevServer;
let repo: RemoteRepo;

// --- the doors that read ---

interface Reader {
  name: string;
  /** How it shows the reasoning of what a door wrote. */
  reasoning(door: Door): Reasoning;
  /** The lines it reads of the transcript (all unless said). */
  lines?: (all: string[]) => string[];
  /**
   * Whether it shows the answer's reasoning and call apart, as two messages, for what `door` wrote
   * (a model API's shape joins an answer's messages).
   */
  splits?: (door: Door) => boolean;
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
/** A read that shows each stored message apart. */
const eachMessage = (door: Door) => door.keepsLinesApart === true;

const readers: Reader[] = [
  {
    name: "the context, our own shape",
    reasoning: asReasoning,
    splits: eachMessage,
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
    // Other reasoning is the text of the answer, as format=openai-responses sends it.
    reasoning: (door) => (!door.reasoning ? "none" : door.reasoningItems ? "kept" : "text"),
    read: async (id) =>
      fromAgentsItems((await new CfSessionsSession({ repo, sessionId: id }).getItems()) as unknown as Json[]),
  },
  {
    name: "AI SDK loadChat",
    reasoning: asReasoning,
    splits: eachMessage,
    read: async (id) =>
      fromUIMessages(
        (await new CfSessionsChatStore({ repo, chatIdIsSessionId: true }).loadChat(id)) as unknown as Json[],
      ),
  },
  {
    name: "Claude Agent SDK getSessionMessages, through the store",
    // The SDK shows each line of a transcript as a message.
    splits: (door) => door.keepsLinesApart === true || door.hasStreamedLines === true,
    // A Claude Code transcript sends back as thinking only what Anthropic signed.
    reasoning: (door) =>
      !door.reasoning ? "none" : door.model.startsWith("anthropic/") && door.signed ? "kept" : "text",
    async read(id) {
      const sessionStore = new CfSessionsStore({ repo, keyIsSessionId: true });
      const messages = await getSessionMessages(id, { sessionStore, dir: "/work/weather" });
      return fromAnthropic(messages.map((message) => message.message as Json));
    },
  },
  {
    name: "LangGraph getTuple, a thread on the session",
    reasoning: asReasoning,
    splits: eachMessage,
    async read(id) {
      // The graph's thread is the session, named by its id.
      const saver = new CfSessionsSaver({ repo, threadIdIsSessionId: true });
      const tuple = await saver.getTuple({ configurable: { thread_id: id } });
      return fromLangChain(records(tuple?.checkpoint.channel_values.messages));
    },
  },
  {
    name: "compaction's input",
    reasoning: asReasoning,
    splits: eachMessage,
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

describe.each(CONVERSATION_DOORS)("written through $name", (door) => {
  // Claude Code names sessions by UUID, and the Claude Agent SDK reads no other.
  let id: string = crypto.randomUUID();
  beforeAll(async () => {
    id = await door.write(id, { url: server.url, repo });
  }, 60_000);

  it.each(readers)("reads as the same conversation through $name", async (reader) => {
    const all = transcript(reader.reasoning(door), {
      split: reader.splits?.(door) === true,
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
