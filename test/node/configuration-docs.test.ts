import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

/*
 * docs/configuration.md lists every setting and binding the Worker and its objects read: each name
 * the environment's types declare is in its tables.
 */

const root = resolve(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(resolve(root, path), "utf8");

/** The names an environment interface declares (`NAME: …` or `NAME?: …` at the start of a line). */
function declared(source: string): string[] {
  return [...source.matchAll(/^\s+([A-Z][A-Z0-9_]*)\??:/gm)].map((match) => match[1] as string);
}

describe("docs/configuration.md", () => {
  it("names every setting and binding the Worker and the objects read", () => {
    const names = [...declared(read("src/durable/env.ts")), ...declared(read("src/http/env.ts"))];
    expect(names).toContain("QUOTAS");
    expect(names).toContain("GENERATION_RETAIN_SECONDS");
    const page = read("docs/configuration.md");
    expect(names.filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
  });
});
