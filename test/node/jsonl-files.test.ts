import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { once } from "node:events";
import type { FileHandle } from "node:fs/promises";
import { appendFile, copyFile, mkdir, open, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { build } from "esbuild";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { StoredEntry } from "../../src/core/entries";
import { SessionError } from "../../src/core/errors";
import { MemoryRepo } from "../../src/core/memory";
import { exportNative, parseNative } from "../../src/core/native-format";
import type { Session } from "../../src/core/session";
import { treeToJson } from "../../src/core/tree";
import type { JSONLRepo } from "../../src/node";
import { EntryLog } from "../../src/node/entry-log";
import { JSONLStorage } from "../../src/node/jsonl-storage";
import { assistant, messageEntry, user } from "../conformance/fixtures";
import { expectCode } from "../conformance/storage";
import { tempRoots } from "./temp-root";

const temp = tempRoots();
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill();
});

/**
 * A Node process that forks session `source` to entry `argv[3]` as `copy` (or, given `import`,
 * imports the native export `argv[4]` as `imported`) and dies, as a crash would end it, as soon as
 * the first batch of the copy is on disk.
 */
const CRASH_AFTER_FIRST_BATCH = `
import { readFileSync } from "node:fs";
import { parseNative } from "./src/core/native-format";
import { JSONLRepo } from "./src/node";
import { JSONLStorage } from "./src/node/jsonl-storage";

const importEntries = JSONLStorage.prototype.importEntries;
JSONLStorage.prototype.importEntries = async function (...args) {
  await importEntries.apply(this, args);
  process.kill(process.pid, "SIGKILL");
};
const [root, action, target] = process.argv.slice(2);
const repo = new JSONLRepo(root);
if (action === "fork") await repo.fork("source", target, { id: "copy" });
else await repo.importSession(parseNative(readFileSync(target, "utf8")), { id: "imported" });
`;

/** Runs `CRASH_AFTER_FIRST_BATCH` over `root`; resolves with the signal that ended it. */
async function crashMidCopy(root: string, ...args: string[]): Promise<NodeJS.Signals | null> {
  const bundle = await build({
    stdin: {
      contents: CRASH_AFTER_FIRST_BATCH,
      resolveDir: resolve(import.meta.dirname, "../.."),
      loader: "ts",
    },
    bundle: true,
    format: "esm",
    platform: "node",
    write: false,
    logLevel: "warning",
  });
  const script = join(root, "crash.mjs");
  await writeFile(script, bundle.outputFiles[0]?.text ?? "");
  const child = spawn(process.execPath, [script, root, ...args], { stdio: "ignore" });
  children.push(child);
  const [, signal] = (await once(child, "exit")) as [number | null, NodeJS.Signals | null];
  return signal;
}

/** A closed session `source` of `count` entries in one line; returns their ids. */
async function longSession(root: string, count: number): Promise<string[]> {
  const repo = await temp.repo(root);
  const session = await repo.create({ id: "source", name: "long" });
  const ids: string[] = [];
  for (let i = 0; i < count; i += 500) {
    const batch = Array.from({ length: Math.min(500, count - i) }, (_, j) => messageEntry(user(`m${i + j}`)));
    ids.push(...(await session.appendEntries(batch)).entries.map((entry) => entry.id));
  }
  await repo.cleanup();
  return ids;
}

function files(root: string, id: string) {
  const folder = join(root, "sessions", id);
  return {
    folder,
    entries: join(folder, "entries.jsonl"),
    metadata: join(folder, "metadata.json"),
    lock: join(folder, "lock"),
    mark: join(folder, "last-batch"),
  };
}

/** A session with a short conversation, closed so its files can be edited by hand. */
async function closedSession(root: string, id: string, messages = 3): Promise<string[]> {
  const repo = await temp.repo(root);
  const session = await repo.create({ id });
  const ids: string[] = [];
  for (let i = 0; i < messages; i++)
    ids.push(await session.appendMessage(i % 2 ? assistant(`a${i}`) : user(`u${i}`)));
  await repo.cleanup();
  return ids;
}

async function allIds(session: Session): Promise<string[]> {
  const ids: string[] = [];
  for await (const entry of session.allEntries()) ids.push(entry.id);
  return ids;
}

async function text(lines: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const line of lines) out += line;
  return out;
}

