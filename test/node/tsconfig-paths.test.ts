import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The TypeScript projects `npm run check` compiles: tsc says nothing of a path in `include` that
 * names nothing, so a file that was moved or removed would silently leave the check.
 */

const root = resolve(import.meta.dirname, "../..");
const projects = readdirSync(root).filter((name) => /^tsconfig(\.[a-z]+)?\.json$/.test(name));

describe("the TypeScript projects", () => {
  it("are there to check", () => {
    expect(projects).toEqual(expect.arrayContaining(["tsconfig.json", "tsconfig.node.json"]));
  });

  for (const project of projects) {
    it(`${project} includes and excludes only paths that exist`, () => {
      const config = JSON.parse(readFileSync(join(root, project), "utf8")) as {
        include?: string[];
        exclude?: string[];
        files?: string[];
      };
      const paths = [...(config.include ?? []), ...(config.exclude ?? []), ...(config.files ?? [])];
      const missing = paths.filter((path) => !/[*?]/.test(path) && !existsSync(join(root, path)));
      expect(missing).toEqual([]);
    });
  }
});
