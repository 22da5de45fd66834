import { describe, expect, it } from "vitest";
import { exportClaudeCode } from "../../src/core/claude-code-export";
import { parseClaudeCode } from "../../src/core/claude-code-format";
import type { SessionEntry } from "../../src/core/entries";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage, AssistantMessage } from "../../src/core/messages";
import { usage } from "../../src/core/messages";
import {
  QUESTION,
  SECOND_QUESTION,
  SUMMARY,
  TOOL_OUTPUT,
  writeConversation,
  writeSharedCallIds,
} from "../support/conversation";
import {
  collect,
  expectExportedAsWritten,
  expectOutOfRangeTimeWrittenAsEntryTime,
  fixtureFiles,
  jsonLines,
  resumedAt,
} from "./agent-imports";

/*
 * Sessions out as Claude Code transcripts: a file imported from Claude Code goes back as it was
 * (every real file in test/fixtures/claude-code); a session written anywhere else becomes the
 * transcript Claude Code would have written for its conversation.
 */

type Line = Record<string, unknown>;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The user, assistant and tool-result texts of a context, as the model reads them. */
function said(messages: AgentMessage[]): string[] {
  return messages.flatMap((m) => {
    const content = (m as { content?: unknown }).content;
    if (m.role === "compactionSummary") return [`summary: ${String(m.summary)}`];
    const parts = typeof content === "string" ? [{ type: "text", text: content }] : (content as Line[]);
    return parts.map((p) =>
      p.type === "text"
        ? `${m.role}: ${p.text}`
        : p.type === "toolCall"
          ? `${m.role} calls ${p.name}`
          : `${m.role}: ${p.type}`,
    );
  });
}

describe("real Claude Code sessions exported back", () => {
  for (const [name, text] of fixtureFiles("claude-code")) {
    it(`${name}: the same lines in the same order, which import to the same session`, async () => {
      await expectExportedAsWritten("claude-code", text);
    });
  }

  it("keeps beside each entry only what it does not hold of its lines", () => {
    const [, text] = fixtureFiles("claude-code").find(([n]) => n.startsWith("2.1.38")) as [string, string];
    const { entries } = parseClaudeCode(text);
    const kept = entries.flatMap((e) => ((e as { sourceLines?: Line[] }).sourceLines ?? []) as Line[]);
    const written = (value: unknown) => JSON.stringify(value);
    // No text, tool input or tool output of a message is kept twice.
    for (const entry of entries) {
      if (entry.type !== "message" || entry.message.role !== "assistant") continue;
      for (const part of (entry.message as AssistantMessage).content) {
        if (part.type === "text" && part.text.length > 20) {
          expect(kept.some((line) => written(line).includes(written(part.text)))).toBe(false);
        }
      }
    }
    const holes = kept.flatMap((line) => {
      const content = (line.message as { content?: unknown } | undefined)?.content;
      return Array.isArray(content) ? content.filter((b) => !("type" in b)) : [];
    });
    expect(holes.length).toBeGreaterThan(0);
    expect(holes).toContainEqual({ caller: { type: "direct" } });
  });

  it("writes what was appended after the import under the head, as Claude Code would", async () => {
    const [, text] = fixtureFiles("claude-code").find(([n]) => n.startsWith("1.0.98")) as [string, string];
    const session = await new MemoryRepo().importSession(parseClaudeCode(text));
    const head = await session.getLeafId();
    await session.appendMessage({ role: "user", content: "and now?", timestamp: Date.UTC(2026, 0, 2) });
    const lines = jsonLines(await collect(exportClaudeCode(session)));
    const original = jsonLines(text);
    expect(lines.slice(0, original.length)).toEqual(original);
    const added = lines.slice(original.length);
    expect(added).toHaveLength(1);
    const headLine = original.find((l) => l.uuid === head);
    expect(added[0]).toMatchObject({
      type: "user",
      parentUuid: headLine?.uuid,
      sessionId: headLine?.sessionId,
      cwd: headLine?.cwd,
      message: { role: "user", content: "and now?" },
    });
    const copy = await new MemoryRepo().importSession(
      parseClaudeCode(lines.map((l) => JSON.stringify(l)).join("\n")),
    );
    expect(said((await copy.buildContext()).messages)).toEqual(said((await session.buildContext()).messages));
  });
});

