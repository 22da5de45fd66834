import { createHash } from "node:crypto";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import "./test/support/fake-llm.setup.ts";

/*
 * The reliability tests: the service with fault injection (test/reliability/worker.ts, its own
 * wrangler.toml), the seeded soak and a test for each kind of fault. `npm run test:soak` runs the
 * soak for minutes (SOAK_SECONDS, SOAK_SEED).
 */

const sha256 = (key: string) => createHash("sha256").update(key).digest("hex");

const API_KEYS = JSON.stringify({
  [sha256("key-a")]: "tenant-a",
  [sha256("key-soak")]: "tenant-soak",
});

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      wrangler: { configPath: "./test/reliability/wrangler.toml" },
      miniflare: {
        bindings: {
          API_KEYS,
          FAKE_LLM_URL: inject("fakeLlmUrl"),
          SOAK_SECONDS: process.env.SOAK_SECONDS ?? "",
          SOAK_SEED: process.env.SOAK_SEED ?? "",
        },
        ratelimits: {
          RATE_LIMITER: { namespace_id: "1001", simple: { limit: 1_000_000, period: 10 } },
          AUTH_FAILURE_LIMITER: { namespace_id: "1003", simple: { limit: 1_000_000, period: 10 } },
        },
      },
    })),
  ],
  test: {
    name: "reliability",
    // These files wait on servers, sockets and child processes more than they compute: two at a
    // time keep two cores busy (the default, one less than the cores, runs them one by one). They
    // run first; the Workers project, whose objects' clocks and alarms some tests time, after them
    // one file at a time.
    maxWorkers: 2,
    sequence: { groupOrder: 0 },
    include: ["test/reliability/**/*.test.ts"],
    globalSetup: ["./test/support/fake-llm.setup.ts", "./scripts/build-viewer.mjs"],
    testTimeout: 120_000,
    // As in vitest.config.ts: the Worker's request lines would bury every other message.
    onConsoleLog: (log) => !log.includes('{"type":"request"'),
  },
});
