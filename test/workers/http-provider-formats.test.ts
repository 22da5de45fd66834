import { describe, expect, it } from "vitest";
import type { SessionContext } from "../../src/core/context";
import { contextForModel, contextInFormat, convertProviderMessage } from "../../src/core/providers/convert";
import type { ContextFormat } from "../../src/core/providers/target";
import { CONTEXT_FORMATS } from "../../src/core/providers/target";
import anthropicRedacted from "../fixtures/providers/anthropic-redacted-thinking.json?raw";
import anthropicToolUse from "../fixtures/providers/anthropic-thinking-tool-use.json?raw";
import geminiCall from "../fixtures/providers/gemini-3-function-call.json?raw";
import chatCall from "../fixtures/providers/openai-chat-tool-call.json?raw";
import responsesCall from "../fixtures/providers/openai-responses-reasoning-function-call.json?raw";
import { api, createSession, expectError, info, KEY_A_READ, KEY_B, sid } from "./helpers";

const ANTHROPIC_REPLY = JSON.parse(anthropicToolUse);
const ANTHROPIC_REDACTED = JSON.parse(anthropicRedacted);
const CHAT_REPLY = JSON.parse(chatCall);
const RESPONSES_REPLY = JSON.parse(responsesCall);
const GEMINI_REPLY = JSON.parse(geminiCall);

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

const usage = {
  input: 1,
  output: 1,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** A conversation with what each target treats specially: a signed thinking block, a call, its result, an image. */
const conversation = [
  { type: "model_change", provider: "anthropic", modelId: "claude-sonnet-4-5" },
  {
    type: "message",
    message: {
      role: "user",
      content: [
        { type: "text", text: "What is in this picture, and what is the weather?" },
        { type: "image", data: PNG, mimeType: "image/png" },
      ],
      timestamp: 1_700_000_000_000,
    },
  },
  {
    type: "message",
    message: {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Look, then ask the tool.", thinkingSignature: "SIG-1" },
        { type: "toolCall", id: "toolu_01", name: "weather", arguments: { city: "Paris" } },
      ],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage,
      stopReason: "toolUse",
      timestamp: 1_700_000_000_001,
    },
  },
  {
    type: "message",
    message: {
      role: "toolResult",
      toolCallId: "toolu_01",
      toolName: "weather",
      content: [{ type: "text", text: "Sunny, 21 °C" }],
      isError: false,
      timestamp: 1_700_000_000_002,
    },
  },
  {
    type: "message",
    message: {
      role: "assistant",
      content: [{ type: "text", text: "A red dot; sunny in Paris." }],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage,
      stopReason: "stop",
      timestamp: 1_700_000_000_003,
    },
  },
];

async function sessionWith(entries: unknown[], body: Record<string, unknown> = {}): Promise<string> {
  const id = await createSession({ body: { systemPrompt: "You are terse.", ...body } });
  if (entries.length > 0) {
    const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    expect(res.status, res.text).toBe(201);
  }
  return id;
}