async function everything(session: Session) {
  return {
    entries: await session.getEntries({ limit: 1000 }),
    leafId: await session.getLeafId(),
    labels: await session.storage.getLabels(),
    name: await session.getName(),
    header: await session.getHeader(),
    info: await session.getInfo(),
    tree: treeToJson(await session.getTree()),
    context: await session.buildContext(),
  };
}

/** What a session holds, on disk and as read, to check later that a failed write changed none of it. */
async function stateOf(session: Session, root: string) {
  const { entries, metadata } = files(root, session.id);
  const held = async () => ({
    entries: await readFile(entries),
    metadata: await readFile(metadata),
    read: await everything(session),
  });
  const before = await held();
  return { expectUnchanged: async () => expect(await held()).toEqual(before) };
}

/** Makes the next call of a file handle method run `instead`, then puts the method back. */
async function onceInstead<K extends "write" | "writev">(
  file: string,
  method: K,
  instead: (
    original: FileHandle[K],
    handle: FileHandle,
    ...args: Parameters<FileHandle[K]>
  ) => Promise<unknown>,
): Promise<() => void> {
  const probe = await open(file, "r");
  const prototype = Object.getPrototypeOf(probe) as FileHandle;
  await probe.close();
  const original = prototype[method];
  const restore = () => {
    prototype[method] = original;
  };
  prototype[method] = async function (this: FileHandle, ...args: Parameters<FileHandle[K]>) {
    restore();
    return instead(original, this, ...args);
  } as FileHandle[K];
  return restore;
}