describe("sessions imported before entries recorded their lines' places", () => {
  const [, text] = fixtureFiles("claude-code").find(([n]) => n.startsWith("1.0.98")) as [string, string];
  /** The file as an earlier release imported it: source lines without places or holes. */
  function earlier() {
    const file = parseClaudeCode(text);
    const entries = file.entries.map((entry) => {
      const { sourceLineNumbers: _numbers, sourceLines, ...rest } = entry as Line;
      return (
        Array.isArray(sourceLines) ? { ...rest, sourceLines: [{ kept: "less" }] } : rest
      ) as SessionEntry;
    });
    return { ...file, entries };
  }

  it("still sync with their file as it grows", async () => {
    const repo = new MemoryRepo();
    await repo.importSession(earlier());
    const grown = `${text}${JSON.stringify({ ...jsonLines(text).at(-1), uuid: "later-1", parentUuid: jsonLines(text).at(-1)?.uuid, type: "user", message: { role: "user", content: "more" } })}\n`;
    expect(await repo.syncSession(parseClaudeCode(grown))).toMatchObject({ status: "appended", appended: 1 });
  });

  it("export as the conversation their branch holds", async () => {
    const session = await new MemoryRepo().importSession(earlier());
    const exported = await collect(exportClaudeCode(session));
    const copy = await new MemoryRepo().importSession(parseClaudeCode(exported));
    expect(said((await copy.buildContext()).messages)).toEqual(said((await session.buildContext()).messages));
  });
});

describe("a session written elsewhere as a Claude Code transcript", () => {
  async function written() {
    const session = await new MemoryRepo().create({
      id: "notes-1",
      metadata: { pi: { cwd: "/home/me/notes" } },
    });
    await writeConversation(session);
    return { session, text: await collect(exportClaudeCode(session)) };
  }

  it("is a chain of lines Claude Code reads: one session id, UUIDs, each parent written before", async () => {
    const { text } = await written();
    const lines = jsonLines(text);
    const sessionIds = new Set(lines.map((l) => l.sessionId));
    expect(sessionIds.size).toBe(1);
    expect([...sessionIds][0]).toMatch(UUID);
    const seen = new Set<unknown>();
    for (const line of lines.filter((l) => l.type !== "custom-title")) {
      expect(line.uuid).toMatch(UUID);
      if (line.parentUuid !== null) expect(seen.has(line.parentUuid)).toBe(true);
      expect(line).toMatchObject({ cwd: "/home/me/notes", userType: "external", isSidechain: false });
      seen.add(line.uuid);
    }
    expect(lines.at(-1)).toEqual({
      type: "custom-title",
      customTitle: "Notes",
      sessionId: [...sessionIds][0],
    });
  });

  it("holds the conversation: history, the compaction as Claude Code's own, what it kept, the second turn", async () => {
    const { text } = await written();
    const lines = jsonLines(text);
    const boundary = lines.findIndex((l) => l.subtype === "compact_boundary");
    expect(lines[boundary]).toMatchObject({
      type: "system",
      parentUuid: null,
      compactMetadata: { trigger: "manual" },
    });
    expect(lines[boundary + 1]).toMatchObject({
      parentUuid: lines[boundary]?.uuid,
      isCompactSummary: true,
      message: { content: SUMMARY },
    });
    const call = lines.find((l) => l.type === "assistant") as Line;
    const blocks = (call.message as { content: Line[] }).content;
    // Another provider's reasoning goes as text; the tool-call id as Anthropic takes it.
    expect(blocks).toEqual([
      { type: "text", text: "I should read the file." },
      { type: "tool_use", id: "call_7Hq", name: "read", input: { path: "notes.txt" } },
    ]);
    const result = lines.find((l) => JSON.stringify(l.message).includes("tool_result")) as Line;
    expect((result.message as { content: Line[] }).content).toEqual([
      { type: "tool_result", tool_use_id: "call_7Hq", content: TOOL_OUTPUT },
    ]);
    const last = lines.filter((l) => l.type === "assistant").at(-1) as Line;
    expect((last.message as { content: Line[] }).content[0]).toEqual({
      type: "thinking",
      thinking: "Nothing is planned.",
      signature: "EuYBCkQYAiJA",
    });
  });

  it("imports back to the context it had, and exports and imports again to the same session", async () => {
    const { session, text } = await written();
    const first = parseClaudeCode(text);
    expect(first.warnings).toEqual([]);
    expect(first.header.name).toBe("Notes");
    const copy = await new MemoryRepo().importSession(first);
    const ours = (await session.buildContext()).messages;
    const theirs = (await copy.buildContext()).messages;
    expect(said(theirs)).toEqual(said(ours));
    expect(said(theirs)).toContain(`user: ${SECOND_QUESTION}`);
    // What the compaction summarized is in the transcript before its boundary.
    const branch = await copy.getBranch();
    expect(said(branch.flatMap((e) => (e.type === "message" ? [e.message] : [])))).toContain(
      `user: ${QUESTION}`,
    );
    const again = parseClaudeCode(await collect(exportClaudeCode(copy)));
    expect(again).toEqual(first);
  });

  it("is the same file when exported twice", async () => {
    const { session, text } = await written();
    expect(await collect(exportClaudeCode(session))).toBe(text);
  });

  it("names lines by the entry ids that are UUIDs already", async () => {
    const { session, text } = await written();
    const entries = (await session.getEntries({ limit: 1000 })) as SessionEntry[];
    const question = entries.find((e) => e.type === "message" && e.message.role === "user") as SessionEntry;
    expect(jsonLines(text)[0]?.uuid).toBe(question.id);
  });

  it("takes the session id and working folder it is given", async () => {
    const { session } = await written();
    const sessionId = "0b4b8a8e-1c55-4c4e-9d55-6a1c2a3b4c5d";
    const lines = jsonLines(await collect(exportClaudeCode(session, { sessionId, cwd: "/srv/checkout" })));
    for (const line of lines) expect(line.sessionId).toBe(sessionId);
    for (const line of lines.filter((l) => l.type !== "custom-title")) expect(line.cwd).toBe("/srv/checkout");
  });
});