async function ourContext(id: string, query = ""): Promise<SessionContext> {
  const res = await api("GET", `/v1/sessions/${id}/context${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

function contextIn(id: string, query: string, key?: string) {
  return api("GET", `/v1/sessions/${id}/context?${query}`, { key });
}

function append(id: string, body: unknown, key?: string, headers?: Record<string, string>) {
  return api("POST", `/v1/sessions/${id}/entries`, { body, key, headers });
}

/** Asserts a refused write left the session as it was. */
async function unchanged(id: string, before: { entryCount: number; leafId: string | null }) {
  const after = await info(id);
  expect(after.entryCount).toBe(before.entryCount);
  expect(after.leafId).toBe(before.leafId);
}

describe("GET …/context?format=", () => {
  it("answers each of the six formats byte for byte as the library converts the same context", async () => {
    const id = await sessionWith(conversation);
    const context = await ourContext(id);
    for (const format of CONTEXT_FORMATS) {
      const res = await contextIn(id, `format=${format}`);
      expect(res.status, `${format}: ${res.text}`).toBe(200);
      expect(res.headers.get("Content-Type")).toContain("application/json");
      const expected = contextInFormat(context, format, {
        provider: "anthropic",
        modelId: "claude-sonnet-4-5",
      });
      expect(res.text, format).toBe(JSON.stringify(expected));
    }
  });

  it("gives each API its own shape: system prompt, thinking sent back to the same model, calls and results", async () => {
    const id = await sessionWith(conversation);
    const get = async (format: ContextFormat) => (await contextIn(id, `format=${format}`)).body;

    const chat = await get("openai-chat");
    expect(chat.messages[0]).toEqual({ role: "system", content: "You are terse." });
    expect(chat.messages.map((m: { role: string }) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(chat.messages[3]).toMatchObject({ tool_call_id: "toolu_01", content: "Sunny, 21 °C" });

    const responses = await get("openai-responses");
    expect(responses.instructions).toBe("You are terse.");
    expect(responses.input.map((item: { type?: string; role?: string }) => item.type ?? item.role)).toContain(
      "function_call_output",
    );

    const anthropic = await get("anthropic");
    expect(anthropic.system).toBe("You are terse.");
    expect(anthropic.messages[1].content[0]).toEqual({
      type: "thinking",
      thinking: "Look, then ask the tool.",
      signature: "SIG-1",
    });
    expect(anthropic.messages[2].content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_01" });

    const gemini = await get("gemini");
    expect(gemini.systemInstruction).toEqual({ parts: [{ text: "You are terse." }] });
    expect(gemini.contents.map((c: { role: string }) => c.role)).toEqual(["user", "model", "user", "model"]);

    const sdk = await get("ai-sdk");
    expect(sdk.system).toBe("You are terse.");
    expect(sdk.messages[1].content).toContainEqual({
      type: "reasoning",
      text: "Look, then ask the tool.",
      providerOptions: { anthropic: { signature: "SIG-1" } },
    });

    const ui = await get("ai-sdk-ui");
    expect(ui.system).toBeUndefined();
    expect(ui.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
    expect(ui.messages[1].parts).toContainEqual(
      expect.objectContaining({ type: "tool-weather", state: "output-available", output: "Sunny, 21 °C" }),
    );
  });

  it("converts for the model named: another model's thinking becomes text, its signature stays home", async () => {
    const id = await sessionWith(conversation);
    const res = await contextIn(id, "format=anthropic&model=openrouter/anthropic/claude-opus-4");
    expect(res.status, res.text).toBe(200);
    expect(res.body.messages[1].content[0]).toEqual({ type: "text", text: "Look, then ask the tool." });
    expect(res.text).not.toContain("SIG-1");
    expect(res.text).toBe(
      JSON.stringify(
        contextInFormat(await ourContext(id), "anthropic", {
          provider: "openrouter",
          modelId: "anthropic/claude-opus-4",
        }),
      ),
    );
  });

  it("replaces images with a note for a model without image input", async () => {
    const id = await sessionWith(conversation);
    const withImages = await contextIn(id, "format=openai-chat");
    expect(withImages.text).toContain(PNG);
    const without = await contextIn(id, "format=openai-chat&imageInput=false");
    expect(without.status, without.text).toBe(200);
    expect(without.text).not.toContain(PNG);
    expect(without.text).toContain("image omitted");
  });

  it("converts the context of another leaf", async () => {
    const id = await sessionWith(conversation);
    const { entries } = (await api("GET", `/v1/sessions/${id}/branch`)).body;
    const question = entries[1].id;
    const res = await contextIn(id, `format=gemini&leafId=${question}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.contents).toHaveLength(1);
    expect(res.text).toBe(
      JSON.stringify(
        contextForModel(await ourContext(id, `?leafId=${question}`), "gemini", {
          model: { provider: "anthropic", modelId: "claude-sonnet-4-5" },
        }),
      ),
    );
  });

  it("asks for a model when the session has none, except for UI messages", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Hi.", timestamp: 1 } },
    ]);
    const res = await contextIn(id, "format=anthropic");
    expectError(res, 400, "invalid_request");
    expect(res.body.error.message).toContain("<provider>/<modelId>");
    const named = await contextIn(id, "format=anthropic&model=anthropic/claude-sonnet-4-5");
    expect(named.body).toEqual({
      system: "You are terse.",
      messages: [{ role: "user", content: [{ type: "text", text: "Hi." }] }],
    });
    const ui = await contextIn(id, "format=ai-sdk-ui");
    expect(ui.status, ui.text).toBe(200);
    expect(ui.body.messages[0].parts).toEqual([{ type: "text", text: "Hi.", state: "done" }]);
  });

  it("refuses an unknown format (415), a malformed model or image flag (400), and options without a format", async () => {
    const id = await sessionWith(conversation);
    const format = await contextIn(id, "format=cohere");
    expectError(format, 415, "unsupported_format");
    expect(format.body.error.details.formats).toEqual([...CONTEXT_FORMATS]);
    for (const model of ["claude", "anthropic/", "/claude"]) {
      const res = await contextIn(id, `format=anthropic&model=${encodeURIComponent(model)}`);
      expectError(res, 400, "invalid_request");
      expect(res.body.error.details[0].path).toEqual(["model"]);
    }
    expectError(await contextIn(id, "format=anthropic&imageInput=no"), 400, "invalid_request");
    expectError(await contextIn(id, "model=anthropic/claude-sonnet-4-5"), 400, "invalid_request");
    expectError(await contextIn(id, "format=anthropic&leafId=nowhere"), 404, "not_found");
  });

  it("carries the context's version as ETag, answers If-None-Match with 304, and keeps since to our own shape", async () => {
    const id = await sessionWith(conversation);
    const plain = await api("GET", `/v1/sessions/${id}/context`);
    const res = await contextIn(id, "format=anthropic");
    expect(res.headers.get("ETag")).toBe(plain.headers.get("ETag"));
    const again = await api("GET", `/v1/sessions/${id}/context?format=anthropic`, {
      headers: { "If-None-Match": res.headers.get("ETag") as string },
    });
    expect(again.status).toBe(304);
    const since = await contextIn(id, `format=anthropic&since=${plain.body.version}`);
    expectError(since, 400, "invalid_request");
    expect(since.body.error.message).toContain("since");
  });

  it("refuses a context larger than a model API takes (413), which plain reads still stream", async () => {
    const id = await createSession();
    // Three messages of 12 MiB: one request each, 36 MiB of context.
    const text = "x".repeat(12 * 1024 * 1024);
    for (let i = 0; i < 3; i++) {
      const message = { role: i === 1 ? "assistant" : "user", content: text, timestamp: i };
      const res = await api("POST", `/v1/sessions/${id}/entries`, {
        body: { type: "message", format: "openai-chat", message },
      });
      expect(res.status, res.text).toBe(201);
    }
    const before = await info(id);
    for (const format of ["anthropic", "openai-responses"]) {
      const res = await contextIn(id, `format=${format}&model=openai/gpt-5`);
      expectError(res, 413, "payload_too_large");
      expect(res.body.error.details.limit).toBe(32 * 1024 * 1024);
      expect(res.body.error.message).toContain("compact the session");
    }
    const plain = await api("GET", `/v1/sessions/${id}/context`);
    expect(plain.status).toBe(200);
    expect(plain.body.messages).toHaveLength(3);
    expect(await info(id)).toEqual(before);
  });

  it("is a read: another tenant gets 404, a read-only key gets the context", async () => {
    const id = await sessionWith(conversation);
    expectError(await contextIn(id, "format=anthropic", KEY_B), 404, "not_found");
    expectError(await contextIn(sid("missing"), "format=anthropic"), 404, "not_found");
    const read = await contextIn(id, "format=anthropic", KEY_A_READ);
    expect(read.status, read.text).toBe(200);
    expect(read.body.system).toBe("You are terse.");
  });
});

