import * as z from "zod";
import { parseJsonField } from "../json";
import type { AgentMessage, AssistantMessage, ImageContent, TextContent, ThinkingContent } from "../messages";
import { MessageTimestamp, NO_USAGE, usage } from "../messages";
import type { ReadOptions, StopReason } from "./incoming";
import {
  assistantMessage,
  byKind,
  hasToolCall,
  invalidMessage,
  isRecord,
  objectOf,
  readWith,
  toolResultMessage,
} from "./incoming";
import { messageSignature } from "./responses-signatures";
import { FORMAT_API } from "./target";
import { parseDataUrl } from "./text";

/*
 * Vercel AI SDK in (versions 5 and 6): a `ModelMessage`, a list of them, or what `generateText`
 * answers (`{response: {messages, id, modelId}, usage, finishReason}`), whose messages hold every
 * step: assistant turns and the results of tools the SDK ran. `providerOptions` stay on each
 * block for the AI SDK to get back; the signatures in them are also copied to pi-ai's fields, so
 * the same model reached through its own API gets them too. Calls and results of tools the
 * provider ran itself are skipped.
 */

/** What the AI SDK keeps for a provider on a part: by provider, its values (`providerOptions`, `providerMetadata`). */
export const AISDKProviderOptionsInput = z.record(z.string(), z.record(z.string(), z.unknown()));

const TextPart = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
  providerOptions: AISDKProviderOptionsInput.optional(),
});
const ImagePart = z.looseObject({
  type: z.literal("image"),
  image: z.string(),
  mediaType: z.string().optional(),
});
const FilePart = z.looseObject({ type: z.literal("file"), data: z.string(), mediaType: z.string() });
const ReasoningPart = z.looseObject({
  type: z.literal("reasoning"),
  text: z.string(),
  providerOptions: AISDKProviderOptionsInput.optional(),
});
const ToolCallPart = z.looseObject({
  type: z.literal("tool-call"),
  toolCallId: z.string(),
  toolName: z.string(),
  input: z.unknown(),
  providerOptions: AISDKProviderOptionsInput.optional(),
  providerExecuted: z.boolean().optional(),
});
const ToolResultOutput = byKind(z.looseObject({ type: z.string() }), "type", {
  text: z.looseObject({ value: z.string() }),
  "error-text": z.looseObject({ value: z.string() }),
  json: z.looseObject({ value: z.unknown() }),
  "error-json": z.looseObject({ value: z.unknown() }),
  content: z.looseObject({ value: z.array(z.looseObject({ type: z.string() })) }),
  "execution-denied": z.looseObject({ reason: z.string().optional() }),
});
const ToolResultPart = z.looseObject({
  type: z.literal("tool-result"),
  toolCallId: z.string(),
  toolName: z.string(),
  output: ToolResultOutput,
});

const AnyPart = z.looseObject({ type: z.string() });

export const AISDKModelMessageInput = z.discriminatedUnion("role", [
  z.looseObject({
    role: z.literal("user"),
    content: z.union([z.string(), z.array(z.discriminatedUnion("type", [TextPart, ImagePart, FilePart]))]),
  }),
  z.looseObject({
    role: z.literal("assistant"),
    content: z.union([
      z.string(),
      z.array(
        byKind(AnyPart, "type", { text: TextPart, reasoning: ReasoningPart, "tool-call": ToolCallPart }),
      ),
    ]),
  }),
  z.looseObject({
    role: z.literal("tool"),
    content: z.array(byKind(AnyPart, "type", { "tool-result": ToolResultPart })),
  }),
]);

const AISDKUsage = z.looseObject({
  inputTokens: z.number().optional(),
  outputTokens: z.number().optional(),
  totalTokens: z.number().optional(),
  cachedInputTokens: z.number().optional(),
  inputTokenDetails: z
    .looseObject({
      noCacheTokens: z.number().optional(),
      cacheReadTokens: z.number().optional(),
      cacheWriteTokens: z.number().optional(),
    })
    .optional(),
});

export const AISDKResultInput = z.looseObject({
  response: z.looseObject({
    messages: z.array(AISDKModelMessageInput),
    id: z.string().optional(),
    modelId: z.string().optional(),
    // A Date in the result itself, an ISO string once it went through JSON.
    timestamp: z.union([z.string(), MessageTimestamp, z.date()]).optional(),
  }),
  usage: AISDKUsage.optional(),
  finishReason: z.string().optional(),
});

type ModelMessage = z.output<typeof AISDKModelMessageInput>;
type ProviderOptions = z.output<typeof AISDKProviderOptionsInput>;
type AssistantContent = Extract<ModelMessage, { role: "assistant" }>["content"];

const PROVIDER_API = new Map<string, string>([
  ["anthropic", FORMAT_API.anthropic],
  ["openai", FORMAT_API["openai-responses"]],
  ["google", FORMAT_API.gemini],
]);

/** The AI SDK's finish reasons in pi-ai's terms. */
export function aiSdkStopReason(finish: unknown, hasCalls: boolean): StopReason {
  if (finish === "content-filter" || finish === "error") {
    return { stopReason: "error", errorMessage: `finishReason: ${finish}` };
  }
  if (finish === "length") return { stopReason: "length" };
  return { stopReason: finish === "tool-calls" || hasCalls ? "toolUse" : "stop" };
}

