import type { SummaryUsage } from "../messages";
import { SUMMARIZATION_SYSTEM_PROMPT, summaryPrompt } from "./prompt";
import type { Summarizer, SummaryRequest, SummaryResult } from "./summarizer";

export interface OpenAISummarizerOptions {
  /** e.g. `https://api.openai.com/v1`; `/chat/completions` is appended. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  maxTokens?: number;
  /** Give up after this many milliseconds (default 120,000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

interface ChatCompletion {
  choices?: Array<{ message?: { content?: unknown } }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number };
}

/** Summaries from any OpenAI-compatible chat-completions endpoint (OpenAI, OpenRouter, vLLM, Ollama, …). */
export class OpenAISummarizer implements Summarizer {
  readonly name = "openai-compatible";
  readonly #options: OpenAISummarizerOptions;

  constructor(options: OpenAISummarizerOptions) {
    this.#options = options;
  }

  async summarize(request: SummaryRequest, signal?: AbortSignal): Promise<SummaryResult> {
    const { baseUrl, apiKey, model, maxTokens, timeoutMs = 120_000 } = this.#options;
    const doFetch = this.#options.fetch ?? fetch;
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    // Failures are told in this summarizer's own words: what the endpoint or the network said
    // (the start of a page that is not JSON, an address) is not the caller's to read.
    const response = await doFetch(`${baseUrl.replace(/\/+$/, "")}/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        model,
        messages: [
          { role: "system", content: SUMMARIZATION_SYSTEM_PROMPT },
          { role: "user", content: summaryPrompt(request) },
        ],
        ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
      }),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    }).catch((error: unknown) => {
      if (signal?.aborted) throw error;
      throw new Error(
        timeout.aborted
          ? `summarizer endpoint did not answer within ${timeoutMs} ms`
          : "summarizer endpoint could not be reached",
      );
    });
    if (!response.ok) {
      throw new Error(`summarizer endpoint answered ${response.status}`);
    }
    const body = (await response.json().catch(() => {
      throw new Error("summarizer endpoint answered something other than JSON");
    })) as ChatCompletion;
    const text = body.choices?.[0]?.message?.content;
    if (typeof text !== "string" || !text.trim()) throw new Error("summarizer endpoint returned no text");
    const usage: SummaryUsage = {};
    if (typeof body.usage?.prompt_tokens === "number") usage.input = body.usage.prompt_tokens;
    if (typeof body.usage?.completion_tokens === "number") usage.output = body.usage.completion_tokens;
    if (typeof body.usage?.total_tokens === "number") usage.totalTokens = body.usage.total_tokens;
    return Object.keys(usage).length > 0 ? { text: text.trim(), usage } : { text: text.trim() };
  }
}
