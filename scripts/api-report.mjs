// `npm run api`: the public surface of every entry point of the package, as API reports in api/
// (api-extractor over the declarations the build writes to dist/types), so a change to what the
// package promises is a visible diff. `--check` (in `npm run check`) fails when a report would
// change: run `npm run api` and commit the reports with the change.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Extractor, ExtractorConfig } from "@microsoft/api-extractor";
import { rewriteDeclarationSpecifiers } from "./declaration-specifiers.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const check = process.argv.includes("--check");

// The declarations of the sources as they are now, as `npm run build` writes them.
const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));
execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
rewriteDeclarationSpecifiers(`${root}/dist/types`);

/** Each entry point of package.json's exports, by its report's name. */
const ENTRY_POINTS = {
  "cf-sessions": "core/index",
  "cf-sessions-formats": "core/public/formats",
  "cf-sessions-interchange": "core/public/interchange",
  "cf-sessions-compaction": "core/public/compaction",
  "cf-sessions-client": "client/index",
  "cf-sessions-node": "node/index",
  "cf-sessions-durable": "durable/index",
  "cf-sessions-http": "http/index",
  "cf-sessions-langgraph": "frameworks/langgraph/index",
  "cf-sessions-openai-agents": "frameworks/openai-agents/index",
  "cf-sessions-claude-agent-sdk": "frameworks/claude-agent-sdk/index",
  "cf-sessions-ai-sdk": "frameworks/ai-sdk/index",
};

const temp = `${root}node_modules/.cache/api-report`;
mkdirSync(temp, { recursive: true });
mkdirSync(`${root}api`, { recursive: true });
const changed = [];
for (const [name, entry] of Object.entries(ENTRY_POINTS)) {
  const config = ExtractorConfig.prepare({
    configObject: {
      projectFolder: root,
      mainEntryPointFilePath: `${root}dist/types/${entry}.d.ts`,
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: "es2022",
            module: "esnext",
            moduleResolution: "bundler",
            strict: true,
            skipLibCheck: true,
            lib: ["es2023"],
            types: ["@cloudflare/workers-types", "node"],
          },
          include: [`${root}dist/types`],
        },
      },
      apiReport: { enabled: true, reportFolder: `${root}api/`, reportTempFolder: temp, reportFileName: name },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: "warning" } },
        extractorMessageReporting: { default: { logLevel: "none" } },
        tsdocMessageReporting: { default: { logLevel: "none" } },
      },
    },
    configObjectFullPath: undefined,
    packageJsonFullPath: `${root}package.json`,
  });
  const result = Extractor.invoke(config, { localBuild: !check, showVerboseMessages: false });
  if (!result.succeeded || result.apiReportChanged) changed.push(name);
}
// The Durable Object classes are published to be exported from a Worker; what they answer over
// RPC is the service's own (marked @internal, so the declarations leave it out).
const OBJECT_MEMBERS = new Set([
  "constructor",
  "fetch",
  "alarm",
  "webSocketMessage",
  "webSocketClose",
  "webSocketError",
]);
const durable = readFileSync(`${temp}/cf-sessions-durable.api.md`, "utf8").replace(/\r\n/g, "\n");
const exposed = [];
for (const [, name, body] of durable.matchAll(
  /export class (\w+) extends DurableObject_2<\w+> \{\n([\s\S]*?)\n\}/g,
)) {
  for (const [, member] of body.matchAll(/^ {4}(?:readonly |static |get |set )*(\w+)[(<:?]/gm)) {
    if (!OBJECT_MEMBERS.has(member)) exposed.push(`${name}.${member}`);
  }
}
if (exposed.length > 0) {
  console.error(
    `api: mark these RPC members @internal, they are not part of cf-sessions/durable: ${exposed.join(", ")}`,
  );
  process.exit(1);
}
if (check && changed.length > 0) {
  console.error(
    `api: the public surface of ${changed.join(", ")} changed (see node_modules/.cache/api-report); run npm run api and commit api/`,
  );
  process.exit(1);
}
if (!check) console.log(`api: reports written to api/ (${Object.keys(ENTRY_POINTS).length} entry points)`);