function option(options: ProviderOptions | undefined, provider: string, key: string): string | undefined {
  const value = options?.[provider]?.[key];
  return typeof value === "string" ? value : undefined;
}

function withOptions<T extends object>(block: T, options: ProviderOptions | undefined): T {
  return options ? { ...block, providerOptions: options } : block;
}

/**
 * An assistant message's content as pi-ai's blocks: each part's `providerOptions` kept on its block,
 * and the signatures in them copied to pi-ai's fields.
 */
export function aiSdkAssistantContent(content: AssistantContent): AssistantMessage["content"] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  const out: AssistantMessage["content"] = [];
  // OpenAI splits one reasoning item into a part per summary, all with the item's id: they are
  // one block again, so the item goes back to OpenAI once.
  let openaiReasoning:
    | { block: ThinkingContent; itemId: string; summary: string[]; encrypted: unknown }
    | undefined;
  for (const raw of content) {
    if (raw.type !== "reasoning") openaiReasoning = undefined;
    if (raw.type === "text") {
      const part = raw as z.output<typeof TextPart>;
      const block: TextContent = { type: "text", text: part.text };
      const thoughtSignature = option(part.providerOptions, "google", "thoughtSignature");
      const itemId = option(part.providerOptions, "openai", "itemId");
      if (thoughtSignature) block.textSignature = thoughtSignature;
      else if (itemId) block.textSignature = messageSignature(itemId);
      out.push(withOptions(block, part.providerOptions));
    } else if (raw.type === "reasoning") {
      const part = raw as z.output<typeof ReasoningPart>;
      const itemId = option(part.providerOptions, "openai", "itemId");
      if (itemId && openaiReasoning?.itemId === itemId) {
        openaiReasoning.summary.push(part.text);
        openaiReasoning.block.thinking = openaiReasoning.summary.join("\n\n");
        openaiReasoning.block.thinkingSignature = openaiItem(openaiReasoning);
        continue;
      }
      const block: ThinkingContent = { type: "thinking", thinking: part.text };
      const signature = option(part.providerOptions, "anthropic", "signature");
      const redacted = option(part.providerOptions, "anthropic", "redactedData");
      const thoughtSignature = option(part.providerOptions, "google", "thoughtSignature");
      if (signature) block.thinkingSignature = signature;
      else if (redacted) {
        block.thinking = "[Reasoning redacted]";
        block.thinkingSignature = redacted;
        block.redacted = true;
      } else if (thoughtSignature) block.thinkingSignature = thoughtSignature;
      const withOpts = withOptions(block, part.providerOptions);
      if (itemId) {
        openaiReasoning = {
          block: withOpts,
          itemId,
          summary: [part.text],
          encrypted: part.providerOptions?.openai?.reasoningEncryptedContent ?? null,
        };
        withOpts.thinkingSignature = openaiItem(openaiReasoning);
      }
      out.push(withOpts);
    } else if (raw.type === "tool-call") {
      const part = raw as z.output<typeof ToolCallPart>;
      if (part.providerExecuted) continue;
      const input =
        typeof part.input === "string" ? parseJsonField(part.input, "tool call input") : part.input;
      const block: AssistantMessage["content"][number] = {
        type: "toolCall",
        id: part.toolCallId,
        name: part.toolName,
        arguments: isRecord(input) ? input : {},
      };
      const thoughtSignature = option(part.providerOptions, "google", "thoughtSignature");
      if (thoughtSignature) block.thoughtSignature = thoughtSignature;
      out.push(withOptions(block, part.providerOptions));
    }
  }
  return out;
}

/** The Responses reasoning item the parts of one OpenAI reasoning item stand for (pi-ai's thinking signature). */
function openaiItem(reasoning: { itemId: string; summary: string[]; encrypted: unknown }): string {
  return JSON.stringify({
    type: "reasoning",
    id: reasoning.itemId,
    summary: reasoning.summary.filter((text) => text).map((text) => ({ type: "summary_text", text })),
    encrypted_content: typeof reasoning.encrypted === "string" ? reasoning.encrypted : null,
  });
}

/** Image bytes from a base64 string or a `data:` URL; other URLs cannot be stored. */
function imageBytes(
  value: string,
  mediaType: string | undefined,
  path: Array<string | number>,
): ImageContent {
  const fromUrl = parseDataUrl(value);
  if (fromUrl) return { type: "image", data: fromUrl.data, mimeType: mediaType ?? fromUrl.mimeType };
  if (/^[a-z][a-z0-9+.-]*:/i.test(value))
    throw invalidMessage("ai-sdk", path, "only base64 data or data: URLs can be stored");
  return { type: "image", data: value, mimeType: mediaType ?? "image/png" };
}

