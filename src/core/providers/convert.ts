import type { ModelRef, SessionContext } from "../context";
import { SessionError } from "../errors";
import type { AgentMessage } from "../messages";
import { fromAISDK } from "./from-ai-sdk";
import { fromAnthropic } from "./from-anthropic";
import { fromGemini } from "./from-gemini";
import { fromOpenAIChat } from "./from-openai-chat";
import { fromOpenAIResponses } from "./from-openai-responses";
import type { ReadOptions } from "./incoming";
import type { ContextFormat, MessageFormat, TargetModel } from "./target";
import { isMessageFormat, MESSAGE_FORMATS, parseContextFormat } from "./target";
import type { AISDKRequest } from "./to-ai-sdk";
import { toAISDK } from "./to-ai-sdk";
import type { AISDKUIRequest } from "./to-ai-sdk-ui";
import { toAISDKUIMessages } from "./to-ai-sdk-ui";
import type { AnthropicRequest } from "./to-anthropic";
import { toAnthropic } from "./to-anthropic";
import type { GeminiRequest } from "./to-gemini";
import { toGemini } from "./to-gemini";
import type { OpenAIChatRequest } from "./to-openai-chat";
import { toOpenAIChat } from "./to-openai-chat";
import type { OpenAIResponsesRequest } from "./to-openai-responses";
import { toOpenAIResponses } from "./to-openai-responses";

/*
 * One entry point per direction for callers that get the format as data (an HTTP query or body):
 * the context in a provider's request shape, and a provider's message as our messages.
 */

export interface ContextRequests {
  "openai-chat": OpenAIChatRequest;
  "openai-responses": OpenAIResponsesRequest;
  anthropic: AnthropicRequest;
  gemini: GeminiRequest;
  "ai-sdk": AISDKRequest<6>;
  "ai-sdk-ui": AISDKUIRequest;
}

type Converters = {
  [F in ContextFormat]: (context: SessionContext, model: TargetModel) => ContextRequests[F];
};
const CONVERTERS: Converters = {
  "openai-chat": toOpenAIChat,
  "openai-responses": toOpenAIResponses,
  anthropic: toAnthropic,
  gemini: toGemini,
  "ai-sdk": toAISDK,
  "ai-sdk-ui": toAISDKUIMessages,
};

/**
 * The request fields carrying `context` in `format`, for `model`. An unknown format is
 * `unsupported_format`.
 */
export function contextInFormat<F extends ContextFormat>(
  context: SessionContext,
  format: F,
  model: TargetModel,
): ContextRequests[F];
export function contextInFormat(
  context: SessionContext,
  format: string,
  model: TargetModel,
): ContextRequests[ContextFormat];
export function contextInFormat(
  context: SessionContext,
  format: string,
  model: TargetModel,
): ContextRequests[ContextFormat] {
  return CONVERTERS[parseContextFormat(format)](context, model);
}

/** The model a context is wanted for, when it is not the context's own. */
export interface FormatTarget {
  /** Default: the context's model (its last model change or reply). */
  model?: ModelRef | undefined;
  /** Whether the model reads images (default true); without it, images become a short note. */
  imageInput?: boolean | undefined;
}

/**
 * `contextInFormat` for the model named, else the context's own. Only AI SDK UI messages (shown,
 * not sent) need no model; for any other format a context without one is `invalid_request`.
 */
export function contextForModel<F extends ContextFormat>(
  context: SessionContext,
  format: F,
  target?: FormatTarget,
): ContextRequests[F];
export function contextForModel(
  context: SessionContext,
  format: string,
  target?: FormatTarget,
): ContextRequests[ContextFormat];
export function contextForModel(
  context: SessionContext,
  format: string,
  target: FormatTarget = {},
): ContextRequests[ContextFormat] {
  parseContextFormat(format);
  const named =
    target.model ?? context.model ?? (format === "ai-sdk-ui" ? { provider: "", modelId: "" } : null);
  if (!named) {
    throw new SessionError(
      "invalid_request",
      "the session has no model yet (no model change, no reply): name the model the request is for as <provider>/<modelId>",
      { format },
    );
  }
  const model: TargetModel = { provider: named.provider, modelId: named.modelId };
  if (target.imageInput !== undefined) model.imageInput = target.imageInput;
  return contextInFormat(context, format, model);
}

const READERS: Record<MessageFormat, (message: unknown, options: ReadOptions) => AgentMessage[]> = {
  "openai-chat": fromOpenAIChat,
  "openai-responses": fromOpenAIResponses,
  anthropic: fromAnthropic,
  gemini: fromGemini,
  "ai-sdk": fromAISDK,
};

/**
 * The messages to append for `message`, a provider's own message in `format` (a response, a tool
 * result, a user turn): one or more, in order. An invalid message is `invalid_request` naming the
 * field (details: the issues with paths under `message`); an unknown format is `unsupported_format`.
 */
export function convertProviderMessage(
  format: string,
  message: unknown,
  options: ReadOptions = {},
): AgentMessage[] {
  if (!isMessageFormat(format)) {
    throw new SessionError("unsupported_format", `unknown message format "${format}"`, {
      formats: [...MESSAGE_FORMATS],
    });
  }
  return READERS[format](message, options);
}
