/*
 * `cf-sessions/formats`: a session's messages in each model API's own shape and back: the context
 * as a request to Anthropic, OpenAI (Chat Completions, Responses), Gemini or the AI SDK, and what
 * such an API answered as entries to append.
 */

export type { ContextRequests } from "../providers/convert";
export { contextForModel, convertProviderMessage } from "../providers/convert";
export { ProviderMessageEntryInput } from "../providers/entry-input";
export { fromAISDK } from "../providers/from-ai-sdk";
export { fromAnthropic } from "../providers/from-anthropic";
export { fromGemini } from "../providers/from-gemini";
export { fromOpenAIChat } from "../providers/from-openai-chat";
export { fromOpenAIResponses } from "../providers/from-openai-responses";
export type { AnsweringModel, ReadOptions } from "../providers/incoming";
export type { ContextFormat, MessageFormat, TargetModel } from "../providers/target";
export { CONTEXT_FORMATS, MESSAGE_FORMATS } from "../providers/target";
export type { AISDKModelMessage, AISDKOptions, AISDKRequest, AISDKVersion } from "../providers/to-ai-sdk";
export { toAISDK } from "../providers/to-ai-sdk";
export type { AISDKUIMessage, AISDKUIRequest } from "../providers/to-ai-sdk-ui";
export { toAISDKUIMessages } from "../providers/to-ai-sdk-ui";
export type { AnthropicMessage, AnthropicRequest } from "../providers/to-anthropic";
export { toAnthropic } from "../providers/to-anthropic";
export type { GeminiContent, GeminiRequest } from "../providers/to-gemini";
export { toGemini } from "../providers/to-gemini";
export type { OpenAIChatMessage, OpenAIChatOptions, OpenAIChatRequest } from "../providers/to-openai-chat";
export { toOpenAIChat } from "../providers/to-openai-chat";
export type { OpenAIResponsesRequest, ResponsesInputItem } from "../providers/to-openai-responses";
export { toOpenAIResponses } from "../providers/to-openai-responses";
