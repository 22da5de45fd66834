import { defineConfig } from "vitest/config";

/*
 * The frameworks' own conformance suites, which call Vitest's `describe`, `it` and `expect` as
 * globals, against the service started in Node.
 */
export default defineConfig({
  test: {
    name: "frameworks",
    // These files wait on servers, sockets and child processes more than they compute: two at a
    // time keep two cores busy (the default, one less than the cores, runs them one by one). They
    // run first; the Workers project, whose objects' clocks and alarms some tests time, after them
    // one file at a time.
    maxWorkers: 2,
    sequence: { groupOrder: 0 },
    environment: "node",
    globals: true,
    include: ["test/frameworks/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
