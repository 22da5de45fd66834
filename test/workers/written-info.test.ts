import { describe, expect, it } from "vitest";
import { SessionError } from "../../src/core/errors";
import type { SessionInfo } from "../../src/core/session-schemas";
import { afterWrite, writtenInfo } from "../../src/http/route-kit";

/*
 * A fork or an import is answered with its new session's info, read once the write is done: a
 * failure of that read must not tell the client that nothing was applied.
 */

const failing = (error: unknown) => ({ getInfo: (): Promise<SessionInfo> => Promise.reject(error) });

describe("the info of a session a request has just written", () => {
  it("answers an unknown outcome, never not_applied, when it cannot be read for now", async () => {
    const overloaded = Object.assign(new Error("the object is overloaded"), { overloaded: true });
    const passing = new Error("disk I/O error: SQLITE_IOERR");
    for (const cause of [overloaded, passing]) {
      const error = await writtenInfo(failing(cause)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SessionError);
      expect((error as SessionError).code).toBe("unavailable");
      expect((error as SessionError).details).toMatchObject({ outcome: "unknown" });
    }
  });

  it("answers an unknown outcome for any call after a write (an import's leaf read), not not_applied", async () => {
    const overloaded = Object.assign(new Error("the object is overloaded"), { overloaded: true });
    const error = await afterWrite(() => Promise.reject(overloaded)).catch((e: unknown) => e);
    expect((error as SessionError).details).toMatchObject({ outcome: "unknown" });
    await expect(afterWrite(async () => "leaf")).resolves.toBe("leaf");
  });

  it("passes any other failure on as it is, and the info when it is read", async () => {
    const gone = new SessionError("not_found", "session does not exist");
    await expect(writtenInfo(failing(gone))).rejects.toBe(gone);
    const info = { id: "s" } as SessionInfo;
    await expect(writtenInfo({ getInfo: async () => info })).resolves.toBe(info);
  });
});
