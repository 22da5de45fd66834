/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/compaction-serialization.test.ts, at
 * commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT): how a conversation is written out for a
 * model to summarize (our `serializeConversation`, which the summarizer prompt uses). The
 * messages go through a session of each backend first, as they do when a session is compacted.
 */
import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/core/messages";
import { serializeConversation } from "../../src/core/summarizers/prompt";
import type { Backend } from "./backends";
import { backends } from "./backends";
import { PiSessionManager } from "./pi-adapter";

async function throughSession(backend: Backend, messages: AgentMessage[]): Promise<AgentMessage[]> {
  const manager = await PiSessionManager.create(await backend.repo());
  for (const message of messages) await manager.appendMessage(message);
  return (await manager.buildSessionContext()).messages;
}

for (const backend of backends()) {
  describe(`serializeConversation (${backend.name})`, () => {
    it("should truncate long tool results", async () => {
      const longContent = "x".repeat(5000);
      const messages = await throughSession(backend, [
        {
          role: "toolResult",
          toolCallId: "tc1",
          toolName: "read",
          content: [{ type: "text", text: longContent }],
          isError: false,
          timestamp: Date.now(),
        },
      ]);

      const result = serializeConversation(messages);

      expect(result).toContain("[Tool result]:");
      expect(result).toContain("[... 3000 more characters truncated]");
      expect(result).not.toContain("x".repeat(3000));
      // First 2000 chars should be present
      expect(result).toContain("x".repeat(2000));
    });

    it("should not truncate short tool results", async () => {
      const shortContent = "x".repeat(1500);
      const messages = await throughSession(backend, [
        {
          role: "toolResult",
          toolCallId: "tc1",
          toolName: "read",
          content: [{ type: "text", text: shortContent }],
          isError: false,
          timestamp: Date.now(),
        },
      ]);

      const result = serializeConversation(messages);

      expect(result).toBe(`[Tool result]: ${shortContent}`);
      expect(result).not.toContain("truncated");
    });

    it("should not truncate assistant or user messages", async () => {
      const longText = "y".repeat(5000);
      const messages = await throughSession(backend, [
        {
          role: "user",
          content: [{ type: "text", text: longText }],
          timestamp: Date.now(),
        },
        {
          role: "assistant",
          content: [{ type: "text", text: longText }],
          api: "anthropic",
          provider: "anthropic",
          model: "test",
          usage: {
            input: 0,
            output: 0,
            cacheRead: 0,
            cacheWrite: 0,
            totalTokens: 0,
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
          },
          stopReason: "stop",
          timestamp: Date.now(),
        },
      ]);

      const result = serializeConversation(messages);

      expect(result).not.toContain("truncated");
      expect(result).toContain(longText);
    });
  });
}
