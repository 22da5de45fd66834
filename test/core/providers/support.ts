import type { SessionContext } from "../../../src/core/context";
import type {
  AgentMessage,
  AssistantMessage,
  ImageContent,
  TextContent,
  ThinkingContent,
  ToolCall,
  ToolResultMessage,
  UserMessage,
} from "../../../src/core/messages";
import { contextInFormat } from "../../../src/core/providers/convert";
import type { ContextFormat, TargetModel } from "../../../src/core/providers/target";
import type { AISDKModelMessage } from "../../../src/core/providers/to-ai-sdk";
import type { AISDKUIMessage } from "../../../src/core/providers/to-ai-sdk-ui";
import type { AnthropicMessage } from "../../../src/core/providers/to-anthropic";
import type { GeminiContent } from "../../../src/core/providers/to-gemini";
import type { OpenAIChatMessage } from "../../../src/core/providers/to-openai-chat";
import type { ResponsesInputItem } from "../../../src/core/providers/to-openai-responses";

/*
 * Conversations for the converter tests, and one reader per target that says what a converted
 * request holds in neutral terms (turns, calls, results, thinking sent back), so each hard case
 * is asserted once for all six targets.
 */

export const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

let clock = 1_700_000_000_000;

export function user(content: string | Array<TextContent | ImageContent>): UserMessage {
  return { role: "user", content, timestamp: clock++ };
}

export function image(data = PNG, mimeType = "image/png"): ImageContent {
  return { type: "image", data, mimeType };
}

export function text(value: string, textSignature?: string): TextContent {
  return textSignature ? { type: "text", text: value, textSignature } : { type: "text", text: value };
}

export function thinking(value: string, thinkingSignature?: string, redacted?: boolean): ThinkingContent {
  const block: ThinkingContent = { type: "thinking", thinking: value };
  if (thinkingSignature) block.thinkingSignature = thinkingSignature;
  if (redacted) block.redacted = true;
  return block;
}

export function call(id: string, name: string, args: Record<string, unknown> = {}): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

export interface Source {
  provider: string;
  api: string;
  model: string;
}

export const ANTHROPIC: Source = {
  provider: "anthropic",
  api: "anthropic-messages",
  model: "claude-sonnet-4-5",
};
export const OPENAI_CHAT: Source = { provider: "openai", api: "openai-completions", model: "gpt-4o" };
export const OPENAI_RESPONSES: Source = { provider: "openai", api: "openai-responses", model: "gpt-5" };
export const GEMINI: Source = {
  provider: "google",
  api: "google-generative-ai",
  model: "gemini-3-pro-preview",
};

export function assistant(
  content: AssistantMessage["content"],
  source: Source = ANTHROPIC,
  stopReason?: string,
): AssistantMessage {
  const hasCalls = content.some((block) => block.type === "toolCall");
  return {
    role: "assistant",
    content,
    api: source.api,
    provider: source.provider,
    model: source.model,
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: stopReason ?? (hasCalls ? "toolUse" : "stop"),
    timestamp: clock++,
  };
}

export function result(
  toolCallId: string,
  toolName: string,
  content: string | Array<TextContent | ImageContent>,
  isError = false,
): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId,
    toolName,
    content: typeof content === "string" ? [{ type: "text", text: content }] : content,
    isError,
    timestamp: clock++,
  };
}

export function context(messages: AgentMessage[], systemPrompt = "You are terse."): SessionContext {
  return { systemPrompt, messages, thinkingLevel: "off", model: null, activeToolNames: null };
}

/** The model each target is asked for in the tests: the source of its own replies. */
export const TARGET_SOURCE: Record<ContextFormat, Source> = {
  "openai-chat": OPENAI_CHAT,
  "openai-responses": OPENAI_RESPONSES,
  anthropic: ANTHROPIC,
  gemini: GEMINI,
  "ai-sdk": ANTHROPIC,
  "ai-sdk-ui": ANTHROPIC,
};

export function targetModel(format: ContextFormat, imageInput = true): TargetModel {
  const source = TARGET_SOURCE[format];
  const model: TargetModel = { provider: source.provider, modelId: source.model, imageInput };
  // The AI SDK formats take the provider API to be the one the reply came from.
  if (format !== "ai-sdk" && format !== "ai-sdk-ui") model.api = source.api;
  return model;
}

