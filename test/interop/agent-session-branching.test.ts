/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/agent-session-branching.test.ts, at
 * commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT). pi runs these against a model (and skips
 * them without an API key); here a turn is a user message and a reply appended to the session.
 * pi's `AgentSession.fork(entryId)` on a user message is `Session.fork(entryId, { position:
 * "before" })`: a new session holding what came before the message, whose text goes back to the
 * editor. pi's in-memory mode (`--no-session`) is the memory backend.
 *
 * Deliberate difference: pi creates a fork's file only with its first reply; a fork here is a
 * session from the start (empty when forked before the first message), listed with its parent.
 */
import { describe, expect, it } from "vitest";
import { contentText } from "../../src/core/messages";
import type { Session } from "../../src/core/session";
import { backends } from "./backends";
import type { PiSessionManager } from "./pi-adapter";
import { inMemory } from "./pi-adapter";
import { assistantMsg, userMsg } from "./pi-messages";

async function prompt(session: PiSessionManager, text: string): Promise<void> {
  await session.appendMessage(userMsg(text));
  await session.appendMessage(assistantMsg(`A few words about: ${text}`));
}

/** pi's getUserMessagesForForking: the user messages of the current branch. */
async function getUserMessagesForForking(session: PiSessionManager) {
  return (await session.getBranch()).flatMap((entry) =>
    entry.type === "message" && entry.message.role === "user"
      ? [{ entryId: entry.id, text: contentText(entry.message.content) }]
      : [],
  );
}

/** pi's AgentSession.fork: the session before the message, and the message's text. */
async function fork(session: PiSessionManager, entryId: string) {
  const entry = await session.getEntry(entryId);
  const forked: Session = await session.session.fork(entryId, { position: "before" });
  session.session = forked;
  const selectedText = entry?.type === "message" ? contentText(entry.message.content) : undefined;
  return { selectedText, cancelled: false };
}

const messages = async (session: PiSessionManager) => (await session.buildSessionContext()).messages;

for (const backend of backends()) {
  describe(`AgentSession forking (${backend.name})`, () => {
    it("should allow forking from single message", async () => {
      const session = await inMemory(backend);
      const source = session.getSessionId();

      // Send one message
      await prompt(session, "Say hello");

      // Should have exactly 1 user message available for forking
      const userMessages = await getUserMessagesForForking(session);
      expect(userMessages.length).toBe(1);
      expect(userMessages[0]?.text).toBe("Say hello");

      // Fork from the first message
      const result = await fork(session, userMessages[0]?.entryId as string);
      expect(result.selectedText).toBe("Say hello");
      expect(result.cancelled).toBe(false);

      // After forking, conversation should be empty (forked before the first message)
      expect((await messages(session)).length).toBe(0);

      // The fork is a session of its own already, empty, pointing back at its source
      const info = await session.session.getInfo();
      expect(info.id).not.toBe(source);
      expect(info.entryCount).toBe(0);
      expect(info.parentSession?.id).toBe(source);
    });

    // pi's in-memory mode is the memory backend: the case is the memory backend's alone.
    if (backend.entriesFile === undefined)
      it("should support in-memory forking", async () => {
        const session = await inMemory(backend);

        // Send one message
        await prompt(session, "Say hi");

        // Should have 1 user message
        const userMessages = await getUserMessagesForForking(session);
        expect(userMessages.length).toBe(1);

        // Verify we have messages before forking
        expect((await messages(session)).length).toBeGreaterThan(0);

        // Fork from the first message
        const result = await fork(session, userMessages[0]?.entryId as string);
        expect(result.selectedText).toBe("Say hi");
        expect(result.cancelled).toBe(false);

        // After forking, conversation should be empty
        expect((await messages(session)).length).toBe(0);
      });

    it("should fork from middle of conversation", async () => {
      const session = await inMemory(backend);

      // Send multiple messages
      await prompt(session, "Say one");
      await prompt(session, "Say two");
      await prompt(session, "Say three");

      // Should have 3 user messages
      const userMessages = await getUserMessagesForForking(session);
      expect(userMessages.length).toBe(3);

      // Fork from second message (keeps first message + response)
      const secondMessage = userMessages[1];
      const result = await fork(session, secondMessage?.entryId as string);
      expect(result.selectedText).toBe("Say two");

      // After forking, should have first user message + assistant response
      const after = await messages(session);
      expect(after.length).toBe(2);
      expect(after[0]?.role).toBe("user");
      expect(after[1]?.role).toBe("assistant");
    });
  });
}
