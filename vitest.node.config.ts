import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "node",
    environment: "node",
    include: [
      "test/core/**/*.test.ts",
      "test/node/**/*.test.ts",
      "test/interop/**/*.test.ts",
      "test/package/**/*.test.ts",
      "test/architecture/**/*.test.ts",
    ],
    testTimeout: 60_000,
  },
});
