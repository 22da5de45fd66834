// Builds what the package ships in dist/: the library entry points and the command line bundled for
// Node and browsers (`npx cf-sessions`, `import "cf-sessions/node"` without a TypeScript toolchain),
// and declaration files for every entry point in dist/types. Workers import the sources, and the
// viewer's bundle among them (scripts/build-viewer.mjs).
// `--skip-types` leaves the declarations out (the tests that only run the command line).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { buildViewer } from "./build-viewer.mjs";
import { rewriteDeclarationSpecifiers } from "./declaration-specifiers.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const skipTypes = process.argv.includes("--skip-types");

// Dependencies (zod, uuid, hono) stay imports: they are installed with the package.
const common = {
  bundle: true,
  format: "esm",
  target: "es2022",
  sourcemap: true,
  packages: "external",
  logLevel: "warning",
};

// Chunk names change with their content: old ones go. Declarations built before stay when skipped.
for (const name of existsSync(`${root}/dist`) ? readdirSync(`${root}/dist`) : [])
  if (!(skipTypes && name === "types")) rmSync(`${root}/dist/${name}`, { recursive: true, force: true });

// One build with shared chunks, so `cf-sessions`, its other entry points, `cf-sessions/node` and the
// framework adapters hold the same classes: a `SessionError` thrown by the client is an `instanceof` the core's.
await build({
  ...common,
  platform: "neutral",
  splitting: true,
  external: ["node:*"],
  entryPoints: {
    index: "src/core/index.ts",
    formats: "src/core/public/formats.ts",
    interchange: "src/core/public/interchange.ts",
    compaction: "src/core/public/compaction.ts",
    client: "src/client/index.ts",
    node: "src/node/index.ts",
    // The framework adapters: each framework stays an import (an optional peer dependency).
    langgraph: "src/frameworks/langgraph/index.ts",
    "openai-agents": "src/frameworks/openai-agents/index.ts",
    "claude-agent-sdk": "src/frameworks/claude-agent-sdk/index.ts",
    "ai-sdk": "src/frameworks/ai-sdk/index.ts",
  },
  chunkNames: "chunks/[name]-[hash]",
  outdir: "dist",
});
await build({
  ...common,
  platform: "node",
  entryPoints: { cli: "src/cli/bin.ts" },
  outdir: "dist",
  banner: { js: "#!/usr/bin/env node" },
});
await buildViewer();

if (!skipTypes) {
  const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
  rewriteDeclarationSpecifiers(`${root}/dist/types`);
}
