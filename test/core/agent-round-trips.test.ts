import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { exportLines } from "../../src/core/export-formats";
import { parseImport } from "../../src/core/import-formats";
import type { ExportFormat, ImportedSession } from "../../src/core/interchange";
import { MemoryRepo } from "../../src/core/memory";
import type { Session } from "../../src/core/session";
import { writeConversation } from "../support/conversation";
import { collect, fixtureFiles } from "./agent-imports";

/*
 * Import → export → import is stable: for every agent file in test/fixtures (pi, Claude Code,
 * Codex), and for a session sent through the three agents' formats in turn. Whatever a file lost
 * on the first import (another format's details), the second import of the same format equals the
 * first.
 */

const AGENTS = ["pi", "claude-code", "codex"] as const;

async function throughFormat(format: ExportFormat, session: Session): Promise<ImportedSession> {
  return parseImport(format, await collect(exportLines(format, session)));
}

/** The session a file imports to, and that session exported to the same format and imported again. */
async function twice(format: ExportFormat, text: string) {
  const first = parseImport(format, text);
  const again = await throughFormat(format, await new MemoryRepo().importSession(first));
  return { first, again };
}

function piFixtures(): Array<[string, string]> {
  const dir = resolve(import.meta.dirname, "../fixtures/pi");
  const files = [
    ...readdirSync(dir).map((name) => join(dir, name)),
    ...readdirSync(join(dir, "hand-edited")).map((name) => join(dir, "hand-edited", name)),
  ];
  // The hand-edited files each hold a line of two entries joined, which pi skips: without it.
  const readable = (text: string) =>
    text
      .split("\n")
      .filter((line) => {
        try {
          JSON.parse(line);
          return true;
        } catch {
          return line.trim() === "";
        }
      })
      .join("\n");
  return files
    .filter((path) => path.endsWith(".jsonl"))
    .map((path) => [path, readable(readFileSync(path, "utf8"))]);
}

describe("import → export → import of every agent fixture", () => {
  const fixtures: Array<[ExportFormat, string, string]> = [
    ...piFixtures().map(([name, text]) => ["pi", name, text] as [ExportFormat, string, string]),
    ...fixtureFiles("claude-code").map(
      ([name, text]) => ["claude-code", name, text] as [ExportFormat, string, string],
    ),
    ...fixtureFiles("codex").map(([name, text]) => ["codex", name, text] as [ExportFormat, string, string]),
  ];
  for (const [format, name, text] of fixtures) {
    it(`${format} ${name.split("/").slice(-2).join("/")}: the second import equals the first`, async () => {
      const { first, again } = await twice(format, text);
      expect(again.header).toEqual(first.header);
      expect(again.entries).toEqual(first.entries);
      expect(again.leafId).toBe(first.leafId);
    });
  }
});

describe("a session sent through pi, Claude Code and Codex in turn", () => {
  it("imports the same each time it comes back to a format, and keeps its conversation's words", async () => {
    const start = await new MemoryRepo().create({ id: "round", metadata: { pi: { cwd: "/home/me/notes" } } });
    await writeConversation(start);
    let session: Session = start;
    for (const format of [...AGENTS, ...AGENTS]) {
      const file = await throughFormat(format, session);
      const again = await throughFormat(format, await new MemoryRepo().importSession(file));
      expect(again.entries, format).toEqual(file.entries);
      expect(again.header, format).toEqual(file.header);
      session = await new MemoryRepo().importSession(file);
      const words = JSON.stringify((await session.buildContext()).messages);
      for (const word of ["And tomorrow?", "Nothing is planned for tomorrow.", "remember the milk"]) {
        expect(words, `${format}: ${word}`).toContain(word);
      }
    }
  });
});
