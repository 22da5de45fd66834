import ts from "typescript";
import type { Plugin } from "vite";

/*
 * A Vite plugin for the path trace (paths.trace.ts): every function of a module under src/ records
 * its file in `globalThis.__entered` when it is entered, while a trace has set that to a Set. Only
 * the trace's own config (vitest.trace.config.ts) uses it; nothing it changes reaches a build.
 */

/** The expression that records `file` as entered. */
function entered(file: string): string {
  return `globalThis.__entered?.add(${JSON.stringify(file)})`;
}

/** `code` with a record of `file` at the start of each of its functions. */
export function recordEntries(code: string, file: string): string {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const inserts: Array<{ at: number; text: string }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const body = node.body as ts.Node;
      if (ts.isBlock(body)) {
        inserts.push({ at: body.getStart(source) + 1, text: `${entered(file)};` });
      } else {
        inserts.push({ at: body.getStart(source), text: `(${entered(file)}, ` });
        inserts.push({ at: body.getEnd(), text: ")" });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  let out = code;
  for (const { at, text } of inserts.sort((a, b) => b.at - a.at))
    out = out.slice(0, at) + text + out.slice(at);
  return out;
}

export function enteredFiles(root: string): Plugin {
  return {
    name: "entered-files",
    transform(code, id) {
      const path = id.split("?")[0] as string;
      if (
        !path.startsWith(`${root}/src/`) ||
        !/\.(ts|js)$/.test(path) ||
        path.endsWith("browser-bundle.js")
      ) {
        return undefined;
      }
      return { code: recordEntries(code, path.slice(root.length + 1)), map: null };
    },
  };
}
