import type { AgentMessage, AssistantMessage } from "../../src/core/messages";
import { usage } from "../../src/core/messages";
import type { Session } from "../../src/core/session";

/*
 * A conversation written as a service client writes one (no agent's file behind it): a question
 * with an image, reasoning from another provider, a tool call with an id Anthropic does not take,
 * its result, the answer, a compaction, then a second turn answered by Claude with signed thinking,
 * and a name. Exports to agents' files are tested on it.
 */

const at = (second: number) => Date.UTC(2026, 2, 1, 9, 0, second);

export const QUESTION = "What does notes.txt say?";
export const TOOL_OUTPUT = "remember the milk";
export const SECOND_QUESTION = "And tomorrow?";
export const SUMMARY = "The user asked about notes.txt; it says to remember the milk.";

export async function writeConversation(session: Session): Promise<void> {
  const openai = {
    api: "openai-responses",
    provider: "openai",
    model: "gpt-5",
    usage: usage(120, 30, 0, 0),
  };
  const messages: AgentMessage[] = [
    {
      role: "user",
      content: [
        { type: "text", text: QUESTION },
        {
          type: "image",
          mimeType: "image/png",
          data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
        },
      ],
      timestamp: at(1),
    },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "I should read the file." },
        { type: "toolCall", id: "call_7Hq|fc_01ab", name: "read", arguments: { path: "notes.txt" } },
      ],
      ...openai,
      stopReason: "toolUse",
      timestamp: at(2),
    },
    {
      role: "toolResult",
      toolCallId: "call_7Hq|fc_01ab",
      toolName: "read",
      content: [{ type: "text", text: TOOL_OUTPUT }],
      isError: false,
      timestamp: at(3),
    },
    {
      role: "assistant",
      content: [{ type: "text", text: "It says: remember the milk." }],
      ...openai,
      stopReason: "stop",
      timestamp: at(4),
    },
  ];
  await session.appendModelChange("openai", "gpt-5");
  for (const message of messages) await session.appendMessage(message);
  await session.compact({ summary: SUMMARY, keepRecentTokens: 1 });
  await session.appendMessage({ role: "user", content: SECOND_QUESTION, timestamp: at(6) });
  await session.appendMessage({
    role: "assistant",
    content: [
      { type: "thinking", thinking: "Nothing is planned.", thinkingSignature: "EuYBCkQYAiJA" },
      { type: "text", text: "Nothing is planned for tomorrow." },
    ],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: usage(200, 12, 100, 0),
    stopReason: "stop",
    timestamp: at(7),
  });
  await session.appendSessionName("Notes");
}

/**
 * Two turns whose tool calls share one stored id (`functions.read:0`, as Kimi numbers them per
 * turn), each answered by a result of that id: a.txt, then b.txt.
 */
export async function writeSharedCallIds(session: Session): Promise<void> {
  const reply = {
    role: "assistant",
    api: "openai-completions",
    provider: "moonshot",
    model: "kimi-k2",
    usage: usage(1, 1, 0, 0),
    stopReason: "toolUse",
  } as const;
  for (const [turn, path] of [
    [1, "a.txt"],
    [2, "b.txt"],
  ] as const) {
    await session.appendMessage({ role: "user", content: `Read ${path}`, timestamp: turn * 10 });
    await session.appendMessage({
      ...reply,
      content: [{ type: "toolCall", id: "functions.read:0", name: "read", arguments: { path } }],
      timestamp: turn * 10 + 1,
    } as AssistantMessage);
    await session.appendMessage({
      role: "toolResult",
      toolCallId: "functions.read:0",
      toolName: "read",
      content: [{ type: "text", text: `contents of ${path}` }],
      isError: false,
      timestamp: turn * 10 + 2,
    });
  }
}
