import { readFileSync } from "node:fs";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentMessage, AssistantMessage } from "../../../src/core/messages";
import { fromAnthropic } from "../../../src/core/providers/from-anthropic";
import { fromGemini } from "../../../src/core/providers/from-gemini";
import { fromOpenAIChat } from "../../../src/core/providers/from-openai-chat";
import { fromOpenAIResponses } from "../../../src/core/providers/from-openai-responses";
import { toAnthropic } from "../../../src/core/providers/to-anthropic";
import { toGemini } from "../../../src/core/providers/to-gemini";
import { toOpenAIChat } from "../../../src/core/providers/to-openai-chat";
import { toOpenAIResponses } from "../../../src/core/providers/to-openai-responses";
import { type RecordingServer, startRecordingServer } from "./recording-server";
import { assistant, call, context, image, result, type Source, text, thinking, user } from "./support";

/*
 * An agent loop per API through its official client, against a local server that records what
 * went over the wire: the converted context is sent as it was built, the API's answer is read
 * back with `from*`, the caller's tool result too, and the next request carries the model's own
 * reply as the API wants it replayed.
 */

const FIXTURES = join(import.meta.dirname, "../../fixtures/providers");
const fixture = (name: string) =>
  JSON.parse(readFileSync(join(FIXTURES, name), "utf8")) as Record<string, unknown>;

/** Another model's turn that trips every rule: foreign thinking, a Responses id of 300+ characters, an image result. */
const FOREIGN: Source = { provider: "openrouter", api: "openai-completions", model: "some-model" };
const LONG_ID = `call_Q1|fc_${"Zm9v+/=".repeat(50)}`;

function history(own: Source): AgentMessage[] {
  return [
    user([text("What is in a.png? \uD83D🙂"), image()]),
    assistant(
      [thinking("I should read it.", "OPAQUE"), text("Reading."), call(LONG_ID, "read", { path: "a.png" })],
      FOREIGN,
    ),
    result(LONG_ID, "read", [text("An image:"), image()]),
    assistant([text("Half"), call("lost", "read")], own, "aborted"),
    result("lost", "read", "stale"),
    user("Describe it, then check the logs."),
  ];
}

let server: RecordingServer;
beforeAll(async () => {
  server = await startRecordingServer();
});
afterAll(() => server.close());

function lastBody(): Record<string, unknown> {
  return server.requests.at(-1)?.body as Record<string, unknown>;
}

function roundTrip<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

describe("OpenAI Chat Completions through the openai client", () => {
  it("sends the context as built, and the reply and its result on the next turn", async () => {
    const client = new OpenAI({ apiKey: "test", baseURL: `${server.url}/v1`, maxRetries: 0 });
    const model = { provider: "openai", modelId: "gpt-4o-mini" };
    const own: Source = { provider: "openai", api: "openai-completions", model: "gpt-4o-mini" };
    const messages = history(own);

    const request = toOpenAIChat(context(messages), model);
    server.reply(fixture("openai-chat-tool-call.json"));
    const completion = await client.chat.completions.create({ model: "gpt-4o-mini", ...request });
    expect(server.requests.at(-1)?.path).toBe("/v1/chat/completions");
    expect(lastBody().messages).toEqual(roundTrip(request.messages));
    expect(server.requests.at(-1)?.raw).not.toMatch(/\\ud83d(?!\\ude42)/i);

    const reply = fromOpenAIChat(completion, { model })[0] as AssistantMessage;
    const toolResult = fromOpenAIChat(
      { role: "tool", tool_call_id: "call_abc123", content: "Sunny, 22°C" },
      { history: [...messages, reply] },
    );
    const next = toOpenAIChat(context([...messages, reply, ...toolResult]), model);
    server.reply(fixture("openai-chat-tool-call.json"));
    await client.chat.completions.create({ model: "gpt-4o-mini", ...next });
    const sent = lastBody().messages as unknown[];
    expect(sent.slice(-2)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_abc123",
            type: "function",
            function: { name: "get_current_weather", arguments: '{"location":"Boston, MA"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_abc123", content: "Sunny, 22°C" },
    ]);
  });
});

