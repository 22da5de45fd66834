import { describe, expect, it } from "vitest";
import { exportClaudeCode } from "../../src/core/claude-code-export";
import { parseClaudeCode } from "../../src/core/claude-code-format";
import { LEFT_OUT_NOTE } from "../../src/core/claude-code-own-lines";
import { exportCodex } from "../../src/core/codex-export";
import { parseCodex } from "../../src/core/codex-format";
import type { ContextEditEntry, SessionEntry } from "../../src/core/entries";
import type { ImportedSession } from "../../src/core/interchange";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage } from "../../src/core/messages";
import type { Session } from "../../src/core/session";
import { collect, fixtureFiles, jsonLines } from "./agent-imports";

/*
 * A context edit appended to a session imported from Claude Code or Codex goes out with the
 * session: the lines of the entry it names are written from the edited message (or left out of
 * the context for a removal), so the agent resumes, and the file imports again, with the context
 * the session has here.
 */

interface Agent {
  format: "claude-code" | "codex";
  fixture: string;
  parse(text: string): ImportedSession;
  write(session: Session): AsyncGenerator<string>;
}

const AGENTS: Agent[] = [
  { format: "claude-code", fixture: "2.1.38", parse: parseClaudeCode, write: exportClaudeCode },
  { format: "codex", fixture: "0.58.0", parse: parseCodex, write: exportCodex },
];

/** What a context says, message by message (tool results by their call; text as a text block). */
function said(messages: readonly AgentMessage[]): unknown[] {
  return messages.map((m) => {
    const held = (m as { content?: unknown }).content;
    const content = typeof held === "string" ? [{ type: "text", text: held }] : held;
    const id = m.role === "toolResult" ? m.toolCallId : undefined;
    return { role: m.role, ...(id === undefined ? {} : { id }), content };
  });
}

async function imported(agent: Agent): Promise<Session> {
  const [, text] = fixtureFiles(agent.format).find(([n]) => n.startsWith(agent.fixture)) as [string, string];
  return new MemoryRepo().importSession(agent.parse(text));
}

async function lastOf(session: Session, role: string): Promise<SessionEntry> {
  const branch = await session.getBranch();
  return branch.findLast((e) => e.type === "message" && e.message.role === role) as SessionEntry;
}

/** The context of the session's export imported again, beside the session's own. */
async function contexts(agent: Agent, session: Session): Promise<{ ours: unknown[]; theirs: unknown[] }> {
  const ours = said((await session.buildContext()).messages);
  const copy = await new MemoryRepo().importSession(agent.parse(await collect(agent.write(session))));
  return { ours, theirs: said((await copy.buildContext()).messages) };
}

const EDITS: Array<[string, string, ContextEditEntry["replacement"]]> = [
  ["a tool result's output replaced", "toolResult", { content: "[output cleared]" }],
  ["a tool result left out", "toolResult", null],
  ["a reply replaced", "assistant", { content: "[reply cleared]" }],
  ["a reply left out", "assistant", null],
  ["a user message replaced", "user", { content: "[question cleared]" }],
  ["a user message left out", "user", null],
];

/** The uuids of a transcript's lines, in order. */
function uuids(text: string): unknown[] {
  return jsonLines(text).map((line) => line.uuid);
}

describe("context edits of imported entries in exports to their agent", () => {
  it("claude-code: the edited lines keep their uuids and places, a line left empty stays as a note", async () => {
    const agent = AGENTS[0] as Agent;
    const session = await imported(agent);
    const before = await collect(agent.write(session));
    await session.appendContextEdit((await lastOf(session, "toolResult")).id, null);
    const after = await collect(agent.write(session));
    expect(uuids(after)).toEqual(uuids(before));
    const changed = jsonLines(after).filter(
      (line, n) => JSON.stringify(line) !== JSON.stringify(jsonLines(before)[n]),
    );
    expect(changed).toEqual([expect.objectContaining({ type: "system", content: LEFT_OUT_NOTE })]);
  });

  for (const agent of AGENTS) {
    for (const [what, role, replacement] of EDITS) {
      it(`${agent.format}: ${what} reads back as edited`, async () => {
        const session = await imported(agent);
        const target = await lastOf(session, role);
        const before = said((await session.buildContext()).messages);
        await session.appendContextEdit(target.id, replacement);
        const { ours, theirs } = await contexts(agent, session);
        expect(ours).not.toEqual(before);
        expect(theirs).toEqual(ours);
      });
    }
  }
});
