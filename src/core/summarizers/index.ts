import { ExtractiveSummarizer } from "./extractive";
import { OpenAISummarizer } from "./openai";
import type { Summarizer } from "./summarizer";
import type { WorkersAIBinding } from "./workers-ai";
import { WorkersAISummarizer } from "./workers-ai";

/** Configuration read from the environment (vars and secrets), see docs/compaction.md: Summarizers. */
export interface SummarizerConfig {
  SUMMARIZER_BASE_URL?: string;
  SUMMARIZER_API_KEY?: string;
  SUMMARIZER_MODEL?: string;
  /** Milliseconds the OpenAI-compatible summarizer waits for an answer (default 120,000). */
  SUMMARIZER_TIMEOUT_MS?: string;
  AI?: WorkersAIBinding;
  SUMMARIZER_AI_MODEL?: string;
}

/**
 * The summarizer the configuration asks for, in order: an OpenAI-compatible endpoint (base URL
 * and model set), the Workers AI binding, else the built-in extractive summarizer.
 */
export function summarizerFromConfig(config: SummarizerConfig, fetchImpl?: typeof fetch): Summarizer {
  if (config.SUMMARIZER_BASE_URL && config.SUMMARIZER_MODEL) {
    const timeoutMs = Number(config.SUMMARIZER_TIMEOUT_MS);
    return new OpenAISummarizer({
      baseUrl: config.SUMMARIZER_BASE_URL,
      apiKey: config.SUMMARIZER_API_KEY,
      model: config.SUMMARIZER_MODEL,
      fetch: fetchImpl,
      ...(Number.isFinite(timeoutMs) && timeoutMs > 0 ? { timeoutMs } : {}),
    });
  }
  if (config.AI) return new WorkersAISummarizer(config.AI, config.SUMMARIZER_AI_MODEL || undefined);
  return new ExtractiveSummarizer();
}
