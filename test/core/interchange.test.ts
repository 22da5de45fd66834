import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as pi16 from "@earendil-works/pi-coding-agent";
import {
  migrateSessionEntries,
  parseSessionEntries,
  buildSessionContext as piBuildSessionContext,
  SessionManager,
} from "@mariozechner/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { Timestamp } from "../../src/core/entries";
import { SessionError } from "../../src/core/errors";
import { MemoryRepo } from "../../src/core/memory";
import type { AgentMessage } from "../../src/core/messages";
import { contentText } from "../../src/core/messages";
import { exportNative, parseNative } from "../../src/core/native-format";
import { exportPi, parsePi } from "../../src/core/pi-format";
import type { Session } from "../../src/core/session";
import { assistant, toolResult, user } from "../conformance/fixtures";
import { expectCode } from "../conformance/storage";

async function text(lines: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const line of lines) out += line;
  return out;
}

/** A pi session file as pi writes it: the header, then every entry in append order. */
function piFile(manager: SessionManager): string {
  return `${[manager.getHeader(), ...manager.getEntries()].map((e) => JSON.stringify(e)).join("\n")}\n`;
}

/** pi's manager, taking our message type (the same shapes, typed more loosely). */
type Pi = Omit<SessionManager, "appendMessage"> & { appendMessage(message: AgentMessage): string };
type Shape = (pi: Pi) => void;

const shapes: Record<string, Shape> = {
  "a linear conversation with model and thinking changes": (pi) => {
    pi.appendModelChange("anthropic", "claude-sonnet");
    pi.appendThinkingLevelChange("high");
    pi.appendMessage(user("read the file"));
    pi.appendMessage(
      assistant("calling", { toolCalls: [{ id: "c1", name: "read", arguments: { path: "a.ts" } }] }),
    );
    pi.appendMessage(toolResult("c1", "read", "contents"));
    pi.appendMessage(assistant("done", { provider: "openai", model: "gpt-5" }));
    pi.appendThinkingLevelChange("low");
  },
  "branches, labels and a branch summary": (pi) => {
    const q = pi.appendMessage(user("question"));
    const a1 = pi.appendMessage(assistant("first"));
    pi.appendLabelChange(a1, "first try");
    pi.appendMessage(user("follow-up"));
    pi.branch(q);
    pi.appendMessage(assistant("second"));
    pi.appendLabelChange(q, "root question");
    pi.branchWithSummary(a1, "we tried a follow-up and came back");
    pi.appendMessage(user("after the summary"));
    pi.appendLabelChange(a1, undefined);
  },
  "compactions, chained": (pi) => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(pi.appendMessage(i % 2 ? assistant(`a${i}`) : user(`u${i}`)));
    pi.appendCompaction("first summary", ids[2] as string, 1234, { readFiles: ["x"] });
    const more: string[] = [];
    for (let i = 6; i < 10; i++) more.push(pi.appendMessage(i % 2 ? assistant(`a${i}`) : user(`u${i}`)));
    pi.appendCompaction("second summary", more[1] as string, 2345);
    pi.appendMessage(user("after"));
  },
  "custom entries, custom messages and a session name": (pi) => {
    pi.appendSessionInfo("my session");
    pi.appendCustomEntry("state", { step: 1 });
    pi.appendCustomMessageEntry("note", "remember this", true);
    pi.appendCustomMessageEntry("note", [{ type: "text", text: "hidden" }], false, { extra: 1 });
    pi.appendMessage(user("hello"));
    pi.appendMessage({
      role: "bashExecution",
      command: "ls",
      output: "a",
      exitCode: 0,
      cancelled: false,
      truncated: false,
      timestamp: 5,
    } as never);
    pi.appendSessionInfo("");
  },
  "a compaction whose kept entry is on another branch": (pi) => {
    const a = pi.appendMessage(user("a"));
    const b = pi.appendMessage(assistant("b"));
    pi.branch(a);
    pi.appendMessage(assistant("c"));
    pi.appendCompaction("summary", b, 99);
    pi.appendMessage(user("d"));
  },
};

