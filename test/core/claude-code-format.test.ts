import { describe, expect, it } from "vitest";
import { parseClaudeCode } from "../../src/core/claude-code-format";
import type { SessionEntry } from "../../src/core/entries";
import { detectFormat } from "../../src/core/import-formats";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage, AssistantMessage } from "../../src/core/messages";
import {
  expectExportedAsWritten,
  expectRoundTrips,
  expectToolCallsAnswered,
  expectToolResultsPaired,
  fixtureFiles,
  jsonLines,
  messagesOf,
  refusal,
} from "./agent-imports";

/*
 * Claude Code sessions: the real files in test/fixtures/claude-code (several versions), and the
 * shapes they do not show (compaction, edits, subagent files, titles) written as Claude Code
 * writes them.
 */

type Line = Record<string, unknown>;

/** Every file this test reads, to export each back at the end. */
const files: string[] = [];
function parsed(text: string) {
  files.push(text);
  return parseClaudeCode(text);
}
type Turn = { role: string; text?: string; calls?: string[]; callId?: string };

function textsOf(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  const texts = (content as Array<{ type: string; text?: string }>)
    .filter((b) => b.type === "text")
    .map((b) => b.text as string);
  return texts.length > 0 ? texts.join("\n") : undefined;
}

/**
 * The conversation on a file's main chain as Claude Code reads it back, without the codec: from
 * the newest main-chain message back by parentUuid; each API message once, from every line it was
 * streamed in (those of parallel calls written beside the chain too), then the results of its
 * tool calls in the order they were written, wherever they hang.
 */
function conversationInFile(text: string): Turn[] {
  const lines = jsonLines(text).filter((l) => typeof l.uuid === "string");
  const byUuid = new Map(lines.map((l) => [l.uuid, l]));
  const leaf = [...lines]
    .reverse()
    .find((l) => !l.isSidechain && (l.type === "user" || l.type === "assistant"));
  const chain: Line[] = [];
  for (let line = leaf; line; line = byUuid.get(line.parentUuid)) chain.unshift(line);
  const sameThread = lines.filter((l) => l.isSidechain === leaf?.isSidechain);
  type Block = { type: string; id?: string; text?: string; tool_use_id?: string };
  const blocksOf = (line: Line) => (line.message as { content: unknown }).content as Block[];
  const streamed = new Map<unknown, Line[]>();
  for (const line of sameThread.filter((l) => l.type === "assistant")) {
    const id = (line.message as { id?: string }).id;
    streamed.set(id, [...(streamed.get(id) ?? []), line]);
  }
  const written = sameThread
    .filter((l) => l.type === "user" && Array.isArray((l.message as { content: unknown }).content))
    .flatMap((l) => blocksOf(l).filter((b) => b.type === "tool_result"));
  const turns: Turn[] = [];
  const read = new Set<unknown>();
  const answered = new Set<unknown>();
  const answer = (callId: unknown) => {
    answered.add(callId);
    turns.push({ role: "toolResult", callId: callId as string });
  };
  for (const line of chain) {
    const message = line.message as { id?: string; content: unknown } | undefined;
    if (!message) continue;
    if (line.type === "assistant") {
      if (message.id !== undefined && read.has(message.id)) continue;
      read.add(message.id);
      const blocks = (message.id === undefined ? [line] : (streamed.get(message.id) ?? [])).flatMap(blocksOf);
      const calls = blocks.filter((b) => b.type === "tool_use").map((b) => b.id as string);
      turns.push({ role: "assistant", text: textsOf(blocks), calls });
      for (const result of written)
        if (calls.includes(result.tool_use_id as string)) answer(result.tool_use_id);
    } else if (typeof message.content === "string") turns.push({ role: "user", text: message.content });
    else {
      const blocks = message.content as Block[];
      for (const block of blocks.filter((b) => b.type === "tool_result" && !answered.has(b.tool_use_id))) {
        answer(block.tool_use_id);
      }
      const text = textsOf(blocks.filter((b) => b.type !== "tool_result"));
      if (text !== undefined) turns.push({ role: "user", text });
    }
  }
  return turns;
}

