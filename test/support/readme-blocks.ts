import { readFileSync } from "node:fs";
import { resolve } from "node:path";

/** A fenced code block of the README: its language, its text, and the line its fence opens on. */
export interface CodeBlock {
  lang: string;
  code: string;
  line: number;
}

const README = resolve(import.meta.dirname, "../../README.md");

/** Every fenced block in `lang` of the README (or of another page of the docs), in document order. */
export function readmeBlocks(lang: string, page = README): CodeBlock[] {
  const text = readFileSync(page, "utf8");
  const blocks: CodeBlock[] = [];
  for (const match of text.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```$/gm)) {
    if (match[1] !== lang) continue;
    const line = text.slice(0, match.index).split("\n").length;
    blocks.push({ lang, code: match[2] as string, line });
  }
  return blocks;
}
