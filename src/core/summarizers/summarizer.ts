import type { FileLists } from "../file-lists";
import type { AgentMessage, SummaryUsage } from "../messages";

/** What a summarizer is asked to condense. */
export interface SummaryRequest extends FileLists {
  /** A compaction (history dropped from the context) or a branch being left. */
  kind: "compaction" | "branch";
  messages: AgentMessage[];
  /** The start of a turn the cut fell inside (compaction only), summarized apart. */
  turnPrefix?: AgentMessage[];
  /** The summary the previous compaction wrote, to carry forward. */
  previousSummary?: string;
  customInstructions?: string;
}

export interface SummaryResult {
  text: string;
  usage?: SummaryUsage;
}

/**
 * Writes summaries for compactions and branch summaries. Implementations: an OpenAI-compatible
 * chat-completions endpoint, the Workers AI binding, and the built-in extractive summarizer.
 */
export interface Summarizer {
  readonly name: string;
  summarize(request: SummaryRequest, signal?: AbortSignal): Promise<SummaryResult>;
}
