/* The summarizers' public names (see `core/index.ts`): the built-in ones, and the interface of any other. */

export { ExtractiveSummarizer } from "./extractive";
export type { SummarizerConfig } from "./index";
export { summarizerFromConfig } from "./index";
export type { OpenAISummarizerOptions } from "./openai";
export { OpenAISummarizer } from "./openai";
export type { Summarizer, SummaryRequest, SummaryResult } from "./summarizer";
export type { WorkersAIBinding } from "./workers-ai";
export { DEFAULT_WORKERS_AI_MODEL, WorkersAISummarizer } from "./workers-ai";