/** What a converted request holds, read back target-neutrally. */
export interface Facts {
  /** Roles of the turns as the API sees them. */
  roles: string[];
  calls: Array<{ id?: string; name: string; args: unknown }>;
  results: Array<{ id?: string; name?: string; text: string; isError: boolean; images: number }>;
  /** Visible text of user and assistant turns, in order. */
  texts: string[];
  /** Thinking or reasoning sent back natively, with its opaque payload. */
  replayed: Array<{ text: string; signature?: string }>;
  /** Images anywhere outside tool results. */
  images: number;
  system?: string;
}

export const FORMATS: ContextFormat[] = [
  "openai-chat",
  "openai-responses",
  "anthropic",
  "gemini",
  "ai-sdk",
  "ai-sdk-ui",
];

export function convert(format: ContextFormat, ctx: SessionContext, imageInput = true) {
  return contextInFormat(ctx, format, targetModel(format, imageInput));
}

export function facts(format: ContextFormat, ctx: SessionContext, imageInput = true): Facts {
  const out = convert(format, ctx, imageInput) as unknown as Record<string, unknown>;
  const f: Facts = { roles: [], calls: [], results: [], texts: [], replayed: [], images: 0 };
  switch (format) {
    case "openai-chat":
      readChat(out.messages as OpenAIChatMessage[], f);
      break;
    case "openai-responses":
      if (out.instructions) f.system = out.instructions as string;
      readResponses(out.input as ResponsesInputItem[], f);
      break;
    case "anthropic":
      if (out.system) f.system = out.system as string;
      readAnthropic(out.messages as AnthropicMessage[], f);
      break;
    case "gemini": {
      const system = out.systemInstruction as { parts: Array<{ text: string }> } | undefined;
      if (system) f.system = system.parts[0]?.text;
      readGemini(out.contents as GeminiContent[], f);
      break;
    }
    case "ai-sdk":
      if (out.system) f.system = out.system as string;
      readAISDK(out.messages as AISDKModelMessage[], f);
      break;
    case "ai-sdk-ui":
      readUI(out.messages as AISDKUIMessage[], f);
      break;
  }
  return f;
}

function readChat(messages: OpenAIChatMessage[], f: Facts): void {
  for (const message of messages) {
    if (message.role === "system" || message.role === "developer") {
      // The system prompt, then instructions in the conversation (the other targets' system prompt).
      f.system = [f.system, message.content].filter(Boolean).join("\n\n");
      continue;
    }
    f.roles.push(message.role);
    if (message.role === "user") {
      if (typeof message.content === "string") f.texts.push(message.content);
      else
        for (const part of message.content) {
          if (part.type === "text") f.texts.push(part.text);
          else f.images++;
        }
    } else if (message.role === "assistant") {
      if (message.content) f.texts.push(message.content);
      for (const c of message.tool_calls ?? []) {
        f.calls.push({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) });
      }
      if (message.reasoning_content) f.replayed.push({ text: message.reasoning_content });
    } else {
      f.results.push({ id: message.tool_call_id, text: message.content, isError: false, images: 0 });
    }
  }
}

function readResponses(items: ResponsesInputItem[], f: Facts): void {
  let last = "";
  const push = (role: string) => {
    if (role !== last || role === "user") f.roles.push(role);
    last = role;
  };
  for (const item of items) {
    if ("role" in item && item.role === "user") {
      push("user");
      for (const part of item.content) {
        if (part.type === "input_text") f.texts.push(part.text);
        else f.images++;
      }
    } else if ("role" in item && item.role === "assistant") {
      push("assistant");
      f.texts.push(
        typeof item.content === "string" ? item.content : item.content.map((c) => c.text).join(""),
      );
    } else if ("role" in item && item.role === "developer") {
      // Instructions in the conversation: what the other targets send in the system prompt.
      f.system = [f.system, item.content].filter(Boolean).join("\n\n");
    } else if (item.type === "reasoning") {
      push("assistant");
      f.replayed.push({
        text: item.summary.map((s) => s.text).join(""),
        signature: item.encrypted_content ?? item.id,
      });
    } else if (item.type === "function_call") {
      push("assistant");
      f.calls.push({ id: item.call_id, name: item.name, args: JSON.parse(item.arguments) });
    } else if (item.type === "function_call_output") {
      push("tool");
      const output = item.output;
      f.results.push({
        id: item.call_id,
        text:
          typeof output === "string"
            ? output
            : output.map((p) => (p.type === "input_text" ? p.text : "")).join(""),
        isError: false,
        images: typeof output === "string" ? 0 : output.filter((p) => p.type === "input_image").length,
      });
    }
  }
}