describe("JSONLRepo on disk", () => {
  it("stores one native entry per line and the session's figures in metadata.json", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const session = await repo.create({ id: "layout", name: "n", systemPrompt: "sys", metadata: { k: 1 } });
    const q = await session.appendMessage(user("hello"));
    await session.appendMessage(assistant("hi"));
    await session.setLeafId(q);

    const { entries, metadata } = files(root, "layout");
    const lines = (await readFile(entries, "utf8")).split("\n");
    expect(lines.pop()).toBe("");
    const stored = await session.getEntries();
    expect(lines.map((line) => JSON.parse(line))).toEqual(stored.map(({ seq: _seq, ...entry }) => entry));
    expect(stored.map((entry) => entry.seq)).toEqual([1, 2, 3]);
    expect(stored[2]).toMatchObject({ type: "leaf", targetId: q });

    const written = JSON.parse(await readFile(metadata, "utf8"));
    expect(written).toMatchObject({
      version: 1,
      header: { id: "layout", name: "n", systemPrompt: "sys", metadata: { k: 1 } },
      stats: { entryCount: 2, messageCount: 2, preview: "hello" },
      leafId: q,
      lines: 3,
    });
  });

  it("keeps entries, leaf, labels, name and info across closing and reopening", async () => {
    const root = await temp.root();
    const first = await temp.repo(root);
    const session = await first.create({
      id: "durable",
      name: "start",
      systemPrompt: "sys",
      metadata: { a: 1 },
    });
    const q = await session.appendMessage(user("question"));
    const a = await session.appendMessage(assistant("answer"));
    await session.appendLabel(q, "important");
    await session.appendMessage(assistant("another answer"), { parentId: q });
    await session.appendSessionName("renamed");
    await session.appendThinkingLevelChange("high");
    await session.setLeafId(a);
    await session.updateHeader({ metadata: { a: 2 } });
    const before = await everything(session);
    await first.cleanup();

    const reopened = await (await temp.repo(root)).open("durable");
    expect(await everything(reopened)).toEqual(before);
    expect(before.leafId).toBe(a);
    expect(before.labels).toEqual({ [q]: "important" });
    expect(before.name).toBe("renamed");

    const next = await reopened.appendMessage(user("more"));
    expect((await reopened.getEntry(next))?.seq).toBe(before.entries.length + 1);
    expect((await reopened.getEntry(next))?.parentId).toBe(a);
  });

  it("keeps a fork on disk with its parent session", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const source = await repo.create({ id: "source" });
    const q = await source.appendMessage(user("q"));
    await source.appendMessage(assistant("a"));
    await source.fork(q, { id: "forked" });
    await repo.cleanup();

    const fork = await (await temp.repo(root)).open("forked");
    expect(await fork.getInfo()).toMatchObject({ parentSession: { id: "source", entryId: q }, leafId: q });
    expect((await fork.getBranch()).map((entry) => entry.id)).toEqual([q]);
  });

  it("imports a native export exactly; its log is the export's entry lines", async () => {
    const source = await new MemoryRepo().create({ id: "imported", name: "n", systemPrompt: "sys" });
    const q = await source.appendMessage(user("q"));
    const a = await source.appendMessage(assistant("a"));
    await source.appendLabel(a, "keep");
    await source.appendMessage(assistant("alt"), { parentId: q });
    await source.setLeafId(a);
    const exported = await text(exportNative(source));

    const root = await temp.root();
    const repo = await temp.repo(root);
    await repo.importSession(parseNative(exported));
    await expectCode(repo.importSession(parseNative(exported), { id: "imported" }), "already_exists");
    await repo.cleanup();
    const copy = await (await temp.repo(root)).open("imported");
    expect(await text(exportNative(copy))).toBe(exported);
    expect(await everything(copy)).toMatchObject({
      leafId: a,
      labels: { [a]: "keep" },
      context: await source.buildContext(),
    });
    const log = await readFile(files(root, "imported").entries, "utf8");
    expect(exported.slice(exported.indexOf("\n") + 1)).toBe(log);
  });

  it("drops a torn last line on open and cuts the file back to the last whole line", async () => {
    const root = await temp.root();
    const ids = await closedSession(root, "torn");
    const { entries } = files(root, "torn");
    const whole = await readFile(entries);
    await appendFile(entries, '{"type":"message","id":"half","parentId":null,"timesta');

    const session = await (await temp.repo(root)).open("torn");
    expect((await session.getEntries()).map((entry) => entry.id)).toEqual(ids);
    expect(await session.getLeafId()).toBe(ids[2]);
    expect(await readFile(entries)).toEqual(whole);
    const next = await session.appendMessage(user("after the crash"));
    expect((await session.getEntry(next))?.seq).toBe(4);
    expect((await readFile(entries, "utf8")).split("\n").length).toBe(5);
  });

  it("drops a batch of several lines that a crash cut short, whole lines of it included", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const session = await repo.create({ id: "half-batch" });
    await session.appendMessage(user("q"));
    const { entries, metadata, mark } = files(root, "half-batch");
    const bytes = await readFile(entries);
    const meta = await readFile(metadata);
    const before = await everything(session);
    await session.appendEntries([
      messageEntry(assistant("a")),
      messageEntry(user("q2")),
      messageEntry(assistant("a2")),
    ]);
    await repo.cleanup();
    const written = await readFile(entries);
    const markBytes = await readFile(mark);
    const firstLineEnd = written.indexOf(0x0a, bytes.length) + 1;

    // What a crash leaves: the batch's mark, its first line, whole or followed by part of the
    // second, and the metadata of before the batch.
    for (const cut of [firstLineEnd, firstLineEnd + 10]) {
      await writeFile(entries, written.subarray(0, cut));
      await writeFile(metadata, meta);
      await writeFile(mark, markBytes);
      const reopened = await temp.repo(root);
      expect(await everything(await reopened.open("half-batch"))).toEqual(before);
      expect(await readFile(entries)).toEqual(bytes);
      await reopened.cleanup();
    }
  });

  it("keeps a last line that lost only its newline, and writes the newline", async () => {
    const root = await temp.root();
    const ids = await closedSession(root, "no-newline");
    const { entries } = files(root, "no-newline");
    const whole = await readFile(entries);
    await writeFile(entries, whole.subarray(0, whole.length - 1));

    const session = await (await temp.repo(root)).open("no-newline");
    expect((await session.getEntries()).map((entry) => entry.id)).toEqual(ids);
    expect(await readFile(entries)).toEqual(whole);
  });

  it("keeps appends made after a crash left a batch's mark but none of its lines", async () => {
    const root = await temp.root();
    const [q] = await closedSession(root, "marked", 1);
    const { entries, mark } = files(root, "marked");
    // What a crash between writing the mark and writing the batch leaves: a mark past the end.
    const size = (await stat(entries)).size;
    await writeFile(mark, JSON.stringify({ start: size, end: size + 100_000 }));

    const repo = await temp.repo(root);
    const session = await repo.open("marked");
    const later: string[] = [];
    for (let i = 0; i < 5; i++) later.push(await session.appendMessage(user(`after ${i}`)));
    await repo.cleanup();

    const reopened = await (await temp.repo(root)).open("marked");
    expect((await reopened.getEntries()).map((entry) => entry.id)).toEqual([q, ...later]);
  });

  it("keeps appends confirmed after a stale mark an earlier release left, cutting nothing", async () => {
    const root = await temp.root();
    const [q] = await closedSession(root, "stale-mark", 1);
    const { entries, mark } = files(root, "stale-mark");
    const size = (await stat(entries)).size;
    const repo = await temp.repo(root);
    const session = await repo.open("stale-mark");
    const later: string[] = [];
    for (let i = 0; i < 5; i++) later.push(await session.appendMessage(user(`after ${i}`)));
    await repo.cleanup();
    // A release that never reset a mark past the end leaves it over the single lines appended since.
    await writeFile(mark, JSON.stringify({ start: size, end: size + 100_000 }));
    const whole = await readFile(entries);

    const reopened = await (await temp.repo(root)).open("stale-mark");
    expect((await reopened.getEntries()).map((entry) => entry.id)).toEqual([q, ...later]);
    expect(await readFile(entries)).toEqual(whole);
  });

  it("refuses a log that holds fewer lines than its metadata counts, and changes neither file", async () => {
    const root = await temp.root();
    await closedSession(root, "shortened");
    const { entries, metadata } = files(root, "shortened");
    const lines = (await readFile(entries, "utf8")).split("\n");
    await writeFile(entries, `${lines[0]}\n`);
    const before = { entries: await readFile(entries), metadata: await readFile(metadata) };

    const error = await expectCode((await temp.repo(root)).open("shortened"), "invalid_request");
    expect(error.message).toContain(entries);
    expect(error.details).toEqual({ file: entries, lines: 1, expected: 3 });
    expect({ entries: await readFile(entries), metadata: await readFile(metadata) }).toEqual(before);
  });

  it("refuses a corrupt line before the last, naming the file and the line", async () => {
    const root = await temp.root();
    await closedSession(root, "corrupt");
    const { entries } = files(root, "corrupt");
    const lines = (await readFile(entries, "utf8")).split("\n");
    lines[1] = '{"type":"message", oops';
    await writeFile(entries, lines.join("\n"));
    const before = await readFile(entries);

    const error = await expectCode((await temp.repo(root)).open("corrupt"), "invalid_request");
    expect(error.message).toContain(entries);
    expect(error.message).toContain("line 2");
    expect(error.details).toEqual({ file: entries, line: 2 });
    expect(await readFile(entries)).toEqual(before);
    // The failed open released its lock: a second try fails the same way, not as locked.
    await expectCode((await temp.repo(root)).open("corrupt"), "invalid_request");
  });

  it("refuses lines that are JSON but not entries of this log, and a bad last line with its newline", async () => {
    const root = await temp.root();
    const ids = await closedSession(root, "strange");
    const { entries } = files(root, "strange");
    const original = await readFile(entries, "utf8");
    const lines = original.split("\n");

    const cases: Array<[string, number, string]> = [
      [`${lines[0]}\n${lines[0]}\n`, 2, "appears twice"],
      [original.replace(`"parentId":"${ids[0]}"`, '"parentId":"nowhere"'), 2, "parent nowhere"],
      [`${original}{"type":"mystery","id":"m","parentId":null,"timestamp":"x"}\n`, 4, "unknown entry type"],
      [`${original}not json\n`, 4, "not valid JSON"],
      [`${original}\n`, 4, "not valid JSON"],
    ];
    for (const [text, line, reason] of cases) {
      await writeFile(entries, text);
      const error = await expectCode((await temp.repo(root)).open("strange"), "invalid_request");
      expect(error.details).toEqual({ file: entries, line });
      expect(error.message).toContain(reason);
    }
  });

  it("lists sessions from metadata.json alone, without reading or locking a log", async () => {
    const root = await temp.root();
    const writer = await temp.repo(root);
    for (const id of ["one", "two", "three"]) {
      const session = await writer.create({ id, name: `name ${id}` });
      await session.appendMessage(user(`hello from ${id}`));
    }
    const listed = await writer.list({ order: "created" });
    expect(listed.sessions.map((info) => info.id)).toEqual(["three", "two", "one"]);

    // Another repo lists while the writer holds every session open.
    const reader = await temp.repo(root);
    expect(await reader.list({ order: "created" })).toEqual(listed);

    await rm(files(root, "one").entries);
    await writeFile(files(root, "two").entries, "garbage\n");
    expect(await reader.list({ order: "created" })).toEqual(listed);
    expect(listed.sessions[0]).toMatchObject({
      id: "three",
      name: "name three",
      entryCount: 1,
      preview: "hello from three",
    });

    await writer.cleanup();
    await expectCode(reader.open("two"), "invalid_request");
    await expectCode(reader.open("one"), "invalid_request");
  });

  it("leaves out of listings a session whose metadata.json it cannot read, which open still refuses", async () => {
    const root = await temp.root();
    for (const id of ["newer", "damaged", "fine"]) await closedSession(root, id, 1);
    const newer = files(root, "newer").metadata;
    await writeFile(newer, JSON.stringify({ ...JSON.parse(await readFile(newer, "utf8")), version: 2 }));
    await writeFile(files(root, "damaged").metadata, '{"version":1,"hea');
    const before = { newer: await readFile(newer), damaged: await readFile(files(root, "damaged").metadata) };

    const repo = await temp.repo(root);
    expect((await repo.list()).sessions.map((info) => info.id)).toEqual(["fine"]);
    expect((await repo.list({ prefix: "n" })).sessions).toEqual([]);
    const error = await expectCode(repo.open("newer"), "invalid_request");
    expect(error.message).toContain("unknown version");
    await expectCode(repo.open("damaged"), "invalid_request");
    expect({
      newer: await readFile(newer),
      damaged: await readFile(files(root, "damaged").metadata),
    }).toEqual(before);
  });

  it("shows each write in the listing of another repo", async () => {
    const root = await temp.root();
    const writer = await temp.repo(root);
    const reader = await temp.repo(root);
    const session = await writer.create({ id: "live" });
    const created = (await reader.list()).sessions[0];
    const q = await session.appendMessage(user("q"));
    await session.appendSessionName("named");
    const [info] = (await reader.list()).sessions;
    expect(info).toMatchObject({ id: "live", entryCount: 2, messageCount: 1, name: "named" });
    expect(info?.leafId).not.toBe(q);
    expect(info?.leafId).toBe(await session.getLeafId());
    expect(info && created && info.updatedAt >= created.updatedAt).toBe(true);
  });

  it("repairs metadata.json that a crash left one write behind", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const session = await repo.create({ id: "behind" });
    await session.appendMessage(user("q"));
    const { metadata, entries } = files(root, "behind");
    await copyFile(metadata, `${metadata}.saved`);
    const a = await session.appendMessage(assistant("a"));
    await repo.cleanup();
    await copyFile(`${metadata}.saved`, metadata);
    await rm(`${metadata}.saved`);

    const reopened = await (await temp.repo(root)).open("behind");
    expect(await reopened.getInfo()).toMatchObject({ entryCount: 2, messageCount: 2, leafId: a });
    const repaired = JSON.parse(await readFile(metadata, "utf8"));
    expect(repaired).toMatchObject({ lines: 2, leafId: a, stats: { entryCount: 2 } });
    expect(repaired.stats.updatedAt >= (await stat(entries)).mtime.toISOString()).toBe(true);
  });

  it("removes the temporary metadata files a crash left behind when it opens the session", async () => {
    const root = await temp.root();
    await closedSession(root, "leftovers");
    const { folder, metadata } = files(root, "leftovers");
    await writeFile(`${metadata}.0197a3f0-0000-7000-8000-000000000000.tmp`, '{"version":1,"hea');
    const temporaries = async () => (await readdir(folder)).filter((name) => name.endsWith(".tmp"));
    expect(await temporaries()).toHaveLength(1);

    const session = await (await temp.repo(root)).open("leftovers");
    expect((await session.getInfo()).entryCount).toBe(3);
    expect(await temporaries()).toEqual([]);
  });

  it("runs appends that are not awaited one at a time, in call order", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const session = await repo.create({ id: "burst" });
    const pending: Array<Promise<StoredEntry>> = [];
    for (let i = 0; i < 60; i++) {
      if (i % 10 === 9) {
        pending.push(
          session
            .appendEntries([messageEntry(user(`b${i}`)), messageEntry(assistant(`c${i}`))])
            .then((result) => result.entries[1] as StoredEntry),
        );
      } else {
        pending.push(session.appendEntry(messageEntry(i % 2 ? assistant(`a${i}`) : user(`u${i}`))));
      }
    }
    const done = await Promise.all(pending);
    const seqs = done.map((entry) => entry.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).toBe(seqs.length);

    const all = await session.getEntries({ limit: 1000 });
    expect(all.length).toBe(66);
    expect(all.map((entry) => entry.seq)).toEqual(all.map((_, i) => i + 1));
    all.forEach((entry, i) => {
      expect(entry.parentId).toBe(i === 0 ? null : all[i - 1]?.id);
    });
    await repo.cleanup();
    const reopened = await (await temp.repo(root)).open("burst");
    expect(await reopened.getEntries({ limit: 1000 })).toEqual(all);
  });

  it("leaves the files and the session unchanged when a write is refused", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const session = await repo.create({ id: "refused" });
    const q = await session.appendMessage(user("q"), { id: "q" });
    await session.appendMessage(assistant("a"));
    const state = await stateOf(session, root);

    await expectCode(session.appendMessage(user("x"), { parentId: "missing" }), "parent_not_found");
    await expectCode(session.appendLabel("missing", "x"), "invalid_tree");
    await expectCode(session.appendMessage(user("different"), { id: "q" }), "already_exists");
    await expectCode(session.appendMessage(user("late"), { expectedLeafId: q }), "leaf_conflict");
    await expectCode(session.setLeafId("missing"), "not_found");
    await expectCode(session.appendMessage(user("x".repeat(16 * 1024 * 1024))), "entry_too_large");
    await expectCode(
      session.appendEntries([messageEntry(user("ok")), messageEntry(user("bad"), { parentId: "missing" })]),
      "parent_not_found",
    );

    await state.expectUnchanged();
  });

  it("cuts off a batch whose write failed halfway, and changes nothing in memory", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const session = await repo.create({ id: "failing" });
    await session.appendMessage(user("q"));
    const state = await stateOf(session, root);
    const { entries } = files(root, "failing");

    // The first line of the batch reaches the file, then the disk is full.
    const restore = await onceInstead(entries, "writev", async (writev, handle, buffers, position) => {
      await writev.call(handle, buffers.slice(0, 1), position);
      throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
    });
    try {
      const error = await expectCode(
        session.appendEntries([messageEntry(assistant("a")), messageEntry(user("q2"))]),
        "internal",
      );
      expect(error.details).toMatchObject({ file: entries, errno: "ENOSPC" });
    } finally {
      restore();
    }

    await state.expectUnchanged();
    const next = await session.appendMessage(assistant("a"));
    expect((await session.getEntry(next))?.seq).toBe(2);
    await repo.cleanup();
    expect(await (await (await temp.repo(root)).open("failing")).getLeafId()).toBe(next);
  });

  it("writes none of a batch whose mark could not be written", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const session = await repo.create({ id: "unmarked" });
    await session.appendMessage(user("q"));
    const state = await stateOf(session, root);
    const { entries } = files(root, "unmarked");

    const restore = await onceInstead(entries, "write", async () => {
      throw Object.assign(new Error("EIO: i/o error"), { code: "EIO" });
    });
    try {
      const error = await expectCode(
        session.appendEntries([messageEntry(assistant("a")), messageEntry(user("q2"))]),
        "internal",
      );
      expect(error.details).toMatchObject({ file: entries, errno: "EIO" });
    } finally {
      restore();
    }

    await state.expectUnchanged();
    const [a, q2] = (await session.appendEntries([messageEntry(assistant("a")), messageEntry(user("q2"))]))
      .entries;
    expect([a?.seq, q2?.seq]).toEqual([2, 3]);
    await repo.cleanup();
    expect(await (await (await temp.repo(root)).open("unmarked")).getLeafId()).toBe(q2?.id);
  });

  it("keeps the head where a batch ending in a replay put it, across reopening", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const session = await repo.create({ id: "replayed" });
    const question = user("q");
    await session.appendEntry(messageEntry(question, { id: "q" }));
    const result = await session.appendEntries([
      messageEntry(assistant("a"), { id: "a" }),
      messageEntry(question, { id: "q" }),
    ]);
    expect(result.created).toBe(true);
    expect(result.leafId).toBe("q");
    await repo.cleanup();
    expect(await (await (await temp.repo(root)).open("replayed")).getLeafId()).toBe("q");
  });

  it("leaves a fork that a crash stopped unlisted, and frees its id on the next try", async () => {
    const root = await temp.root();
    const ids = await longSession(root, 1500);
    const target = ids[ids.length - 1] as string;
    expect(await crashMidCopy(root, "fork", target)).toBe("SIGKILL");
    expect((await readFile(files(root, "copy").entries, "utf8")).split("\n")).toHaveLength(501);

    const repo = await temp.repo(root);
    expect((await repo.list()).sessions.map((info) => info.id)).toEqual(["source"]);
    const copy = await repo.fork("source", target, { id: "copy" });
    expect(await allIds(copy)).toEqual(ids);
    expect((await repo.list()).sessions.map((info) => info.id).sort()).toEqual(["copy", "source"]);
    expect(await readdir(join(root, "tmp"))).toEqual([]);
  });

  it("removes an import that a crash stopped when it is opened, and imports it whole again", async () => {
    const root = await temp.root();
    const ids = await longSession(root, 1500);
    const exported = join(root, "export.jsonl");
    await writeFile(exported, await text(exportNative(await (await temp.repo(root)).open("source"))));
    expect(await crashMidCopy(root, "import", exported)).toBe("SIGKILL");
    expect((await readFile(files(root, "imported").entries, "utf8")).split("\n")).toHaveLength(501);

    const repo = await temp.repo(root);
    expect((await repo.list()).sessions.map((info) => info.id)).not.toContain("imported");
    await expectCode(repo.open("imported"), "not_found");
    await expect(stat(files(root, "imported").folder)).rejects.toMatchObject({ code: "ENOENT" });
    const imported = await repo.importSession(parseNative(await readFile(exported, "utf8")), {
      id: "imported",
    });
    expect(await allIds(imported)).toEqual(ids);
    expect((await repo.list()).sessions.map((info) => info.id)).toContain("imported");
  });

  it("keeps the id of an unfinished fork while the process writing it runs, and shows it to no one", async () => {
    const root = await temp.root();
    const ids = await longSession(root, 1500);
    const target = ids[ids.length - 1] as string;
    await crashMidCopy(root, "fork", target);
    const { folder, lock } = files(root, "copy");
    // As if the fork's process were still writing: its lock names a running process.
    const writer = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60_000)"], { stdio: "ignore" });
    children.push(writer);
    await writeFile(lock, JSON.stringify({ pid: writer.pid, hostname: hostname() }));
    const contents = async () =>
      Object.fromEntries(
        await Promise.all(
          (await readdir(folder)).map(async (name) => [name, await readFile(join(folder, name))]),
        ),
      );
    const before = await contents();

    const repo = await temp.repo(root);
    expect((await repo.list()).sessions.map((info) => info.id)).toEqual(["source"]);
    await expectCode(repo.fork("source", target, { id: "copy" }), "already_exists");
    await expectCode(repo.open("copy"), "forbidden");
    expect(await contents()).toEqual(before);
  });

  it("deletes an import whose end could not be recorded, and reports the failure", async () => {
    const root = await temp.root();
    await closedSession(root, "source");
    const file = parseNative(await text(exportNative(await (await temp.repo(root)).open("source"))));
    const { folder, metadata } = files(root, "unrecorded");
    // Once the entries are written, metadata.json cannot be replaced any more.
    const write = JSONLStorage.prototype.importEntries;
    const importEntries = vi
      .spyOn(JSONLStorage.prototype, "importEntries")
      .mockImplementationOnce(async function (this: JSONLStorage, ...args) {
        await write.apply(this, args);
        await rm(metadata);
        await mkdir(metadata);
        await writeFile(join(metadata, "blocker"), "");
      });
    const repo = await temp.repo(root);
    try {
      const error = await expectCode(repo.importSession(file, { id: "unrecorded" }), "internal");
      expect(error.message).toContain(metadata);
    } finally {
      importEntries.mockRestore();
    }
    await expect(stat(folder)).rejects.toMatchObject({ code: "ENOENT" });
    expect((await repo.list()).sessions.map((info) => info.id)).toEqual(["source"]);
    expect(await readdir(join(root, "tmp"))).toEqual([]);
  });

  it("refuses session ids that would be path segments of their own", async () => {
    const repo = await temp.repo();
    await expectCode(repo.create({ id: ".." }), "invalid_request");
    await expectCode(repo.create({ id: "." }), "invalid_request");
    await expectCode(repo.open(".."), "invalid_request");
    await expectCode(repo.open("../sessions"), "invalid_request");
    await expectCode(repo.delete("a/b"), "invalid_request");
    expect((await repo.create({ id: ".hidden" })).id).toBe(".hidden");
  });

  it("deletes the folder, frees the id and leaves nothing behind", async () => {
    const root = await temp.root();
    const repo = await temp.repo(root);
    const session = await repo.create({ id: "gone" });
    await session.appendMessage(user("q"));
    await repo.delete("gone");
    await expect(stat(files(root, "gone").folder)).rejects.toMatchObject({ code: "ENOENT" });
    expect(await readdir(join(root, "tmp"))).toEqual([]);
    await expectCode(session.getInfo(), "not_found");
    expect((await (await temp.repo(root)).create({ id: "gone" })).id).toBe("gone");
  });

  it("reads a session of large entries a few megabytes at a time for its tree and its pages", async () => {
    const repo = await temp.repo();
    const session = await repo.create({ id: "screenshots" });
    const large = "x".repeat(3 * 1024 * 1024);
    for (let i = 0; i < 6; i++) await session.appendMessage(i % 2 ? assistant(large) : user(large));
    const read = vi.spyOn(EntryLog.prototype, "read");
    const widest = () => {
      const sizes = read.mock.calls.map(([spans]) => spans.reduce((sum, span) => sum + span.length, 0));
      read.mockClear();
      return Math.max(...sizes);
    };
    try {
      expect((await session.getTree()).length).toBe(1);
      expect(widest()).toBeLessThan(10 * 1024 * 1024);
      let entries = 0;
      for await (const _ of session.allEntries()) entries++;
      expect(entries).toBe(6);
      expect(widest()).toBeLessThan(10 * 1024 * 1024);
      // A page asked for whole is still one answer.
      expect((await session.getEntries()).length).toBe(6);
    } finally {
      read.mockRestore();
    }
  });

  it("reads a provider message against the last turn only, however long the session", async () => {
    const repo = await temp.repo();
    const session = await repo.create({ id: "long" });
    const history = Array.from({ length: 2000 }, (_, i) =>
      messageEntry(i % 2 ? assistant(`a${i}`) : user(`u${i}`), { id: `m${i}` }),
    );
    for (let i = 0; i < history.length; i += 500) await session.appendEntries(history.slice(i, i + 500));
    const call = { id: "call_1", name: "ls", arguments: { path: "." } };
    await session.appendMessage(assistant("listing", { model: "gpt-long", toolCalls: [call] }));
    const read = vi.spyOn(EntryLog.prototype, "read");
    const readNow = vi.spyOn(EntryLog.prototype, "readNow");
    const rowsRead = () => {
      const calls = [...read.mock.calls, ...readNow.mock.calls];
      read.mockClear();
      readNow.mockClear();
      return calls.reduce((sum, [spans]) => sum + spans.length, 0);
    };
    try {
      const [result] = await session.appendProviderMessage("openai-chat", {
        role: "tool",
        tool_call_id: "call_1",
        content: "a.txt",
      });
      expect(result?.message).toMatchObject({ role: "toolResult", toolName: "ls", toolCallId: "call_1" });
      const [reply] = await session.appendProviderMessage("openai-chat", {
        role: "assistant",
        content: "one file",
      });
      expect(reply?.message).toMatchObject({ role: "assistant", model: "gpt-long" });
      // The last turn and the model are in the last entries: a batch of them is read, not 2,002.
      expect(rowsRead()).toBeLessThanOrEqual(40);
      // A message appended under an earlier entry reads the turn there, not the path to it.
      const { entries } = await session.appendEntries([
        {
          type: "message",
          parentId: "m1001",
          format: "openai-chat",
          message: { role: "user", content: "again" },
        },
      ]);
      expect(entries[0]).toMatchObject({ parentId: "m1001", message: { role: "user" } });
      expect(rowsRead()).toBeLessThanOrEqual(20);
    } finally {
      read.mockRestore();
      readNow.mockRestore();
    }
  });

  it("refuses to use a storage after its cleanup", async () => {
    const repo: JSONLRepo = await temp.repo();
    const session = await repo.create({ id: "closed" });
    await session.storage.cleanup();
    const error = await expectCode(session.appendMessage(user("q")), "invalid_request");
    expect(error).toBeInstanceOf(SessionError);
    expect((await repo.open("closed")).storage).not.toBe(session.storage);
  });
});
