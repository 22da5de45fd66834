/**
 * Fields OpenAI-compatible servers (llama.cpp, DeepSeek, vLLM, OpenRouter) put reasoning in; pi-ai
 * records which one as the thinking signature, and it goes back to the same model in that field.
 */
export const CHAT_REASONING_FIELDS = ["reasoning_content", "reasoning", "reasoning_text"] as const;
export type ChatReasoningField = (typeof CHAT_REASONING_FIELDS)[number];
