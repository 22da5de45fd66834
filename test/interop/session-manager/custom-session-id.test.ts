/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/session-manager/custom-session-id.test.ts,
 * at commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT). pi's `newSession({ id })` is a new
 * session created with that id in each backend; `parentSession` is where a fork came from.
 */
import { describe, expect, it } from "vitest";
import { backends } from "../backends";
import { PiSessionManager } from "../pi-adapter";

for (const backend of backends()) {
  describe(`SessionManager.newSession with custom id (${backend.name})`, () => {
    it("uses the provided id instead of generating one", async () => {
      const session = await PiSessionManager.create(await backend.repo(), { id: "my-custom-id" });
      expect(session.getSessionId()).toBe("my-custom-id");
    });

    it("generates a random id when no id is provided", async () => {
      const session = await PiSessionManager.create(await backend.repo());
      const id = session.getSessionId();
      expect(id).toBeDefined();
      expect(id).not.toBe("");
    });

    it("generates a random id when the session comes from another (a fork) without an id", async () => {
      const parent = await PiSessionManager.create(await backend.repo());
      const first = await parent.appendMessage({ role: "user", content: "hi", timestamp: 1 });
      const forkId = await parent.createBranchedSession(first);
      expect(forkId).toBeDefined();
      expect(forkId).not.toBe("");
      expect((await parent.getHeader()).parentSession?.entryId).toBe(first);
    });

    it("includes the custom id in the session header", async () => {
      const session = await PiSessionManager.create(await backend.repo(), { id: "header-test-id" });

      const header = await session.getHeader();
      expect(header).not.toBeNull();
      expect(header.id).toBe("header-test-id");
    });
  });
}