function turnsOf(messages: AgentMessage[]): Turn[] {
  return messages.map((m) => {
    if (m.role === "assistant") {
      const content = (m as AssistantMessage).content;
      return {
        role: "assistant",
        text: textsOf(content),
        calls: content.filter((p) => p.type === "toolCall").map((p) => (p as { id: string }).id),
      };
    }
    if (m.role === "toolResult")
      return { role: "toolResult", callId: (m as { toolCallId: string }).toolCallId };
    const content = (m as { content?: unknown }).content;
    return content === undefined ? { role: m.role } : { role: m.role, text: textsOf(content) };
  });
}

describe("real Claude Code sessions", () => {
  it("are there to test", () => {
    expect(fixtureFiles("claude-code").map(([name]) => name)).toEqual(
      expect.arrayContaining([
        "1.0.108-sidechains.jsonl",
        "1.0.98-parallel-tools.jsonl",
        "2.1.152-redacted.jsonl",
        "2.1.38-task-plan-mode.jsonl",
      ]),
    );
  });

  for (const [name, text] of fixtureFiles("claude-code")) {
    describe(name, () => {
      const lines = jsonLines(text);
      const file = parsed(text);

      it("is told apart by its first lines and imports under an id made from its sessionId", () => {
        expect(detectFormat(text)).toBe("claude-code");
        const sessionId = [...lines].reverse().find((l) => typeof l.sessionId === "string")?.sessionId;
        expect(file.header.id).toBe(`claude-code-${sessionId}`);
        expect(file.warnings).toEqual([]);
      });

      it("holds every message of the file: one per API message, one result per tool_result block", () => {
        const apiMessages = new Set(
          lines.filter((l) => l.type === "assistant").map((l) => (l.message as { id: string }).id),
        );
        expect(messagesOf(file.entries, "assistant").length).toBe(apiMessages.size);
        const blocks = lines
          .filter((l) => l.type === "user")
          .flatMap((l) => {
            const content = (l.message as { content: unknown }).content;
            return Array.isArray(content) ? content : [{ type: "text" }];
          });
        expect(messagesOf(file.entries, "toolResult").length).toBe(
          blocks.filter((b) => b.type === "tool_result").length,
        );
        const calls = messagesOf(file.entries, "assistant").flatMap((m) =>
          (m as AssistantMessage).content.filter((p) => p.type === "toolCall"),
        );
        const toolUses = lines
          .filter((l) => l.type === "assistant")
          .flatMap((l) => (l.message as { content: Array<{ type: string }> }).content)
          .filter((b) => b.type === "tool_use");
        expect(calls.length).toBe(toolUses.length);
        expectToolResultsPaired(file.entries);
      });

      it("keeps every line: each is a custom entry or among the source lines of the entry it became", () => {
        const kept = file.entries.reduce(
          (n, e) =>
            n + (e.type === "custom" ? 1 : ((e as { sourceLines?: unknown[] }).sourceLines?.length ?? 0)),
          0,
        );
        expect(kept).toBe(lines.length);
      });

      it("reads, from the head, as the conversation on the file's main chain did", async () => {
        const session = await new MemoryRepo().importSession(file);
        const context = await session.buildContext();
        expect(turnsOf(context.messages)).toEqual(conversationInFile(text));
        expectToolCallsAnswered(context.messages);
        const model = [...lines].reverse().find((l) => l.type === "assistant" && !l.isSidechain)?.message as {
          model: string;
        };
        expect(context.model).toEqual({ provider: "anthropic", modelId: model.model });
      });

      it("exports to native and back byte for byte, and to pi with the same context", async () => {
        await expectRoundTrips(file);
      });
    });
  }

  it("answers every call at the head of a 2.1 session, also the parallel ones Claude Code wrote beside the chain", async () => {
    const [, text] = fixtureFiles("claude-code").find(([n]) => n.startsWith("2.1.38")) as [string, string];
    const lines = jsonLines(text);
    const { messages } = await (await new MemoryRepo().importSession(parsed(text))).buildContext();
    const roles: Record<string, number> = {};
    for (const m of messages) roles[m.role] = (roles[m.role] ?? 0) + 1;
    expect(roles).toEqual({ user: 4, assistant: 12, toolResult: 16 });
    // Four calls in one API message, each line hanging from the one before; each result hangs
    // from its own call's line and the next message from one of them, so the file's chain
    // passes by the other three results.
    const parallel = messages.findIndex(
      (m) =>
        m.role === "assistant" &&
        (m as AssistantMessage).content.filter((p) => p.type === "toolCall").length === 4,
    );
    const calls = (messages[parallel] as AssistantMessage).content
      .filter((p) => p.type === "toolCall")
      .map((p) => (p as { id: string }).id);
    const answers = messages
      .slice(parallel + 1, parallel + 5)
      .map((m) => (m as { toolCallId?: string }).toolCallId);
    expect([...answers].sort()).toEqual([...calls].sort());
    const holds = (line: Line, text: string) =>
      line.message !== undefined && JSON.stringify(line.message).includes(text);
    const resultLines = lines.filter((l) => l.type === "user" && holds(l, `"tool_use_id":"${calls[0]}"`));
    const callLine = lines.find((l) => l.type === "assistant" && holds(l, `"id":"${calls[0]}"`));
    expect(resultLines.map((l) => l.parentUuid)).toEqual([callLine?.uuid]);
    expectToolCallsAnswered(messages);
  });

  it("merges the streamed lines of one API message into one assistant message", () => {
    const [, text] = fixtureFiles("claude-code").find(([n]) => n.startsWith("1.0.98")) as [string, string];
    const file = parsed(text);
    // Five tool_use blocks written as five lines (msg_…VQquTL) are one message with five calls.
    const parallel = messagesOf(file.entries, "assistant").find(
      (m) => (m as AssistantMessage).content.filter((p) => p.type === "toolCall").length === 5,
    ) as AssistantMessage;
    expect(parallel.stopReason).toBe("toolUse");
    const entry = file.entries.find((e) => e.type === "message" && e.message === parallel) as unknown as {
      sourceLines: Array<{ uuid: string }>;
    };
    expect(entry.sourceLines.map((l) => l.uuid).length).toBe(5);
  });

  it("keeps sidechains (subagent conversations in the main file) as roots of their own, out of the context", async () => {
    const [, text] = fixtureFiles("claude-code").find(([n]) => n.includes("sidechains")) as [string, string];
    const sidechainRoots = jsonLines(text).filter((l) => l.isSidechain && l.parentUuid === null);
    expect(sidechainRoots.length).toBe(2);
    const session = await new MemoryRepo().importSession(parsed(text));
    const roots = await session.storage.getTree();
    expect(roots.map((r) => r.id).sort()).toEqual(
      [jsonLines(text)[0]?.uuid, ...sidechainRoots.map((l) => l.uuid)].sort(),
    );
    const prompts = sidechainRoots.map((l) => (l.message as { content: string }).content);
    // A subagent's prompt is in the context as the Task call's argument, never as a user message.
    const said = turnsOf((await session.buildContext()).messages)
      .filter((t) => t.role === "user")
      .map((t) => t.text);
    for (const prompt of prompts) expect(said).not.toContain(prompt);
    expect(said.length).toBe(2);
  });
});

