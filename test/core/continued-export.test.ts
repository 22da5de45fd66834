import { describe, expect, it } from "vitest";
import { exportClaudeCode } from "../../src/core/claude-code-export";
import { parseClaudeCode } from "../../src/core/claude-code-format";
import { exportCodex } from "../../src/core/codex-export";
import { parseCodex } from "../../src/core/codex-format";
import type { ImportedSession } from "../../src/core/interchange";
import { MemoryRepo } from "../../src/core/memory";
import { usage } from "../../src/core/messages";
import type { Session } from "../../src/core/session";
import type { SessionStorage } from "../../src/core/storage";
import { planSync } from "../../src/core/sync-import";
import { collect, fixtureFiles, jsonLines, resumedAt } from "./agent-imports";

/*
 * A session imported from Claude Code or Codex, gone on elsewhere (a note, a message over HTTP),
 * exported to the agent's file in another checkout, and gone on in there: a sync takes the lines
 * the agent added after the export's, under the entries the export wrote lines for; a file that
 * changed a line the session holds still writes nothing.
 */

type Line = Record<string, unknown>;

const [, claudeCodeText] = fixtureFiles("claude-code").find(([n]) => n.startsWith("2.1.152")) as [
  string,
  string,
];
const [, codexText] = fixtureFiles("codex").find(([n]) => n.startsWith("0.135.0")) as [string, string];

/** An export as `pull` writes it into another checkout: every working folder there. */
function pulled(text: string): Line[] {
  return jsonLines(text).map((line) => {
    const payload = line.payload as Line | undefined;
    if (typeof payload?.cwd === "string") return { ...line, payload: { ...payload, cwd: "/home/bob/app" } };
    return typeof line.cwd === "string" ? { ...line, cwd: "/home/bob/app" } : line;
  });
}

const text = (lines: Line[]) => lines.map((line) => `${JSON.stringify(line)}\n`).join("");

/** Claude Code's next line, under the transcript's last one. */
function claudeCodeTurn(lines: Line[], uuid: string, content: string): Line {
  const last = lines.findLast((line) => typeof line.uuid === "string") as Line;
  return { ...last, parentUuid: last.uuid, uuid, type: "user", message: { role: "user", content } };
}

/** Codex's next turn: its context, the user's message and its event. */
function codexTurn(timestamp: string, content: string): Line[] {
  return [
    { timestamp, type: "turn_context", payload: { cwd: "/home/bob/app", model: "gpt-5.5", summary: "auto" } },
    {
      timestamp,
      type: "response_item",
      payload: { type: "message", role: "user", content: [{ type: "input_text", text: content }] },
    },
    {
      timestamp,
      type: "event_msg",
      payload: { type: "user_message", message: content, images: [], local_images: [], text_elements: [] },
    },
  ];
}

