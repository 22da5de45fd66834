import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/*
 * An adapter imports the core and its own framework, nothing else: no runtime (so it runs in Node,
 * Workers and browsers alike), and no other framework (a user of one installs only that one).
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

function allowed(specifier: string, framework: string | undefined): boolean {
  if (specifier.startsWith("./") || specifier === "zod") return true;
  if (/^\.\.\/(\.\.\/)?core(\/internal)?$/.test(specifier)) return true;
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
