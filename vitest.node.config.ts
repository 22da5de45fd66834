import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "node",
    // These files wait on servers, sockets and child processes more than they compute: two at a
    // time keep two cores busy (the default, one less than the cores, runs them one by one). They
    // run first; the Workers project, whose objects' clocks and alarms some tests time, after them
    // one file at a time.
    maxWorkers: 2,
    sequence: { groupOrder: 0 },
    environment: "node",
    globalSetup: ["./test/support/build-dist.setup.ts"],
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
