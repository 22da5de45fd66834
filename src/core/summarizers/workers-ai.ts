import type { SummaryUsage } from "../messages";
import { SUMMARIZATION_SYSTEM_PROMPT, summaryPrompt } from "./prompt";
import type { Summarizer, SummaryRequest, SummaryResult } from "./summarizer";

/** What the summarizer needs of a Workers AI binding (`env.AI`). */
export interface WorkersAIBinding {
  run(
    model: string,
    input: { messages: Array<{ role: string; content: string }>; max_tokens?: number },
  ): Promise<unknown>;
}

export const DEFAULT_WORKERS_AI_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast";

/**
 * A failure of the binding told in the summarizer's own words, with its HTTP status or its error's
 * name when it has one: what Workers AI said (an upstream's text, a stack) is not the caller's to read.
 */
function runFailure(error: unknown): Error {
  const { status, name } = (typeof error === "object" && error !== null ? error : {}) as {
    status?: unknown;
    name?: unknown;
  };
  if (typeof status === "number" && Number.isInteger(status)) {
    return new Error(`Workers AI answered ${status}`);
  }
  if (typeof name === "string" && /^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name) && name !== "Error") {
    return new Error(`Workers AI failed to summarize (${name})`);
  }
  return new Error("Workers AI failed to summarize");
}

/** Summaries from a Workers AI text-generation model through the `AI` binding. */
export class WorkersAISummarizer implements Summarizer {
  readonly name = "workers-ai";
  readonly #ai: WorkersAIBinding;
  readonly #model: string;
  readonly #maxTokens: number;

  constructor(ai: WorkersAIBinding, model = DEFAULT_WORKERS_AI_MODEL, maxTokens = 2048) {
    this.#ai = ai;
    this.#model = model;
    this.#maxTokens = maxTokens;
  }

  async summarize(request: SummaryRequest): Promise<SummaryResult> {
    const result = (await this.#ai
      .run(this.#model, {
        messages: [
          { role: "system", content: SUMMARIZATION_SYSTEM_PROMPT },
          { role: "user", content: summaryPrompt(request) },
        ],
        max_tokens: this.#maxTokens,
      })
      .catch((error: unknown) => {
        throw runFailure(error);
      })) as {
      response?: unknown;
      usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number };
    };
    const text = typeof result?.response === "string" ? result.response.trim() : "";
    if (!text) throw new Error("Workers AI returned no text");
    const usage: SummaryUsage = {};
    if (typeof result.usage?.prompt_tokens === "number") usage.input = result.usage.prompt_tokens;
    if (typeof result.usage?.completion_tokens === "number") usage.output = result.usage.completion_tokens;
    if (typeof result.usage?.total_tokens === "number") usage.totalTokens = result.usage.total_tokens;
    return Object.keys(usage).length > 0 ? { text, usage } : { text };
  }
}
