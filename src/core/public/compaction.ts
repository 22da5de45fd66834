/*
 * `cf-sessions/compaction`: what a compaction or a branch summary summarizes (the preparations,
 * with the files read and changed), the summarizers that write it (extractive, OpenAI-compatible,
 * Workers AI) and the interface of any other.
 */

export type {
  BranchSummaryPreparation,
  CompactionPreparation,
  CompactionSettings,
  OmittedHistory,
} from "../compaction";
export { DEFAULT_KEEP_RECENT_TOKENS, prepareBranchSummary, prepareCompaction } from "../compaction";
export type { FileLists } from "../file-lists";

export { ExtractiveSummarizer } from "../summarizers/extractive";
export type { SummarizerConfig } from "../summarizers/index";
export { summarizerFromConfig } from "../summarizers/index";
export type { OpenAISummarizerOptions } from "../summarizers/openai";
export { OpenAISummarizer } from "../summarizers/openai";
export type { Summarizer, SummaryRequest, SummaryResult } from "../summarizers/summarizer";
export type { WorkersAIBinding } from "../summarizers/workers-ai";
export { DEFAULT_WORKERS_AI_MODEL, WorkersAISummarizer } from "../summarizers/workers-ai";
