import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";

/** A fenced code block of a documentation page: its page, language, text, and the line its fence opens on. */
export interface CodeBlock {
  page: string;
  lang: string;
  code: string;
  line: number;
}

const ROOT = resolve(import.meta.dirname, "../..");

/** Every fenced block in `lang` of `page` (a path from the repository's root), in document order. */
export function pageBlocks(page: string, lang: string): CodeBlock[] {
  const text = readFileSync(resolve(ROOT, page), "utf8");
  const blocks: CodeBlock[] = [];
  for (const match of text.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```$/gm)) {
    if (match[1] !== lang) continue;
    const line = text.slice(0, match.index).split("\n").length;
    blocks.push({ page, lang, code: match[2] as string, line });
  }
  return blocks;
}

/** The documentation's pages: README.md and every Markdown page under docs/, as paths from the root. */
export function documentationPages(): string[] {
  const pages = readdirSync(resolve(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return ["README.md", ...pages];
}
