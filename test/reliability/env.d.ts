// Bindings only the reliability tests have (see vitest.reliability.config.ts).
declare namespace Cloudflare {
  interface Env {
    /** The fake chat-completions endpoint of test/support/fake-llm.setup.ts. */
    FAKE_LLM_URL: string;
    /** Seconds the soak runs (`npm run test:soak`); empty: the short run of `npm test`. */
    SOAK_SECONDS: string;
    /** The soak's seed; empty: its fixed one. */
    SOAK_SEED: string;
  }
}
