/*
 * Ported from earendil-works/pi, packages/coding-agent/test/session-manager/load-entries.test.ts
 * (MIT), as stored at commit 60778d2e825ecd2bd182aaf06e55b47bed706129, run on each backend. pi 1.6's
 * `SessionManager.inMemory(cwd, options, entries)` makes a session of entries held outside a file;
 * here those entries, written by pi 1.6's own SessionManager, are a pi file imported into the
 * backend (with the id `options` give, when they give one).
 *
 * Left out: "generates a session id when the options carry none" (a pi file always has a header
 * with an id, and a file without one is refused; a session created without an id gets a UUIDv7,
 * tested by the conformance suite) and "stays off the filesystem" (where a backend stores is its
 * own business here).
 */
import { type SessionEntry as PiEntry, SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { backends } from "../../backends";
import { PiSessionManager, piFileText } from "../../pi-adapter";

function userMessage(text: string) {
  return { role: "user" as const, content: [{ type: "text" as const, text }], timestamp: Date.now() };
}

function storedEntries(build: (source: SessionManager) => void): PiEntry[] {
  const source = SessionManager.inMemory("/project");
  build(source);
  return source.getEntries();
}

describe.each(backends())("SessionManager.inMemory with preloaded entries ($name)", (backend) => {
  /** pi's `SessionManager.inMemory("/project", options, entries)`: the entries imported as a pi file. */
  async function load(entries: readonly PiEntry[], options: { id?: string } = {}): Promise<PiSessionManager> {
    return PiSessionManager.open(await backend.repo(), piFileText(entries, { cwd: "/project" }), options);
  }

  it("adopts entries verbatim", async () => {
    const entries = storedEntries((source) => {
      source.appendMessage(userMessage("hello"));
      source.appendModelChange("anthropic", "claude-opus-4-5");
      source.appendMessage(userMessage("again"));
    });
    const session = await load(entries);
    expect(await session.getEntries()).toEqual(entries);
  });

  it("keeps the loaded leaf so appends continue the conversation", async () => {
    const entries = storedEntries((source) => {
      source.appendMessage(userMessage("hello"));
      source.appendMessage(userMessage("again"));
    });
    const lastId = entries[entries.length - 1]?.id;
    const session = await load(entries);
    const appendedId = await session.appendMessage(userMessage("continued"));
    expect(await session.getLeafId()).toBe(appendedId);
    expect((await session.getEntry(appendedId))?.parentId).toBe(lastId);
  });

  it("never mints an id that collides with a loaded entry", async () => {
    const entries = storedEntries((source) => {
      for (let i = 0; i < 50; i++) source.appendMessage(userMessage(`message ${i}`));
    });
    const session = await load(entries);
    const appendedId = await session.appendMessage(userMessage("continued"));
    expect(entries.some((entry) => entry.id === appendedId)).toBe(false);
  });

  it("rebuilds the branch structure rather than a flat chain", async () => {
    const entries = storedEntries((source) => {
      const firstId = source.appendMessage(userMessage("hello"));
      source.appendMessage(userMessage("abandoned"));
      source.branch(firstId);
      source.appendMessage(userMessage("kept"));
    });
    const roots = await (await load(entries)).getTree();
    expect(roots).toHaveLength(1);
    expect(roots[0]?.children).toHaveLength(2);
  });

  it("rebuilds labels", async () => {
    let labelledId = "";
    const entries = storedEntries((source) => {
      labelledId = source.appendMessage(userMessage("hello"));
      source.appendLabelChange(labelledId, "checkpoint");
    });
    expect(await (await load(entries)).getLabel(labelledId)).toBe("checkpoint");
  });

  it("resolves a compaction against the entry it was written against", async () => {
    let kept = userMessage("kept");
    const entries = storedEntries((source) => {
      source.appendMessage(userMessage("dropped"));
      kept = userMessage("kept");
      const keptId = source.appendMessage(kept);
      source.appendCompaction("summary so far", keptId, 1000);
    });
    const context = await (await load(entries)).buildSessionContext();
    expect(context.messages).toContainEqual(kept);
  });

  it("creates a header from the options when the entries carry none", async () => {
    const entries = storedEntries((source) => source.appendMessage(userMessage("hello")));
    const session = await load(entries, { id: "restored-session" });
    expect(session.getSessionId()).toBe("restored-session");
    expect((await session.getHeader()).id).toBe("restored-session");
    expect((await session.getHeader()).metadata.pi).toMatchObject({ cwd: "/project" });
  });

  it("starts an empty session when the entries are empty", async () => {
    const session = await load([], { id: "empty-session" });
    expect(session.getSessionId()).toBe("empty-session");
    expect(await session.getEntries()).toEqual([]);
    expect(await session.getLeafId()).toBeNull();
  });
});
