import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/*
 * An adapter imports the core and its own framework, nothing else: no runtime (so it runs in Node,
 * Workers and browsers alike), and no other framework (a user of one installs only that one). Of
 * the core it imports the public entry points (`cf-sessions`, `cf-sessions/formats`, … and the
 * client's), and of the modules behind them only the readers and helpers named here.
 */

const root = resolve(import.meta.dirname, "../../src/frameworks");
const FRAMEWORK_PACKAGES: Record<string, RegExp> = {
  langgraph: /^@langchain\/(core|langgraph-checkpoint)(\/|$)/,
  "openai-agents": /^@openai\/agents-core$/,
  "claude-agent-sdk": /^@anthropic-ai\/claude-agent-sdk$/,
  "ai-sdk": /^ai$/,
};

function imports(file: string): string[] {
  return [...readFileSync(file, "utf8").matchAll(/from "([^"]+)"/g)].map((m) => m[1] as string);
}

/** The core's modules behind its public face an adapter may use (its readers of framework shapes, and helpers). */
const CORE_MODULES = new Set([
  "bytes",
  "claude-code-call-groups",
  "claude-code-export",
  "context",
  "context-edits",
  "framework-custom-messages",
  "ids",
  "interchange",
  "json",
  "limits",
  "system-messages",
  "providers/from-ai-sdk-ui",
  "providers/from-langchain",
  "providers/from-openai-agents",
  "providers/incoming",
  "providers/normalize",
  "providers/pi-messages",
  "providers/responses-signatures",
  "providers/text",
  "providers/to-ai-sdk-ui",
  "providers/to-openai-responses",
  "providers/tool-call-ids",
  "rewind",
]);

function allowed(specifier: string, framework: string | undefined): boolean {
  if (specifier.startsWith("./") || specifier === "zod") return true;
  const core = /^\.\.\/(?:\.\.\/)?core(?:\/(.+))?$/.exec(specifier);
  if (core) return core[1] === undefined || core[1].startsWith("public/") || CORE_MODULES.has(core[1]);
  if (/^\.\.\/(?:\.\.\/)?client$/.test(specifier)) return true;
  if (
    framework &&
    (specifier === "../keys" || specifier === "../session-handles" || specifier === "../conversation")
  )
    return true;
  return framework !== undefined && (FRAMEWORK_PACKAGES[framework]?.test(specifier) ?? false);
}

describe("the framework adapters", () => {
  it("import only the core and their own framework", () => {
    const wrong: string[] = [];
    for (const name of readdirSync(root, { withFileTypes: true })) {
      const files = name.isDirectory()
        ? readdirSync(join(root, name.name)).map((file) => join(root, name.name, file))
        : [join(root, name.name)];
      const framework = name.isDirectory() ? name.name : undefined;
      if (framework) expect(Object.keys(FRAMEWORK_PACKAGES)).toContain(framework);
      for (const file of files)
        for (const specifier of imports(file))
          if (!allowed(specifier, framework)) wrong.push(`${file}: ${specifier}`);
    }
    expect(wrong).toEqual([]);
  });
});