describe("a reply that did not finish, as a Claude Code transcript", () => {
  const at = (second: number) => Date.UTC(2026, 2, 1, 9, 0, second);
  const reply = {
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: usage(10, 4, 0, 0),
  };

  async function conversationWith(stopped: Partial<AssistantMessage>) {
    const session = await new MemoryRepo().create({ id: "poems-1" });
    await session.appendMessage({ role: "user", content: "Write a poem", timestamp: at(1) });
    await session.appendMessage({
      role: "assistant",
      content: [{ type: "text", text: "Roses are r" }],
      ...reply,
      stopReason: "stop",
      timestamp: at(2),
      ...stopped,
    } as AssistantMessage);
    await session.appendMessage({ role: "user", content: "Try again", timestamp: at(3) });
    return session;
  }

  for (const stopped of [
    { stopReason: "aborted", errorMessage: "Request was aborted" },
    { stopReason: "error", errorMessage: "529 overloaded_error" },
  ] as const) {
    it(`${stopped.stopReason}: stays out of the context after a round trip, kept as ${stopped.stopReason}`, async () => {
      const session = await conversationWith(stopped);
      const before = await session.contextIn("anthropic");
      expect(JSON.stringify(before)).not.toContain("Roses are r");
      const lines = jsonLines(await collect(exportClaudeCode(session)));
      const written = lines.find((l) => l.type === "assistant") as Line;
      // Claude Code's own marks: no stop reason (the stream did not end), and the mark of a stopped
      // stream or of a failed request.
      expect((written.message as Line).stop_reason).toBeNull();
      expect(written).toMatchObject(
        stopped.stopReason === "aborted"
          ? { isAbortedMidStream: true, errorDetails: stopped.errorMessage }
          : { isApiErrorMessage: true, errorDetails: stopped.errorMessage },
      );
      const copy = await new MemoryRepo().importSession(
        parseClaudeCode(lines.map((l) => JSON.stringify(l)).join("\n")),
      );
      const kept = (await copy.getBranch()).flatMap((e) =>
        e.type === "message" && e.message.role === "assistant" ? [e.message as AssistantMessage] : [],
      );
      expect(kept).toMatchObject([{ content: [{ type: "text", text: "Roses are r" }], ...stopped }]);
      expect(await copy.contextIn("anthropic")).toEqual(before);
    });
  }
});

describe("a message whose time no date can hold, as a Claude Code transcript", () => {
  it("goes out at its entry's time", () => expectOutOfRangeTimeWrittenAsEntryTime("claude-code"));
});

