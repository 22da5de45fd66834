import type { SessionContext } from "../context";
import { tryParseJson } from "../json";
import type { ImageContent, TextContent } from "../messages";
import type {
  NormalAssistant,
  NormalText,
  NormalThinking,
  NormalToolCall,
  NormalToolResult,
  NormalUser,
  ProviderOptions,
} from "./normalize";
import { normalizeContext, resultParts } from "./normalize";
import type { TargetModel } from "./target";
import { reasoningItem } from "./to-openai-responses";
import { itemIdPart, PORTABLE_IDS } from "./tool-call-ids";

/*
 * Vercel AI SDK: `system` and `messages` (`ModelMessage[]`) for `generateText` / `streamText`.
 * Versions 5 and 6 differ in one place we use: an image inside a tool result is a `media` part in
 * 5 and an `image-data` part in 6 (6's providers no longer read `media`).
 *
 * Signatures ride in `providerOptions`, under the keys the AI SDK's own providers read and write:
 * `anthropic.signature` / `anthropic.redactedData`, `openai.itemId` /
 * `openai.reasoningEncryptedContent`, `google.thoughtSignature`. A block read from the AI SDK keeps
 * the options it came with; one read from a provider's own API gets them from its signature.
 */

export type AISDKVersion = 5 | 6;

export type AISDKJSONValue = null | string | number | boolean | AISDKJSONObject | AISDKJSONValue[];
export type AISDKJSONObject = { [key: string]: AISDKJSONValue };
export type AISDKProviderOptions = Record<string, AISDKJSONObject>;

export interface AISDKTextPart {
  type: "text";
  text: string;
  providerOptions?: AISDKProviderOptions;
}

export interface AISDKImagePart {
  type: "image";
  /** base64 bytes. */
  image: string;
  mediaType: string;
}

export interface AISDKReasoningPart {
  type: "reasoning";
  text: string;
  providerOptions?: AISDKProviderOptions;
}

export interface AISDKToolCallPart {
  type: "tool-call";
  toolCallId: string;
  toolName: string;
  input: Record<string, unknown>;
  providerOptions?: AISDKProviderOptions;
}

export type AISDKToolResultImage<V extends AISDKVersion> = V extends 5
  ? { type: "media"; data: string; mediaType: string }
  : { type: "image-data"; data: string; mediaType: string };

export type AISDKToolResultOutput<V extends AISDKVersion> =
  | { type: "text"; value: string }
  | { type: "error-text"; value: string }
  | { type: "content"; value: Array<{ type: "text"; text: string } | AISDKToolResultImage<V>> };

export interface AISDKToolResultPart<V extends AISDKVersion> {
  type: "tool-result";
  toolCallId: string;
  toolName: string;
  output: AISDKToolResultOutput<V>;
}

export type AISDKModelMessage<V extends AISDKVersion = 6> =
  | { role: "user"; content: string | Array<AISDKTextPart | AISDKImagePart> }
  | { role: "assistant"; content: Array<AISDKTextPart | AISDKReasoningPart | AISDKToolCallPart> }
  | { role: "tool"; content: Array<AISDKToolResultPart<V>> };

export interface AISDKRequest<V extends AISDKVersion = 6> {
  /** The system prompt, when there is one. */
  system?: string;
  messages: Array<AISDKModelMessage<V>>;
}

export interface AISDKOptions<V extends AISDKVersion = 6> {
  /** The AI SDK major version the messages are for (default 6). */
  version?: V;
}

/** Which AI SDK provider reads the signatures of a reply, by the API it came from. */
function signatureFamily(api: string): "anthropic" | "openai" | "google" | undefined {
  if (api === "anthropic-messages") return "anthropic";
  if (api.endsWith("openai-responses")) return "openai";
  if (api === "google-generative-ai" || api === "google-vertex") return "google";
  return undefined;
}

function asOptions(options: ProviderOptions): AISDKProviderOptions {
  // Stored options came in as JSON from the AI SDK; they go back out as they were.
  return options as AISDKProviderOptions;
}

/** A part of `type` holding `text`, with `providerOptions` when there are any. */
function withText<T extends "text" | "reasoning">(
  type: T,
  text: string,
  providerOptions?: AISDKProviderOptions,
): { type: T; text: string; providerOptions?: AISDKProviderOptions } {
  return providerOptions ? { type, text, providerOptions } : { type, text };
}

/** The reasoning part for a thinking block of a reply of `api`, its signature in the options the AI SDK reads. */
export function reasoningPart(block: NormalThinking, api: string): AISDKReasoningPart | undefined {
  if (block.providerOptions) return withText("reasoning", block.thinking, asOptions(block.providerOptions));
  const signature = block.thinkingSignature;
  const family = signatureFamily(api);
  if (block.redacted) {
    return family === "anthropic" && signature
      ? withText("reasoning", "", { anthropic: { redactedData: signature } })
      : undefined;
  }
  if (signature && family === "anthropic")
    return withText("reasoning", block.thinking, { anthropic: { signature } });
  if (signature && family === "google") {
    return withText("reasoning", block.thinking, { google: { thoughtSignature: signature } });
  }
  const item = family === "openai" ? reasoningItem(signature) : undefined;
  if (item) {
    const encrypted = typeof item.encrypted_content === "string" ? item.encrypted_content : null;
    return withText("reasoning", block.thinking, {
      openai: { itemId: item.id, reasoningEncryptedContent: encrypted },
    });
  }
  return block.thinking.trim() ? withText("reasoning", block.thinking) : undefined;
}

