import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/*
 * Every object of a tenant is reached through its jurisdiction's namespace (placed-env.ts). The
 * runtime hands the Worker and each object an environment whose namespaces and buckets are the
 * default ones: reading a tenant's objects or blobs straight from it would bypass the tenant's
 * place. So no code reads them from `c.env` (the Worker's) or `this.env` (an object's); they come
 * from an environment `placedEnv` made, and only placed-env.ts picks a jurisdiction.
 */

const SRC = resolve(import.meta.dirname, "../../src");
const PLACED_ENV = join(SRC, "durable/placement/placed-env.ts");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

/** `file:line` of each line matching `pattern`. */
function findings(files: readonly string[], pattern: RegExp): string[] {
  return files.flatMap((file) =>
    readFileSync(file, "utf8")
      .split("\n")
      .flatMap((line, index) => (pattern.test(line) ? [`${relative(SRC, file)}:${index + 1}`] : [])),
  );
}

describe("placement", () => {
  const files = sourceFiles(SRC);

  it("reaches no tenant's objects or blobs through the runtime's own environment", () => {
    expect(findings(files, /\b(this|c)\.env\.(SESSIONS|DIRECTORY|STREAMS|BLOBS\w*)\b/)).toEqual([]);
  });

  it("chooses a jurisdiction in one place", () => {
    const choosing = findings(files, /\.jurisdiction\(|\bBLOBS_(EU|FEDRAMP)\b/).filter(
      (found) => !found.startsWith(`${relative(SRC, PLACED_ENV)}:`) && !found.startsWith("durable/env.ts:"),
    );
    expect(choosing).toEqual([]);
  });

  it("places every Durable Object class by its own id", () => {
    const objects = files.filter((file) => /\bextends DurableObject</.test(readFileSync(file, "utf8")));
    const unplaced = objects.filter((file) => {
      const text = readFileSync(file, "utf8");
      // An object that reaches no other object (the placement registry) needs no place.
      const reaches = /\b(SESSIONS|DIRECTORY|STREAMS|BLOBS)\b/.test(text);
      return reaches && !text.includes("objectEnv(env, ctx)");
    });
    expect(objects.length).toBeGreaterThanOrEqual(3);
    expect(unplaced.map((file) => relative(SRC, file))).toEqual([]);
  });
});