describe("a fork of an imported Claude Code session, exported", () => {
  const [, text] = fixtureFiles("claude-code").find(([n]) => n.startsWith("2.1.152")) as [string, string];

  async function forked() {
    const repo = new MemoryRepo();
    const source = await repo.importSession(parseClaudeCode(text));
    const fork = await source.fork((await source.getLeafId()) as string, { name: "try B" });
    await fork.appendMessage({ role: "user", content: "only in the fork", timestamp: Date.UTC(2026, 0, 2) });
    return {
      repo,
      source,
      fork,
      sourceId: (parseClaudeCode(text).header.metadata.claudeCode as Line).sessionId,
    };
  }

  it("goes out under a session id of its own, in every line, with its name", async () => {
    const { fork, sourceId } = await forked();
    const lines = jsonLines(await collect(exportClaudeCode(fork)));
    const ids = new Set(lines.map((l) => l.sessionId).filter((id) => id !== undefined));
    expect(ids.size).toBe(1);
    expect([...ids][0]).not.toBe(sourceId);
    expect([...ids][0]).toMatch(UUID);
    expect(lines.at(-1)).toMatchObject({ type: "custom-title", customTitle: "try B" });
    const again = parseClaudeCode(lines.map((l) => JSON.stringify(l)).join("\n"));
    expect(again.header.name).toBe("try B");
    expect(again.header.id).not.toBe(`claude-code-${sourceId}`);
  });

  it("syncs into a session of its own, leaving the source as it was", async () => {
    const { repo, source, fork } = await forked();
    const before = await source.getLeafId();
    const result = await repo.syncSession(parseClaudeCode(await collect(exportClaudeCode(fork))));
    expect(result.session.id).not.toBe(source.id);
    expect(result.status).toBe("created");
    expect(await source.getLeafId()).toBe(before);
  });

  it("keeps the source's own id for the source, and the same fork id each time", async () => {
    const { source, fork, sourceId } = await forked();
    expect(await collect(exportClaudeCode(source))).toBe(text);
    expect(jsonLines(text).at(-1)?.sessionId).toBe(sourceId);
    expect(await collect(exportClaudeCode(fork))).toBe(await collect(exportClaudeCode(fork)));
  });
});

describe("tool calls sharing an id, as a Claude Code transcript", () => {
  it("gives each call an id of its own, each result the id of the call it answers", async () => {
    const session = await new MemoryRepo().create({ id: "kimi-1" });
    await writeSharedCallIds(session);
    const lines = jsonLines(await collect(exportClaudeCode(session)));
    const blocks = lines.flatMap((l) => ((l.message as { content?: unknown })?.content ?? []) as Line[]);
    const calls = blocks.filter((b) => b.type === "tool_use").map((b) => [b.id, (b.input as Line).path]);
    const results = blocks.filter((b) => b.type === "tool_result").map((b) => [b.tool_use_id, b.content]);
    expect(new Set(calls.map(([id]) => id)).size).toBe(2);
    expect(results).toEqual([
      [calls[0]?.[0], "contents of a.txt"],
      [calls[1]?.[0], "contents of b.txt"],
    ]);
  });
});

describe("images of a user and of a tool's result, as a Claude Code transcript", () => {
  it("go out as the image types Anthropic reads, or as a note where it reads none", async () => {
    const session = await new MemoryRepo().create({ id: "images-1" });
    const image = (mimeType: string) => ({ type: "image" as const, mimeType, data: "aGVsbG8=" });
    await session.appendMessage({ role: "user", content: [image("image/jpg")], timestamp: 1 });
    await session.appendMessage({
      role: "assistant",
      content: [{ type: "toolCall", id: "shot", name: "screenshot", arguments: {} }],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage: usage(1, 1, 0, 0),
      stopReason: "toolUse",
      timestamp: 2,
    } as AssistantMessage);
    await session.appendMessage({
      role: "toolResult",
      toolCallId: "shot",
      toolName: "screenshot",
      content: [image("image/jpg"), image("image/bmp")],
      isError: false,
      timestamp: 3,
    });
    const lines = jsonLines(await collect(exportClaudeCode(session)));
    const blocks = lines.flatMap((l) => ((l.message as { content?: unknown })?.content ?? []) as Line[]);
    const result = blocks.find((b) => b.type === "tool_result") as Line;
    const image0 = { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "aGVsbG8=" } };
    expect(blocks[0]).toEqual(image0);
    expect(result.content).toEqual([
      image0,
      { type: "text", text: "(image omitted: image/bmp is not supported)" },
    ]);
  });
});

