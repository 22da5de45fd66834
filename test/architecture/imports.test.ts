import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/*
 * The shape of the source tree, read from its imports: no module reaches itself through a chain
 * of imports, type-only ones included (they vanish at run time, but a circle of them still says
 * that two concerns share a file). One kind of import is left out: naming a Durable Object's
 * class as a type, which is how a binding or a stub is typed (the objects call each other, and
 * each names the other's class for it).
 */

const SRC = resolve(import.meta.dirname, "../../src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

const isObjectClass = (file: string) => /\bextends DurableObject</.test(readFileSync(file, "utf8"));

/** The project files a module imports (not packages), but for types of Durable Object classes. */
function imports(file: string, known: ReadonlySet<string>): string[] {
  const text = readFileSync(file, "utf8");
  const targets: string[] = [];
  for (const match of text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+"(\.[^"]+)";/gms)) {
    const base = resolve(dirname(file), match[3] as string);
    const target = [`${base}.ts`, `${base}.tsx`, join(base, "index.ts")].find((path) => known.has(path));
    if (!target) continue;
    if (match[2] && isObjectClass(target)) continue;
    targets.push(target);
  }
  return targets;
}

/** Every cycle's members, each cycle once (Tarjan's strongly connected components). */
function cycles(graph: ReadonlyMap<string, string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    indexOf.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indexOf.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next))
        low.set(node, Math.min(low.get(node) as number, indexOf.get(next) as number));
    }
    if (low.get(node) === indexOf.get(node)) {
      const members: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        members.push(member);
      } while (member !== node);
      if (members.length > 1 || graph.get(node)?.includes(node)) found.push(members.sort());
    }
  };
  for (const node of graph.keys()) if (!indexOf.has(node)) visit(node);
  return found;
}

describe("the source tree", () => {
  it("has no import circle", () => {
    const files = sourceFiles(SRC);
    const known = new Set(files);
    const graph = new Map(files.map((file) => [file, imports(file, known)]));
    expect([...graph.values()].flat().length).toBeGreaterThan(100);
    const circles = cycles(graph).map((members) => members.map((file) => relative(SRC, file)));
    expect(circles).toEqual([]);
  });
});
