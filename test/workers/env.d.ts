// Bindings only the Workers tests have (see vitest.workers.config.ts).
declare namespace Cloudflare {
  interface Env {
    /** The fake chat-completions endpoint of test/support/fake-llm.setup.ts. */
    FAKE_LLM_URL: string;
  }
}
