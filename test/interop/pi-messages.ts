import type { AssistantMessage, UserMessage } from "../../src/core/messages";

/*
 * The message builders of pi's tests (badlogic/pi-mono, packages/coding-agent/test/utilities.ts,
 * `userMsg` and `assistantMsg`, at commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a).
 */

export function userMsg(text: string): UserMessage {
  return { role: "user", content: text, timestamp: Date.now() };
}

export function assistantMsg(text: string): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "test",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: Date.now(),
  };
}
