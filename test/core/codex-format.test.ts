import { describe, expect, it } from "vitest";
import { parseCodex } from "../../src/core/codex-format";
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
 * Codex CLI rollouts: the real files in test/fixtures/codex (several versions), and the shapes
 * they do not show (compaction, the bare lines of the first versions) written as Codex writes them.
 */

type Turn = { role: string; text?: string; calls?: string[]; callId?: string };

/** Every file this test reads, to export each back at the end. */
const files: string[] = [];
function readRollout(text: string) {
  files.push(text);
  return parseCodex(text);
}
const OUTPUT = new Set(["reasoning", "function_call", "custom_tool_call", "local_shell_call"]);

function texts(content: unknown): string | undefined {
  const parts = (Array.isArray(content) ? content : []) as Array<{ type: string; text?: string }>;
  const found = parts.filter((p) => typeof p.text === "string" && p.type !== "thinking").map((p) => p.text);
  return found.length > 0 ? found.join("\n") : undefined;
}

/** The conversation a rollout holds, read without the codec: a reply is the output items in a row. */
function conversationInFile(text: string): Turn[] {
  const turns: Turn[] = [];
  let open: Turn | undefined;
  for (const line of jsonLines(text)) {
    if (line.type !== "response_item") continue;
    const item = line.payload as { type: string; role?: string; content?: unknown; call_id?: string };
    if (OUTPUT.has(item.type) || (item.type === "message" && item.role === "assistant")) {
      if (!open) {
        open = { role: "assistant", calls: [] };
        turns.push(open);
      }
      if (item.type === "message") {
        const more = texts(item.content);
        if (more !== undefined) open.text = open.text === undefined ? more : `${open.text}\n${more}`;
      } else if (item.type !== "reasoning") open.calls?.push(item.call_id as string);
    } else if (item.type === "message") {
      open = undefined;
      turns.push({ role: item.role as string, text: texts(item.content) });
    } else if (item.type.endsWith("_output")) {
      open = undefined;
      turns.push({ role: "toolResult", callId: item.call_id });
    }
  }
  return turns;
}

function turnsOf(messages: AgentMessage[]): Turn[] {
  return messages.map((m) => {
    if (m.role === "assistant") {
      const content = (m as AssistantMessage).content;
      const turn: Turn = {
        role: "assistant",
        calls: content.filter((p) => p.type === "toolCall").map((p) => (p as { id: string }).id),
      };
      const text = texts(content);
      if (text !== undefined) turn.text = text;
      return turn;
    }
    if (m.role === "toolResult")
      return { role: "toolResult", callId: (m as { toolCallId: string }).toolCallId };
    return { role: m.role, text: texts((m as { content?: unknown }).content) };
  });
}

