import { defineConfig } from "vitest/config";

/*
 * The frameworks' own conformance suites, which call Vitest's `describe`, `it` and `expect` as
 * globals, against the service started in Node.
 */
export default defineConfig({
  test: {
    name: "frameworks",
    environment: "node",
    globals: true,
    include: ["test/frameworks/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
