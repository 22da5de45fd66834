import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { getSessionMessages } from "@anthropic-ai/claude-agent-sdk";
import {
  migrateSessionEntries,
  parseSessionEntries,
  buildSessionContext as piBuildSessionContext,
} from "@mariozechner/pi-coding-agent";
import { expect } from "vitest";
import { claudeProjectDir } from "../../src/cli/pull";
import { exportClaudeCode } from "../../src/core/claude-code-export";
import { parseClaudeCode } from "../../src/core/claude-code-format";
import { exportCodex } from "../../src/core/codex-export";
import { parseCodex } from "../../src/core/codex-format";
import { normalized } from "../../src/core/codex-items";
import type { SessionEntry } from "../../src/core/entries";
import { SessionError } from "../../src/core/errors";
import type { ImportedSession } from "../../src/core/interchange";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage } from "../../src/core/messages";
import { exportNative, parseNative } from "../../src/core/native-format";
import { exportPi } from "../../src/core/pi-format";
import type { Session } from "../../src/core/session";

/* What the Claude Code and Codex import tests share: the real files, and the round trips. */

const fixtures = resolve(import.meta.dirname, "../fixtures");

/** The real session files of a tool, by file name. */
export function fixtureFiles(tool: "claude-code" | "codex"): Array<[string, string]> {
  return readdirSync(join(fixtures, tool))
    .filter((name) => name.endsWith(".jsonl"))
    .sort()
    .map((name) => [name, readFileSync(join(fixtures, tool, name), "utf8")]);
}

export function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export async function collect(lines: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const line of lines) out += line;
  return out;
}

/** The messages of entries, by role. */
export function messagesOf(entries: readonly SessionEntry[], role: string): AgentMessage[] {
  return entries
    .filter((e): e is Extract<SessionEntry, { type: "message" }> => e.type === "message")
    .map((e) => e.message)
    .filter((m) => m.role === role);
}

/** Every tool result answers a tool call made before it on its path, under the call's name. */
export function expectToolResultsPaired(entries: readonly SessionEntry[]): void {
  const byId = new Map(entries.map((e) => [e.id, e]));
  for (const entry of entries) {
    if (entry.type !== "message" || entry.message.role !== "toolResult") continue;
    const result = entry.message as { toolCallId: string; toolName: string };
    let call: { name: string } | undefined;
    for (let id = entry.parentId; id !== null && !call; ) {
      const up = byId.get(id) as SessionEntry;
      if (up.type === "message" && up.message.role === "assistant") {
        call = (up.message as { content: Array<{ type: string; id?: string; name: string }> }).content.find(
          (part) => part.type === "toolCall" && part.id === result.toolCallId,
        );
      }
      id = up.type === "leaf" ? null : up.parentId;
    }
    expect(call, `the call answered by ${entry.id}`).toBeDefined();
    expect(result.toolName).toBe(call?.name);
  }
}

/**
 * A context a model API accepts: every tool call of an assistant message is answered by its
 * result before the next assistant message (Anthropic's and OpenAI's rule alike).
 */
export function expectToolCallsAnswered(messages: readonly AgentMessage[]): void {
  let open: string[] = [];
  for (const [index, message] of messages.entries()) {
    if (message.role === "assistant") {
      expect(open, `calls unanswered before message ${index}`).toEqual([]);
      open = (message as { content: Array<{ type: string; id?: string }> }).content
        .filter((part) => part.type === "toolCall")
        .map((part) => part.id as string);
    } else if (message.role === "toolResult") {
      const answered = (message as { toolCallId: string }).toolCallId;
      expect(open, `message ${index} answers a call of the assistant message before it`).toContain(answered);
      open = open.filter((id) => id !== answered);
    }
  }
  expect(open, "calls unanswered at the head").toEqual([]);
}

/**
 * The imported session exports to native and back byte for byte, and to pi, whose own
 * buildSessionContext gives the context we give.
 */