describe("OpenAI Responses through the openai client", () => {
  it("sends the context as built, and replays reasoning and the function call item for item", async () => {
    const client = new OpenAI({ apiKey: "test", baseURL: `${server.url}/v1`, maxRetries: 0 });
    const model = { provider: "openai", modelId: "o3-2025-04-16" };
    const own: Source = { provider: "openai", api: "openai-responses", model: "o3-2025-04-16" };
    const messages = history(own);

    const request = toOpenAIResponses(context(messages), model);
    const answer = fixture("openai-responses-reasoning-function-call.json");
    server.reply(answer);
    const response = await client.responses.create({ model: "o3-2025-04-16", ...request });
    expect(server.requests.at(-1)?.path).toBe("/v1/responses");
    expect(lastBody().instructions).toBe("You are terse.");
    expect(lastBody().input).toEqual(roundTrip(request.input));

    const reply = fromOpenAIResponses(response, { model })[0] as AssistantMessage;
    const output = fromOpenAIResponses(
      { type: "function_call_output", call_id: "call_2mhz5FtwkZnzXQkTOMtYZpZH", output: "3 papers" },
      { history: [...messages, reply] },
    );
    server.reply(answer);
    await client.responses.create({
      model: "o3-2025-04-16",
      ...toOpenAIResponses(context([...messages, reply, ...output]), model),
    });
    const items = (lastBody().input as unknown[]).slice(-3);
    const original = answer.output as Array<Record<string, unknown>>;
    expect(items[0]).toEqual(original[0]);
    expect(original[1]).toMatchObject(items[1] as object);
    expect(items[2]).toEqual({
      type: "function_call_output",
      call_id: "call_2mhz5FtwkZnzXQkTOMtYZpZH",
      output: "3 papers",
    });
  });
});

describe("Anthropic Messages through the @anthropic-ai/sdk client", () => {
  it("sends the context as built, and replays signed thinking with the tool use", async () => {
    const client = new Anthropic({ apiKey: "test", baseURL: server.url, maxRetries: 0 });
    const model = { provider: "anthropic", modelId: "claude-sonnet-4-6" };
    const own: Source = { provider: "anthropic", api: "anthropic-messages", model: "claude-sonnet-4-6" };
    const messages = history(own);

    const request = toAnthropic(context(messages), model);
    const answer = fixture("anthropic-thinking-tool-use.json");
    server.reply(answer);
    const message = await client.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 2048,
      ...request,
    });
    expect(server.requests.at(-1)?.path).toBe("/v1/messages");
    expect(lastBody().system).toBe("You are terse.");
    expect(lastBody().messages).toEqual(roundTrip(request.messages));

    const reply = fromAnthropic(message, { model })[0] as AssistantMessage;
    const turn = fromAnthropic(
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9", content: "no errors" },
        ],
      },
      { history: [...messages, reply] },
    );
    server.reply(answer);
    await client.messages.create({
      model: "claude-sonnet-4-6",
      max_tokens: 2048,
      ...toAnthropic(context([...messages, reply, ...turn]), model),
    });
    const sent = (lastBody().messages as Array<{ role: string; content: unknown[] }>).slice(-2);
    const [thinkingBlock, toolUse] = answer.content as Array<Record<string, unknown>>;
    expect(sent[0]?.content[0]).toEqual(thinkingBlock);
    expect(toolUse).toMatchObject(sent[0]?.content[1] as object);
    expect(sent[1]).toEqual({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9",
          content: "no errors",
          is_error: false,
        },
      ],
    });
  });
});

describe("Gemini through the @google/genai client", () => {
  it("sends the contents as built, and replays the function call with its signature", async () => {
    const client = new GoogleGenAI({ apiKey: "test", httpOptions: { baseUrl: server.url } });
    const model = { provider: "google", modelId: "gemini-3-pro-preview" };
    const own: Source = { provider: "google", api: "google-generative-ai", model: "gemini-3-pro-preview" };
    const messages = history(own);

    const { contents, systemInstruction } = toGemini(context(messages), model);
    const answer = fixture("gemini-3-function-call.json");
    server.reply(answer);
    const response = await client.models.generateContent({
      model: "gemini-3-pro-preview",
      contents,
      config: { systemInstruction },
    });
    expect(server.requests.at(-1)?.path).toMatch(/\/models\/gemini-3-pro-preview:generateContent$/);
    expect(lastBody().contents).toEqual(roundTrip(contents));
    expect(lastBody().systemInstruction).toMatchObject(roundTrip(systemInstruction) as object);

    const reply = fromGemini(response, { model })[0] as AssistantMessage;
    const results = fromGemini(
      { role: "user", parts: [{ functionResponse: { name: "weather", response: { output: "fog" } } }] },
      { history: [...messages, reply] },
    );
    expect(results[0]).toMatchObject({
      role: "toolResult",
      toolCallId: (reply.content[0] as { id: string }).id,
    });
    server.reply(answer);
    const next = toGemini(context([...messages, reply, ...results]), model);
    await client.models.generateContent({ model: "gemini-3-pro-preview", contents: next.contents });
    const sent = (lastBody().contents as unknown[]).slice(-2);
    expect(sent[0]).toEqual((answer.candidates as Array<{ content: unknown }>)[0]?.content);
    expect(sent[1]).toEqual({
      role: "user",
      parts: [{ functionResponse: { name: "weather", response: { output: "fog" } } }],
    });
  });
});
