import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseImport } from "../../src/core/import-formats";
import type { ImportFormat } from "../../src/core/interchange";
import { MemoryRepo } from "../../src/core/memory";
import type { AssistantMessage, ToolResultMessage } from "../../src/core/messages";
import { fixtureFiles } from "./agent-imports";

/*
 * Read with `linesApart`, a file's first lines give the same entries however the file grows: what
 * mirroring a file while an agent writes it relies on (cf-sessions sync --watch sends only the
 * entries past those it sent). Checked on every real session file of each agent, cut after every
 * line (or every n-th of a long file); and a whole-file import is shown not to have the property,
 * so the test can tell the two apart.
 */

const FIXTURES = join(import.meta.dirname, "../fixtures");
const AGENTS: Array<[ImportFormat, string]> = [
  ["claude-code", "claude-code"],
  ["codex", "codex"],
  ["pi", "pi"],
];
/** Cuts checked per file at most. */
const CUTS = 60;

function files(dir: string): string[] {
  return readdirSync(join(FIXTURES, dir))
    .filter((name) => name.endsWith(".jsonl"))
    .map((name) => join(FIXTURES, dir, name));
}

/** The file cut after `count` lines. */
function cut(lines: string[], count: number): string {
  return `${lines.slice(0, count).join("\n")}\n`;
}

/** The first cut whose entries are not the first entries of the whole file, if any. */
function firstUnstableCut(format: ImportFormat, text: string, linesApart: boolean): number | undefined {
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  const whole = parseImport(format, cut(lines, lines.length), { linesApart }).entries;
  const step = Math.max(1, Math.ceil(lines.length / CUTS));
  for (let count = 1; count < lines.length; count += step) {
    let entries: unknown[];
    try {
      entries = parseImport(format, cut(lines, count), { linesApart }).entries;
    } catch {
      // A cut before the line that names the session (Codex's session_meta) is no session yet.
      continue;
    }
    if (JSON.stringify(entries) !== JSON.stringify(whole.slice(0, entries.length))) return count;
  }
  return undefined;
}

describe.each(AGENTS)("%s files read with linesApart", (format, dir) => {
  it.each(files(dir).map((file) => [file.slice(FIXTURES.length + 1), file]))(
    "%s: its first lines' entries stay the same as it grows",
    (_name, file) => {
      expect(firstUnstableCut(format, readFileSync(file, "utf8"), true)).toBeUndefined();
    },
  );
});

it("a whole-file import folds later lines into earlier entries, so it cannot be mirrored that way", () => {
  const folding = [
    ["claude-code", "claude-code/2.1.38-task-plan-mode.jsonl"],
    ["codex", "codex/0.125.0-web-search-patches.jsonl"],
  ] as const;
  for (const [format, file] of folding) {
    expect(firstUnstableCut(format, readFileSync(join(FIXTURES, file), "utf8"), false)).toBeDefined();
  }
});

it("keeps the streamed blocks of one answer as a message each", () => {
  const line = (uuid: string, parentUuid: string | null, content: unknown[]) =>
    JSON.stringify({
      type: "assistant",
      uuid,
      parentUuid,
      sessionId: "s-1",
      timestamp: "2026-01-01T00:00:00.000Z",
      message: { id: "msg_1", role: "assistant", model: "claude-sonnet-4-5", content },
    });
  const text = `${[
    line("a1", null, [{ type: "thinking", thinking: "Look first.", signature: "sig" }]),
    line("a2", "a1", [{ type: "text", text: "Done." }]),
  ].join("\n")}\n`;
  const messages = (linesApart: boolean) =>
    parseImport("claude-code", text, { linesApart })
      .entries.filter((entry) => entry.type === "message")
      .map((entry) => (entry.type === "message" ? entry.message.content : undefined));
  expect(messages(false)).toHaveLength(1);
  expect(messages(true)).toEqual([
    [{ type: "thinking", thinking: "Look first.", thinkingSignature: "sig" }],
    [{ type: "text", text: "Done." }],
  ]);
});

/** The tool calls and the results on the head path of a file's context, in order. */
async function callsAndResults(text: string, linesApart: boolean) {
  const session = await new MemoryRepo().importSession(parseImport("claude-code", text, { linesApart }));
  const { messages } = await session.buildContext();
  const calls = messages.flatMap((message) =>
    message.role === "assistant"
      ? (message as AssistantMessage).content.flatMap((part) => (part.type === "toolCall" ? [part.id] : []))
      : [],
  );
  const results = messages.flatMap((message) =>
    message.role === "toolResult" ? [(message as ToolResultMessage).toolCallId] : [],
  );
  return { calls, results };
}

describe.each(fixtureFiles("claude-code"))("Claude Code %s read with linesApart", (_name, text) => {
  it("has the calls and results of the whole-file import on its head path, each call answered", async () => {
    const apart = await callsAndResults(text, true);
    expect(apart).toEqual(await callsAndResults(text, false));
    expect([...apart.results].sort()).toEqual([...apart.calls].sort());
  });
});

it("keeps the segment a Claude Code compaction preserved", async () => {
  let second = 0;
  const line = (fields: Record<string, unknown>) =>
    JSON.stringify({
      parentUuid: null,
      isSidechain: false,
      sessionId: "s-1",
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, ++second)).toISOString(),
      ...fields,
    });
  const say = (uuid: string, parentUuid: string | null, content: string, extra = {}) =>
    line({ type: "user", uuid, parentUuid, message: { role: "user", content }, ...extra });
  const reply = (uuid: string, parentUuid: string, text: string) =>
    line({
      type: "assistant",
      uuid,
      parentUuid,
      message: {
        id: `msg_${uuid}`,
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [{ type: "text", text }],
      },
    });
  const text = `${[
    say("u1", null, "old"),
    reply("a1", "u1", "old answer"),
    say("u2", "a1", "recent"),
    reply("a2", "u2", "recent answer"),
    line({
      type: "system",
      subtype: "compact_boundary",
      uuid: "b1",
      logicalParentUuid: "a2",
      compactMetadata: {
        trigger: "manual",
        preTokens: 900,
        preservedSegment: { headUuid: "u2", tailUuid: "a2" },
      },
    }),
    say("s1", "b1", "Summary: old things.", { isCompactSummary: true }),
    say("u3", "s1", "go on"),
  ].join("\n")}\n`;
  const said = async (linesApart: boolean) => {
    const session = await new MemoryRepo().importSession(parseImport("claude-code", text, { linesApart }));
    return (await session.buildContext()).messages.map((message) =>
      "summary" in message ? message.summary : (message as { content: unknown }).content,
    );
  };
  expect(await said(true)).toEqual(await said(false));
  expect(await said(true)).toEqual([
    "Summary: old things.",
    "recent",
    [{ type: "text", text: "recent answer" }],
    "go on",
  ]);
});
