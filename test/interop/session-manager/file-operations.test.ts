/*
 * Ported from badlogic/pi-mono, packages/coding-agent/test/session-manager/file-operations.test.ts,
 * at commit 83378aad7e74a0e2bb8f37c007a9685fb4609d8a (MIT).
 *
 * - `loadEntriesFromFile` is reading a pi file: `parsePi` and an import into each backend. pi
 *   reads a file it cannot use as no entries and starts afresh; a file that cannot be imported is
 *   refused here, naming its line (deliberate: nothing is lost silently). A malformed line in the
 *   middle is refused likewise, where pi skips it.
 * - `findMostRecentSession` is the repo's listing, newest first; the cases about stray files in a
 *   folder apply to the JSONL backend.
 * - Not ported: "SessionManager.setSessionFile with corrupted files". pi truncates and rewrites a
 *   session file it cannot read; our files are only ever written by the store, and how a JSONL
 *   store treats a damaged log (a torn last line dropped, any other damage an error) is tested in
 *   test/node/jsonl-files.test.ts.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parsePi } from "../../../src/core/pi-format";
import { JSONLRepo } from "../../../src/node";
import { expectCode } from "../../conformance/storage";
import { backends } from "../backends";
import { PiSessionManager } from "../pi-adapter";

const header = '{"type":"session","id":"abc","timestamp":"2025-01-01T00:00:00Z","cwd":"/tmp"}\n';
const message =
  '{"type":"message","id":"1","parentId":null,"timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":"hi","timestamp":1}}\n';

function refusedAt(text: string, line: number): void {
  expect(() => parsePi(text)).toThrow(new RegExp(`^line ${line}: `));
}

for (const backend of backends()) {
  describe(`loadEntriesFromFile (${backend.name})`, () => {
    it("is not_found for a session that does not exist (pi: an empty list)", async () => {
      await expectCode((await backend.repo()).open("nonexistent"), "not_found");
    });

    it("refuses an empty file (pi: an empty list)", () => {
      refusedAt("", 1);
    });

    it("refuses a file without valid session header (pi: an empty list)", () => {
      refusedAt('{"type":"message","id":"1"}\n', 1);
    });

    it("refuses malformed JSON (pi: an empty list)", () => {
      refusedAt("not json\n", 1);
    });

    it("loads valid session file", async () => {
      const manager = await PiSessionManager.open(await backend.repo(), header + message);
      expect(manager.getSessionId()).toBe("abc");
      const entries = await manager.getEntries();
      expect(entries).toHaveLength(1);
      expect(entries[0]?.type).toBe("message");
    });

    it("refuses malformed lines before the last, naming them (pi skips them and keeps the rest)", () => {
      refusedAt(`${header}not valid json\n${message}`, 2);
    });
  });

  describe(`findMostRecentSession (${backend.name})`, () => {
    it("returns nothing for an empty repo", async () => {
      expect((await (await backend.repo()).list()).sessions).toEqual([]);
    });

    it("returns single valid session", async () => {
      const repo = await backend.repo();
      const session = await repo.create({ id: "abc" });
      expect((await repo.list()).sessions.map((s) => s.id)).toEqual([session.id]);
    });

    it("returns most recently modified session", async () => {
      const repo = await backend.repo();
      await repo.create({ id: "old" });
      // Small delay to ensure a different time
      await new Promise((r) => setTimeout(r, 10));
      await repo.create({ id: "new" });

      expect((await repo.list()).sessions[0]?.id).toBe("new");
    });
  });
}

describe("findMostRecentSession (JSONL files, stray files)", () => {
  const [, files] = backends();

  it("returns nothing for a folder that does not exist", async () => {
    const repo = (await files?.repo()) as JSONLRepo;
    expect((await new JSONLRepo(join(repo.root, "nonexistent")).list()).sessions).toEqual([]);
  });

  it("ignores files that are not sessions, and folders without a session", async () => {
    const repo = (await files?.repo()) as JSONLRepo;
    const valid = await repo.create({ id: "valid" });
    mkdirSync(join(repo.root, "sessions", "invalid"), { recursive: true });
    writeFileSync(join(repo.root, "sessions", "invalid", "entries.jsonl"), '{"type":"not-session"}\n');
    writeFileSync(join(repo.root, "sessions", "file.txt"), "hello");
    writeFileSync(join(repo.root, "sessions", "file.json"), "{}");
    expect((await repo.list()).sessions.map((s) => s.id)).toEqual([valid.id]);
  });
});
