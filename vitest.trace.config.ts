import { defineConfig } from "vitest/config";
import { enteredFiles } from "./test/trace/entered-files.ts";
import workers from "./vitest.workers.config.ts";

/*
 * The path trace (`npm run trace:paths`): the Workers project's service, with each source file
 * recording when one of its functions is entered (test/trace/entered-files.ts), for
 * test/trace/paths.trace.ts to list the files a request goes through. Not part of `npm test`.
 */
export default defineConfig({
  ...workers,
  plugins: [...(workers.plugins ?? []), enteredFiles(import.meta.dirname)],
  test: { ...workers.test, name: "trace", include: ["test/trace/**/*.trace.ts"] },
});
