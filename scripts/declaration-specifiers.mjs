// The sources import each other without extensions (`./append`, `../core`), which bundlers resolve
// but `moduleResolution: nodenext` does not: it needs the file a specifier names. tsc copies the
// specifiers into the declarations as written, so each relative one is rewritten here to the file
// it resolves to (`./append.js`, `../core/index.js`), which nodenext and bundlers both accept.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

/** `from "./x"`, `import("./x")` and `import "./x"`, with either quote. */
const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(\.{1,2}\/[^"']*|\.{1,2})\2/g;

function declarationFiles(folder) {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return declarationFiles(path);
    return name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The runtime specifier for `specifier`, imported by a declaration file in `folder`. */
function resolved(folder, specifier, file) {
  const bare = specifier.replace(/\.js$/, "");
  const target = resolve(folder, bare);
  if (existsSync(`${target}.d.ts`)) return `${bare}.js`;
  if (existsSync(join(target, "index.d.ts"))) return `${bare.replace(/\/$/, "")}/index.js`;
  throw new Error(`${file}: cannot resolve ${specifier}`);
}

export function rewriteDeclarationSpecifiers(root) {
  for (const file of declarationFiles(root)) {
    const text = readFileSync(file, "utf8");
    const rewritten = text.replace(
      SPECIFIER,
      (_, lead, quote, specifier) => `${lead}${quote}${resolved(dirname(file), specifier, file)}${quote}`,
    );
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
}
