import { defineConfig } from "vitest/config";

/*
 * The viewer in a real browser: starts `wrangler dev` and Debian's Chromium (/usr/bin/chromium),
 * so it runs apart from the Workers and Node projects, one file at a time.
 */
export default defineConfig({
  test: {
    name: "browser",
    environment: "node",
    include: ["test/browser/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