describe("real Codex CLI rollouts", () => {
  it("are there to test", () => {
    expect(fixtureFiles("codex").map(([name]) => name)).toEqual(
      expect.arrayContaining([
        "0.125.0-web-search-patches.jsonl",
        "0.135.0-redacted.jsonl",
        "0.58.0-shell-calls.jsonl",
        "0.77.0-opening.jsonl",
      ]),
    );
  });

  for (const [name, text] of fixtureFiles("codex")) {
    describe(name, () => {
      const lines = jsonLines(text);
      const file = readRollout(text);
      const items = lines
        .filter((l) => l.type === "response_item")
        .map((l) => l.payload as Record<string, unknown>);

      it("is told apart by its first lines and imports under an id made from the session's", () => {
        expect(detectFormat(text)).toBe("codex");
        const meta = lines.find((l) => l.type === "session_meta")?.payload as { id: string };
        expect(file.header.id).toBe(`codex-${meta.id}`);
        expect(file.warnings).toEqual([]);
      });

      it("holds every message, tool call and tool result of the file, paired", () => {
        const count = (type: string, role?: string) =>
          items.filter((i) => i.type === type && (role === undefined || i.role === role)).length;
        expect(messagesOf(file.entries, "user").length).toBe(count("message", "user"));
        // Function calls, and the free-form calls of custom tools (apply_patch), with their outputs.
        expect(messagesOf(file.entries, "toolResult").length).toBe(
          count("function_call_output") + count("custom_tool_call_output"),
        );
        const calls = messagesOf(file.entries, "assistant").flatMap((m) =>
          (m as AssistantMessage).content.filter((p) => p.type === "toolCall"),
        );
        expect(calls.length).toBe(count("function_call") + count("custom_tool_call"));
        const thinking = messagesOf(file.entries, "assistant").flatMap((m) =>
          (m as AssistantMessage).content.filter((p) => p.type === "thinking"),
        );
        expect(thinking.length).toBe(count("reasoning"));
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

      it("reads, from the head, as the conversation did, with the model of the last turn", async () => {
        const session = await new MemoryRepo().importSession(file);
        const context = await session.buildContext();
        expect(turnsOf(context.messages)).toEqual(conversationInFile(text));
        expectToolCallsAnswered(context.messages);
        const turn = [...lines].reverse().find((l) => l.type === "turn_context")?.payload as {
          model: string;
        };
        expect(context.model).toEqual({ provider: "openai", modelId: turn.model });
      });

      it("exports to native and back byte for byte, and to pi with the same context", async () => {
        await expectRoundTrips(file);
      });
    });
  }

  it("reads a whole 0.125 session: its patches as answered custom tool calls, its web searches kept", async () => {
    const [, text] = fixtureFiles("codex").find(([n]) => n.startsWith("0.125")) as [string, string];
    const file = readRollout(text);
    const { messages, model } = await (await new MemoryRepo().importSession(file)).buildContext();
    const roles: Record<string, number> = {};
    for (const m of messages) roles[m.role] = (roles[m.role] ?? 0) + 1;
    expect(roles).toEqual({ developer: 1, user: 3, assistant: 66, toolResult: 102 });
    expect(model).toEqual({ provider: "openai", modelId: "gpt-5.5" });
    const patches = messages
      .flatMap((m) => (m.role === "assistant" ? (m as AssistantMessage).content : []))
      .filter((p) => p.type === "toolCall" && p.name === "apply_patch");
    expect(patches).toHaveLength(3);
    for (const patch of patches) {
      expect(patch).toMatchObject({ arguments: { input: expect.stringMatching(/^\*\*\* Begin Patch\n/) } });
    }
    expectToolCallsAnswered(messages);
    const searches = file.entries.filter(
      (e) => e.type === "custom" && e.customType === "codex:response_item:web_search_call",
    );
    expect(searches).toHaveLength(3);
  });

  it("keeps reasoning as pi's openai-responses thinking, the item itself its signature", () => {
    const [, text] = fixtureFiles("codex").find(([n]) => n.startsWith("0.58")) as [string, string];
    const reasoning = jsonLines(text).find((l) => (l.payload as { type?: string }).type === "reasoning")
      ?.payload as Record<string, unknown>;
    const reply = messagesOf(readRollout(text).entries, "assistant")[0] as AssistantMessage;
    expect(reply).toMatchObject({ api: "openai-responses", provider: "openai", model: "gpt-5.1-codex" });
    expect(reply.content[0]).toEqual({
      type: "thinking",
      thinking: "**Planning repository inspection**",
      thinkingSignature: JSON.stringify(reasoning),
    });
    expect(reply.content[1]).toMatchObject({
      type: "toolCall",
      id: "call_GfHib9GW3d5m9EB1wMTper0j",
      name: "shell",
      arguments: { command: ["bash", "-lc", "ls"], workdir: "/home/user/projects/temp/chatbot-ui" },
    });
    // Its token count, written just before its items in this version.
    expect(reply.usage).toMatchObject({ input: 10128, output: 37, cacheRead: 0, totalTokens: 10165 });
  });

  it("unwraps the shell output of late-2025 versions and marks a failed command", () => {
    const [, text] = fixtureFiles("codex").find(([n]) => n.startsWith("0.58")) as [string, string];
    const results = messagesOf(readRollout(text).entries, "toolResult");
    expect(results[0]).toMatchObject({
      toolName: "shell",
      isError: false,
      details: { exit_code: 0, duration_seconds: 0 },
      content: [{ type: "text", text: expect.stringMatching(/^LM Studio configuration\.md\nREADME\.md/) }],
    });
  });

  it("records the reasoning effort as the thinking level, and developer messages by their role", async () => {
    const [, text] = fixtureFiles("codex").find(([n]) => n.startsWith("0.58")) as [string, string];
    const session = await new MemoryRepo().importSession(readRollout(text));
    expect((await session.buildContext()).thinkingLevel).toBe("high");
    const [, redacted] = fixtureFiles("codex").find(([n]) => n.startsWith("0.135")) as [string, string];
    const file = readRollout(redacted);
    expect(messagesOf(file.entries, "developer")).toEqual([
      {
        role: "developer",
        content: [{ type: "text", text: "[REDACTED_DEVELOPER_CONTEXT]" }],
        timestamp: expect.any(Number),
      },
    ]);
    expect(file.header.systemPrompt).toBe("[REDACTED_BASE_INSTRUCTIONS]");
    // The count written after the reply is the reply's.
    const reply = messagesOf(file.entries, "assistant")[0] as AssistantMessage;
    expect(reply.usage).toMatchObject({ input: 1675, cacheRead: 20864, output: 10, totalTokens: 22549 });
    // No item id was written, so no text signature.
    expect(reply.content).toEqual([{ type: "text", text: "[REDACTED_ASSISTANT_TEXT]" }]);
  });
});

let clock = 0;
const at = () => new Date(Date.UTC(2026, 1, 1, 0, 0, ++clock)).toISOString();
const meta = (extra: Record<string, unknown> = {}) => ({
  timestamp: at(),
  type: "session_meta",
  payload: {
    id: "019b0000-0000-7000-8000-00000000c0de",
    timestamp: at(),
    cwd: "/w",
    cli_version: "0.60.0",
    ...extra,
  },
});
const item = (payload: Record<string, unknown>) => ({ timestamp: at(), type: "response_item", payload });
const userSays = (text: string) =>
  item({ type: "message", role: "user", content: [{ type: "input_text", text }] });
const replies = (text: string) =>
  item({ type: "message", role: "assistant", content: [{ type: "output_text", text }] });
const rollout = (...lines: object[]) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;

describe("Codex shapes", () => {
  it("compacts as Codex did locally: the summary, then the user's messages it kept", async () => {
    const file = readRollout(
      rollout(
        meta(),
        userSays("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        userSays("build the parser"),
        replies("built"),
        userSays("and the tests"),
        replies("done"),
        { timestamp: at(), type: "compacted", payload: { message: "Summary: parser and tests built." } },
        userSays("ship it"),
        replies("shipped"),
      ),
    );
    expect(file.entries.find((e) => e.type === "compaction")).toMatchObject({
      id: "l7",
      summary: "Summary: parser and tests built.",
    });
    const session = await new MemoryRepo().importSession(file);
    expect(turnsOf((await session.buildContext()).messages).map((t) => t.text ?? t.role)).toEqual([
      "compactionSummary",
      "build the parser",
      "and the tests",
      "ship it",
      "shipped",
    ]);
    await expectRoundTrips(file);
  });

  it("compacts to the replacement history Codex wrote, when it wrote one", async () => {
    const file = readRollout(
      rollout(
        meta(),
        userSays("old question"),
        replies("old answer"),
        {
          timestamp: at(),
          type: "compacted",
          payload: {
            message: "",
            replacement_history: [
              { type: "message", role: "user", content: [{ type: "input_text", text: "old question" }] },
              { type: "compaction", encrypted_content: "opaque" },
            ],
          },
        },
        userSays("new question"),
      ),
    );
    const session = await new MemoryRepo().importSession(file);
    expect(turnsOf((await session.buildContext()).messages).map((t) => t.text ?? t.role)).toEqual([
      "compactionSummary",
      "old question",
      "new question",
    ]);
    expect(
      file.entries.filter((e) => e.type === "custom").map((e) => (e as { customType: string }).customType),
    ).toEqual(["codex:session_meta", "codex:response_item:compaction"]);
    await expectRoundTrips(file);
  });

  it("marks the reply a turn ended on when the turn was aborted or failed", async () => {
    const event = (payload: Record<string, unknown>) => ({ timestamp: at(), type: "event_msg", payload });
    const count = event({ type: "token_count", info: { last_token_usage: { total_tokens: 10 } } });
    const file = readRollout(
      rollout(
        meta(),
        userSays("list files"),
        item({ type: "function_call", name: "shell", arguments: '{"command":["ls"]}', call_id: "c1" }),
        item({ type: "function_call_output", call_id: "c1", output: "a.txt" }),
        event({ type: "turn_aborted", reason: "interrupted" }),
        userSays("write the report"),
        replies("The report begins"),
        count,
        event({ type: "turn_aborted", turn_id: "t2", reason: "interrupted" }),
        userSays("again"),
        replies("The report"),
        event({ type: "error", message: "stream disconnected" }),
        userSays("once more"),
        replies("The report."),
      ),
    );
    const stops = messagesOf(file.entries, "assistant").map((m) => {
      const { stopReason, errorMessage } = m as AssistantMessage;
      return errorMessage === undefined ? [stopReason] : [stopReason, errorMessage];
    });
    // A call already answered is left as it was (the turn stopped after its output).
    expect(stops).toEqual([["toolUse"], ["aborted"], ["error", "stream disconnected"], ["stop"]]);
    await expectRoundTrips(file);
  });

  it("holds the summary once when Codex's replacement history repeats it as a user message", async () => {
    const summary = "Another language model started to solve this problem.\nSummary: parser built.";
    const file = readRollout(
      rollout(
        meta(),
        userSays("build the parser"),
        replies("built"),
        {
          timestamp: at(),
          type: "compacted",
          payload: {
            message: summary,
            replacement_history: [
              { type: "message", role: "developer", content: [{ type: "input_text", text: "Be careful." }] },
              { type: "message", role: "user", content: [{ type: "input_text", text: "build the parser" }] },
              { type: "message", role: "user", content: [{ type: "input_text", text: summary }] },
            ],
          },
        },
        userSays("ship it"),
      ),
    );
    const session = await new MemoryRepo().importSession(file);
    const context = (await session.buildContext()).messages;
    expect(turnsOf(context).map((t) => t.text ?? t.role)).toEqual([
      "compactionSummary",
      "Be careful.",
      "build the parser",
      "ship it",
    ]);
    expect(JSON.stringify(context).split("Summary: parser built.").length).toBe(2);
    await expectRoundTrips(file);
  });

  it("reads the first versions' bare lines: a meta line, then response items", async () => {
    const text = rollout(
      {
        id: "5973b6c0-94b8-487b-a530-2aeb6098ae0e",
        timestamp: "2025-05-07T17:24:21.123Z",
        instructions: null,
      },
      { record_type: "state" },
      { type: "message", role: "user", content: [{ type: "input_text", text: "list files" }] },
      { type: "function_call", name: "shell", arguments: '{"command":["ls"]}', call_id: "call_1" },
      {
        type: "function_call_output",
        call_id: "call_1",
        output: '{"output":"a.txt\\n","metadata":{"exit_code":1}}',
      },
    );
    expect(detectFormat(text)).toBe("codex");
    const file = readRollout(text);
    expect(file.header).toMatchObject({
      id: "codex-5973b6c0-94b8-487b-a530-2aeb6098ae0e",
      createdAt: "2025-05-07T17:24:21.123Z",
    });
    expect(messagesOf(file.entries, "toolResult")[0]).toMatchObject({ toolName: "shell", isError: true });
    expectToolResultsPaired(file.entries);
    await expectRoundTrips(file);
  });

  it("keeps custom tool calls, local shell calls and items it does not know", () => {
    const file = readRollout(
      rollout(
        meta(),
        userSays("patch it"),
        item({ type: "custom_tool_call", call_id: "c1", name: "apply_patch", input: "*** Begin Patch" }),
        item({ type: "web_search_call", id: "ws1", action: { type: "search", query: "x" } }),
        item({ type: "custom_tool_call_output", call_id: "c1", output: "Done" }),
        item({ type: "local_shell_call", call_id: "c2", action: { type: "exec", command: ["ls"] } }),
        item({
          type: "function_call_output",
          call_id: "c2",
          output: "Exit code: 2\nWall time: 0s\nOutput:\nno",
        }),
        { timestamp: at(), type: "future_line", payload: { x: 1 } },
      ),
    );
    const [reply, shell] = messagesOf(file.entries, "assistant") as AssistantMessage[];
    expect(reply?.content).toEqual([
      { type: "toolCall", id: "c1", name: "apply_patch", arguments: { input: "*** Begin Patch" } },
    ]);
    expect(shell?.content).toEqual([
      { type: "toolCall", id: "c2", name: "local_shell", arguments: { type: "exec", command: ["ls"] } },
    ]);
    expect(messagesOf(file.entries, "toolResult").map((m) => (m as { isError: boolean }).isError)).toEqual([
      false,
      true,
    ]);
    expect(
      file.entries.filter((e) => e.type === "custom").map((e) => (e as { customType: string }).customType),
    ).toEqual(["codex:session_meta", "codex:response_item:web_search_call", "codex:future_line"]);
    expectToolResultsPaired(file.entries);
  });

  it("reads the commands a real rollout shows failing (exec_command's exit code) as failed results", () => {
    const [, text] = fixtureFiles("codex").find(([name]) => name === "0.125.0-web-search-patches.jsonl") as [
      string,
      string,
    ];
    const failed = messagesOf(readRollout(text).entries, "toolResult").filter(
      (m) => (m as { isError: boolean }).isError,
    );
    expect(failed.map((m) => (texts((m as { content: unknown }).content) ?? "").split("\n")[2])).toEqual([
      "Process exited with code 2",
      "Process exited with code 1",
      "Process exited with code 1",
      "Process exited with code 1",
    ]);
  });

  it("reads a failure from the exit code Codex puts on an output's first line, not from a line inside it", () => {
    const output = (text: string, id: string) =>
      item({ type: "function_call_output", call_id: id, output: text });
    const file = readRollout(
      rollout(
        meta(),
        userSays("run them"),
        item({ type: "function_call", name: "shell", arguments: "{}", call_id: "c1" }),
        item({ type: "function_call", name: "read", arguments: "{}", call_id: "c2" }),
        item({ type: "function_call", name: "shell", arguments: "{}", call_id: "c3" }),
        item({ type: "function_call", name: "exec_command", arguments: "{}", call_id: "c4" }),
        item({ type: "function_call", name: "exec_command", arguments: "{}", call_id: "c5" }),
        item({ type: "function_call", name: "exec_command", arguments: "{}", call_id: "c6" }),
        output("Exit code: 1\nWall time: 0.1 seconds\nOutput:\nfailed", "c1"),
        output("build.log:\nExit code: 2\n", "c2"),
        output("Exit code: -1\nWall time: 10 seconds\nOutput:\ncommand timed out", "c3"),
        // `exec_command` (Codex 0.125 on): the code in the header before the output.
        output(
          "Chunk ID: 0b1c2d\nWall time: 0.2 seconds\nProcess exited with code 2\nOriginal token count: 3\nOutput:\nno such file",
          "c4",
        ),
        output(
          "Chunk ID: 0b1c2e\nWall time: 0.1 seconds\nProcess exited with code 0\nOriginal token count: 9\nOutput:\nProcess exited with code 1\n",
          "c5",
        ),
        output("Chunk ID: 0b1c2f\nWall time: 1.0 seconds\nOriginal token count: 0\nOutput:\n", "c6"),
      ),
    );
    expect(messagesOf(file.entries, "toolResult").map((m) => (m as { isError: boolean }).isError)).toEqual([
      true,
      false,
      true,
      true,
      false,
      false,
    ]);
    // An output whose first line tells the failure is given back as it was, without being kept.
    const results = file.entries.filter((e) => e.type === "message" && e.message.role === "toolResult");
    const kept = results.map(
      (e) => (e as { sourceLines?: Array<{ payload: object }> }).sourceLines?.[0]?.payload,
    );
    expect(kept.map((p) => (p === undefined ? "no line" : "output" in p))).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it("signs text with its item id and phase, as pi's openai-responses provider does", () => {
    const file = readRollout(
      rollout(
        meta(),
        userSays("hi"),
        item({
          type: "message",
          id: "msg_1",
          role: "assistant",
          phase: "final_answer",
          content: [{ type: "output_text", text: "hello" }],
        }),
      ),
    );
    expect((messagesOf(file.entries, "assistant")[0] as AssistantMessage).content).toEqual([
      {
        type: "text",
        text: "hello",
        textSignature: JSON.stringify({ v: 1, id: "msg_1", phase: "final_answer" }),
      },
    ]);
  });

  it("drops a torn last line with a warning and refuses a bad line before it", () => {
    const whole = rollout(meta(), userSays("hi"));
    expect(readRollout(`${whole}{"timestamp":"2026`).warnings).toEqual([
      { line: 3, message: expect.stringContaining("torn") },
    ]);
    const error = refusal(() => readRollout(`${whole}{oops\n${rollout(userSays("again"))}`));
    expect(error.code).toBe("invalid_request");
    expect(error.details).toMatchObject({ line: 3 });
  });

  /** A line where Codex names (or renames) the thread. */
  const named = (name: unknown) => ({
    timestamp: at(),
    type: "event_msg",
    payload: {
      type: "thread_name_updated",
      thread_id: "019b0000-0000-7000-8000-00000000c0de",
      thread_name: name,
    },
  });

  it("names the session as Codex last named the thread, keeping each rename as it was written", async () => {
    const file = rollout(
      meta(),
      userSays("fix the parser"),
      named("Parser fix"),
      replies("done"),
      named("Parser fix, v2"),
    );
    const parsed = readRollout(file);
    expect(parsed.header.name).toBe("Parser fix, v2");
    const renames = parsed.entries.filter(
      (e) => e.type === "custom" && e.customType === "codex:event_msg:thread_name_updated",
    );
    expect(renames.length).toBe(2);
    const session = await new MemoryRepo().importSession(parsed);
    expect((await session.getInfo()).name).toBe("Parser fix, v2");
    // A blank or missing name is no name.
    expect(
      readRollout(rollout(meta(), userSays("hi"), named("  "), named(null))).header.name,
    ).toBeUndefined();
  });

  it("names the session again when a sync brings a rename Codex wrote since the last one", async () => {
    const repo = new MemoryRepo();
    const lines = [meta(), userSays("fix the parser"), named("Parser fix"), replies("done")];
    const { session } = await repo.syncSession(readRollout(rollout(...lines)));
    expect(await session.getName()).toBe("Parser fix");
    lines.push(userSays("and the lexer"), named("Parser and lexer"), replies("done too"));
    const grown = readRollout(rollout(...lines));
    expect(await repo.syncSession(grown)).toMatchObject({ status: "appended" });
    expect(await session.getName()).toBe("Parser and lexer");
    expect(await session.getLeafId()).toBe(grown.leafId);
    // Run again (its answer lost, say): nothing more is written.
    const count = (await session.getEntries()).length;
    expect((await repo.syncSession(grown)).status).toBe("unchanged");
    expect((await session.getEntries()).length).toBe(count);
  });

  it("refuses a file without a session_meta line", () => {
    expect(refusal(() => readRollout(rollout(userSays("hi")))).message).toMatch(/^line 1: no session_meta/);
  });
});

describe("every file above, exported back to Codex", () => {
  it("gives back its lines (the first versions' in the newer shape), which import to the same session", async () => {
    const imported = files.filter((text) => {
      try {
        parseCodex(text);
        return true;
      } catch {
        return false;
      }
    });
    expect(imported.length).toBeGreaterThan(12);
    for (const text of new Set(imported)) await expectExportedAsWritten("codex", text);
  });
});
