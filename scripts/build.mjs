// Bundles the library entry points and the command line for Node (dist/), so `npx cf-sessions`
// and `import "cf-sessions/node"` work without a TypeScript toolchain. Workers import the sources,
// and the viewer's bundle among them (scripts/build-viewer.mjs).
import { build } from "esbuild";
import { buildViewer } from "./build-viewer.mjs";

// Dependencies (zod, uuid, hono) stay imports: they are installed with the package.
const common = {
  bundle: true,
  format: "esm",
  target: "es2022",
  sourcemap: true,
  packages: "external",
  logLevel: "warning",
};

await build({
  ...common,
  platform: "neutral",
  entryPoints: { index: "src/core/index.ts", client: "src/client/index.ts" },
  outdir: "dist",
});
await build({ ...common, platform: "node", entryPoints: { node: "src/node/index.ts" }, outdir: "dist" });
await build({
  ...common,
  platform: "node",
  entryPoints: { cli: "src/cli/bin.ts" },
  outdir: "dist",
  banner: { js: "#!/usr/bin/env node" },
});
await buildViewer();
