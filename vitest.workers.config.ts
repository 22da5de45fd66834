import { createHash } from "node:crypto";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import "./test/support/fake-llm.setup.ts";

const sha256 = (key: string) => createHash("sha256").update(key).digest("hex");

/** Keys the Workers tests authenticate with (test/workers/helpers.ts names them). */
const API_KEYS = JSON.stringify({
  [sha256("key-a")]: "tenant-a",
  [sha256("key-b")]: "tenant-b",
  [sha256("key-a-read")]: { tenant: "tenant-a", access: "read" },
});

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: { bindings: { API_KEYS, DIRECTORY_SYNC_MS: "20", FAKE_LLM_URL: inject("fakeLlmUrl") } },
    })),
  ],
  test: {
    name: "workers",
    include: ["test/workers/**/*.test.ts"],
    globalSetup: ["./test/support/fake-llm.setup.ts"],
    testTimeout: 60_000,
  },
});