/** A Claude Code line as it writes one, with what every line carries. */
let clock = 0;
function cc(fields: Line): Line {
  clock += 1;
  return {
    parentUuid: null,
    isSidechain: false,
    userType: "external",
    cwd: "/home/me/app",
    sessionId: "7d1c3a9e-0000-4000-8000-000000000001",
    version: "2.0.76",
    gitBranch: "main",
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, clock)).toISOString(),
    ...fields,
  };
}
const say = (uuid: string, parentUuid: string | null, content: unknown, extra: Line = {}) =>
  cc({ type: "user", uuid, parentUuid, message: { role: "user", content }, ...extra });
const reply = (uuid: string, parentUuid: string, id: string, content: unknown[], extra: Line = {}) =>
  cc({
    type: "assistant",
    uuid,
    parentUuid,
    requestId: `req_${id}`,
    message: {
      id,
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5-20250929",
      content,
      stop_reason: null,
      usage: {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 20,
      },
    },
    ...extra,
  });
const file = (...lines: Line[]) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;

describe("Claude Code shapes", () => {
  it("keeps edits as branches, with the head at the newest line of the main chain", async () => {
    const text = file(
      say("u1", null, "first question"),
      reply("a1", "u1", "msg_1", [{ type: "text", text: "first answer" }]),
      say("u2", "a1", "follow-up"),
      reply("a2", "u2", "msg_2", [{ type: "text", text: "old reply" }]),
      // The user edited the follow-up: a second child of a1.
      say("u2b", "a1", "edited follow-up"),
      reply("a2b", "u2b", "msg_3", [{ type: "text", text: "new reply" }]),
    );
    const imported = parsed(text);
    expect(imported.leafId).toBe("a2b");
    const parents = new Map(imported.entries.map((e) => [e.id, e.parentId]));
    expect([parents.get("u2"), parents.get("u2b")]).toEqual(["a1", "a1"]);
    const session = await new MemoryRepo().importSession(imported);
    expect(turnsOf((await session.buildContext()).messages).map((t) => t.text)).toEqual([
      "first question",
      "first answer",
      "edited follow-up",
      "new reply",
    ]);
    expect(turnsOf((await session.buildContext({ leafId: "a2" })).messages).map((t) => t.text)).toContain(
      "old reply",
    );
  });

  it("maps thinking with its signature, redacted thinking, tool calls and errors", () => {
    const imported = parsed(
      file(
        say("u1", null, [
          { type: "text", text: "look at this" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
        ]),
        reply("a1", "u1", "msg_1", [{ type: "thinking", thinking: "hmm", signature: "sig-1" }]),
        reply("a2", "a1", "msg_1", [{ type: "redacted_thinking", data: "opaque" }]),
        reply(
          "a3",
          "a2",
          "msg_1",
          [{ type: "tool_use", id: "toolu_1", name: "Read", input: { file_path: "a" } }],
          {
            message: {
              id: "msg_1",
              role: "assistant",
              model: "claude-sonnet-4-5-20250929",
              content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: { file_path: "a" } }],
              stop_reason: "tool_use",
              usage: {
                input_tokens: 1,
                output_tokens: 50,
                cache_read_input_tokens: 0,
                cache_creation_input_tokens: 0,
              },
            },
          },
        ),
        say(
          "u2",
          "a3",
          [{ type: "tool_result", tool_use_id: "toolu_1", content: "no such file", is_error: true }],
          {
            toolUseResult: "Error: no such file",
          },
        ),
        cc({
          type: "assistant",
          uuid: "a4",
          parentUuid: "u2",
          isApiErrorMessage: true,
          message: {
            id: "msg_err",
            role: "assistant",
            model: "<synthetic>",
            content: [{ type: "text", text: "API Error: 529 overloaded" }],
            stop_reason: "stop_sequence",
            usage: { input_tokens: 0, output_tokens: 0 },
          },
        }),
      ),
    );
    const [user, thinking, toolResult, failed] = imported.entries
      .filter((e) => e.type === "message")
      .map((e) => (e as { message: AgentMessage }).message);
    expect(user).toMatchObject({
      role: "user",
      content: [
        { type: "text", text: "look at this" },
        { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
      ],
    });
    expect(thinking).toMatchObject({
      role: "assistant",
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5-20250929",
      stopReason: "toolUse",
      usage: { input: 1, output: 50, cacheRead: 0, cacheWrite: 0, totalTokens: 51 },
      content: [
        { type: "thinking", thinking: "hmm", thinkingSignature: "sig-1" },
        { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque", redacted: true },
        { type: "toolCall", id: "toolu_1", name: "Read", arguments: { file_path: "a" } },
      ],
    });
    expect(toolResult).toMatchObject({
      role: "toolResult",
      toolCallId: "toolu_1",
      toolName: "Read",
      isError: true,
      content: [{ type: "text", text: "no such file" }],
      details: "Error: no such file",
    });
    expect(failed).toMatchObject({ stopReason: "error", errorMessage: "API Error: 529 overloaded" });
    // The synthetic error reply is no model change.
    expect(imported.entries.filter((e) => e.type === "model_change").length).toBe(1);
  });

  it("turns compact_boundary and its summary into a compaction: the context is what Claude saw after", async () => {
    const summary =
      "This session is being continued from a previous conversation. Summary: built the parser.";
    const imported = parsed(
      file(
        say("u1", null, "build the parser"),
        reply("a1", "u1", "msg_1", [{ type: "text", text: "built" }]),
        cc({
          type: "system",
          subtype: "compact_boundary",
          uuid: "b1",
          parentUuid: null,
          logicalParentUuid: "a1",
          content: "Conversation compacted",
          level: "info",
          compactMetadata: { trigger: "auto", preTokens: 155116 },
        }),
        say("s1", "b1", summary, { isCompactSummary: true, isVisibleInTranscriptOnly: true }),
        say("u2", "s1", "now test it"),
        reply("a2", "u2", "msg_2", [{ type: "text", text: "tested" }]),
      ),
    );
    const compaction = imported.entries.find((e) => e.type === "compaction");
    expect(compaction).toMatchObject({ id: "b1", parentId: "a1", summary, tokensBefore: 155116 });
    expect(imported.entries.find((e) => e.id === "u2")?.parentId).toBe("b1");
    const session = await new MemoryRepo().importSession(imported);
    const context = await session.buildContext();
    expect(context.messages.map((m) => m.role)).toEqual(["compactionSummary", "user", "assistant"]);
    expect(context.messages[0]).toMatchObject({ summary, tokensBefore: 155116 });
    await expectRoundTrips(imported);
  });

  it("keeps the segment a compaction preserved", async () => {
    const imported = parsed(
      file(
        say("u1", null, "old"),
        reply("a1", "u1", "msg_1", [{ type: "text", text: "old answer" }]),
        say("u2", "a1", "recent"),
        reply("a2", "u2", "msg_2", [{ type: "text", text: "recent answer" }]),
        cc({
          type: "system",
          subtype: "compact_boundary",
          uuid: "b1",
          parentUuid: null,
          logicalParentUuid: "a2",
          compactMetadata: {
            trigger: "manual",
            preTokens: 900,
            preservedSegment: { headUuid: "u2", tailUuid: "a2" },
          },
        }),
        say("s1", "b1", "Summary: old things.", { isCompactSummary: true }),
      ),
    );
    expect(imported.entries.find((e) => e.type === "compaction")).toMatchObject({ firstKeptEntryId: "u2" });
    const session = await new MemoryRepo().importSession(imported);
    expect(turnsOf((await session.buildContext()).messages).map((t) => t.text ?? t.role)).toEqual([
      "compactionSummary",
      "recent",
      "recent answer",
    ]);
    await expectRoundTrips(imported);
  });

  it("names the session from its custom title, else from the summary of one of its leaves", () => {
    const lines = [
      cc({ type: "summary", summary: "Another session's title", leafUuid: "elsewhere" }),
      cc({ type: "summary", summary: "Parser work", leafUuid: "a1" }),
      say("u1", null, "hi"),
      reply("a1", "u1", "msg_1", [{ type: "text", text: "hello" }]),
    ];
    expect(parsed(file(...lines)).header.name).toBe("Parser work");
    const titled = file(...lines, cc({ type: "custom-title", customTitle: "My parser" }));
    expect(parsed(titled).header.name).toBe("My parser");
  });

  it("keeps lines it does not know as custom entries at the head, in the chain, out of the context", async () => {
    const imported = parsed(
      file(
        cc({ type: "file-history-snapshot", messageId: "u1", snapshot: { trackedFileBackups: {} } }),
        say("u1", null, "hi"),
        cc({ type: "mystery-line-of-a-future-version", detail: 1 }),
        reply("a1", "u1", "msg_1", [{ type: "text", text: "hello" }]),
        cc({ type: "system", subtype: "turn_duration", uuid: "t1", parentUuid: "a1", durationMs: 5 }),
      ),
    );
    const customs = imported.entries.filter((e) => e.type === "custom");
    expect(customs.map((e) => (e as { customType: string }).customType)).toEqual([
      "claude-code:file-history-snapshot",
      "claude-code:mystery-line-of-a-future-version",
      "claude-code:system",
    ]);
    // The unknown line sits between the question and its answer: the chain stays one chain.
    const byId = new Map(imported.entries.map((e) => [e.id, e]));
    expect(byId.get("u1")?.parentId).toBe("l1");
    expect(byId.get("a1:model")?.parentId).toBe("l3");
    expect(imported.leafId).toBe("t1");
    const session = await new MemoryRepo().importSession(imported);
    expect((await session.buildContext()).messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("imports a subagent's file as a session of its own", () => {
    const agent = (fields: Line) => cc({ ...fields, isSidechain: true, agentId: "a0ad4f44" });
    const imported = parsed(
      file(
        agent(say("u1", null, "explore the repo")),
        agent(reply("a1", "u1", "msg_1", [{ type: "text", text: "found it" }])),
      ),
    );
    expect(imported.header.id).toBe("claude-code-7d1c3a9e-0000-4000-8000-000000000001-agent-a0ad4f44");
    expect(imported.header.metadata.claudeCode).toMatchObject({ agentId: "a0ad4f44" });
    expect(imported.leafId).toBe("a1");
  });

  it("records thinking settings as thinking-level changes", () => {
    const imported = parsed(
      file(
        say("u1", null, "think hard", { thinkingMetadata: { level: "high", disabled: false, triggers: [] } }),
        reply("a1", "u1", "msg_1", [{ type: "text", text: "ok" }]),
      ),
    );
    expect(imported.entries.map((e) => e.type)).toEqual([
      "thinking_level_change",
      "message",
      "model_change",
      "message",
    ]);
    expect(imported.entries[0]).toMatchObject({ thinkingLevel: "high" });
  });

  it("drops a torn last line with a warning", () => {
    const whole = file(say("u1", null, "hi"), reply("a1", "u1", "msg_1", [{ type: "text", text: "hello" }]));
    const imported = parsed(`${whole}{"parentUuid":"a1","type":"user","mess`);
    expect(imported.warnings).toEqual([{ line: 3, message: expect.stringContaining("torn") }]);
    expect(imported.entries.map((e) => e.id)).toEqual(["u1", "a1:model", "a1"]);
  });

  it("refuses a line that is not JSON before the last, naming it", () => {
    const error = refusal(() =>
      parsed(`${file(say("u1", null, "hi"))}not json\n${file(say("u2", "u1", "again"))}`),
    );
    expect(error.code).toBe("invalid_request");
    expect(error.message).toMatch(/^line 2:/);
    expect(error.details).toMatchObject({ line: 2 });
  });

  it("refuses a file without a sessionId", () => {
    expect(refusal(() => parsed('{"type":"other"}\n')).message).toMatch(/^line 1: .*sessionId/);
  });

  it("turns a parent the file does not hold into a root, with a warning", () => {
    const imported = parsed(file(say("u1", "gone", "hi")));
    expect(imported.entries[0]?.parentId).toBeNull();
    expect(imported.warnings).toEqual([{ line: 1, message: expect.stringContaining("gone") }]);
  });
});

describe("entries stay valid", () => {
  it("every real file's entries are what the store accepts", async () => {
    for (const [, text] of fixtureFiles("claude-code")) {
      const imported = parsed(text);
      const session = await new MemoryRepo().importSession(imported);
      const stored = (await session.getEntries({ limit: 1000 })).map(
        ({ seq: _seq, ...e }) => e as SessionEntry,
      );
      expect(stored.filter((e) => e.type !== "leaf")).toEqual(imported.entries);
    }
  });
});

describe("every file above, exported back to Claude Code", () => {
  it("gives back its lines, which import to the same session", async () => {
    const imported = files.filter((text) => {
      try {
        parseClaudeCode(text);
        return true;
      } catch {
        return false;
      }
    });
    expect(imported.length).toBeGreaterThan(20);
    for (const text of new Set(imported)) await expectExportedAsWritten("claude-code", text);
  });
});