describe("appending a provider's message", () => {
  it("answers a call a format sent under an id made valid (`functions.read:0`) by the result naming that id", async () => {
    const results = {
      anthropic: (wire: string) => ({
        role: "user",
        content: [{ type: "tool_result", tool_use_id: wire, content: "a's text" }],
      }),
      "openai-chat": (wire: string) => ({ role: "tool", tool_call_id: wire, content: "a's text" }),
    };
    for (const [format, result] of Object.entries(results)) {
      const id = await sessionWith([
        { type: "model_change", provider: "anthropic", modelId: "claude-sonnet-4-5" },
        { type: "message", message: { role: "user", content: "Read a.", timestamp: 1 } },
        {
          type: "message",
          message: {
            role: "assistant",
            content: [{ type: "toolCall", id: "functions.read:0", name: "read", arguments: { path: "a" } }],
            api: "anthropic-messages",
            provider: "anthropic",
            model: "claude-sonnet-4-5",
            usage,
            stopReason: "toolUse",
            timestamp: 2,
          },
        },
      ]);
      const sent = await contextIn(id, `format=${format}`);
      expect(sent.status, sent.text).toBe(200);
      expect(sent.text).toContain('"functions_read_0"');
      const answered = await append(id, { type: "message", format, message: result("functions_read_0") });
      expect(answered.status, answered.text).toBe(201);
      const { messages } = await ourContext(id);
      expect(messages.at(-1), format).toMatchObject({
        role: "toolResult",
        toolCallId: "functions.read:0",
        toolName: "read",
        content: [{ type: "text", text: "a's text" }],
      });
    }
  });

  it("stores an Anthropic reply with its signed thinking, then its tool results named from the call", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Check.", timestamp: 1 } },
    ]);
    const reply = await append(id, {
      type: "message",
      format: "anthropic",
      message: ANTHROPIC_REPLY,
      id: "r1",
    });
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body.entries).toHaveLength(1);
    expect(reply.body.entries[0]).toMatchObject({
      id: "r1",
      type: "message",
      message: {
        role: "assistant",
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude-sonnet-4-6",
        stopReason: "toolUse",
        responseId: ANTHROPIC_REPLY.id,
        content: [
          { type: "thinking", thinkingSignature: ANTHROPIC_REPLY.content[0].signature },
          { type: "toolCall", id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9", name: "checkSandboxErrors" },
        ],
      },
    });
    expect(reply.body.entries[0]).not.toHaveProperty("format");

    const results = await append(id, {
      type: "message",
      format: "anthropic",
      id: "t1",
      message: {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9", content: "no errors" },
          { type: "text", text: "Now summarize." },
        ],
      },
    });
    expect(results.status, results.text).toBe(201);
    const [result, text] = results.body.entries;
    expect(result).toMatchObject({
      id: "t1",
      parentId: "r1",
      message: {
        role: "toolResult",
        toolName: "checkSandboxErrors",
        content: [{ type: "text", text: "no errors" }],
      },
    });
    expect(text).toMatchObject({
      id: "t1:1",
      parentId: "t1",
      message: { role: "user", content: [{ type: "text", text: "Now summarize." }] },
    });
    expect(results.body.leafId).toBe("t1:1");

    // Out again for the model that answered: its thinking goes back signed, in one user turn with the results.
    const out = await contextIn(id, "format=anthropic");
    expect(out.body.messages[1].content[0]).toEqual({
      type: "thinking",
      thinking: ANTHROPIC_REPLY.content[0].thinking,
      signature: ANTHROPIC_REPLY.content[0].signature,
    });
    expect(out.body.messages[2]).toEqual({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9",
          content: "no errors",
          is_error: false,
        },
        { type: "text", text: "Now summarize." },
      ],
    });
  });

  it("keeps Anthropic's redacted thinking and sends it back as it came", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Hm?", timestamp: 1 } },
    ]);
    const res = await append(id, { type: "message", format: "anthropic", message: ANTHROPIC_REDACTED });
    expect(res.status, res.text).toBe(201);
    const out = await contextIn(id, "format=anthropic");
    expect(out.body.messages[1].content).toEqual([
      {
        type: "thinking",
        thinking: ANTHROPIC_REDACTED.content[0].thinking,
        signature: ANTHROPIC_REDACTED.content[0].signature,
      },
      { type: "redacted_thinking", data: ANTHROPIC_REDACTED.content[1].data },
      { type: "text", text: "Based on my analysis..." },
    ]);
  });

  it("stores an OpenAI Chat completion and a tool message answering it", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Weather?", timestamp: 1 } },
    ]);
    const reply = await append(id, { type: "message", format: "openai-chat", message: CHAT_REPLY });
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body.entries[0].message).toMatchObject({
      role: "assistant",
      api: "openai-completions",
      provider: "openai",
      model: "gpt-4o-mini",
      timestamp: CHAT_REPLY.created * 1000,
      content: [
        {
          type: "toolCall",
          id: "call_abc123",
          name: "get_current_weather",
          arguments: { location: "Boston, MA" },
        },
      ],
    });
    const tool = await append(id, {
      type: "message",
      format: "openai-chat",
      message: { role: "tool", tool_call_id: "call_abc123", content: "72 °F" },
    });
    expect(tool.status, tool.text).toBe(201);
    expect(tool.body.entries[0].message).toMatchObject({
      role: "toolResult",
      toolCallId: "call_abc123",
      toolName: "get_current_weather",
    });
    const out = await contextIn(id, "format=openai-chat");
    expect(out.body.messages.slice(2)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_abc123",
            type: "function",
            function: { name: "get_current_weather", arguments: JSON.stringify({ location: "Boston, MA" }) },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_abc123", content: "72 °F" },
    ]);
  });

  it("stores an OpenAI Responses reply with its encrypted reasoning, and a function_call_output", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Search.", timestamp: 1 } },
    ]);
    const reply = await append(id, { type: "message", format: "openai-responses", message: RESPONSES_REPLY });
    expect(reply.status, reply.text).toBe(201);
    const call = RESPONSES_REPLY.output[1];
    expect(reply.body.entries[0].message).toMatchObject({
      api: "openai-responses",
      model: "o3-2025-04-16",
      content: [
        { type: "thinking" },
        { type: "toolCall", id: `${call.call_id}|${call.id}`, name: call.name },
      ],
    });
    const output = await append(id, {
      type: "message",
      format: "openai-responses",
      message: { type: "function_call_output", call_id: call.call_id, output: "3 papers" },
    });
    expect(output.status, output.text).toBe(201);
    expect(output.body.entries[0].message).toMatchObject({
      role: "toolResult",
      toolCallId: `${call.call_id}|${call.id}`,
      toolName: "semantic_scholar_search",
    });
    const out = await contextIn(id, "format=openai-responses");
    expect(out.body.input).toContainEqual(
      expect.objectContaining({ type: "reasoning", encrypted_content: "[redacted]" }),
    );
    expect(out.body.input).toContainEqual({
      type: "function_call_output",
      call_id: call.call_id,
      output: "3 papers",
    });
  });

  it("stores a Gemini reply whose call has no id, and a function response that finds it", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Weather?", timestamp: 1 } },
    ]);
    const reply = await append(id, { type: "message", format: "gemini", message: GEMINI_REPLY });
    expect(reply.status, reply.text).toBe(201);
    const call = reply.body.entries[0].message.content[0];
    expect(call).toMatchObject({
      type: "toolCall",
      name: "weather",
      thoughtSignature: GEMINI_REPLY.candidates[0].content.parts[0].thoughtSignature,
    });
    expect(call.id).toMatch(/^call_/);
    const response = await append(id, {
      type: "message",
      format: "gemini",
      message: {
        role: "user",
        parts: [{ functionResponse: { name: "weather", response: { output: "fog" } } }],
      },
    });
    expect(response.status, response.text).toBe(201);
    expect(response.body.entries[0].message).toMatchObject({
      role: "toolResult",
      toolCallId: call.id,
      toolName: "weather",
    });
    const out = await contextIn(id, "format=gemini");
    expect(out.body.contents[1].parts[0]).toMatchObject({
      functionCall: { name: "weather", args: { location: "San Francisco" } },
      thoughtSignature: GEMINI_REPLY.candidates[0].content.parts[0].thoughtSignature,
    });
    expect(out.body.contents[2].parts[0]).toMatchObject({
      functionResponse: { name: "weather", response: { output: "fog" } },
    });
  });

  it("stores a list of AI SDK messages as several entries, chained under derived ids", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "List files.", timestamp: 1 } },
    ]);
    const res = await append(id, {
      type: "message",
      format: "ai-sdk",
      id: "turn",
      model: "anthropic/claude-sonnet-4-5",
      message: [
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "Use ls.", providerOptions: { anthropic: { signature: "SIG-A" } } },
            { type: "tool-call", toolCallId: "c1", toolName: "ls", input: { path: "." } },
          ],
        },
        {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: "c1",
              toolName: "ls",
              output: { type: "text", value: "a.ts" },
            },
          ],
        },
      ],
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.entries.map((e: { id: string; parentId: string }) => [e.id, e.parentId])).toEqual([
      ["turn", expect.any(String)],
      ["turn:1", "turn"],
    ]);
    expect(res.body.entries[0].message).toMatchObject({
      provider: "anthropic",
      api: "anthropic-messages",
      model: "claude-sonnet-4-5",
      content: [{ type: "thinking", thinking: "Use ls.", thinkingSignature: "SIG-A" }, { type: "toolCall" }],
    });
    expect(res.body.entries[1].message).toMatchObject({
      role: "toolResult",
      toolCallId: "c1",
      toolName: "ls",
    });
    const out = await contextIn(id, "format=ai-sdk");
    expect(out.body.messages[1].content[0]).toEqual({
      type: "reasoning",
      text: "Use ls.",
      providerOptions: { anthropic: { signature: "SIG-A" } },
    });
    expect(out.body.messages[2]).toMatchObject({
      role: "tool",
      content: [{ toolCallId: "c1", toolName: "ls" }],
    });
  });

  it("records replies as the session's model unless the entry names one", async () => {
    const id = await sessionWith([
      { type: "model_change", provider: "azure", modelId: "gpt-4o-mini-deploy" },
      { type: "message", message: { role: "user", content: "Weather?", timestamp: 1 } },
    ]);
    const reply = await append(id, { type: "message", format: "openai-chat", message: CHAT_REPLY });
    expect(reply.body.entries[0].message).toMatchObject({
      api: "openai-completions",
      provider: "azure",
      model: "gpt-4o-mini-deploy",
    });
    const named = await append(id, {
      type: "message",
      format: "openai-chat",
      model: "openai/gpt-4o-mini",
      message: CHAT_REPLY,
    });
    expect(named.body.entries[0].message).toMatchObject({ provider: "openai", model: "gpt-4o-mini" });
    const before = await info(id);
    const bad = await append(id, {
      type: "message",
      format: "openai-chat",
      model: "gpt-4o",
      message: CHAT_REPLY,
    });
    expectError(bad, 400, "invalid_request");
    expect(bad.body.error.details[0].path).toEqual(["model"]);
    await unchanged(id, before);
  });

  it("converts a reply and its tool results sent in one batch, the results reading the reply", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Go.", timestamp: 1 } },
    ]);
    const res = await append(id, {
      entries: [
        { type: "model_change", provider: "anthropic", modelId: "claude-sonnet-4-6" },
        { type: "message", format: "anthropic", message: ANTHROPIC_REPLY, id: "b-reply" },
        {
          type: "message",
          format: "anthropic",
          id: "b-results",
          message: {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: ANTHROPIC_REPLY.content[1].id, content: "ok" }],
          },
        },
        { type: "message", message: { role: "user", content: "Thanks.", timestamp: 2 } },
      ],
    });
    expect(res.status, res.text).toBe(201);
    const [change, reply, result, thanks] = res.body.entries;
    expect(reply).toMatchObject({
      parentId: change.id,
      message: { provider: "anthropic", model: "claude-sonnet-4-6" },
    });
    expect(result).toMatchObject({
      id: "b-results",
      parentId: "b-reply",
      message: { toolName: "checkSandboxErrors" },
    });
    expect(thanks.parentId).toBe("b-results");
    expect(res.body.leafId).toBe(thanks.id);
  });

  it("reads a message appended on a branch against that branch, wherever the head is", async () => {
    const call = (id: string, name: string) => ({
      type: "message",
      id: `a-${name}`,
      message: {
        role: "assistant",
        content: [{ type: "toolCall", id, name, arguments: {} }],
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        usage,
        stopReason: "toolUse",
        timestamp: 5,
      },
    });
    const id = await sessionWith([
      { type: "message", id: "q", message: { role: "user", content: "Go.", timestamp: 1 } },
      call("toolu_read", "read"),
      {
        type: "message",
        id: "q2",
        parentId: "q",
        message: { role: "user", content: "Other.", timestamp: 2 },
      },
      call("toolu_write", "write"),
    ]);
    const res = await append(id, {
      type: "message",
      format: "anthropic",
      parentId: "a-read",
      message: {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_read", content: "text" }],
      },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.entries[0]).toMatchObject({ parentId: "a-read", message: { toolName: "read" } });
  });

  it("finds the call behind a long run of results, read back from storage off the head", async () => {
    const calls = Array.from({ length: 40 }, (_, i) => ({
      type: "toolCall",
      id: `call_${i}`,
      name: `tool${i}`,
      arguments: {},
    }));
    const results = calls.slice(0, 39).map((c, i) => ({
      type: "message",
      id: `res-${i}`,
      message: {
        role: "toolResult",
        toolCallId: c.id,
        toolName: c.name,
        content: [],
        isError: false,
        timestamp: 3,
      },
    }));
    const id = await sessionWith([
      { type: "message", id: "q", message: { role: "user", content: "Go.", timestamp: 1 } },
      {
        type: "message",
        message: {
          role: "assistant",
          content: calls,
          api: "openai-completions",
          provider: "openai",
          model: "gpt-4o",
          usage,
          stopReason: "toolUse",
          timestamp: 2,
        },
      },
      ...results,
      { type: "message", parentId: "q", message: { role: "user", content: "Elsewhere.", timestamp: 4 } },
    ]);
    const res = await append(id, {
      type: "message",
      format: "openai-chat",
      parentId: "res-38",
      message: { role: "tool", tool_call_id: "call_39", content: "last" },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.entries[0].message).toMatchObject({ toolCallId: "call_39", toolName: "tool39" });
  });

  it("finds the calls of a turn stored as one reply per call, at the head and off it", async () => {
    const reply = (id: string, name: string, timestamp: number) => ({
      type: "message",
      id: `reply-${id}`,
      message: {
        role: "assistant",
        content: [{ type: "toolCall", id, name, arguments: {} }],
        api: "google-generative-ai",
        provider: "google",
        model: "gemini-2.5-pro",
        usage,
        stopReason: "toolUse",
        timestamp,
      },
    });
    // More replies than the store reads back at a time.
    const replies = Array.from({ length: 20 }, (_, i) => reply(`call_${i}`, `tool${i}`, 2 + i));
    const id = await sessionWith([
      { type: "message", id: "q", message: { role: "user", content: "Go.", timestamp: 1 } },
      ...replies,
    ]);
    const first = await append(id, {
      type: "message",
      format: "anthropic",
      message: { role: "user", content: [{ type: "tool_result", tool_use_id: "call_0", content: "a" }] },
    });
    expect(first.status, first.text).toBe(201);
    expect(first.body.entries[0].message).toMatchObject({ toolCallId: "call_0", toolName: "tool0" });
    const byName = await append(id, {
      type: "message",
      format: "gemini",
      message: { role: "user", parts: [{ functionResponse: { name: "tool1", response: { output: "b" } } }] },
    });
    expect(byName.status, byName.text).toBe(201);
    expect(byName.body.entries[0].message).toMatchObject({ toolCallId: "call_1", toolName: "tool1" });
    // Kept in the context, answering its call.
    const gemini = await contextIn(id, "format=gemini&model=google/gemini-2.5-pro");
    expect(gemini.status, gemini.text).toBe(200);
    expect(JSON.stringify(gemini.body)).toContain('"output":"b"');
    const offHead = await append(id, {
      type: "message",
      format: "openai-chat",
      parentId: "reply-call_19",
      message: { role: "tool", tool_call_id: "call_0", content: "again" },
    });
    expect(offHead.status, offHead.text).toBe(201);
    expect(offHead.body.entries[0].message).toMatchObject({ toolCallId: "call_0", toolName: "tool0" });
  });

  it("finds the call in a compaction's retained tail", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Go.", timestamp: 1 } },
      {
        type: "compaction",
        id: "c",
        summary: "Earlier work.",
        tokensBefore: 100,
        retainedTail: [
          {
            role: "assistant",
            content: [{ type: "toolCall", id: "call_kept", name: "grep", arguments: {} }],
            api: "openai-completions",
            provider: "openai",
            model: "gpt-4o",
            usage,
            stopReason: "toolUse",
            timestamp: 3,
          },
        ],
      },
      { type: "message", message: { role: "user", content: "Meanwhile.", timestamp: 4 } },
    ]);
    const res = await append(id, {
      type: "message",
      format: "openai-chat",
      parentId: "c",
      message: { role: "tool", tool_call_id: "call_kept", content: "match" },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.entries[0].message).toMatchObject({ toolCallId: "call_kept", toolName: "grep" });
  });

  it("answers a resend with the same id as a replay (200), even after the session moved on", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Check.", timestamp: 1 } },
    ]);
    await append(id, { type: "message", format: "anthropic", message: ANTHROPIC_REPLY, id: "r" });
    const turn = {
      type: "message",
      format: "anthropic",
      id: "results",
      message: {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: ANTHROPIC_REPLY.content[1].id, content: "ok" },
          { type: "text", text: "Go on." },
        ],
      },
    };
    const first = await append(id, turn);
    expect(first.status, first.text).toBe(201);
    const before = await info(id);
    const again = await append(id, turn);
    expect(again.status, again.text).toBe(200);
    expect(again.body.entries).toEqual(first.body.entries);
    await unchanged(id, before);

    // The reply itself, resent after more was appended: still a replay, nothing written.
    await append(id, { type: "message", message: { role: "user", content: "More.", timestamp: 9 } });
    const later = await info(id);
    const reply = await append(id, {
      type: "message",
      format: "anthropic",
      message: ANTHROPIC_REPLY,
      id: "r",
    });
    expect(reply.status, reply.text).toBe(200);
    const results = await append(id, turn);
    expect(results.status, results.text).toBe(200);
    await unchanged(id, later);

    // The same id with another message is a conflict.
    const other = await append(id, { ...turn, message: { role: "user", content: "Different." } });
    expectError(other, 409, "already_exists");
    await unchanged(id, later);
  });

  it("refuses an invalid provider message naming the field, and writes nothing", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Hi.", timestamp: 1 } },
    ]);
    const before = await info(id);
    const bad = await append(id, {
      type: "message",
      format: "anthropic",
      message: { role: "user", content: [{ type: "tool_result", tool_use_id: 7, content: "x" }] },
    });
    expectError(bad, 400, "invalid_request");
    expect(bad.body.error.message).toContain("message.content.0.tool_use_id");
    expect(bad.body.error.details[0].path).toEqual(["message", "content", 0, "tool_use_id"]);
    await unchanged(id, before);

    const inBatch = await append(id, {
      entries: [
        { type: "message", message: { role: "user", content: "fine", timestamp: 2 } },
        { type: "message", format: "openai-chat", message: { role: "tool", content: "no id" } },
      ],
    });
    expectError(inBatch, 400, "invalid_request");
    expect(inBatch.body.error.message).toContain("entry 1");
    expect(inBatch.body.error.details[0].path.slice(0, 2)).toEqual([1, "message"]);
    await unchanged(id, before);

    // A creation time no date can hold, once in milliseconds, could not be exported.
    for (const [format, message, field] of [
      ["openai-chat", { ...CHAT_REPLY, created: 1e16 }, "created"],
      ["openai-responses", { ...RESPONSES_REPLY, created_at: 1e16 }, "created_at"],
      [
        "ai-sdk",
        { response: { messages: [{ role: "assistant", content: "Hi." }], timestamp: 1e18 } },
        "response",
      ],
    ] as const) {
      const farFuture = await append(id, { type: "message", format, message });
      expectError(farFuture, 400, "invalid_request");
      expect(farFuture.body.error.details[0].path.slice(0, 2)).toEqual(["message", field]);
      await unchanged(id, before);
    }

    const empty = await append(id, { type: "message", format: "ai-sdk", message: [] });
    expectError(empty, 400, "invalid_request");
    await unchanged(id, before);

    const longId = await append(id, {
      type: "message",
      format: "anthropic",
      id: "x".repeat(128),
      message: {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "t", content: "a" },
          { type: "text", text: "b" },
        ],
      },
    });
    expectError(longId, 400, "invalid_request");
    await unchanged(id, before);
  });

  it("refuses an unknown format with unsupported_format (415), alone or in a batch", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Hi.", timestamp: 1 } },
    ]);
    const before = await info(id);
    const alone = await append(id, {
      type: "message",
      format: "cohere",
      message: { role: "user", content: "x" },
    });
    expectError(alone, 415, "unsupported_format");
    expect(alone.body.error.details).toEqual({
      path: ["format"],
      formats: ["openai-chat", "openai-responses", "anthropic", "gemini", "ai-sdk"],
    });
    const batch = await append(id, {
      entries: [
        { type: "message", message: { role: "user", content: "fine", timestamp: 2 } },
        { type: "message", format: "ai-sdk-ui", message: { role: "user", parts: [] } },
      ],
    });
    expectError(batch, 415, "unsupported_format");
    expect(batch.body.error.details.path).toEqual(["entries", "1", "format"]);
    await unchanged(id, before);
  });

  it("refuses a null format or batch type as invalid (400): each is a field left out, never null", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Hi.", timestamp: 1 } },
    ]);
    const before = await info(id);
    const ours = { type: "message", message: { role: "user", content: "x", timestamp: 2 } };
    for (const body of [
      { ...ours, format: null },
      { entries: [ours, { ...ours, format: null }] },
      { type: null, entries: [ours] },
    ]) {
      expectError(await append(id, body), 400, "invalid_request");
    }
    await unchanged(id, before);
  });

  it("is a write: another tenant gets 404, a read-only key 403, and nothing is written", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Hi.", timestamp: 1 } },
    ]);
    const before = await info(id);
    const body = { type: "message", format: "anthropic", message: ANTHROPIC_REPLY };
    expectError(await append(id, body, KEY_B), 404, "not_found");
    expectError(await append(id, body, KEY_A_READ), 403, "forbidden");
    await unchanged(id, before);
  });

  it("checks If-Match like any append", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Hi.", timestamp: 1 } },
    ]);
    const before = await info(id);
    const body = { type: "message", format: "anthropic", message: ANTHROPIC_REPLY };
    expectError(await append(id, body, undefined, { "If-Match": '"elsewhere"' }), 412, "leaf_conflict");
    await unchanged(id, before);
    const res = await append(id, body, undefined, { "If-Match": `"${before.leafId}"` });
    expect(res.status, res.text).toBe(201);
  });

  it("stores what the library's converter makes of the same message", async () => {
    const id = await sessionWith([
      { type: "message", message: { role: "user", content: "Weather?", timestamp: 1 } },
    ]);
    const res = await append(id, { type: "message", format: "gemini", message: GEMINI_REPLY });
    expect(res.body.entries.map((e: { message: unknown }) => e.message)).toEqual(
      convertProviderMessage("gemini", GEMINI_REPLY, {
        timestamp: res.body.entries[0].message.timestamp,
      }),
    );
  });
});
