/* The provider formats' public names (see `core/index.ts`): converting to and from each model API. */

export type { ContextRequests } from "./convert";
export { contextForModel, convertProviderMessage } from "./convert";
export { AppendEntryInput, ProviderMessageEntryInput } from "./entry-input";
export { fromAISDK } from "./from-ai-sdk";
export { fromAnthropic } from "./from-anthropic";
export { fromGemini } from "./from-gemini";
export { fromOpenAIChat } from "./from-openai-chat";
export { fromOpenAIResponses } from "./from-openai-responses";
export type { AnsweringModel, ReadOptions } from "./incoming";
export type { ContextFormat, MessageFormat, TargetModel } from "./target";
export { CONTEXT_FORMATS, MESSAGE_FORMATS } from "./target";
export type { AISDKModelMessage, AISDKOptions, AISDKRequest, AISDKVersion } from "./to-ai-sdk";
export { toAISDK } from "./to-ai-sdk";
export type { AISDKUIMessage, AISDKUIRequest } from "./to-ai-sdk-ui";
export { toAISDKUIMessages } from "./to-ai-sdk-ui";
export type { AnthropicMessage, AnthropicRequest } from "./to-anthropic";
export { toAnthropic } from "./to-anthropic";
export type { GeminiContent, GeminiRequest } from "./to-gemini";
export { toGemini } from "./to-gemini";
export type { OpenAIChatMessage, OpenAIChatOptions, OpenAIChatRequest } from "./to-openai-chat";
export { toOpenAIChat } from "./to-openai-chat";
export type { OpenAIResponsesRequest, ResponsesInputItem } from "./to-openai-responses";
export { toOpenAIResponses } from "./to-openai-responses";