function readAnthropic(messages: AnthropicMessage[], f: Facts): void {
  for (const message of messages) {
    f.roles.push(message.role);
    for (const block of message.content) {
      if (block.type === "text") f.texts.push(block.text);
      else if (block.type === "image") f.images++;
      else if (block.type === "tool_use") f.calls.push({ id: block.id, name: block.name, args: block.input });
      else if (block.type === "thinking")
        f.replayed.push({ text: block.thinking, signature: block.signature });
      else if (block.type === "redacted_thinking") f.replayed.push({ text: "", signature: block.data });
      else if (block.type === "tool_result") {
        const content = block.content ?? "";
        f.results.push({
          id: block.tool_use_id,
          text:
            typeof content === "string"
              ? content
              : content.map((c) => (c.type === "text" ? c.text : "")).join(""),
          isError: block.is_error,
          images: typeof content === "string" ? 0 : content.filter((c) => c.type === "image").length,
        });
      }
    }
  }
}

function readGemini(contents: GeminiContent[], f: Facts): void {
  for (const content of contents) {
    const isResults = content.parts.some((part) => "functionResponse" in part);
    f.roles.push(content.role === "model" ? "assistant" : isResults ? "tool" : "user");
    for (const part of content.parts) {
      if ("functionCall" in part)
        f.calls.push({
          id: part.functionCall.id,
          name: part.functionCall.name,
          args: part.functionCall.args,
        });
      else if ("functionResponse" in part) {
        const r = part.functionResponse;
        f.results.push({
          id: r.id,
          name: r.name,
          text: "error" in r.response ? r.response.error : r.response.output,
          isError: "error" in r.response,
          images: r.parts?.length ?? 0,
        });
      } else if ("inlineData" in part) f.images++;
      else if (part.thought) f.replayed.push({ text: part.text, signature: part.thoughtSignature });
      else f.texts.push(part.text);
    }
  }
}

function readAISDK(messages: AISDKModelMessage[], f: Facts): void {
  for (const message of messages) {
    f.roles.push(message.role);
    if (message.role === "user") {
      if (typeof message.content === "string") f.texts.push(message.content);
      else
        for (const part of message.content) {
          if (part.type === "text") f.texts.push(part.text);
          else f.images++;
        }
    } else if (message.role === "assistant") {
      for (const part of message.content) {
        if (part.type === "text") f.texts.push(part.text);
        else if (part.type === "tool-call")
          f.calls.push({ id: part.toolCallId, name: part.toolName, args: part.input });
        else {
          const anthropic = part.providerOptions?.anthropic;
          const signature = (anthropic?.signature ?? anthropic?.redactedData) as string | undefined;
          if (signature) f.replayed.push({ text: part.text, signature });
        }
      }
    } else {
      for (const part of message.content) {
        const output = part.output;
        f.results.push({
          id: part.toolCallId,
          name: part.toolName,
          text:
            output.type === "content"
              ? output.value.map((v) => (v.type === "text" ? v.text : "")).join("")
              : output.value,
          isError: output.type === "error-text",
          images: output.type === "content" ? output.value.filter((v) => v.type !== "text").length : 0,
        });
      }
    }
  }
}

function readUI(messages: AISDKUIMessage[], f: Facts): void {
  for (const message of messages) {
    f.roles.push(message.role);
    for (const part of message.parts) {
      if (part.type === "text") f.texts.push(part.text);
      else if (part.type === "file") f.images++;
      else if (part.type === "reasoning") {
        const anthropic = part.providerMetadata?.anthropic;
        const signature = (anthropic?.signature ?? anthropic?.redactedData) as string | undefined;
        if (signature) f.replayed.push({ text: part.text, signature });
      } else if (part.type.startsWith("tool-")) {
        const tool = part as Extract<typeof part, { toolCallId: string }>;
        f.calls.push({ id: tool.toolCallId, name: tool.type.slice(5), args: tool.input });
        if (tool.state === "output-available") {
          const output = tool.output;
          const parts = Array.isArray(output) ? (output as Array<TextContent | ImageContent>) : undefined;
          f.results.push({
            id: tool.toolCallId,
            text: parts ? parts.map((p) => (p.type === "text" ? p.text : "")).join("") : String(output),
            isError: false,
            images: parts ? parts.filter((p) => p.type === "image").length : 0,
          });
        } else if (tool.state === "output-error") {
          f.results.push({ id: tool.toolCallId, text: tool.errorText, isError: true, images: 0 });
        }
      }
    }
  }
}