export function textPart(block: NormalText, api: string): AISDKTextPart {
  if (block.providerOptions) return withText("text", block.text, asOptions(block.providerOptions));
  const signature = block.textSignature;
  const family = signatureFamily(api);
  if (signature && family === "google") {
    return withText("text", block.text, { google: { thoughtSignature: signature } });
  }
  const itemId = signature && family === "openai" ? messageItemId(signature) : undefined;
  return withText("text", block.text, itemId ? { openai: { itemId } } : undefined);
}

function messageItemId(signature: string): string | undefined {
  if (!signature.startsWith("{")) return signature;
  const parsed = tryParseJson(signature) as { id?: unknown } | undefined;
  return typeof parsed?.id === "string" ? parsed.id : undefined;
}

export function toolCallPart(block: NormalToolCall, sameModel: boolean, api: string): AISDKToolCallPart {
  const part: AISDKToolCallPart = {
    type: "tool-call",
    toolCallId: block.id,
    toolName: block.name,
    input: block.arguments,
  };
  if (!sameModel) return part;
  if (block.providerOptions) part.providerOptions = asOptions(block.providerOptions);
  else if (block.thoughtSignature && signatureFamily(api) === "google") {
    part.providerOptions = { google: { thoughtSignature: block.thoughtSignature } };
  } else {
    const itemId = signatureFamily(api) === "openai" ? itemIdPart(block.sourceId) : undefined;
    if (itemId) part.providerOptions = { openai: { itemId } };
  }
  return part;
}

function assistantMessage<V extends AISDKVersion>(
  message: NormalAssistant,
): AISDKModelMessage<V> | undefined {
  const api = message.source.api;
  const content: Array<AISDKTextPart | AISDKReasoningPart | AISDKToolCallPart> = [];
  for (const block of message.content) {
    if (block.type === "text") content.push(textPart(block, api));
    else if (block.type === "toolCall") content.push(toolCallPart(block, message.sameModel, api));
    else {
      const part = reasoningPart(block, api);
      if (part) content.push(part);
    }
  }
  return content.length > 0 ? { role: "assistant", content } : undefined;
}

function userMessage<V extends AISDKVersion>(message: NormalUser): AISDKModelMessage<V> {
  const [first] = message.content;
  if (message.content.length === 1 && first?.type === "text") return { role: "user", content: first.text };
  return {
    role: "user",
    content: message.content.map((part: TextContent | ImageContent) =>
      part.type === "text"
        ? { type: "text", text: part.text }
        : { type: "image", image: part.data, mediaType: part.mimeType },
    ),
  };
}

function toolResultPart<V extends AISDKVersion>(
  result: NormalToolResult,
  version: V,
): AISDKToolResultPart<V> {
  const { text, images } = resultParts(result.content);
  let output: AISDKToolResultOutput<V>;
  if (images.length === 0) output = { type: result.isError ? "error-text" : "text", value: text };
  else {
    const value: Array<{ type: "text"; text: string } | AISDKToolResultImage<V>> = text
      ? [{ type: "text", text }]
      : [];
    for (const image of images) {
      value.push({
        type: version === 5 ? "media" : "image-data",
        data: image.data,
        mediaType: image.mimeType,
      } as AISDKToolResultImage<V>);
    }
    output = { type: "content", value };
  }
  return { type: "tool-result", toolCallId: result.toolCallId, toolName: result.toolName, output };
}

/** `system` and `messages` for the AI SDK's `generateText` / `streamText`, for `model`. */
export function toAISDK(
  context: SessionContext,
  model: TargetModel,
  options: AISDKOptions<5> & { version: 5 },
): AISDKRequest<5>;
export function toAISDK(
  context: SessionContext,
  model: TargetModel,
  options?: AISDKOptions<6>,
): AISDKRequest<6>;
export function toAISDK(
  context: SessionContext,
  model: TargetModel,
  options: AISDKOptions<AISDKVersion> = {},
): AISDKRequest<AISDKVersion> {
  const version = options.version ?? 6;
  const normal = normalizeContext(context, "ai-sdk", model, { ids: PORTABLE_IDS });
  const messages: AISDKModelMessage<AISDKVersion>[] = [];
  for (const message of normal.messages) {
    if (message.role === "user") messages.push(userMessage(message));
    else if (message.role === "assistant") {
      const out = assistantMessage(message);
      if (out) messages.push(out);
    } else {
      messages.push({
        role: "tool",
        content: message.results.map((result) => toolResultPart(result, version)),
      });
    }
  }
  return normal.system ? { system: normal.system, messages } : { messages };
}
