import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      "./vitest.workers.config.ts",
      "./vitest.node.config.ts",
      "./vitest.frameworks.config.ts",
      "./vitest.reliability.config.ts",
    ],
    // The Worker writes a log line for every request; the tests about those lines read them from a
    // spy, and the rest would bury every other message.
    onConsoleLog: (log) => !log.includes('{"type":"request"'),
  },
});
