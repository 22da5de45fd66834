/*
 * Ported from earendil-works/pi, packages/coding-agent/test/session-manager/fork-migration.test.ts
 * (MIT), as stored at commit c3ad79d6fefbeb3ed066d0e026e07d2b832fc8d6, run on each backend. pi
 * forks a legacy file (`SessionManager.forkFrom`) into a new version 3 file and leaves the source
 * as it was; here the legacy file is imported (migrated on the way in) and the session forked at
 * its head. Where pi reopens the fork's file, pi 1.6 itself reads the fork as we export it.
 *
 * A fork's header names its parent as a session id and the entry it was forked at
 * (`parentSession: {id, entryId}`; the pi file says the id), not as the parent's file path:
 * sessions here have no path.
 */
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { exportPi } from "../../../../src/core/pi-format";
import type { Session } from "../../../../src/core/session";
import { backends } from "../../backends";
import { PiSessionManager } from "../../pi-adapter";

const timestamp = "2025-01-01T00:00:00.000Z";

function file(records: object[]): string {
  return `${records.map((record) => JSON.stringify(record)).join("\n")}\n`;
}

async function exported(session: Session): Promise<string> {
  let text = "";
  for await (const line of exportPi(session)) text += line;
  return text;
}

/** pi 1.6's reading of a file we export: the context its SessionManager builds from it. */
function piContext(text: string) {
  const [header, ...entries] = text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  return SessionManager.inMemory("/work", { id: header.id }, entries).buildSessionContext();
}

describe.each(backends())("SessionManager.forkFrom legacy sessions ($name)", (backend) => {
  it.each([undefined, 1])("preserves v1 history and tree links with version %s", async (version) => {
    const first = { role: "user", content: "first", timestamp: 1 };
    const second = { role: "user", content: "second", timestamp: 2 };
    const sourceContent = file([
      { type: "session", version, id: "legacy", timestamp, cwd: "/work" },
      { type: "message", timestamp, message: first },
      { type: "message", timestamp, message: second },
    ]);
    const repo = await backend.repo();
    const source = (await PiSessionManager.open(repo, sourceContent)).session;
    const before = await exported(source);

    const fork = await repo.fork(source.id, (await source.getLeafId()) as string);
    expect((await fork.buildContext()).messages).toEqual([first, second]);
    const entries = await fork.getEntries();
    expect(entries[0]?.id).toEqual(expect.any(String));
    expect(entries[0]?.parentId).toBeNull();
    expect(entries[1]?.parentId).toBe(entries[0]?.id);
    expect((await fork.getHeader()).parentSession).toEqual({ id: source.id, entryId: entries[1]?.id });
    const forkFile = await exported(fork);
    expect(JSON.parse(forkFile.split("\n")[0] as string)).toMatchObject({
      version: 3,
      parentSession: source.id,
    });
    expect(await exported(source)).toBe(before);
    expect(piContext(forkFile).messages).toEqual([first, second]);
  });

  it("migrates v2 hook messages without changing existing entry IDs or the source", async () => {
    const legacyMessage = {
      role: "hookMessage",
      customType: "note",
      content: "saved context",
      display: false,
      timestamp: 1,
    };
    const sourceContent = file([
      { type: "session", version: 2, id: "legacy", timestamp, cwd: "/work" },
      { type: "message", id: "entry-1", parentId: null, timestamp, message: legacyMessage },
    ]);
    const repo = await backend.repo();
    const source = (await PiSessionManager.open(repo, sourceContent)).session;
    const before = await exported(source);

    const fork = await repo.fork(source.id, "entry-1");
    const expected = [{ ...legacyMessage, role: "custom" }];
    expect((await fork.buildContext()).messages).toEqual(expected);
    expect((await fork.getEntries())[0]).toMatchObject({ id: "entry-1", parentId: null });
    expect(await exported(source)).toBe(before);
    expect(piContext(await exported(fork)).messages).toEqual(expected);
  });
});
