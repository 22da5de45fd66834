// Bindings only the Workers tests have (see vitest.workers.config.ts).
declare namespace Cloudflare {
  interface Env {
    /** The fake chat-completions endpoint of test/support/fake-llm.setup.ts. */
    FAKE_LLM_URL: string;
    /** A rate limiter of 5 requests per 10 s, to see 429s without flooding the service. */
    TIGHT_RATE_LIMITER: RateLimit;
  }
}

/** A fixture file's text, imported with Vite's `?raw`. */
declare module "*.jsonl?raw" {
  const text: string;
  export default text;
}

declare module "*.ndjson?raw" {
  const text: string;
  export default text;
}

declare module "*.json?raw" {
  const text: string;
  export default text;
}

/** A page of the documentation, to check that it names what the service offers. */
declare module "*.md?raw" {
  const text: string;
  export default text;
}