function userContent(
  content: Extract<ModelMessage, { role: "user" }>["content"],
  path: Array<string | number>,
): string | Array<TextContent | ImageContent> {
  if (typeof content === "string") return content;
  return content.map((part, index) => {
    if (part.type === "text") return { type: "text", text: part.text };
    if (part.type === "image") return imageBytes(part.image, part.mediaType, [...path, index, "image"]);
    if (!part.mediaType.startsWith("image/")) {
      throw invalidMessage("ai-sdk", [...path, index, "mediaType"], "only image files can be stored");
    }
    return imageBytes(part.data, part.mediaType, [...path, index, "data"]);
  });
}

function toolOutput(output: { type: string; [key: string]: unknown }): {
  content: Array<TextContent | ImageContent>;
  isError: boolean;
} {
  const text = (value: string) => (value ? [{ type: "text" as const, text: value }] : []);
  const isError = output.type.startsWith("error-") || output.type === "execution-denied";
  switch (output.type) {
    case "text":
    case "error-text":
      return { content: text(String(output.value)), isError };
    case "json":
    case "error-json":
      return { content: text(JSON.stringify(output.value)), isError };
    case "execution-denied":
      return {
        content: text(typeof output.reason === "string" ? output.reason : "Tool execution denied."),
        isError,
      };
    case "content": {
      const content: Array<TextContent | ImageContent> = [];
      for (const part of output.value as Array<Record<string, unknown>>) {
        if (part.type === "text" && typeof part.text === "string")
          content.push({ type: "text", text: part.text });
        else if ((part.type === "media" || part.type === "image-data") && typeof part.data === "string") {
          content.push({ type: "image", data: part.data, mimeType: String(part.mediaType ?? "image/png") });
        }
      }
      return { content, isError: false };
    }
    default:
      return { content: [], isError: false };
  }
}

function inferProvider(messages: readonly ModelMessage[]): string | undefined {
  for (const message of messages) {
    if (message.role !== "assistant" || typeof message.content === "string") continue;
    for (const part of message.content) {
      const options = (part as { providerOptions?: ProviderOptions }).providerOptions;
      for (const key of Object.keys(options ?? {})) if (PROVIDER_API.has(key)) return key;
    }
  }
  return undefined;
}

function timestampOf(value: string | number | Date | undefined): number | undefined {
  if (typeof value === "number" || value === undefined) return value;
  const parsed = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isFinite(parsed) ? parsed : undefined;
}

/** The messages an AI SDK message, message list, or `generateText` result stands for. */
export function fromAISDK(input: unknown, options: ReadOptions = {}): AgentMessage[] {
  const list = Array.isArray(input);
  const result =
    !list && objectOf("ai-sdk", input).response !== undefined
      ? readWith("ai-sdk", AISDKResultInput, input)
      : undefined;
  const messages = list
    ? readWith("ai-sdk", z.array(AISDKModelMessageInput), input)
    : (result?.response.messages ?? [readWith("ai-sdk", AISDKModelMessageInput, input)]);
  const provider = options.model?.provider ?? inferProvider(messages) ?? "ai-sdk";
  const api = options.model?.api ?? PROVIDER_API.get(provider) ?? "ai-sdk";
  const model = options.model?.modelId ?? result?.response.modelId ?? "";
  const timestamp = options.timestamp ?? timestampOf(result?.response.timestamp) ?? Date.now();
  const names = new Map<string, string>();
  const lastAssistant = messages.findLastIndex((message) => message.role === "assistant");
  const out: AgentMessage[] = [];
  messages.forEach((message, index) => {
    // Where the message is in the input, for the errors that name a field.
    const at = result ? ["response", "messages", index] : list ? [index] : [];
    if (message.role === "user") {
      out.push({ role: "user", content: userContent(message.content, [...at, "content"]), timestamp });
    } else if (message.role === "assistant") {
      const content = aiSdkAssistantContent(message.content);
      const last = index === lastAssistant;
      const u = result?.usage;
      const cacheRead = u?.inputTokenDetails?.cacheReadTokens ?? u?.cachedInputTokens ?? 0;
      const cacheWrite = u?.inputTokenDetails?.cacheWriteTokens ?? 0;
      out.push(
        assistantMessage({
          content,
          api,
          provider,
          model,
          // A result reports usage for the whole call: it is recorded once, on its last turn.
          usage:
            last && u
              ? usage(
                  u.inputTokenDetails?.noCacheTokens ?? (u.inputTokens ?? 0) - cacheRead - cacheWrite,
                  u.outputTokens ?? 0,
                  cacheRead,
                  cacheWrite,
                  u.totalTokens,
                )
              : NO_USAGE,
          ...aiSdkStopReason(last ? result?.finishReason : undefined, hasToolCall(content)),
          timestamp,
          responseId: last ? result?.response.id : undefined,
        }),
      );
      for (const block of content) if (block.type === "toolCall") names.set(block.id, block.name);
    } else {
      for (const raw of message.content) {
        if (raw.type !== "tool-result") continue;
        const part = raw as z.output<typeof ToolResultPart>;
        const { content, isError } = toolOutput(part.output as { type: string });
        out.push(
          toolResultMessage(
            part.toolCallId,
            part.toolName || names.get(part.toolCallId) || "",
            content,
            isError,
            timestamp,
          ),
        );
      }
    }
  });
  return out;
}