describe("a transcript pulled into another checkout, synced back", () => {
  const [, text] = fixtureFiles("claude-code").find(([n]) => n.startsWith("2.1.152")) as [string, string];
  const elsewhere = (change: (line: Line) => Line) =>
    jsonLines(text)
      .map((line) =>
        JSON.stringify(typeof line.cwd === "string" ? change({ ...line, cwd: "/home/bob/app" }) : line),
      )
      .join("\n");

  it("takes only the lines the agent added, keeping the working folder stored", async () => {
    const repo = new MemoryRepo();
    const session = await repo.importSession(parseClaudeCode(text));
    const last = jsonLines(text).at(-1) as Line;
    const added = {
      ...last,
      cwd: "/home/bob/app",
      parentUuid: last.uuid,
      uuid: "a0000000-0000-4000-8000-000000000001",
    };
    const grown = `${elsewhere((l) => l)}\n${JSON.stringify({ ...added, type: "user", message: { role: "user", content: "more" } })}\n`;
    expect(await repo.syncSession(parseClaudeCode(grown))).toMatchObject({ status: "appended", appended: 1 });
    const exported = jsonLines(await collect(exportClaudeCode(session)));
    expect(exported.slice(0, jsonLines(text).length)).toEqual(jsonLines(text));
  });

  it("still refuses a line changed otherwise, writing nothing", async () => {
    const repo = new MemoryRepo();
    const session = await repo.importSession(parseClaudeCode(text));
    const before = await session.getEntries({ limit: 1000 });
    const changed = elsewhere((line) => ({ ...line, gitBranch: "other" }));
    await expect(repo.syncSession(parseClaudeCode(changed))).rejects.toMatchObject({
      code: "already_exists",
    });
    expect(await session.getEntries({ limit: 1000 })).toEqual(before);
  });
});

describe("a session imported from Claude Code, its head moved back, exported", () => {
  const [, text] = fixtureFiles("claude-code").find(([n]) => n.startsWith("1.0.98")) as [string, string];
  const file = parseClaudeCode(text);
  const sessionId = (jsonLines(text)[0] as Line).sessionId as string;
  const result = file.entries.find(
    (entry) => entry.type === "message" && entry.message.role === "toolResult",
  ) as SessionEntry;
  const messages = file.entries.filter((entry) => entry.type === "message");
  const question = messages[0] as SessionEntry;
  // The second of five results of parallel calls.
  const parallel = messages.find((entry) => entry.id.startsWith("2c427490")) as SessionEntry;

  for (const [where, head] of [
    ["a tool's result", result],
    ["the first question", question],
    ["a result of parallel calls", parallel],
  ] as const) {
    it(`resumes in Claude Code at the head, on ${where}, keeping every line`, async () => {
      const repo = new MemoryRepo();
      const session = await repo.importSession(file, { id: `claude-code-resume-${head.id}` });
      await session.setLeafId(head.id);
      const exported = await collect(exportClaudeCode(session));
      // The head's entry is a line of the file, under its own uuid.
      expect(jsonLines(text).some((line) => line.uuid === head.id)).toBe(true);
      expect(await resumedAt(sessionId, exported)).toBe(head.id);
      const uuids = new Set(jsonLines(exported).map((line) => line.uuid));
      expect(jsonLines(text).every((line) => uuids.has(line.uuid))).toBe(true);
      // Read back, the file's head is the session's, and it holds nothing new.
      const read = parseClaudeCode(exported);
      expect(read.leafId).toBe(head.id);
      expect(read.entries).toEqual(file.entries);
      expect((await repo.syncSession(read, { id: `claude-code-resume-${head.id}` })).status).toBe(
        "unchanged",
      );
      expect(await collect(exportClaudeCode(session))).toBe(exported);
    });
  }

  it("goes on in Claude Code from the head, then resumes at the older leaf the head is moved to", async () => {
    const repo = new MemoryRepo();
    const id = "claude-code-resume-older-leaf";
    const session = await repo.importSession(file, { id });
    const tip = await session.getLeafId();
    await session.setLeafId(result.id);
    const lines = jsonLines(await collect(exportClaudeCode(session)));
    // Claude Code's next line goes under the line it resumed at.
    const turn = {
      ...(lines.find((line) => line.uuid === result.id) as Line),
      parentUuid: result.id,
      uuid: "a0000000-0000-4000-8000-000000000041",
      message: { role: "user", content: "asked again in Claude Code" },
    };
    const grown = [...lines, turn].map((line) => `${JSON.stringify(line)}\n`).join("");
    expect(await resumedAt(sessionId, grown)).toBe(turn.uuid);
    expect(await repo.syncSession(parseClaudeCode(grown), { id })).toMatchObject({
      status: "appended",
      appended: 1,
    });
    expect(await session.getEntry(turn.uuid)).toMatchObject({ parentId: result.id });
    expect(await session.getLeafId()).toBe(turn.uuid);

    await session.setLeafId(tip);
    const exported = await collect(exportClaudeCode(session));
    expect(await resumedAt(sessionId, exported)).toBe(tip);
    expect(parseClaudeCode(exported).leafId).toBe(tip);
    expect((await repo.syncSession(parseClaudeCode(exported), { id })).status).toBe("unchanged");
  });
});
