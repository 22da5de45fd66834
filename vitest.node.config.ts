import { configDefaults, defineConfig } from "vitest/config";

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
    // Tests at scale take minutes or hours: `npm run test:scale` runs them.
    exclude: process.env.SCALE_TESTS
      ? configDefaults.exclude
      : [...configDefaults.exclude, "**/*.scale.test.ts"],
    testTimeout: 60_000,
  },
});
