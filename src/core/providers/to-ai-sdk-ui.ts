import type { SessionContext } from "../context";
import type { NormalAssistant, NormalToolResults, NormalUser } from "./normalize";
import { normalizeContext, resultParts } from "./normalize";
import type { TargetModel } from "./target";
import { dataUrl } from "./text";
import type { AISDKProviderOptions } from "./to-ai-sdk";
import { reasoningPart, textPart, toolCallPart } from "./to-ai-sdk";
import { PORTABLE_IDS } from "./tool-call-ids";

/*
 * AI SDK UI messages (`UIMessage[]`), so a `useChat` front end can show a stored session and send
 * it on: one user message per user turn, one assistant message per run of model turns and tool
 * results, each model turn opened by a `step-start` part (where `convertToModelMessages` splits
 * steps), tool calls as `tool-<name>` parts holding their result. Thinking stays visible as
 * reasoning whichever model wrote it; its signatures ride along only for the model that made them.
 */

export type AISDKUIPart =
  | { type: "text"; text: string; state: "done"; providerMetadata?: AISDKProviderOptions }
  | { type: "reasoning"; text: string; state: "done"; providerMetadata?: AISDKProviderOptions }
  | { type: "file"; mediaType: string; url: string }
  | { type: "step-start" }
  | AISDKUIToolPart;

export type AISDKUIToolPart = {
  type: `tool-${string}`;
  toolCallId: string;
  input: Record<string, unknown>;
  callProviderMetadata?: AISDKProviderOptions;
} & (
  | { state: "input-available" }
  /** `output`: the result's text, or its text and image parts when it has images. */
  | { state: "output-available"; output: unknown }
  | { state: "output-error"; errorText: string }
);

export interface AISDKUIMessage {
  id: string;
  role: "user" | "assistant";
  parts: AISDKUIPart[];
}

export interface AISDKUIRequest {
  messages: AISDKUIMessage[];
}

function userMessage(message: NormalUser, id: string): AISDKUIMessage {
  return {
    id,
    role: "user",
    parts: message.content.map((part) =>
      part.type === "text"
        ? { type: "text", text: part.text, state: "done" }
        : { type: "file", mediaType: part.mimeType, url: dataUrl(part.mimeType, part.data) },
    ),
  };
}

type ToolCallBase = Omit<AISDKUIToolPart, "state" | "output" | "errorText">;

/** Where each tool call's part sits (by its wire id), to be replaced by the part holding its result. */
export type ToolSlots = Map<string, { parts: AISDKUIPart[]; index: number; call: ToolCallBase }>;

/** A model turn as a step of an assistant's UI message: its parts added to `parts`. */
export function addStep(message: NormalAssistant, parts: AISDKUIPart[], slots: ToolSlots): void {
  const api = message.source.api;
  parts.push({ type: "step-start" });
  for (const block of message.content) {
    if (block.type !== "toolCall") {
      // The model's parts as the AI SDK gets them, their provider options shown as metadata.
      const part = block.type === "text" ? textPart(block, api) : reasoningPart(block, api);
      if (!part) continue;
      const { type, text, providerOptions } = part;
      parts.push(
        providerOptions
          ? { type, text, state: "done", providerMetadata: providerOptions }
          : { type, text, state: "done" },
      );
    } else {
      const { providerOptions } = toolCallPart(block, message.sameModel, api);
      const call: ToolCallBase = { type: `tool-${block.name}`, toolCallId: block.id, input: block.arguments };
      if (providerOptions) call.callProviderMetadata = providerOptions;
      slots.set(block.id, { parts, index: parts.length, call });
      parts.push({ ...call, state: "input-available" });
    }
  }
}

/** Results put in the tool parts of their calls. */
export function settle(turn: NormalToolResults, slots: ToolSlots): void {
  for (const result of turn.results) {
    const slot = slots.get(result.toolCallId);
    if (!slot) continue;
    const { text, images } = resultParts(result.content);
    slot.parts[slot.index] = result.isError
      ? { ...slot.call, state: "output-error", errorText: text }
      : { ...slot.call, state: "output-available", output: images.length > 0 ? result.content : text };
  }
}

/** The session as AI SDK UI messages, for `useChat`'s `messages`. */
export function toAISDKUIMessages(context: SessionContext, model?: TargetModel): AISDKUIRequest {
  const target = model ?? { provider: context.model?.provider ?? "", modelId: context.model?.modelId ?? "" };
  const normal = normalizeContext(context, "ai-sdk-ui", target, {
    ids: PORTABLE_IDS,
    foreignThinking: "thinking",
  });
  const messages: AISDKUIMessage[] = [];
  const slots: ToolSlots = new Map();
  let assistant: AISDKUIMessage | undefined;
  normal.messages.forEach((message, index) => {
    if (message.role === "user") {
      assistant = undefined;
      messages.push(userMessage(message, `msg-${index}`));
    } else if (message.role === "assistant") {
      if (!assistant) {
        assistant = { id: `msg-${index}`, role: "assistant", parts: [] };
        messages.push(assistant);
      }
      addStep(message, assistant.parts, slots);
    } else settle(message, slots);
  });
  return { messages };
}
