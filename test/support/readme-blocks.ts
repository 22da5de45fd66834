import { readFileSync } from "node:fs";
import { resolve } from "node:path";

/** A fenced code block of the README: its language, its text, and the line its fence opens on. */
export interface CodeBlock {
  lang: string;
  code: string;
  line: number;
}

const README = resolve(import.meta.dirname, "../../README.md");

/** Every fenced block of the README in `lang`, in document order. */
export function readmeBlocks(lang: string): CodeBlock[] {
  const text = readFileSync(README, "utf8");
  const blocks: CodeBlock[] = [];
  for (const match of text.matchAll(/^```(\w*)[^\n]*\n([\s\S]*?)^```$/gm)) {
    if (match[1] !== lang) continue;
    const line = text.slice(0, match.index).split("\n").length;
    blocks.push({ lang, code: match[2] as string, line });
  }
  return blocks;
}