/** The session's storage, its reads of entries by id counted: each a call on a remote storage. */
function countingReads(storage: SessionStorage): { storage: SessionStorage; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  const counted = new Proxy(storage, {
    get(target, name) {
      if (name === "getEntry")
        return (id: string) => {
          reads.set(id, (reads.get(id) ?? 0) + 1);
          return target.getEntry(id);
        };
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { storage: counted, reads };
}

/** A session imported from an agent's file, and the id of a user's message written on the service after it. */
async function askedOnService(
  file: ImportedSession,
): Promise<{ repo: MemoryRepo; session: Session; asked: string }> {
  const repo = new MemoryRepo();
  const session = await repo.importSession(file);
  const asked = await session.appendMessage({ role: "user", content: "asked on the service", timestamp: 1 });
  return { repo, session, asked };
}

async function lastSaid(session: Session): Promise<string> {
  return JSON.stringify((await session.buildContext()).messages.at(-1));
}

describe("a Claude Code transcript that went on from the session's export, synced back", () => {
  it("takes the lines the agent added under a note written on the service", async () => {
    const repo = new MemoryRepo();
    const session = await repo.importSession(parseClaudeCode(claudeCodeText));
    const note = await session.appendCustomMessageEntry({
      customType: "note",
      content: "check the flaky test",
      display: true,
    });
    const lines = pulled(await collect(exportClaudeCode(session)));
    expect((await repo.syncSession(parseClaudeCode(text(lines)))).status).toBe("unchanged");

    const turn = claudeCodeTurn(lines, "a0000000-0000-4000-8000-000000000011", "asked in Claude Code");
    const grown = text([...lines, turn]);
    expect(await repo.syncSession(parseClaudeCode(grown))).toMatchObject({ status: "appended", appended: 1 });
    expect(await session.getEntry(turn.uuid as string)).toMatchObject({ parentId: note });
    expect(await session.getLeafId()).toBe(turn.uuid);
    expect(await lastSaid(session)).toContain("asked in Claude Code");
    // Synced again, or read a line at a time, the file holds nothing more.
    expect((await repo.syncSession(parseClaudeCode(grown))).status).toBe("unchanged");
    expect((await repo.syncSession(parseClaudeCode(grown, { linesApart: true }))).status).toBe("unchanged");
  });

  it("takes the lines the agent added under a message written over HTTP", async () => {
    const { repo, session, asked } = await askedOnService(parseClaudeCode(claudeCodeText));
    const lines = pulled(await collect(exportClaudeCode(session)));
    const turn = claudeCodeTurn(lines, "a0000000-0000-4000-8000-000000000012", "asked in Claude Code");
    const synced = await repo.syncSession(parseClaudeCode(text([...lines, turn]), { linesApart: true }));
    expect(synced).toMatchObject({ status: "appended", appended: 1 });
    expect(await session.getEntry(turn.uuid as string)).toMatchObject({ parentId: asked });
  });

  it("still refuses a file that changed a line the session holds, writing nothing", async () => {
    const repo = new MemoryRepo();
    const session = await repo.importSession(parseClaudeCode(claudeCodeText));
    await session.appendCustomMessageEntry({
      customType: "note",
      content: "check the flaky test",
      display: true,
    });
    const before = await session.getEntries({ limit: 1000 });
    const lines = pulled(await collect(exportClaudeCode(session)));
    const turn = claudeCodeTurn(lines, "a0000000-0000-4000-8000-000000000013", "asked in Claude Code");
    // The note's line, edited in the file.
    const edited = lines.map((line) =>
      line.isMeta === true ? { ...line, message: { role: "user", content: "something else" } } : line,
    );
    // A line imported from Claude Code, edited in the file.
    const branch = lines.map((line, index) => (index === 0 ? { ...line, gitBranch: "other" } : line));
    for (const changed of [edited, branch]) {
      await expect(repo.syncSession(parseClaudeCode(text([...changed, turn])))).rejects.toMatchObject({
        code: "already_exists",
      });
    }
    expect(await session.getEntries({ limit: 1000 })).toEqual(before);
  });
});

describe("a Codex rollout that went on from the session's export, synced back", () => {
  it("holds nothing new as exported, and takes the turns the agent added, turn after turn", async () => {
    const { repo, session, asked } = await askedOnService(parseCodex(codexText));
    const lines = pulled(await collect(exportCodex(session)));
    expect((await repo.syncSession(parseCodex(text(lines)))).status).toBe("unchanged");

    const time = "2026-06-06T10:00:00.000Z";
    const grown = [...lines, ...codexTurn(time, "asked in Codex")];
    const synced = await repo.syncSession(parseCodex(text(grown)));
    expect(synced.status).toBe("appended");
    const branch = await session.getBranch();
    const mine = branch.findIndex((entry) => entry.id === asked);
    expect(branch[mine + 1]?.parentId).toBe(asked);
    expect(await lastSaid(session)).toContain("asked in Codex");
    expect((await repo.syncSession(parseCodex(text(grown)))).status).toBe("unchanged");

    // The service goes on again, the rollout is pulled again, and Codex goes on in it.
    await session.appendMessage({ role: "user", content: "asked on the service again", timestamp: 2 });
    const again = pulled(await collect(exportCodex(session)));
    const regrown = [...again, ...codexTurn(time, "asked in Codex again")];
    expect((await repo.syncSession(parseCodex(text(regrown)))).status).toBe("appended");
    const said = (await session.buildContext()).messages.map((m) => JSON.stringify(m));
    expect(said.slice(-4).map((m) => /asked [A-Za-z ]+/.exec(m)?.[0])).toEqual([
      "asked on the service",
      "asked in Codex",
      "asked on the service again",
      "asked in Codex again",
    ]);
  });

  it("holds nothing new as exported after a note written on the service, and takes only the agent's turn", async () => {
    const repo = new MemoryRepo();
    const session = await repo.importSession(parseCodex(codexText));
    const note = await session.appendCustomMessageEntry({
      customType: "note",
      content: "check the flaky test",
      display: true,
    });
    const lines = pulled(await collect(exportCodex(session)));
    expect((await repo.syncSession(parseCodex(text(lines)))).status).toBe("unchanged");
    const grown = [...lines, ...codexTurn("2026-06-06T10:00:00.000Z", "asked in Codex")];
    expect((await repo.syncSession(parseCodex(text(grown)))).status).toBe("appended");
    const branch = await session.getBranch();
    expect(branch[branch.findIndex((entry) => entry.id === note) + 1]?.parentId).toBe(note);
    // The note is in the context once, as the note it is.
    const said = (await session.buildContext()).messages.filter((m) => JSON.stringify(m).includes("flaky"));
    expect(said.map((m) => m.role)).toEqual(["custom"]);
    expect(await lastSaid(session)).toContain("asked in Codex");
  });

  it("still refuses a rollout that changed a line the session holds, writing nothing", async () => {
    const { repo, session } = await askedOnService(parseCodex(codexText));
    const before = await session.getEntries({ limit: 1000 });
    const lines = pulled(await collect(exportCodex(session)));
    const turn = codexTurn("2026-06-06T10:00:00.000Z", "asked in Codex");
    const said = (line: Line, words: string) =>
      (line.payload as Line | undefined)?.type === "user_message"
        ? { ...line, payload: { ...(line.payload as Line), message: words } }
        : line;
    // The service's message, edited in the file; a line imported from Codex, edited in the file.
    const edited = lines.map((line, index) =>
      index === lines.length - 1 ? said(line, "something else") : line,
    );
    const imported = lines.map((line) =>
      line.type === "session_meta"
        ? { ...line, payload: { ...(line.payload as Line), originator: "other" } }
        : line,
    );
    for (const changed of [edited, imported]) {
      await expect(repo.syncSession(parseCodex(text([...changed, ...turn])))).rejects.toMatchObject({
        code: "already_exists",
      });
    }
    expect(await session.getEntries({ limit: 1000 })).toEqual(before);
  });
});

/** A session imported from an agent's file, and two user messages written on the service after it. */
async function twiceAskedOnService(
  file: ImportedSession,
  ids: { id?: string }[] = [{}, {}],
): Promise<{ repo: MemoryRepo; session: Session; first: string; second: string }> {
  const repo = new MemoryRepo();
  const session = await repo.importSession(file);
  const first = await session.appendMessage(
    { role: "user", content: "asked on the service 1", timestamp: 1 },
    ids[0],
  );
  const second = await session.appendMessage(
    { role: "user", content: "asked on the service 2", timestamp: 2 },
    ids[1],
  );
  return { repo, session, first, second };
}

/** How many of the session's entries hold `words`. */
async function holding(session: Session, words: string): Promise<number> {
  return (await session.getEntries({ limit: 1000 })).filter((entry) => JSON.stringify(entry).includes(words))
    .length;
}

/** The entries a sync wrote: those not among `before`. */
async function writtenSince(session: Session, before: readonly { id: string }[]) {
  const ids = new Set(before.map((entry) => entry.id));
  return (await session.getEntries({ limit: 1000 })).filter(
    (entry) => !ids.has(entry.id) && entry.type !== "leaf",
  );
}

describe("a Codex rollout recording the export it was pulled as, renamed and labelled along the way", () => {
  /** Codex's rename of the thread, as its event line. */
  const renamedTo = (lines: Line[], name: string, timestamp: string): Line => ({
    timestamp,
    type: "event_msg",
    payload: {
      type: "thread_name_updated",
      thread_id: ((lines.find((line) => line.type === "session_meta") as Line).payload as Line).id,
      thread_name: name,
    },
  });

  it("names the session as Codex renames the thread, and goes on syncing the rollout", async () => {
    const { repo, session } = await askedOnService(parseCodex(codexText));
    const lines = pulled(await collect(exportCodex(session)));
    expect(JSON.stringify(lines)).toContain('"cf_sessions"');
    const renamed = [
      ...lines,
      ...codexTurn("2026-06-06T10:00:00.000Z", "asked in Codex"),
      renamedTo(lines, "renamed in Codex", "2026-06-06T10:00:01.000Z"),
    ];
    expect((await repo.syncSession(parseCodex(text(renamed)))).status).toBe("appended");
    expect(await session.getName()).toBe("renamed in Codex");
    const grown = [...renamed, ...codexTurn("2026-06-06T10:00:02.000Z", "asked again in Codex")];
    expect((await repo.syncSession(parseCodex(text(grown)))).status).toBe("appended");
    expect(await lastSaid(session)).toContain("asked again in Codex");
    for (const linesApart of [false, true])
      expect((await repo.syncSession(parseCodex(text(grown), { linesApart }))).status).toBe("unchanged");
  });

  it("goes on syncing after a label is put on the head on the service", async () => {
    const { repo, session } = await askedOnService(parseCodex(codexText));
    const lines = pulled(await collect(exportCodex(session)));
    const once = [...lines, ...codexTurn("2026-06-06T10:00:00.000Z", "asked in Codex")];
    expect((await repo.syncSession(parseCodex(text(once)))).status).toBe("appended");
    const turn = (await session.getLeafId()) as string;
    await session.appendLabel(turn, "checkpoint");
    const twice = [...once, ...codexTurn("2026-06-06T10:00:01.000Z", "asked again in Codex")];
    const before = await session.getEntries({ limit: 1000 });
    expect((await repo.syncSession(parseCodex(text(twice)))).status).toBe("appended");
    const written = await writtenSince(session, before);
    expect(written[0]?.parentId).toBe(turn);
    expect(await session.getLabel(turn)).toBe("checkpoint");
  });

  it("exports a rollout renamed by a sync as the rollout it is, recording no export", async () => {
    const repo = new MemoryRepo();
    const session = await repo.importSession(parseCodex(codexText));
    const lines = jsonLines(codexText);
    const renamed = text([...lines, renamedTo(lines, "renamed in Codex", "2026-06-06T10:00:00.000Z")]);
    expect((await repo.syncSession(parseCodex(renamed))).status).toBe("appended");
    expect(await session.getName()).toBe("renamed in Codex");
    const exported = await collect(exportCodex(session));
    expect(exported).not.toContain("cf_sessions");
    expect(parseCodex(exported).entries.map((entry) => entry.id)).toEqual(
      parseCodex(renamed).entries.map((entry) => entry.id),
    );
  });
});

describe("an agent's file pulled after the session's head was moved back, gone on in, synced back", () => {
  it("takes Claude Code's lines under the head, as pulled and gone on, and writes nothing else", async () => {
    const { repo, session, first } = await twiceAskedOnService(parseClaudeCode(claudeCodeText));
    const branch = await session.getBranch();
    // A message written on the service, and a line of the transcript's (told by the head note).
    const earlier = branch.findLast(
      (entry, at) =>
        at < branch.length - 4 &&
        entry.type === "message" &&
        entry.message.role === "user" &&
        typeof entry.message.content === "string",
    );
    for (const [n, head] of [first, earlier?.id as string].entries()) {
      await session.setLeafId(head);
      const lines = pulled(await collect(exportClaudeCode(session)));
      expect((await repo.syncSession(parseClaudeCode(text(lines)))).status).toBe("unchanged");
      const headLine = lines.find((line) => line.uuid === head) as Line;
      const turn = {
        ...headLine,
        parentUuid: head,
        uuid: `a0000000-0000-4000-8000-00000000004${n}`,
        type: "user",
        message: { role: "user", content: "asked in Claude Code" },
      };
      const grown = text([...lines, turn]);
      const before = await session.getEntries({ limit: 1000 });
      expect(await repo.syncSession(parseClaudeCode(grown))).toMatchObject({
        status: "appended",
        appended: 1,
      });
      expect(await writtenSince(session, before)).toMatchObject([{ id: turn.uuid, parentId: head }]);
      expect(await session.getLeafId()).toBe(turn.uuid);
      for (const linesApart of [false, true])
        expect((await repo.syncSession(parseClaudeCode(grown, { linesApart }))).status).toBe("unchanged");
    }
    expect(await holding(session, "asked on the service 2")).toBe(1);
  });

  it("takes Codex's turn under the head, as pulled and gone on, and writes nothing else", async () => {
    const { repo, session, first } = await twiceAskedOnService(parseCodex(codexText));
    const branch = await session.getBranch();
    // A message written on the service, and a line of the rollout's.
    const earlier = branch[branch.length - 6] as { id: string };
    const files: string[] = [];
    for (const [n, head] of [first, earlier.id].entries()) {
      await session.setLeafId(head);
      const lines = pulled(await collect(exportCodex(session)));
      expect((await repo.syncSession(parseCodex(text(lines)))).status).toBe("unchanged");
      const grown = text([...lines, ...codexTurn(`2026-06-06T10:00:0${n}.000Z`, `asked in Codex ${n}`)]);
      files.push(grown);
      const before = await session.getEntries({ limit: 1000 });
      const synced = await repo.syncSession(parseCodex(grown));
      expect(synced.status).toBe("appended");
      const written = await writtenSince(session, before);
      expect(written).toHaveLength(synced.appended);
      expect(written[0]?.parentId).toBe(head);
      expect(await session.getLeafId()).toBe(written.at(-1)?.id);
      expect(await lastSaid(session)).toContain(`asked in Codex ${n}`);
    }
    // Each file synced again, the first since pulled before the head moved again: nothing new.
    for (const grown of files)
      for (const linesApart of [false, true])
        expect((await repo.syncSession(parseCodex(grown, { linesApart }))).status).toBe("unchanged");
    expect(await holding(session, "asked on the service 2")).toBe(1);
  });
});

describe("an agent's file pulled before the session's head was moved, synced back", () => {
  it("goes on in a Codex rollout under the head it records it was pulled at; one recording none is refused", async () => {
    const { repo, session, first, second } = await twiceAskedOnService(parseCodex(codexText));
    const lines = pulled(await collect(exportCodex(session)));
    const turn = codexTurn("2026-06-06T10:00:00.000Z", "asked in Codex");
    await session.setLeafId(first);
    const before = await session.getEntries({ limit: 1000 });

    // A rollout made before exports recorded themselves in it: the lines for the second message
    // would read as Codex's own.
    const unrecorded = lines.map((line) => {
      if (line.type !== "session_meta") return line;
      const { cf_sessions: _made, ...payload } = line.payload as Line;
      return { ...line, payload };
    });
    await expect(repo.syncSession(parseCodex(text([...unrecorded, ...turn])))).rejects.toMatchObject({
      code: "already_exists",
    });
    expect(await session.getEntries({ limit: 1000 })).toEqual(before);

    // As pulled, the rollout holds nothing new, and the head stays where it was moved.
    for (const linesApart of [false, true])
      expect((await repo.syncSession(parseCodex(text(lines), { linesApart }))).status).toBe("unchanged");
    expect(await session.getLeafId()).toBe(first);
    expect(await session.getEntries({ limit: 1000 })).toEqual(before);

    const grown = text([...lines, ...turn]);
    const synced = await repo.syncSession(parseCodex(grown));
    expect(synced.status).toBe("appended");
    const written = await writtenSince(session, before);
    expect(written).toHaveLength(synced.appended);
    expect(written[0]?.parentId).toBe(second);
    expect(await session.getLeafId()).toBe(written.at(-1)?.id);
    expect(await holding(session, "asked on the service 2")).toBe(1);
    expect(await lastSaid(session)).toContain("asked in Codex");
    for (const linesApart of [false, true])
      expect((await repo.syncSession(parseCodex(grown, { linesApart }))).status).toBe("unchanged");
  });

  it("refuses a file pulled before the session went on elsewhere, as for an agent whose file records no export", async () => {
    for (const [parse, exportLines, goOn] of [
      [
        parseCodex,
        exportCodex,
        (lines: Line[]) => [...lines, ...codexTurn("2026-06-06T10:00:00.000Z", "asked in Codex")],
      ],
      [
        parseClaudeCode,
        exportClaudeCode,
        (lines: Line[]) => [...lines, claudeCodeTurn(lines, crypto.randomUUID(), "asked in Claude Code")],
      ],
    ] as const) {
      const { repo, session } = await twiceAskedOnService(
        parse(parse === parseCodex ? codexText : claudeCodeText),
      );
      const grown = text(goOn(pulled(await collect(exportLines(session)))));
      // Written over HTTP after the pull: the agent's turn would leave it off the branch.
      await session.appendMessage({ role: "user", content: "asked over HTTP meanwhile", timestamp: 3 });
      const before = await session.getEntries({ limit: 1000 });
      await expect(repo.syncSession(parse(grown))).rejects.toMatchObject({ code: "already_exists" });
      expect(await session.getEntries({ limit: 1000 })).toEqual(before);
    }
  });

  it("refuses a Claude Code transcript holding a line an export wrote for an entry the head left, writing nothing", async () => {
    // Entries of ids that are no UUIDs: their lines carry UUIDs made from them.
    const ids = [{ id: "m1" }, { id: "m2" }];
    const movedBack = await twiceAskedOnService(parseClaudeCode(claudeCodeText), ids);
    // A transcript of two branches, the head moved to the other one's leaf.
    const base = jsonLines(claudeCodeText);
    const last = base.findLast((line) => line.type === "user" || line.type === "assistant") as Line;
    const leaf = parseClaudeCode(claudeCodeText).leafId as string;
    const beside = {
      ...last,
      uuid: "a0000000-0000-4000-8000-000000000061",
      type: "user",
      message: { role: "user", content: "asked on another branch" },
    };
    const repo = new MemoryRepo();
    const branched = await repo.importSession(parseClaudeCode(text([...base, beside])));
    await branched.setLeafId(leaf);
    await branched.appendMessage(
      { role: "user", content: "asked on the service 3", timestamp: 3 },
      { id: "m3" },
    );
    const cases = [
      { ...movedBack, head: movedBack.first, words: "asked on the service 2" },
      { repo, session: branched, head: beside.uuid, words: "asked on the service 3" },
    ];
    for (const { repo, session, head, words } of cases) {
      const lines = pulled(await collect(exportClaudeCode(session)));
      await session.setLeafId(head);
      const before = await session.getEntries({ limit: 1000 });
      const turn = claudeCodeTurn(lines, "a0000000-0000-4000-8000-000000000062", "asked in Claude Code");
      await expect(repo.syncSession(parseClaudeCode(text([...lines, turn])))).rejects.toMatchObject({
        code: "already_exists",
      });
      expect(await session.getEntries({ limit: 1000 })).toEqual(before);
      expect(await holding(session, words)).toBe(1);
    }
  });
});

/** The words of the user messages a Codex rollout says, in its order. */
function codexAsked(lines: Line[]): string[] {
  return lines
    .filter((line) => (line.payload as Line | undefined)?.type === "user_message")
    .map((line) => String((line.payload as Line).message))
    .filter((words) => words.startsWith("asked"));
}

describe("the export of a session an agent's file was synced back into", () => {
  it("writes a Codex rollout's turns in the conversation's order, the service's and the agent's", async () => {
    const { repo, session } = await askedOnService(parseCodex(codexText));
    const lines = pulled(await collect(exportCodex(session)));
    await repo.syncSession(
      parseCodex(text([...lines, ...codexTurn("2026-06-06T10:00:00.000Z", "asked in Codex")])),
    );
    await session.appendMessage({ role: "user", content: "asked on the service again", timestamp: 2 });

    const again = jsonLines(await collect(exportCodex(session)));
    expect(codexAsked(again)).toEqual([
      "asked on the service",
      "asked in Codex",
      "asked on the service again",
    ]);
    // Read back, the rollout is the session's conversation, and holds nothing new.
    const said = (
      await repo.importSession(parseCodex(text(again)), { id: "codex-read-back" })
    ).buildContext();
    expect((await said).messages.length).toBe((await session.buildContext()).messages.length);
    expect((await repo.syncSession(parseCodex(text(pulled(text(again)))))).status).toBe("unchanged");
  });

  it("writes each Claude Code line after the line it names as its parent", async () => {
    const { repo, session } = await askedOnService(parseClaudeCode(claudeCodeText));
    const lines = pulled(await collect(exportClaudeCode(session)));
    const turn = claudeCodeTurn(lines, "a0000000-0000-4000-8000-000000000014", "asked in Claude Code");
    await repo.syncSession(parseClaudeCode(text([...lines, turn])));
    await session.appendMessage({ role: "user", content: "asked on the service again", timestamp: 2 });

    const again = jsonLines(await collect(exportClaudeCode(session)));
    const seen = new Set<unknown>();
    for (const line of again) {
      if (typeof line.parentUuid === "string")
        expect(seen.has(line.parentUuid), String(line.uuid)).toBe(true);
      seen.add(line.uuid);
    }
    const asked = again
      .map((line) => JSON.stringify((line.message as Line | undefined)?.content ?? ""))
      .map((words) => /asked [A-Za-z ]+/.exec(words)?.[0])
      .filter((words) => words !== undefined);
    expect(asked).toEqual(["asked on the service", "asked in Claude Code", "asked on the service again"]);
    expect((await repo.syncSession(parseClaudeCode(text(pulled(text(again)))))).status).toBe("unchanged");
  });
});

/** Whether every line naming a parent comes after the line it names. */
function parentsFirst(lines: Line[]): string[] {
  const seen = new Set<unknown>();
  const orphans: string[] = [];
  for (const line of lines) {
    if (typeof line.parentUuid === "string" && !seen.has(line.parentUuid)) orphans.push(String(line.uuid));
    seen.add(line.uuid);
  }
  return orphans;
}

describe("the export of a session whose head left the branch an agent's turn was synced on", () => {
  it("writes the service's lines the agent's turn hangs from, the same lines as on the branch", async () => {
    const repo = new MemoryRepo();
    const session = await repo.importSession(parseClaudeCode(claudeCodeText));
    const before = await session.getLeafId();
    const asked = await session.appendMessage({
      role: "user",
      content: "asked on the service",
      timestamp: 1,
    });
    const lines = pulled(await collect(exportClaudeCode(session)));
    const turn = claudeCodeTurn(lines, "a0000000-0000-4000-8000-000000000031", "asked in Claude Code");
    await repo.syncSession(parseClaudeCode(text([...lines, turn])));
    await session.setLeafId(before);

    const again = await collect(exportClaudeCode(session));
    expect(parentsFirst(jsonLines(again))).toEqual([]);
    // Claude Code resumes at the head's line, not at the agent's turn on the branch it left.
    const sessionId = (jsonLines(again)[0] as Line).sessionId as string;
    const headLine = jsonLines(claudeCodeText).findLast(
      (line) => line.type === "user" || line.type === "assistant",
    );
    expect(await resumedAt(sessionId, again)).toBe(headLine?.uuid);
    expect(parseClaudeCode(again).warnings).toEqual([]);
    // The service's line is the one the branch had, under the same uuid.
    const askedLine = (all: Line[]) =>
      all.find((line) => JSON.stringify(line.message ?? "").includes("asked on the"));
    expect(askedLine(pulled(again))).toEqual(askedLine(lines));
    expect(askedLine(lines)?.uuid).toBe(asked);
    expect((await repo.syncSession(parseClaudeCode(text(pulled(again))))).status).toBe("unchanged");
    expect(await session.getLeafId()).toBe(before);
  });
});

describe("the export of a session whose head was moved back after a sync", () => {
  it("resumes a Claude Code transcript at the head, a line of the branch it left stored after it", async () => {
    const { repo, session, asked } = await askedOnService(parseClaudeCode(claudeCodeText));
    const lines = pulled(await collect(exportClaudeCode(session)));
    // Claude Code went on beside the service's message: its line under the one before it.
    const mine = lines.findLast((line) => typeof line.uuid === "string" && line.uuid !== asked) as Line;
    const beside = {
      ...mine,
      parentUuid: mine.uuid,
      uuid: "a0000000-0000-4000-8000-000000000031",
      type: "user",
      message: { role: "user", content: "asked in Claude Code" },
    };
    const synced = await repo.syncSession(parseClaudeCode(text([...lines, beside])));
    expect(synced.status).toBe("appended");
    await session.setLeafId(asked);

    const again = await collect(exportClaudeCode(session));
    expect(parseClaudeCode(again).leafId).toBe(asked);
    expect(jsonLines(again).some((line) => line.uuid === beside.uuid)).toBe(true);
    expect((await repo.syncSession(parseClaudeCode(again))).status).toBe("unchanged");
    expect(await session.getLeafId()).toBe(asked);
  });
});

describe("syncing an agent's file that went on from the session's export", () => {
  it("reads each of the session's entries at most once, however many lines name it", async () => {
    const repo = new MemoryRepo();
    const note = { customType: "note", content: "check the flaky test", display: true };
    const claudeCode = await repo.importSession(parseClaudeCode(claudeCodeText));
    const claudeNote = await claudeCode.appendCustomMessageEntry(note);
    const lines = pulled(await collect(exportClaudeCode(claudeCode)));
    for (const n of [1, 2, 3]) {
      lines.push(
        claudeCodeTurn(lines, `a0000000-0000-4000-8000-00000000002${n}`, `asked in Claude Code ${n}`),
      );
    }
    const codex = await repo.importSession(parseCodex(codexText));
    const codexNote = await codex.appendCustomMessageEntry(note);
    const rollout = pulled(await collect(exportCodex(codex)));
    for (const n of [1, 2]) rollout.push(...codexTurn(`2026-06-06T10:00:0${n}.000Z`, `asked in Codex ${n}`));
    const files = [
      { session: claudeCode, note: claudeNote, asked: 3, file: parseClaudeCode(text(lines)) },
      {
        session: claudeCode,
        note: claudeNote,
        asked: 3,
        file: parseClaudeCode(text(lines), { linesApart: true }),
      },
      { session: codex, note: codexNote, asked: 2, file: parseCodex(text(rollout)) },
    ];
    for (const { session, note, asked, file } of files) {
      const { storage, reads } = countingReads(session.storage);
      const plan = await planSync(storage, file);
      // The agent's turns, under the note, as a sync writes them.
      const turns = plan.entries.filter((entry) => entry.type === "message");
      expect(turns).toHaveLength(asked);
      expect(plan.entries[0]?.parentId).toBe(note);
      expect(plan.leafId).toBe(file.leafId);
      expect(reads.size).toBeGreaterThanOrEqual(turns.length);
      expect([...reads].filter(([, times]) => times > 1)).toEqual([]);
    }
  });
});

describe("a Claude Code transcript gone on from a line a compaction kept, synced back", () => {
  /** A session written over the API, counted to three and compacted keeping from "Two?", and its export. */
  async function compacted(): Promise<{ repo: MemoryRepo; session: Session; ids: string[]; lines: Line[] }> {
    const repo = new MemoryRepo();
    const session = await repo.create({ id: `compacted-${crypto.randomUUID()}` });
    const ids: string[] = [];
    for (const [index, word] of ["One", "Two", "Three"].entries()) {
      ids.push(await session.appendMessage({ role: "user", content: `${word}?`, timestamp: 2 * index + 1 }));
      ids.push(
        await session.appendMessage({
          role: "assistant",
          content: [{ type: "text", text: `${word}.` }],
          api: "anthropic-messages",
          provider: "anthropic",
          model: "claude-sonnet-4-5",
          usage: usage(1, 1, 0, 0),
          stopReason: "stop",
          timestamp: 2 * index + 2,
        }),
      );
    }
    await session.appendCompaction({
      summary: "They counted to one.",
      tokensBefore: 10,
      firstKeptEntryId: ids[2] as string,
    });
    return { repo, session, ids, lines: pulled(await collect(exportClaudeCode(session))) };
  }

  /** The line saying `said`, after the compaction's summary line or before its boundary. */
  function lineSaying(lines: Line[], said: string, afterSummary: boolean): Line {
    const summary = lines.findIndex((line) => line.isCompactSummary === true);
    const content = (line: Line) => JSON.stringify((line.message as Line | undefined)?.content ?? "");
    const found = (afterSummary ? lines.slice(summary) : lines.slice(0, summary)).find((line) =>
      content(line).includes(said),
    );
    expect(found, said).toBeDefined();
    return found as Line;
  }

  function userLine(parent: Line, uuid: string, content: string): Line {
    return { ...parent, type: "user", parentUuid: parent.uuid, uuid, message: { role: "user", content } };
  }

  async function contextTexts(session: Session): Promise<string[]> {
    return (await session.buildContext()).messages.map((message) => {
      if (message.role === "compactionSummary") return `summary: ${message.summary}`;
      const content = (message as { content: string | Array<{ text?: string }> }).content;
      return typeof content === "string" ? content : content.map((block) => block.text).join("");
    });
  }

  it("goes on under a compaction repeating the summary that keeps what lies up to the kept line", async () => {
    const { repo, session, ids, lines } = await compacted();
    const compaction = await session.getLeafId();
    const turn = userLine(lineSaying(lines, "Two.", true), "a0000000-0000-4000-8000-000000000031", "Again?");
    for (const linesApart of [false, true]) {
      const plan = await planSync(session.storage, parseClaudeCode(text([...lines, turn]), { linesApart }));
      expect(plan.entries.map((entry) => entry.type)).toEqual(["compaction", "message"]);
      const [repeated, again] = plan.entries;
      expect(repeated).toMatchObject({
        parentId: ids[3],
        summary: "They counted to one.",
        tokensBefore: 10,
        firstKeptEntryId: ids[2],
      });
      expect(repeated?.id).not.toBe(compaction);
      expect(again).toMatchObject({ id: turn.uuid, parentId: repeated?.id });
      expect(plan.leafId).toBe(turn.uuid);
    }
    const synced = await repo.syncSession(parseClaudeCode(text([...lines, turn])), { id: session.id });
    expect(synced).toMatchObject({ status: "appended", appended: 2 });
    expect(await contextTexts(session)).toEqual(["summary: They counted to one.", "Two?", "Two.", "Again?"]);
  });

  it("goes on under the compaction from its last kept line, and from a line before it on a branch of its own", async () => {
    const { session, ids, lines } = await compacted();
    const compaction = await session.getLeafId();
    const head = userLine(lineSaying(lines, "Three.", true), "a0000000-0000-4000-8000-000000000032", "Four?");
    const headPlan = await planSync(session.storage, parseClaudeCode(text([...lines, head])));
    expect(headPlan.entries).toMatchObject([{ id: head.uuid, parentId: compaction }]);
    const before = userLine(
      lineSaying(lines, "Two.", false),
      "a0000000-0000-4000-8000-000000000033",
      "Again?",
    );
    const beforePlan = await planSync(session.storage, parseClaudeCode(text([...lines, before])));
    expect(beforePlan.entries).toMatchObject([{ id: before.uuid, parentId: ids[3] }]);
  });
});

describe("an agent's file pulled after a context edit on the service, gone on in, synced back", () => {
  /** A session imported from the tool's file with tool calls, its last tool result cleared by a context edit. */
  async function cleared(
    tool: "claude-code" | "codex",
  ): Promise<{ repo: MemoryRepo; session: Session; edit: string }> {
    const prefix = tool === "codex" ? "0.58.0" : "2.1.38";
    const [, file] = fixtureFiles(tool).find(([n]) => n.startsWith(prefix)) as [string, string];
    const repo = new MemoryRepo();
    const session = await repo.importSession(tool === "codex" ? parseCodex(file) : parseClaudeCode(file));
    const branch = await session.getBranch();
    const result = branch.findLast((e) => e.type === "message" && e.message.role === "toolResult");
    const edit = await session.appendContextEdit(result?.id as string, { content: "[output cleared]" });
    return { repo, session, edit };
  }

  it("takes Claude Code's line under the edit, the edit still applied", async () => {
    const { repo, session, edit } = await cleared("claude-code");
    const lines = pulled(await collect(exportClaudeCode(session)));
    expect((await repo.syncSession(parseClaudeCode(text(lines)))).status).toBe("unchanged");
    const turn = claudeCodeTurn(lines, "a0000000-0000-4000-8000-000000000031", "asked in Claude Code");
    const grown = text([...lines, turn]);
    expect(await repo.syncSession(parseClaudeCode(grown))).toMatchObject({ status: "appended", appended: 1 });
    expect(await session.getEntry(turn.uuid as string)).toMatchObject({ parentId: edit });
    expect(JSON.stringify((await session.buildContext()).messages)).toContain("[output cleared]");
    expect((await repo.syncSession(parseClaudeCode(grown))).status).toBe("unchanged");
  });

  it("takes Codex's turn under the edit, the edit still applied", async () => {
    const { repo, session, edit } = await cleared("codex");
    const lines = pulled(await collect(exportCodex(session)));
    expect((await repo.syncSession(parseCodex(text(lines)))).status).toBe("unchanged");
    const grown = text([...lines, ...codexTurn("2026-06-06T10:00:00.000Z", "asked in Codex")]);
    expect((await repo.syncSession(parseCodex(grown))).status).toBe("appended");
    const branch = await session.getBranch();
    expect(branch[branch.findIndex((entry) => entry.id === edit) + 1]?.parentId).toBe(edit);
    expect(await lastSaid(session)).toContain("asked in Codex");
    expect(JSON.stringify((await session.buildContext()).messages)).toContain("[output cleared]");
    expect((await repo.syncSession(parseCodex(grown))).status).toBe("unchanged");
  });
});
