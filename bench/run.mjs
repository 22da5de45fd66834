// Runs the benchmark: bundles bench/main.ts for Node (dependencies stay imports) and runs it.
// The bundle sits two levels under the root, as test/support does, so paths resolve alike.
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const out = resolve("bench/.build/main.mjs");
await build({
  entryPoints: ["bench/main.ts"],
  outfile: out,
  bundle: true,
  platform: "node",
  format: "esm",
  packages: "external",
  logLevel: "warning",
});
await import(pathToFileURL(out).href);