function expectSameAsPi(
  ours: Awaited<ReturnType<Session["buildContext"]>>,
  pi: ReturnType<typeof piBuildSessionContext>,
) {
  expect(ours.messages).toEqual(pi.messages);
  expect(ours.thinkingLevel).toBe(pi.thinkingLevel);
  expect(ours.model).toEqual(pi.model);
}

describe("pi sessions", () => {
  it("reads a version 1 file (no ids) with the same ids every time, so a file that grows syncs as appends", async () => {
    const text = readFileSync(join(import.meta.dirname, "../fixtures/pi/before-compaction.jsonl"), "utf8");
    const first = parsePi(text);
    expect(first.entries.map((e) => e.id)).toEqual(parsePi(text).entries.map((e) => e.id));
    expect(new Set(first.entries.map((e) => e.id)).size).toBe(first.entries.length);
    const repo = new MemoryRepo();
    expect((await repo.syncSession(first)).status).toBe("created");
    const grown = `${text.trimEnd()}\n${JSON.stringify({
      type: "message",
      timestamp: "2025-12-09T02:00:00.000Z",
      message: { role: "user", content: "one more", timestamp: 1765245600000 },
    })}\n`;
    const synced = await repo.syncSession(parsePi(grown));
    expect(synced).toMatchObject({ status: "appended", appended: 1 });
  });

  it("syncs a file exported with its head moved back, then continued by pi: the new entries appended", async () => {
    const manager = SessionManager.inMemory("/work/project") as unknown as Pi;
    const question = manager.appendMessage(user("which plan?"));
    const planA = manager.appendMessage(assistant("plan A"));
    manager.branch(question);
    manager.appendMessage(assistant("plan B"));
    const repo = new MemoryRepo();
    const { session } = await repo.syncSession(parsePi(piFile(manager as unknown as SessionManager)));
    await session.setLeafId(planA);

    // The export puts the head's entry last, where pi resumes; pi then appends after it.
    const exported = await text(exportPi(session));
    const lines = exported.trimEnd().split("\n");
    expect(JSON.parse(lines.at(-1) as string).id).toBe(planA);
    const next = (id: string, parentId: string, said: string) =>
      JSON.stringify({
        type: "message",
        id,
        parentId,
        timestamp: new Date().toISOString(),
        message: user(said),
      });
    const continued = `${exported}${next("c0000001", planA, "go with A")}\n${next("c0000002", "c0000001", "and test it")}\n`;

    const synced = await repo.syncSession(parsePi(continued));
    expect(synced).toMatchObject({ status: "appended", appended: 2 });
    expect(await session.getLeafId()).toBe("c0000002");
    expect((await session.getBranch()).map((entry) => entry.id)).toEqual([
      question,
      planA,
      "c0000001",
      "c0000002",
    ]);
    expect((await repo.syncSession(parsePi(continued))).status).toBe("unchanged");

    // Entries in another order than the stored one with its one entry moved last are a conflict.
    const [header, ...entries] = exported.trimEnd().split("\n");
    const shuffled = `${[header, ...entries.reverse()].join("\n")}\n${next("c0000003", planA, "other")}\n`;
    const stored = async () => {
      const all = [];
      for await (const entry of session.allEntries()) all.push(entry);
      return all;
    };
    const held = await stored();
    await expectCode(repo.syncSession(parsePi(shuffled)), "already_exists");
    expect(await stored()).toEqual(held);
  });

  for (const [name, shape] of Object.entries(shapes)) {
    it(`builds the same context as pi for every entry: ${name}`, async () => {
      const manager = SessionManager.inMemory("/work/project");
      shape(manager as unknown as Pi);
      const file = piFile(manager);
      const session = await new MemoryRepo().importSession(parsePi(file));
      const entries = manager.getEntries();
      expect(await session.getLeafId()).toBe(entries[entries.length - 1]?.id);
      expectSameAsPi(await session.buildContext(), piBuildSessionContext(entries));
      for (const entry of entries) {
        expectSameAsPi(
          await session.buildContext({ leafId: entry.id }),
          piBuildSessionContext(entries, entry.id),
        );
        expect(await session.getLabel(entry.id)).toBe(manager.getLabel(entry.id));
      }
      expect(await session.getName()).toBe(manager.getSessionName());
    });
  }

  it("exports version 3 with the head last, which pi opens to the same context", async () => {
    const manager = SessionManager.inMemory("/work/project");
    shapes["branches, labels and a branch summary"]?.(manager as unknown as Pi);
    const session = await new MemoryRepo().importSession(parsePi(piFile(manager)));
    const entries = manager.getEntries();
    const middle = entries[1]?.id as string;
    await session.setLeafId(middle);
    const exported = await text(exportPi(session));
    const lines = exported
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: "session", version: 3, id: session.id, cwd: "/work/project" });
    expect(lines[lines.length - 1].id).toBe(middle);
    expect(lines.some((l) => l.type === "leaf")).toBe(false);

    const dir = mkdtempSync(join(tmpdir(), "pi-export-"));
    try {
      const path = join(dir, "session.jsonl");
      writeFileSync(path, exported);
      const reopened = SessionManager.open(path, dir);
      expect(reopened.getLeafId()).toBe(middle);
      expectSameAsPi(await session.buildContext(), reopened.buildSessionContext());
      // And back again: our own pi export imports to the same head and context.
      const again = await new MemoryRepo().importSession(parsePi(exported));
      expect(await again.getLeafId()).toBe(middle);
      expect((await again.buildContext()).messages).toEqual((await session.buildContext()).messages);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(["langgraph-0.1.0", "openai-agents-0.1.0", "ai-sdk-0.1.0"])(
    "exports a session cf-sessions 0.1's framework adapters wrote (%s) as its conversation, which pi 0.73 and 1.6 open to our context",
    async (name) => {
      const fixture = readFileSync(
        join(import.meta.dirname, "../fixtures/frameworks", `${name}.ndjson`),
        "utf8",
      );
      const repo = new MemoryRepo();
      const session = await repo.importSession(parseNative(fixture), { id: `pi-out-${name}` });
      const ours = await session.buildContext();
      // A checkpoint's messages read with its time, which the file gives them from the first
      // checkpoint holding them: those are compared without their times.
      const timeless = (messages: readonly object[]) =>
        name.startsWith("langgraph")
          ? messages.map(({ timestamp: _timestamp, ...message }: { timestamp?: unknown }) => message)
          : messages;
      const exported = await text(exportPi(session));
      const pis = [
        { parseSessionEntries, migrateSessionEntries, buildSessionContext: piBuildSessionContext },
        pi16,
      ];
      for (const pi of pis) {
        const entries = pi.parseSessionEntries(exported);
        pi.migrateSessionEntries(entries as never);
        expect(timeless(pi.buildSessionContext(entries.slice(1) as never).messages)).toEqual(
          timeless(ours.messages),
        );
        // At every entry of the session too (a checkpoint's context is its messages).
        for (const { id } of await session.getBranch()) {
          expect(
            timeless(pi.buildSessionContext(entries.slice(1) as never, id).messages),
            `at ${id}`,
          ).toEqual(timeless((await session.buildContext({ leafId: id })).messages));
        }
      }
      // The same file every time, and back again it imports to the same context.
      // (The line naming the session, which the export appends at the head, is new every time.)
      const entryLines = (file: string) =>
        file.split("\n").filter((l) => !l.includes('"type":"session_info"'));
      expect(entryLines(await text(exportPi(session)))).toEqual(entryLines(exported));
      const again = await new MemoryRepo().importSession(parsePi(exported));
      expect(timeless((await again.buildContext()).messages)).toEqual(timeless(ours.messages));
      // Its entries are not the stored records: gone on in by pi, it does not sync back.
      const stored = await session.getEntries();
      await expectCode(repo.syncSession(parsePi(exported)), "already_exists");
      expect(await session.getEntries()).toEqual(stored);
    },
  );

  it("exports a 0.1 LangGraph checkpoint whose messages do not go on from its parent's as a fresh start pi opens", async () => {
    const fixture = readFileSync(
      join(import.meta.dirname, "../fixtures/frameworks/langgraph-0.1.0.ndjson"),
      "utf8",
    );
    const session = await new MemoryRepo().importSession(parseNative(fixture), { id: "pi-out-fresh-start" });
    await session.appendMessage(user("from another door"));
    const human = (id: string, content: string) => ({
      lc: 1,
      type: "constructor",
      id: ["langchain_core", "messages", "HumanMessage"],
      kwargs: { id, content, additional_kwargs: {}, response_metadata: {} },
    });
    await session.appendCustomEntry("langgraph:checkpoint", {
      checkpoint: {
        v: 4,
        id: "late",
        ts: "2026-12-06T00:00:00.000Z",
        channel_versions: {},
        versions_seen: {},
      },
      values: { messages: { type: "json", json: [human("h-a", "Only this")] } },
    });
    await session.appendMessage(user("and after it"));
    const ours = (await session.buildContext()).messages;
    expect(ours.map((m) => contentText((m as { content: unknown }).content))).toEqual([
      "Only this",
      "and after it",
    ]);
    const exported = await text(exportPi(session));
    for (const pi of [{ parseSessionEntries, buildSessionContext: piBuildSessionContext }, pi16]) {
      const [summary, ...messages] = pi.buildSessionContext(
        pi.parseSessionEntries(exported).slice(1) as never,
      ).messages as AgentMessage[];
      // pi starts a context afresh only at a compaction, whose summary leads it.
      expect(summary).toMatchObject({ role: "compactionSummary" });
      expect(messages).toEqual(ours);
    }
  });

  it("migrates version 1 files as pi does (ids chain in order, firstKeptEntryIndex)", async () => {
    const v1 = [
      {
        type: "session",
        id: "0190aaaa-0000-7000-8000-000000000001",
        timestamp: "2025-01-01T00:00:00.000Z",
        cwd: "/p",
      },
      { type: "message", timestamp: "2025-01-01T00:00:01.000Z", message: user("one") },
      { type: "message", timestamp: "2025-01-01T00:00:02.000Z", message: assistant("two") },
      { type: "message", timestamp: "2025-01-01T00:00:03.000Z", message: user("three") },
      {
        type: "compaction",
        timestamp: "2025-01-01T00:00:04.000Z",
        summary: "S",
        tokensBefore: 10,
        firstKeptEntryIndex: 2,
      },
      { type: "message", timestamp: "2025-01-01T00:00:05.000Z", message: assistant("four") },
    ];
    const file = `${v1.map((e) => JSON.stringify(e)).join("\n")}\n`;
    const session = await new MemoryRepo().importSession(parsePi(file));
    const piEntries = parseSessionEntries(file);
    migrateSessionEntries(piEntries);
    const piContext = piBuildSessionContext(piEntries.slice(1) as never);
    expectSameAsPi(await session.buildContext(), piContext);
    const branch = await session.getBranch();
    expect(branch.map((e) => e.parentId)).toEqual([
      null,
      branch[0]?.id,
      branch[1]?.id,
      branch[2]?.id,
      branch[3]?.id,
    ]);
    expect(branch[3]).toMatchObject({ type: "compaction", firstKeptEntryId: branch[1]?.id });
    expect("firstKeptEntryIndex" in (branch[3] as object)).toBe(false);
  });

  it("migrates version 2 files as pi does (hookMessage becomes custom)", async () => {
    const v2 = [
      {
        type: "session",
        version: 2,
        id: "0190aaaa-0000-7000-8000-000000000002",
        timestamp: "2025-01-01T00:00:00.000Z",
        cwd: "/p",
      },
      {
        type: "message",
        id: "aaaa0001",
        parentId: null,
        timestamp: "2025-01-01T00:00:01.000Z",
        message: user("one"),
      },
      {
        type: "message",
        id: "aaaa0002",
        parentId: "aaaa0001",
        timestamp: "2025-01-01T00:00:02.000Z",
        message: { role: "hookMessage", customType: "h", content: "hi", display: true, timestamp: 3 },
      },
    ];
    const file = v2.map((e) => JSON.stringify(e)).join("\n");
    const session = await new MemoryRepo().importSession(parsePi(file));
    const piEntries = parseSessionEntries(file);
    migrateSessionEntries(piEntries);
    expectSameAsPi(await session.buildContext(), piBuildSessionContext(piEntries.slice(1) as never));
    expect(
      (await session.getEntry("aaaa0002"))?.type === "message" && (await session.getEntry("aaaa0002")),
    ).toMatchObject({
      message: { role: "custom" },
    });
  });
});

/** pi's own reading of a file: written to a temporary folder and opened with its SessionManager. */
function openInPi(text: string): SessionManager {
  const dir = mkdtempSync(join(tmpdir(), "pi-open-"));
  try {
    const path = join(dir, "session.jsonl");
    writeFileSync(path, text);
    return SessionManager.open(path, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Our contexts equal pi's at the head and at every entry pi holds (same ids: version 3 files). */
async function expectContextsLikePi(session: Session, manager: SessionManager) {
  expectSameAsPi(await session.buildContext(), manager.buildSessionContext());
  for (const { id } of manager.getEntries()) {
    expectSameAsPi(
      await session.buildContext({ leafId: id }),
      piBuildSessionContext(manager.getEntries(), id),
    );
    expect(await session.getLabel(id)).toBe(manager.getLabel(id));
  }
}

const usageWithout = { input: 120, output: 30, cacheRead: 0, cacheWrite: 0 };

describe("pi files repaired on import", () => {
  it("keeps assistant usage without totalTokens or cost exactly as written (pi before December 2025)", async () => {
    const manager = SessionManager.inMemory("/p");
    const pi = manager as unknown as Pi;
    pi.appendMessage(user("q"));
    const older = { ...assistant("a"), usage: usageWithout };
    const withCostOnly = {
      ...assistant("b"),
      usage: { ...usageWithout, cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, total: 3 } },
    };
    const a = pi.appendMessage(older);
    const b = pi.appendMessage(withCostOnly);
    const file = piFile(manager);
    const parsed = parsePi(file);
    expect(parsed.warnings).toEqual([]);
    const session = await new MemoryRepo().importSession(parsed);
    expect((await session.getEntry(a))?.type === "message" && (await session.getEntry(a))).toMatchObject({
      message: older,
    });
    const stored = await session.getEntry(b);
    expect(stored?.type === "message" && JSON.stringify(stored.message)).toBe(JSON.stringify(withCostOnly));
    await expectContextsLikePi(session, manager);
    // The context size falls back to the usage's parts, as pi's does.
    expect((await session.buildContext()).messages).toHaveLength(3);
    // Appending such a message is accepted too: one schema for what is stored.
    await session.appendMessage({ ...assistant("c"), usage: usageWithout });
  });

  it("keeps the details an extension gave its compaction, whatever their shape", async () => {
    const manager = SessionManager.inMemory("/p");
    const pi = manager as unknown as Pi;
    const first = pi.appendMessage(user("q"));
    pi.appendMessage(assistant("a"));
    pi.appendCompaction("from an extension", first, 50, ["a", "list"], true);
    const session = await new MemoryRepo().importSession(parsePi(piFile(manager)));
    const compaction = manager.getLeafEntry();
    expect(await session.getEntry(compaction?.id as string)).toMatchObject({ details: ["a", "list"] });
    await expectContextsLikePi(session, manager);
  });

  it("writes a header time in another date form as ISO 8601, so the session's native export imports again", async () => {
    const file = (timestamp: unknown) =>
      `${JSON.stringify({ type: "session", version: 3, id: "dated", timestamp, cwd: "" })}\n`;
    const iso = "2025-01-01T00:00:00+02:00";
    expect(parsePi(file(iso))).toMatchObject({ header: { createdAt: iso }, warnings: [] });
    const cases: Array<[unknown, string | undefined]> = [
      ["Mon, 15 Jan 2024 10:00:00 GMT", "2024-01-15T10:00:00.000Z"],
      ["2024-01-15", "2024-01-15T00:00:00.000Z"],
      ["2024-01-15T10:00:00", undefined],
      ["not a date", undefined],
      [12, undefined],
    ];
    for (const [timestamp, expected] of cases) {
      const parsed = parsePi(file(timestamp));
      expect(Timestamp.safeParse(parsed.header.createdAt).success, String(timestamp)).toBe(true);
      if (expected) expect(parsed.header.createdAt).toBe(expected);
      expect(parsed.warnings).toEqual([{ line: 1, message: expect.stringContaining("timestamp") }]);
      const session = await new MemoryRepo().importSession(parsed);
      const copy = await new MemoryRepo().importSession(parseNative(await text(exportNative(session))));
      expect((await copy.getInfo()).createdAt).toBe(parsed.header.createdAt);
    }
  });

  it("still refuses a message without what a context needs, naming its line", () => {
    const header = '{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00Z","cwd":""}';
    const noModel = { ...assistant("a"), model: undefined };
    const line = JSON.stringify({
      type: "message",
      id: "a1",
      parentId: null,
      timestamp: "2025-01-01T00:00:00Z",
      message: noModel,
    });
    expect(() => parsePi(`${header}\n${line}\n`)).toThrow(/^line 2: invalid entry/);
  });

  it("makes an entry whose parent is missing a root, as pi reads the branched copies it writes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pi-branched-"));
    try {
      const source = SessionManager.create("/p", dir) as unknown as Pi;
      source.appendMessage(user("u1"));
      const a1 = source.appendMessage(assistant("a1"));
      source.appendLabelChange(a1, "x");
      const u2 = source.appendMessage(user("u2"));
      const a2 = source.appendMessage(assistant("a2"));
      const path = source.createBranchedSession(a2) as string;
      const text = readFileSync(path, "utf8");
      const lines = text.trim().split("\n");
      const u2Line = lines.findIndex((l) => JSON.parse(l).id === u2) + 1;
      const dangling = JSON.parse(lines[u2Line - 1] as string).parentId as string;
      expect(lines.some((l) => JSON.parse(l).id === dangling)).toBe(false);

      const parsed = parsePi(text);
      expect(parsed.warnings).toEqual([
        { line: u2Line, message: expect.stringContaining(`parentId ${dangling} names no entry of the file`) },
      ]);
      const session = await new MemoryRepo().importSession(parsed);
      expect((await session.getEntry(u2))?.parentId).toBeNull();
      const manager = SessionManager.open(path, dir);
      await expectContextsLikePi(session, manager);
      expect((await session.buildContext()).messages.map((m) => contentText(m.content))).toEqual([
        "u2",
        "a2",
      ]);
      expect((await session.getTree()).map((node) => node.id)).toEqual(
        manager.getTree().map((node) => node.entry.id),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("drops a torn last line with a warning, as pi does", async () => {
    const manager = SessionManager.inMemory("/p");
    const pi = manager as unknown as Pi;
    pi.appendMessage(user("q"));
    pi.appendMessage(assistant("a"));
    const whole = piFile(manager);
    const torn = `${whole}{"type":"message","id":"deadbeef","parentId":"${manager.getLeafId()}","timestamp":"2026-01`;
    const parsed = parsePi(torn);
    expect(parsed.warnings).toEqual([{ line: 4, message: expect.stringContaining("cut short") }]);
    const session = await new MemoryRepo().importSession(parsed);
    expect(await session.getLeafId()).toBe(manager.getLeafId());
    expectSameAsPi(await session.buildContext(), openInPi(torn).buildSessionContext());
    // A last line that is whole JSON but lacks its newline is kept.
    expect(parsePi(whole.trimEnd()).entries).toHaveLength(2);
  });

  it("skips the repeated header and entries pi up to 0.55.1 wrote when branching before a reply", async () => {
    // The shape of pi's duplicate-header bug: the branched file written once, then again in full
    // when the first reply came, followed by the new entries.
    const manager = SessionManager.inMemory("/p");
    const pi = manager as unknown as Pi;
    pi.appendModelChange("anthropic", "claude");
    pi.appendThinkingLevelChange("low");
    const copy = [manager.getHeader(), ...manager.getEntries()].map((e) => JSON.stringify(e));
    pi.appendMessage(user("q"));
    pi.appendMessage(assistant("a"));
    const rest = manager
      .getEntries()
      .slice(2)
      .map((e) => JSON.stringify(e));
    const text = `${[...copy, ...copy, ...rest].join("\n")}\n`;
    const parsed = parsePi(text);
    expect(parsed.warnings).toEqual([
      { line: 4, message: expect.stringContaining("second session header") },
      { line: 5, message: "repeats line 2 exactly: skipped" },
      { line: 6, message: "repeats line 3 exactly: skipped" },
    ]);
    const session = await new MemoryRepo().importSession(parsed);
    expect((await session.getInfo()).entryCount).toBe(4);
    await expectContextsLikePi(session, openInPi(text));
    // pi's head is the last line's entry, even when that line is a repeat.
    const endsInRepeat = `${[...copy, ...copy].join("\n")}\n`;
    expect(parsePi(endsInRepeat).leafId).toBe(openInPi(endsInRepeat).getLeafId());
    expect(parsePi(endsInRepeat).leafId).toBe(JSON.parse(copy[2] as string).id);
  });

  it("exports the session name, which pi shows after opening the file", async () => {
    const repo = new MemoryRepo();
    const named = await repo.create({ name: "release notes" });
    await named.appendMessage(user("q"));
    const leaf = await named.appendMessage(assistant("a"));
    const manager = openInPi(await text(exportPi(named)));
    expect(manager.getSessionName()).toBe("release notes");
    // The name is appended at the head, as pi names a session: the path and context are unchanged.
    expect(manager.getLeafEntry()).toMatchObject({ type: "session_info", parentId: leaf });
    expectSameAsPi(await named.buildContext(), manager.buildSessionContext());

    // The name is the latest one appended, even when the head went back to an older rename.
    const renamed = await repo.create();
    await renamed.appendMessage(user("q"));
    const first = await renamed.appendSessionName("first");
    await renamed.appendSessionName("second");
    await renamed.setLeafId(first);
    expect(await renamed.getName()).toBe("second");
    expect(openInPi(await text(exportPi(renamed))).getSessionName()).toBe("second");

    // A file that already names the session as pi would read it gets no extra entry.
    const plain = await repo.create();
    await plain.appendSessionName("as is");
    const lines = (await text(exportPi(plain))).trim().split("\n");
    expect(lines.filter((l) => JSON.parse(l).type === "session_info")).toHaveLength(1);
    expect(openInPi(lines.join("\n")).getSessionName()).toBe("as is");
  });
});

describe("native format", () => {
  it("reproduces a session exactly: ids, parents, timestamps, seq order, leaf, labels, name, metadata, context", async () => {
    const repo = new MemoryRepo();
    const source = await repo.create({
      id: "native-src",
      name: "first name",
      systemPrompt: "sys",
      metadata: { team: "x" },
    });
    const q = await source.appendMessage(user("q"));
    const a = await source.appendMessage(assistant("a"));
    await source.appendLabel(a, "keep");
    await source.appendMessage(assistant("alt"), { parentId: q });
    await source.appendSessionName("second name");
    await source.appendCompaction({ summary: "S", tokensBefore: 5, firstKeptEntryId: q });
    await source.setLeafId(a);
    await source.appendThinkingLevelChange("medium");

    const exported = await text(exportNative(source));
    const target = new MemoryRepo();
    const copy = await target.importSession(parseNative(exported));
    expect(copy.id).toBe("native-src");
    expect(await copy.getEntries({ limit: 1000 })).toEqual(await source.getEntries({ limit: 1000 }));
    const [ours, theirs] = [await copy.getInfo(), await source.getInfo()];
    expect({ ...ours, updatedAt: "" }).toEqual({ ...theirs, updatedAt: "" });
    expect(await copy.storage.getLabels()).toEqual(await source.storage.getLabels());
    expect(await copy.buildContext()).toEqual(await source.buildContext());
    expect(await text(exportNative(copy))).toBe(exported);
  });

  it("takes a new id when the file's is taken, and refuses a chosen id that is taken", async () => {
    const repo = new MemoryRepo();
    const source = await repo.create({ id: "taken" });
    await source.appendMessage(user("x"));
    const file = parseNative(await text(exportNative(source)));
    const copy = await repo.importSession(file);
    expect(copy.id).not.toBe("taken");
    expect((await copy.getInfo()).entryCount).toBe(1);
    await expectCode(repo.importSession(file, { id: "taken" }), "already_exists");
    const chosen = await repo.importSession(file, { id: "chosen" });
    expect(chosen.id).toBe("chosen");
  });
});

describe("refused files", () => {
  const header = JSON.stringify({
    type: "session",
    format: "cf-session",
    version: 1,
    id: "bad",
    createdAt: "2025-01-01T00:00:00.000Z",
  });
  const piHeader = '{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00Z","cwd":""}';
  const entry = (id: string, parentId: string | null) =>
    JSON.stringify({
      type: "message",
      id,
      parentId,
      timestamp: "2025-01-01T00:00:00.000Z",
      message: user(id),
    });

  const cases: Array<[string, () => unknown, number]> = [
    ["an empty file", () => parseNative(""), 1],
    ["a missing header", () => parseNative(entry("a", null)), 1],
    ["an unknown native version", () => parseNative(header.replace('"version":1', '"version":9')), 1],
    [
      "a truncated last line",
      () => parseNative(`${header}\n${entry("a", null)}\n${entry("b", "a").slice(0, 30)}`),
      3,
    ],
    ["invalid JSON in the middle", () => parseNative(`${header}\n{oops\n${entry("a", null)}`), 2],
    ["a duplicate id", () => parseNative(`${header}\n${entry("a", null)}\n${entry("a", null)}`), 3],
    ["a dangling parent", () => parseNative(`${header}\n${entry("a", null)}\n\n${entry("b", "zzz")}`), 4],
    [
      "an invalid entry",
      () =>
        parseNative(
          `${header}\n{"type":"message","id":"x","parentId":null,"timestamp":"2025-01-01T00:00:00Z","message":{"role":"user","content":1,"timestamp":1}}`,
        ),
      2,
    ],
    ["a pi file without header", () => parsePi(entry("a", null)), 1],
    [
      "an unknown pi version",
      () => parsePi('{"type":"session","version":4,"id":"x","timestamp":"2025-01-01T00:00:00Z","cwd":""}'),
      1,
    ],
    [
      "an unknown pi entry type",
      () =>
        parsePi(
          `{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00Z","cwd":""}\n{"type":"mystery","id":"a","parentId":null}`,
        ),
      2,
    ],
    [
      "a truncated native last line, which only pi files forgive",
      () => parseNative(`${header}\n${entry("a", null)}\n{"type":"mess`),
      3,
    ],
    [
      "a corrupt pi line before the last (pi skips it; here the file is refused)",
      () => parsePi(`${piHeader}\n${entry("a", null)}\n{"type":"mess\n${entry("b", "a")}\n`),
      3,
    ],
    [
      "a corrupt last pi line that ends in a newline (not a torn write)",
      () => parsePi(`${piHeader}\n${entry("a", null)}\n{"type":"mess\n`),
      3,
    ],
    [
      "a corrupt last pi line followed by a newline and blanks",
      () => parsePi(`${piHeader}\n${entry("a", null)}\n{"type":"mess\n  `),
      3,
    ],
    [
      "two pi entries with one id and different content",
      () => parsePi(`${piHeader}\n${entry("a", null)}\n${entry("b", "a")}\n${entry("b", null)}\n`),
      4,
    ],
    [
      "pi entries whose parents form a cycle",
      () => parsePi(`${piHeader}\n${entry("a", "b")}\n${entry("b", "a")}\n`),
      2,
    ],
  ];
  for (const [name, parse, line] of cases) {
    it(`refuses ${name}, naming line ${line}`, () => {
      let caught: unknown;
      try {
        parse();
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(SessionError);
      expect((caught as SessionError).code).toBe("invalid_request");
      expect((caught as SessionError).message).toMatch(new RegExp(`^line ${line}:`));
      expect((caught as SessionError).details).toMatchObject({ line });
    });
  }
});