export async function expectRoundTrips(file: ImportedSession): Promise<void> {
  const session = await new MemoryRepo().importSession(file);
  const native = await collect(exportNative(session));
  const copy = await new MemoryRepo().importSession(parseNative(native));
  expect(await collect(exportNative(copy))).toBe(native);

  const pi = await collect(exportPi(session));
  const piEntries = parseSessionEntries(pi);
  migrateSessionEntries(piEntries);
  const theirs = piBuildSessionContext(piEntries.slice(1) as never);
  const ours = await session.buildContext();
  expect(ours.messages).toEqual(theirs.messages);
  expect(ours.thinkingLevel).toBe(theirs.thinkingLevel);
  expect(ours.model).toEqual(theirs.model);
}

/** The lines of an agent's file as its import reads them: a last line cut short by a crash left out. */
export function writtenLines(text: string): Record<string, unknown>[] {
  const lines = text.split("\n").filter((l) => l.trim());
  const last = lines.at(-1);
  if (last !== undefined && !/\n\s*$/.test(text)) {
    try {
      JSON.parse(last);
    } catch {
      lines.pop();
    }
  }
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

const agentFormats = {
  "claude-code": {
    parse: parseClaudeCode,
    write: (session: Session) => exportClaudeCode(session),
    lines: writtenLines,
  },
  codex: {
    parse: parseCodex,
    write: (session: Session) => exportCodex(session),
    // The first versions' bare lines come back in the `{timestamp, type, payload}` shape.
    lines: (text: string) =>
      writtenLines(text).map((value, index) => normalized({ line: index + 1, value }, index)),
  },
} as const;

/**
 * An agent's file imported, then exported to the same format, gives back its lines (deep-equal,
 * in order), and that export imports to what the file did.
 */
export async function expectExportedAsWritten(
  format: keyof typeof agentFormats,
  text: string,
): Promise<void> {
  const { parse, write, lines } = agentFormats[format];
  const file = parse(text);
  const exported = await collect(write(await new MemoryRepo().importSession(file)));
  const expected = lines(text);
  const written = jsonLines(exported);
  expected.forEach((line, index) => {
    expect(written[index], `line ${index + 1}`).toEqual(line);
  });
  expect(written).toHaveLength(expected.length);
  const again = parse(exported);
  expect({ ...again, warnings: [] }).toEqual({ ...file, warnings: [] });
}

/**
 * A message whose own time no date can hold goes out to the format at its entry's time. Only the
 * roles a model reads have their fields checked: another role keeps any time it has.
 */
export async function expectOutOfRangeTimeWrittenAsEntryTime(
  format: keyof typeof agentFormats,
): Promise<void> {
  const session = await new MemoryRepo().create({ id: "far-future" });
  await session.appendMessage({ role: "user", content: "Hello", timestamp: Date.UTC(2026, 0, 1) });
  const noteId = await session.appendMessage({
    role: "custom",
    customType: "note",
    content: "Remember this.",
    display: true,
    timestamp: 1e18,
  });
  const note = await session.getEntry(noteId);
  const lines = jsonLines(await collect(agentFormats[format].write(session)));
  const written = lines.filter((line) => JSON.stringify(line).includes("Remember this."));
  expect(written.length).toBeGreaterThan(0);
  for (const line of written) expect(line.timestamp).toBe(note?.timestamp);
}

/** Runs `parse` and returns the SessionError it throws. */
export function refusal(parse: () => unknown): SessionError {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(SessionError);
    return error as SessionError;
  }
  throw new Error("expected the file to be refused");
}

/** The uuid of the line Claude Code resumes a transcript at, as the Claude Agent SDK reads it. */
export async function resumedAt(sessionId: string, text: string): Promise<string | undefined> {
  const config = mkdtempSync(join(tmpdir(), "claude-resume-"));
  const project = join(config, "work");
  const previous = process.env.CLAUDE_CONFIG_DIR;
  process.env.CLAUDE_CONFIG_DIR = config;
  try {
    const dir = claudeProjectDir(project, { CLAUDE_CONFIG_DIR: config });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${sessionId}.jsonl`), text);
    return (await getSessionMessages(sessionId, { dir: project })).at(-1)?.uuid;
  } finally {
    if (previous === undefined) delete process.env.CLAUDE_CONFIG_DIR;
    else process.env.CLAUDE_CONFIG_DIR = previous;
    rmSync(config, { recursive: true, force: true });
  }
}
