import { describe, expect, it } from "vitest";
import { lineTime } from "../../src/core/agent-export";
import { exportCodex } from "../../src/core/codex-export";
import { parseCodex } from "../../src/core/codex-format";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage, AssistantMessage } from "../../src/core/messages";
import { usage } from "../../src/core/messages";
import { contextForModel } from "../../src/core/providers/convert";
import { COMPACTION_SUMMARY_PREFIX } from "../../src/core/providers/pi-messages";
import type { Session } from "../../src/core/session";
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
} from "./agent-imports";

/*
 * Sessions out as Codex CLI rollouts: a rollout imported goes back as it was (every real file in
 * test/fixtures/codex); a session written anywhere else becomes the rollout Codex would have
 * written for its conversation.
 */

type Line = Record<string, unknown>;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function said(messages: AgentMessage[]): string[] {
  return messages.flatMap((m) => {
    if (m.role === "compactionSummary") return [`summary: ${String(m.summary)}`];
    const content = (m as { content?: unknown }).content;
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

const payloads = (lines: Line[], type: string) =>
  lines.filter((l) => l.type === type).map((l) => l.payload as Line);

describe("real Codex rollouts exported back", () => {
  for (const [name, text] of fixtureFiles("codex")) {
    it(`${name}: the same lines in the same order, which import to the same session`, async () => {
      await expectExportedAsWritten("codex", text);
    });
  }

  it("keeps beside each entry only what it cannot give back as it was", () => {
    const [, text] = fixtureFiles("codex").find(([n]) => n.startsWith("0.125.0")) as [string, string];
    const { entries } = parseCodex(text);
    const kept = entries.flatMap((e) => ((e as { sourceLines?: Line[] }).sourceLines ?? []) as Line[]);
    const calls = kept.map((l) => l.payload as Line).filter((p) => p.type === "function_call");
    // Arguments are kept only where the model wrote them otherwise than JSON.stringify does (one of 99).
    expect(calls.filter((p) => "arguments" in p).length).toBe(1);
    expect(calls.length).toBe(99);
    const outputs = kept.map((l) => l.payload as Line).filter((p) => p.type === "function_call_output");
    expect(outputs.every((p) => !("output" in p))).toBe(true);
  });

  it("writes what was appended after the import after the rollout's lines", async () => {
    const [, text] = fixtureFiles("codex").find(([n]) => n.startsWith("0.135.0")) as [string, string];
    const session = await new MemoryRepo().importSession(parseCodex(text));
    await session.appendMessage({ role: "user", content: "and now?", timestamp: Date.UTC(2026, 6, 1) });
    const lines = jsonLines(await collect(exportCodex(session)));
    const original = jsonLines(text);
    // The rollout's lines, its session_meta recording the export it now is.
    const [first, ...rest] = lines.slice(0, original.length) as [Line, ...Line[]];
    const { cf_sessions: made, ...meta } = first.payload as Line;
    expect(made).toMatchObject({ session: session.id, head: await session.getLeafId() });
    expect([{ ...first, payload: meta }, ...rest]).toEqual(original);
    const added = lines.slice(original.length);
    expect(added.map((l) => [l.type, (l.payload as Line).type])).toEqual([
      ["turn_context", undefined],
      ["response_item", "message"],
      ["event_msg", "user_message"],
    ]);
    expect(added[1]?.payload).toEqual({
      type: "message",
      role: "user",
      content: [{ type: "input_text", text: "and now?" }],
    });
    const copy = await new MemoryRepo().importSession(
      parseCodex(lines.map((l) => JSON.stringify(l)).join("\n")),
    );
    expect(said((await copy.buildContext()).messages)).toEqual(said((await session.buildContext()).messages));
  });
});

describe("a branched Codex rollout exported", () => {
  /** The context a session builds and the one its export imports to, each as what was said. */
  async function contexts(session: Session) {
    const copy = await new MemoryRepo().importSession(parseCodex(await collect(exportCodex(session))));
    return {
      ours: said((await session.buildContext()).messages),
      theirs: said((await copy.buildContext()).messages),
      name: [await session.getName(), await copy.getName()],
    };
  }

  for (const [name, text] of fixtureFiles("codex")) {
    it(`${name}: a branch from an earlier entry goes out without the branch left`, async () => {
      const session = await new MemoryRepo().importSession(parseCodex(text));
      const entries = await session.getEntries();
      const firstUser = entries.find((e) => e.type === "message" && e.message.role === "user");
      await session.setLeafId(firstUser?.id ?? null);
      await session.appendMessage({
        role: "assistant",
        content: [{ type: "text", text: "A new answer." }],
        api: "openai-responses",
        provider: "openai",
        model: "gpt-5",
        usage: usage(1, 1, 0, 0),
        stopReason: "stop",
        timestamp: Date.UTC(2026, 6, 1),
      });
      const { ours, theirs, name: names } = await contexts(session);
      expect(theirs).toEqual(ours);
      expect(theirs.at(-1)).toBe("assistant: A new answer.");
      expect(names[1]).toBe(names[0]);
    });

    it(`${name}: the head moved back goes out ending there`, async () => {
      const session = await new MemoryRepo().importSession(parseCodex(text));
      const messages = (await session.getEntries()).filter((e) => e.type === "message");
      await session.setLeafId(messages[Math.floor(messages.length / 2)]?.id ?? null);
      const { ours, theirs, name: names } = await contexts(session);
      expect(theirs).toEqual(ours);
      expect(names[1]).toBe(names[0]);
    });
  }
});

describe("a session written elsewhere as a Codex rollout", () => {
  async function written() {
    const session = await new MemoryRepo().create({
      id: "notes-2",
      systemPrompt: "Be brief.",
      metadata: { pi: { cwd: "/home/me/notes" } },
    });
    await writeConversation(session);
    return { session, text: await collect(exportCodex(session)) };
  }

  it("opens with the session's meta and the model's turn context", async () => {
    const { text } = await written();
    const lines = jsonLines(text);
    expect(lines[0]).toMatchObject({
      type: "session_meta",
      payload: {
        cwd: "/home/me/notes",
        originator: "cf-sessions",
        base_instructions: { text: "Be brief." },
        model_provider: "anthropic",
      },
    });
    expect((lines[0] as { payload: Line }).payload.id).toMatch(UUID);
    expect(lines[1]).toMatchObject({
      type: "turn_context",
      payload: { model: "claude-sonnet-4-5", cwd: "/home/me/notes" },
    });
    for (const line of lines) expect(Number.isNaN(Date.parse(line.timestamp as string))).toBe(false);
    expect(lines.at(-1)).toMatchObject({
      type: "event_msg",
      payload: {
        type: "thread_name_updated",
        thread_name: "Notes",
        thread_id: (lines[0] as { payload: Line }).payload.id,
      },
    });
  });

  it("holds the conversation as response items, the compaction as Codex's own", async () => {
    const { text } = await written();
    const lines = jsonLines(text);
    const items = payloads(lines, "response_item");
    expect(items[0]).toMatchObject({
      role: "user",
      content: [{ type: "input_text", text: QUESTION }, { type: "input_image" }],
    });
    expect(payloads(lines, "event_msg")[0]).toMatchObject({ type: "user_message", message: QUESTION });
    expect(items).toContainEqual({
      type: "function_call",
      name: "read",
      arguments: '{"path":"notes.txt"}',
      call_id: "call_7Hq",
    });
    expect(items).toContainEqual({ type: "function_call_output", call_id: "call_7Hq", output: TOOL_OUTPUT });
    const compacted = payloads(lines, "compacted")[0] as Line;
    expect(compacted.message).toBe(SUMMARY);
    const history = compacted.replacement_history as Line[];
    expect(JSON.stringify(history[0])).toContain(
      COMPACTION_SUMMARY_PREFIX.slice(0, 30).replaceAll("\n", "\\n"),
    );
    expect(history.slice(1)).toEqual([
      {
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "It says: remember the milk." }],
      },
    ]);
    const after = items.slice(items.findIndex((i) => JSON.stringify(i).includes(SECOND_QUESTION)));
    expect(after.map((i) => i.role)).toEqual(["user", "assistant"]);
  });

  it("shows each reply's words by an agent_message event, as Codex builds a resumed thread from events", async () => {
    const { text } = await written();
    const lines = jsonLines(text);
    const texts = (item: Line) => (item.content as Line[]).map((part) => part.text).join("");
    const answers = payloads(lines, "response_item").filter(
      (i) => i.type === "message" && i.role === "assistant",
    );
    expect(answers.length).toBeGreaterThan(1);
    const shown = payloads(lines, "event_msg").filter((p) => p.type === "agent_message");
    expect(shown).toEqual(answers.map((item) => ({ type: "agent_message", message: texts(item) })));
  });

  it("imports back to its context, the summary once, then the same each time", async () => {
    const { session, text } = await written();
    const first = parseCodex(text);
    expect(first.warnings).toEqual([]);
    expect(first.header).toMatchObject({ name: "Notes", systemPrompt: "Be brief." });
    const copy = await new MemoryRepo().importSession(first);
    const ours = said((await session.buildContext()).messages);
    const theirs = said((await copy.buildContext()).messages);
    expect(ours[0]).toBe(`summary: ${SUMMARY}`);
    // Thinking another provider wrote goes to Codex as text.
    expect(theirs).toEqual(
      ours.map((s) => s.replace("assistant: thinking", "assistant: Nothing is planned.")),
    );
    expect(parseCodex(await collect(exportCodex(copy)))).toEqual(first);
    expect(await collect(exportCodex(session))).toBe(text);
  });

  it("takes the thread id and working folder it is given", async () => {
    const { session } = await written();
    const threadId = "019e0000-0000-7000-8000-00000000beef";
    const lines = jsonLines(await collect(exportCodex(session, { threadId, cwd: "/srv/checkout" })));
    expect(lines[0]?.payload).toMatchObject({ id: threadId, cwd: "/srv/checkout" });
    expect(parseCodex(lines.map((l) => JSON.stringify(l)).join("\n")).header.id).toBe(`codex-${threadId}`);
  });
});

describe("a session with no entries yet, as a Codex rollout", () => {
  it("opens with the session's meta, and imports back with its name and system prompt", async () => {
    const session = await new MemoryRepo().create({
      id: "empty-named",
      name: "Plans",
      systemPrompt: "Be brief.",
    });
    const text = await collect(exportCodex(session));
    const lines = jsonLines(text);
    expect(lines[0]).toMatchObject({
      type: "session_meta",
      payload: { originator: "cf-sessions", base_instructions: { text: "Be brief." } },
    });
    expect(lines.at(-1)).toMatchObject({ type: "event_msg", payload: { type: "thread_name_updated" } });
    const file = parseCodex(text);
    expect(file.header).toMatchObject({ name: "Plans", systemPrompt: "Be brief." });
    const copy = await new MemoryRepo().importSession(file);
    expect(await copy.getName()).toBe("Plans");
    expect((await copy.buildContext()).systemPrompt).toBe("Be brief.");
    expect(await collect(exportCodex(session))).toBe(text);
  });
});

describe("what did not finish, out to Codex and back", () => {
  const openai = { api: "openai-responses", provider: "openai", model: "gpt-5", usage: usage(10, 5, 0, 0) };

  async function roundTrip(messages: AgentMessage[]) {
    const session = await new MemoryRepo().create({ id: "unfinished" });
    await session.appendModelChange("openai", "gpt-5");
    for (const message of messages) await session.appendMessage(message);
    const text = await collect(exportCodex(session));
    const copy = await new MemoryRepo().importSession(parseCodex(text));
    return { session, copy, lines: jsonLines(text) };
  }

  it("keeps a stopped reply and a failed one out of the model's context", async () => {
    const { session, copy, lines } = await roundTrip([
      { role: "user", content: "Write the report.", timestamp: 1 },
      {
        role: "assistant",
        content: [{ type: "text", text: "The report begins" }],
        ...openai,
        stopReason: "aborted",
        timestamp: 2,
      },
      { role: "user", content: "Again, please.", timestamp: 3 },
      {
        role: "assistant",
        content: [{ type: "text", text: "The report, second try" }],
        ...openai,
        stopReason: "error",
        errorMessage: "overloaded",
        timestamp: 4,
      },
      { role: "user", content: "Once more.", timestamp: 5 },
      {
        role: "assistant",
        content: [{ type: "text", text: "The report." }],
        ...openai,
        stopReason: "stop",
        timestamp: 6,
      },
    ]);
    const sent = async (s: Session) => contextForModel(await s.buildContext(), "anthropic").messages;
    expect(await sent(copy)).toEqual(await sent(session));
    const replies = (await copy.buildContext()).messages.filter((m) => m.role === "assistant");
    expect(
      replies.map((m) => [(m as AssistantMessage).stopReason, (m as AssistantMessage).errorMessage]),
    ).toEqual([
      ["aborted", undefined],
      ["error", "overloaded"],
      ["stop", undefined],
    ]);
    // As Codex records them: after the reply's items, a turn aborted, a turn that failed; the
    // answer that finished shown by its words.
    const events = payloads(lines, "event_msg").filter((p) => p.type !== "user_message");
    expect(events).toEqual([
      { type: "turn_aborted", reason: "interrupted" },
      { type: "error", message: "overloaded" },
      { type: "agent_message", message: "The report." },
    ]);
  });

  it("gives back a failed tool result as failed, with its words", async () => {
    const { copy, lines } = await roundTrip([
      { role: "user", content: "Read notes.txt", timestamp: 1 },
      {
        role: "assistant",
        content: [{ type: "toolCall", id: "call_1", name: "read", arguments: { path: "notes.txt" } }],
        ...openai,
        stopReason: "toolUse",
        timestamp: 2,
      },
      {
        role: "toolResult",
        toolCallId: "call_1",
        toolName: "read",
        content: [{ type: "text", text: "ERROR: no such file" }],
        isError: true,
        timestamp: 3,
      },
    ]);
    // As Codex wrote a failed command's output: text (an object there is not read by Codex).
    expect(payloads(lines, "response_item").find((p) => p.type === "function_call_output")?.output).toBe(
      JSON.stringify({ output: "ERROR: no such file", metadata: { exit_code: 1 } }),
    );
    const result = (await copy.buildContext()).messages.find((m) => m.role === "toolResult");
    expect(result).toMatchObject({ isError: true, content: [{ type: "text", text: "ERROR: no such file" }] });
    expect(result).not.toHaveProperty("details");
  });
});

describe("a message whose time no date can hold, as a Codex rollout", () => {
  it("goes out at its entry's time", () => expectOutOfRangeTimeWrittenAsEntryTime("codex"));

  it("takes the entry's time for any message whose own is not a date", () => {
    const entry = {
      type: "message",
      id: "e1",
      parentId: null,
      timestamp: "2026-01-01T00:00:00.000Z",
    } as const;
    for (const timestamp of [1e18, -8.64e15 - 1, Number.NaN]) {
      const message = { role: "user", content: "Hi", timestamp } as AgentMessage;
      expect(lineTime(message, { ...entry, message })).toBe(entry.timestamp);
    }
    const message = { role: "user", content: "Hi", timestamp: 8.64e15 } as AgentMessage;
    expect(lineTime(message, { ...entry, message })).toBe("+275760-09-13T00:00:00.000Z");
  });
});

describe("a fork of an imported Codex rollout, exported", () => {
  const [, text] = fixtureFiles("codex").find(([n]) => n.startsWith("0.135.0")) as [string, string];
  const sourceId = (parseCodex(text).header.metadata.codex as Line).id;

  async function forked() {
    const repo = new MemoryRepo();
    const source = await repo.importSession(parseCodex(text));
    const fork = await source.fork((await source.getLeafId()) as string, { name: "try B" });
    await fork.appendMessage({ role: "user", content: "only in the fork", timestamp: Date.UTC(2026, 6, 2) });
    return { repo, source, fork };
  }

  it("goes out under a thread id of its own, with its name", async () => {
    const { fork } = await forked();
    const lines = jsonLines(await collect(exportCodex(fork)));
    const meta = payloads(lines, "session_meta");
    expect(meta.map((p) => p.id)).not.toContain(sourceId);
    expect(meta[0]?.id).toMatch(UUID);
    expect(lines.at(-1)?.payload).toMatchObject({
      type: "thread_name_updated",
      thread_name: "try B",
      thread_id: meta[0]?.id,
    });
    const again = parseCodex(lines.map((l) => JSON.stringify(l)).join("\n"));
    expect(again.header).toMatchObject({ id: `codex-${meta[0]?.id}`, name: "try B" });
  });

  it("syncs into a session of its own, leaving the source as it was", async () => {
    const { repo, source, fork } = await forked();
    const before = await source.getLeafId();
    const result = await repo.syncSession(parseCodex(await collect(exportCodex(fork))));
    expect(result.session.id).not.toBe(source.id);
    expect(result.status).toBe("created");
    expect(await source.getLeafId()).toBe(before);
  });

  it("keeps the source's own id for the source", async () => {
    const { source } = await forked();
    expect(jsonLines(await collect(exportCodex(source)))).toEqual(jsonLines(text));
  });
});

describe("tool calls sharing an id, as a Codex rollout", () => {
  it("gives each call an id of its own, each output the id of the call it answers", async () => {
    const session = await new MemoryRepo().create({ id: "kimi-2" });
    await writeSharedCallIds(session);
    const items = payloads(jsonLines(await collect(exportCodex(session))), "response_item");
    const calls = items.filter((i) => i.type === "function_call").map((i) => [i.call_id, i.arguments]);
    const outputs = items.filter((i) => i.type === "function_call_output").map((i) => [i.call_id, i.output]);
    expect(new Set(calls.map(([id]) => id)).size).toBe(2);
    expect(outputs).toEqual([
      [calls[0]?.[0], "contents of a.txt"],
      [calls[1]?.[0], "contents of b.txt"],
    ]);
  });
});
