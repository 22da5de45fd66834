import { randomUUID } from "node:crypto";
import { getEventListeners } from "node:events";
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../../src/cli/main";
import type { Output } from "../../src/cli/output";
import { watchFiles } from "../../src/cli/watch-files";
import { createClient } from "../../src/client";
import { parseImport } from "../../src/core/import-formats";
import type { ImportFormat } from "../../src/core/interchange";
import { ClaudeCodeLines } from "../conformance/fixtures";
import { type DevServer, startDevServer } from "../support/dev-server";

/*
 * `cf-sessions sync --watch` against the real service: real pi, Claude Code and Codex session
 * files grow line by line (some lines written in two halves) while the watcher mirrors them,
 * across a restart of the watcher, of the service, and a write whose answer was lost; every line
 * must reach its session in order, once.
 */

// Every read of a file goes through as it would; the reads of each file are counted.
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  return { ...fs, readFileSync: vi.fn(fs.readFileSync) };
});

const FIXTURES = join(import.meta.dirname, "../fixtures");
const AGENTS: Array<{ format: ImportFormat; fixture: string }> = [
  { format: "pi", fixture: "pi/large-session.jsonl" },
  { format: "claude-code", fixture: "claude-code/2.1.38-task-plan-mode.jsonl" },
  { format: "codex", fixture: "codex/0.58.0-shell-calls.jsonl" },
];

let storage: string;
let server: DevServer;
let port: number;

beforeAll(async () => {
  storage = mkdtempSync(join(tmpdir(), "sync-watch-service-"));
  server = await startDevServer({ persistTo: storage });
  port = Number(new URL(server.url).port);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(storage, { recursive: true, force: true });
});

function captured(): Output & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    out: (text) => lines.push(text),
    write: (text) => lines.push(text),
    stream: async (text) => void lines.push(text),
    err: () => undefined,
    isTTY: false,
  };
}

/**
 * A watcher running until `stop`. `fault` answers a request in the service's stead (an answer, or
 * `"down"`: no connection) when it returns one.
 */
function startWatcher(
  dir: string,
  statePath: string,
  fault?: (request: Request) => Response | "down" | undefined,
) {
  const output = captured();
  const stop = new AbortController();
  const client = createClient({
    baseUrl: server.url,
    retryDelayMs: 1,
    fetch: async (request) => {
      const answer = fault?.(request);
      if (answer === "down")
        throw new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED") });
      return answer ?? fetch(request);
    },
  });
  const done = watchFiles(client, dir, output, {
    intervalMs: 50,
    json: true,
    signal: stop.signal,
    statePath,
  });
  return {
    events: () => output.lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    async stop() {
      stop.abort();
      expect(await done).toBe(0);
    },
  };
}

/** A user's message as a line Codex appends to a rollout. */
function codexUserLine(text: string): string {
  const payload = { type: "message", role: "user", content: [{ type: "input_text", text }] };
  return `${JSON.stringify({ timestamp: new Date().toISOString(), type: "response_item", payload })}\n`;
}

/** A pi session file, its first lines written: a session of its own (a new id), named `<name>.jsonl`. */
interface PiFile {
  id: string;
  path: string;
  lines: string[];
  written: number;
}

function piFiles(dir: string, names: string[]): PiFile[] {
  const [first, ...rest] = readFileSync(join(FIXTURES, "pi/large-session.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
  return names.map((name) => {
    const id = randomUUID();
    const path = join(dir, `${name}.jsonl`);
    const lines = [JSON.stringify({ ...JSON.parse(first as string), id }), ...rest];
    writeFileSync(path, `${lines.slice(0, 5).join("\n")}\n`);
    return { id, path, lines, written: 5 };
  });
}

/** Writes a file's next line. */
function grow(file: PiFile): void {
  appendFileSync(file.path, `${file.lines[file.written]}\n`);
  file.written++;
}

/** The file's session holds the entries of every line written. */
async function holds(file: PiFile): Promise<void> {
  const expected = parseImport("pi", `${file.lines.slice(0, file.written).join("\n")}\n`, {
    linesApart: true,
  });
  const session = await createClient({ baseUrl: server.url }).open(file.id);
  const stored = (await session.getEntries()).filter((entry) => entry.type !== "leaf");
  expect(stored).toHaveLength(expected.entries.filter((entry) => entry.type !== "leaf").length);
}

describe("cf-sessions sync --watch", () => {
  it("mirrors each agent's file as it grows: in order, once, across restarts", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-files-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const files = AGENTS.map(({ format, fixture }) => {
      const lines = readFileSync(join(FIXTURES, fixture), "utf8")
        .split("\n")
        .filter((line) => line.trim() !== "")
        .slice(0, 40);
      const path = join(dir, `${format}.jsonl`);
      writeFileSync(path, "");
      return { format, lines, path, written: 0 };
    });
    /** Writes each file's next lines, the first of them in two halves. */
    const grow = (count: number) => {
      for (const file of files) {
        const next = file.lines.slice(file.written, file.written + count);
        const [first, ...rest] = next;
        if (first !== undefined) {
          appendFileSync(file.path, first.slice(0, 20));
          appendFileSync(file.path, `${first.slice(20)}\n`);
        }
        for (const line of rest) appendFileSync(file.path, `${line}\n`);
        file.written += next.length;
      }
    };
    /** Every file's session holds exactly the entries of its lines so far, in order. */
    const mirrored = async () => {
      const client = createClient({ baseUrl: server.url });
      for (const file of files) {
        const text = `${file.lines.slice(0, file.written).join("\n")}\n`;
        const expected = parseImport(file.format, text, { linesApart: true });
        const session = await client.open(expected.header.id);
        // Head moves are the watcher's own (the head follows the file's): compared as the head.
        const stored = (await session.getEntries()).filter((entry) => entry.type !== "leaf");
        const lines = expected.entries.filter((entry) => entry.type !== "leaf");
        expect(stored.map((entry) => entry.id)).toEqual(lines.map((entry) => entry.id));
        expect(stored.map(({ seq: _seq, ...entry }) => entry)).toEqual(lines);
        expect(await session.getLeafId()).toBe(expected.leafId);
      }
    };
    const settled = () => vi.waitFor(mirrored, { timeout: 30_000, interval: 200 });

    grow(8);
    const first = startWatcher(dir, statePath);
    await settled();
    grow(6);
    await settled();
    await first.stop();
    expect(first.events().filter((e) => e.event === "created")).toHaveLength(3);

    // Lines written while no watcher runs are sent when one starts again from the state file.
    grow(5);
    const second = startWatcher(dir, statePath);
    await settled();
    expect(second.events().map((e) => e.event)).not.toContain("created");

    // The service goes away and comes back (same storage, same address): nothing is lost.
    await server.stop();
    grow(5);
    await vi.waitFor(() => expect(second.events().map((e) => e.event)).toContain("retrying"), {
      timeout: 20_000,
    });
    server = await startDevServer({ persistTo: storage, port });
    await settled();
    await second.stop();

    // A write whose answer was lost: the state says it was not sent, the service has it.
    const saved = `${statePath}.saved`;
    copyFileSync(statePath, saved);
    const third = startWatcher(dir, statePath);
    grow(5);
    await settled();
    await third.stop();
    copyFileSync(saved, statePath);
    const fourth = startWatcher(dir, statePath);
    await vi.waitFor(
      () =>
        expect(fourth.events().filter((e) => e.event === "appended" || e.event === "unchanged")).toHaveLength(
          3,
        ),
      { timeout: 30_000, interval: 200 },
    );
    await mirrored();

    // A line the reader refuses stops that file only: reported once, the other files go on.
    const codex = files.find((file) => file.format === "codex");
    if (!codex) throw new Error("no codex file");
    appendFileSync(codex.path, "{ not json\n");
    const others = files.filter((file) => file !== codex);
    for (const file of others) {
      appendFileSync(file.path, `${file.lines[file.written]}\n`);
      file.written++;
    }
    await vi.waitFor(() => expect(fourth.events().map((e) => e.event)).toContain("failed"), {
      timeout: 20_000,
    });
    await settled();
    expect(fourth.events().filter((e) => e.event === "failed")).toHaveLength(1);

    // A file cut short was rewritten: reported, and its session left as it was.
    const [pi] = files;
    if (!pi) throw new Error("no pi file");
    writeFileSync(pi.path, `${pi.lines.slice(0, 3).join("\n")}\n`);
    await vi.waitFor(() => expect(fourth.events().map((e) => e.event)).toContain("rewritten"), {
      timeout: 20_000,
    });
    await fourth.stop();
    // The session still holds every line sent before.
    await mirrored();
    rmSync(dir, { recursive: true, force: true });
  }, 240_000);

  it("keeps the session's head on the file's head while a subagent's lines come in", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-files-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const lines = readFileSync(join(FIXTURES, "claude-code/1.0.108-sidechains.jsonl"), "utf8")
      .split("\n")
      .filter((line) => line.trim() !== "");
    const path = join(dir, "claude-code.jsonl");
    // The main chain, then a subagent's lines (isSidechain) while it waits, then the main chain again
    // and a second subagent.
    writeFileSync(path, `${lines.slice(0, 15).join("\n")}\n`);
    const watcher = startWatcher(dir, statePath);
    const client = createClient({ baseUrl: server.url });
    const expectHead = async (written: number) => {
      const file = parseImport("claude-code", `${lines.slice(0, written).join("\n")}\n`, {
        linesApart: true,
      });
      const session = await client.open(file.header.id);
      const stored = (await session.getEntries()).filter((entry) => entry.type !== "leaf");
      expect(stored).toHaveLength(file.entries.filter((entry) => entry.type !== "leaf").length);
      expect(await session.getLeafId()).toBe(file.leafId);
    };
    await vi.waitFor(() => expectHead(15), { timeout: 30_000, interval: 200 });
    for (const written of [22, 25, 40, 41]) {
      const before = readFileSync(path, "utf8").split("\n").length - 1;
      appendFileSync(path, `${lines.slice(before, written).join("\n")}\n`);
      await vi.waitFor(() => expectHead(written), { timeout: 30_000, interval: 200 });
    }
    await watcher.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("names the session as Claude Code renames it while it is mirrored, the head on the file's", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-files-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const file = new ClaudeCodeLines(randomUUID()).user("plan?").assistant("A").title("first plan");
    const path = join(dir, `${file.sessionId}.jsonl`);
    writeFileSync(path, file.text());
    const watcher = startWatcher(dir, statePath);
    const named = async (name: string) => {
      const session = await createClient({ baseUrl: server.url }).open(`claude-code-${file.sessionId}`);
      const parsed = parseImport("claude-code", file.text(), { linesApart: true });
      expect(await session.getName()).toBe(name);
      expect(await session.getLeafId()).toBe(parsed.leafId);
    };
    await vi.waitFor(() => named("first plan"), { timeout: 30_000, interval: 200 });
    file.user("and then?").title("second plan").assistant("B");
    writeFileSync(path, file.text());
    await vi.waitFor(() => named("second plan"), { timeout: 30_000, interval: 200 });
    await watcher.stop();
    expect(watcher.events().map((e) => e.event)).toEqual(["created", "appended"]);
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("mirrors a pulled rollout as Codex goes on in it, after the lines the export wrote for the service's entries", async () => {
    const codexHome = mkdtempSync(join(tmpdir(), "sync-watch-codex-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const text = readFileSync(join(FIXTURES, "codex/0.135.0-redacted.jsonl"), "utf8");
    const thread = randomUUID();
    const files = mkdtempSync(join(tmpdir(), "sync-watch-import-"));
    writeFileSync(
      join(files, `${thread}.jsonl`),
      text.replaceAll(JSON.parse(text.split("\n")[0] as string).payload.id, thread),
    );
    const output = captured();
    const env = { CF_SESSIONS_URL: server.url, XDG_STATE_HOME: join(codexHome, "state") };
    expect(await main(["import", files, "--format", "codex", "--progress", "none"], output, env)).toBe(0);
    const session = await createClient({ baseUrl: server.url }).open(`codex-${thread}`);
    const asked = await session.appendMessage({
      role: "user",
      content: "asked on the service",
      timestamp: 1,
    });
    const project = join(codexHome, "project");
    const pulled = ["pull", session.id, "--to", "codex", "--project", project, "--json"];
    expect(await main(pulled, output, { ...env, CODEX_HOME: codexHome })).toBe(0);
    const path = JSON.parse(output.lines.at(-1) as string).path as string;

    const watcher = startWatcher(join(codexHome, "sessions"), statePath);
    await vi.waitFor(() => expect(watcher.events().map((e) => e.event)).toEqual(["unchanged"]), {
      timeout: 30_000,
    });
    const said = "asked in Codex";
    appendFileSync(path, codexUserLine(said));
    await vi.waitFor(
      async () => expect(JSON.stringify((await session.buildContext()).messages.at(-1))).toContain(said),
      { timeout: 30_000, interval: 200 },
    );
    await vi.waitFor(() => expect(watcher.events().map((e) => e.event)).toEqual(["unchanged", "appended"]), {
      timeout: 30_000,
    });
    expect((await session.getBranch()).at(-1)?.parentId).toBe(asked);

    // The service goes on, and the rollout is pulled again while it is mirrored: the lines the
    // export wrote for the service's message are not Codex's, and are not stored again.
    const again = await session.appendMessage({
      role: "user",
      content: "asked on the service again",
      timestamp: 2,
    });
    expect(await main(pulled, output, { ...env, CODEX_HOME: codexHome })).toBe(0);
    await vi.waitFor(() => expect(watcher.events()).toHaveLength(3), { timeout: 30_000 });
    // Nothing new to the service: watched as it is, no failure reported.
    expect(watcher.events().at(-1)).toMatchObject({ event: "unchanged", entries: 0 });
    const holding = async (words: string) =>
      (await session.getEntries({ limit: 1000 })).filter((entry) => JSON.stringify(entry).includes(words));
    expect(await holding("asked on the service again")).toHaveLength(1);
    expect(await session.getLeafId()).toBe(again);
    // Codex goes on in the pulled rollout: mirrored under the service's message.
    appendFileSync(path, codexUserLine("asked in Codex again"));
    await vi.waitFor(async () => expect((await session.getBranch()).at(-1)?.parentId).toBe(again), {
      timeout: 30_000,
      interval: 200,
    });

    // The head moved back on the service, and the rollout pulled again while it is mirrored: a
    // shorter file in its place, in which Codex goes on under the head.
    await session.setLeafId(asked);
    expect(await main(pulled, output, { ...env, CODEX_HOME: codexHome })).toBe(0);
    await vi.waitFor(() => expect(watcher.events()).toHaveLength(5), { timeout: 30_000 });
    expect(watcher.events().at(-1)).toMatchObject({ event: "unchanged", entries: 0 });
    appendFileSync(path, codexUserLine("asked after the move"));
    await vi.waitFor(async () => expect((await session.getBranch()).at(-1)?.parentId).toBe(asked), {
      timeout: 30_000,
      interval: 200,
    });
    await watcher.stop();
    expect(watcher.events().map((e) => e.event)).not.toContain("rewritten");
    expect(await holding("asked on the service again")).toHaveLength(1);
    expect(await holding("asked in Codex again")).toHaveLength(1);
    expect(await holding("asked after the move")).toHaveLength(1);
    rmSync(codexHome, { recursive: true, force: true });
  }, 120_000);

  it("mirrors a resumed Claude Code conversation to its own session, not the one it continued", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-files-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const [continued, resumed] = [randomUUID(), randomUUID()];
    // The resumed conversation's file starts with the lines of the one it continued, with that one's
    // id, and is named after its own session, as Claude Code writes it.
    const lines = new ClaudeCodeLines(resumed)
      .user("plan?")
      .assistant("A")
      .user("and then?")
      .assistant("B")
      .text()
      .split("\n")
      .filter((line) => line !== "")
      .map((line, index) => (index < 2 ? line.replaceAll(resumed, continued) : line));
    const copied = `${lines.slice(0, 2).join("\n")}\n`;
    writeFileSync(join(dir, `${continued}.jsonl`), copied);
    const path = join(dir, `${resumed}.jsonl`);
    writeFileSync(path, copied);
    const watcher = startWatcher(dir, statePath);
    await vi.waitFor(() => expect(watcher.events()).toHaveLength(2), { timeout: 30_000 });
    appendFileSync(path, `${lines.slice(2).join("\n")}\n`);
    const whole = parseImport("claude-code", `${lines.join("\n")}\n`, { linesApart: true });
    expect(whole.header.id).toBe(`claude-code-${resumed}`);
    const client = createClient({ baseUrl: server.url });
    await vi.waitFor(
      async () => {
        const session = await client.open(whole.header.id);
        const stored = (await session.getEntries()).filter((entry) => entry.type !== "leaf");
        expect(stored.map((entry) => entry.id)).toEqual(
          whole.entries.filter((entry) => entry.type !== "leaf").map((entry) => entry.id),
        );
        expect(await session.getLeafId()).toBe(whole.leafId);
      },
      { timeout: 20_000, interval: 200 },
    );
    await watcher.stop();
    const header = await client.storage(whole.header.id).getHeader();
    expect(header.metadata.claudeCode).toMatchObject({ sessionId: resumed });
    // The conversation it continued holds its own lines only.
    const old = await client.open(`claude-code-${continued}`);
    const own = parseImport("claude-code", copied, { linesApart: true }).entries;
    expect(
      (await old.getEntries()).filter((entry) => entry.type !== "leaf").map((entry) => entry.id),
    ).toEqual(own.filter((entry) => entry.type !== "leaf").map((entry) => entry.id));
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("syncs a file it mirrored whole afterwards: only what the file gained since is written", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-whole-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    // Files with answers streamed over several lines, which a read of the whole file folds.
    const files = [
      { format: "claude-code", fixture: "claude-code/2.1.38-task-plan-mode.jsonl", id: "" },
      {
        format: "codex",
        fixture: "codex/0.58.0-shell-calls.jsonl",
        id: "019a93b9-f380-7600-98ff-940e6b99603c",
      },
    ].map(({ format, fixture, id }) => {
      const text = readFileSync(join(FIXTURES, fixture), "utf8");
      const own = randomUUID();
      const original =
        id ||
        (parseImport("claude-code", text).header.metadata.claudeCode as { sessionId: string }).sessionId;
      const lines = text
        .replaceAll(original, own)
        .split("\n")
        .filter((line) => line.trim() !== "")
        .slice(0, 60);
      const path = join(
        dir,
        format === "codex" ? `rollout-2025-11-17T21-30-28-${own}.jsonl` : `${own}.jsonl`,
      );
      writeFileSync(path, `${lines.slice(0, -1).join("\n")}\n`);
      return { format: format as ImportFormat, path, lines };
    });
    const watcher = startWatcher(dir, statePath);
    await vi.waitFor(() => expect(watcher.events().map((e) => e.event)).toEqual(["created", "created"]), {
      timeout: 30_000,
    });
    await watcher.stop();
    const output = captured();
    const sync = () => main(["sync", dir, "--json"], output, { CF_SESSIONS_URL: server.url });
    expect(await sync()).toBe(0);
    expect(JSON.parse(output.lines.at(-1) as string)).toMatchObject({
      unchanged: expect.any(Array),
      conflicts: [],
    });
    expect(JSON.parse(output.lines.at(-1) as string).unchanged).toHaveLength(2);
    for (const file of files) appendFileSync(file.path, `${file.lines.at(-1)}\n`);
    expect(await sync()).toBe(0);
    const report = JSON.parse(output.lines.at(-1) as string);
    expect(report).toMatchObject({ imported: [], unchanged: [], conflicts: [], failed: [] });
    expect(report.appended).toHaveLength(2);
    // Each session holds its file's lines apart, as the watcher wrote them, and the new line's too.
    const client = createClient({ baseUrl: server.url });
    for (const file of files) {
      const expected = parseImport(file.format, `${file.lines.join("\n")}\n`, { linesApart: true });
      const stored = (await (await client.open(expected.header.id)).getEntries()).filter(
        (entry) => entry.type !== "leaf",
      );
      expect(stored.map(({ seq: _seq, ...entry }) => entry)).toEqual(
        expected.entries.filter((entry) => entry.type !== "leaf"),
      );
    }
    // A file changed before its end conflicts however it is read, and nothing is written.
    const [edited] = files as [(typeof files)[number]];
    const id = parseImport(edited.format, readFileSync(edited.path, "utf8")).header.id;
    const before = await (await client.open(id)).getEntries();
    writeFileSync(
      edited.path,
      readFileSync(edited.path, "utf8").replace(/"text":"[^"]{8}/, '"text":"Edited: '),
    );
    expect(await sync()).toBe(1);
    expect(JSON.parse(output.lines.at(-1) as string).conflicts).toEqual([
      { file: edited.path, id, error: expect.stringContaining("differs from the file") },
    ]);
    expect(await (await client.open(id)).getEntries()).toEqual(before);
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("mirrors a file that starts with a byte order mark, and refuses a line holding a byte that is not UTF-8, sending nothing of it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-files-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const [file] = piFiles(dir, ["marked"]) as [PiFile];
    writeFileSync(file.path, `\uFEFF${readFileSync(file.path, "utf8")}`);
    const watcher = startWatcher(dir, statePath);
    await vi.waitFor(() => expect(watcher.events().map((e) => e.event)).toEqual(["created"]), {
      timeout: 30_000,
    });
    await holds(file);
    // A byte no UTF-8 text holds (0xff) in the text of the next line: refused at that line, not
    // sent with the byte changed into U+FFFD.
    const next = file.lines[file.written] as string;
    const at = next.indexOf('"text":"') + '"text":"'.length;
    appendFileSync(
      file.path,
      Buffer.concat([
        Buffer.from(next.slice(0, at)),
        Buffer.from([0xff]),
        Buffer.from(`${next.slice(at)}\n`),
      ]),
    );
    await vi.waitFor(
      () =>
        expect(watcher.events().at(-1)).toEqual({
          event: "failed",
          file: file.path,
          error: `line ${file.written + 1}: not valid UTF-8`,
        }),
      { timeout: 30_000 },
    );
    await new Promise((done) => setTimeout(done, 300));
    await holds(file);
    await watcher.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("reads a file whose last line stays half written again only once it changes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-files-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const [file] = piFiles(dir, ["a"]) as [PiFile];
    const next = file.lines[file.written] as string;
    appendFileSync(file.path, next.slice(0, 20));
    const reads = () => vi.mocked(readFileSync).mock.calls.filter(([path]) => path === file.path).length;
    const watcher = startWatcher(dir, statePath);
    await vi.waitFor(() => expect(watcher.events().map((e) => e.event)).toEqual(["created"]), {
      timeout: 30_000,
    });
    // Some twenty looks: the file, its size the same, is read once more at most.
    const before = reads();
    await new Promise((done) => setTimeout(done, 1000));
    expect(reads() - before).toBeLessThanOrEqual(1);
    // Its line whole, it is read and sent.
    appendFileSync(file.path, `${next.slice(20)}\n`);
    file.written++;
    await vi.waitFor(() => holds(file), { timeout: 20_000, interval: 100 });
    await watcher.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("says once that a file waits for the service, and goes on with the other files", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-files-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const [a, b, c] = piFiles(dir, ["a", "b", "c"]) as [PiFile, PiFile, PiFile];
    let down = false;
    let failing: string | undefined;
    const watcher = startWatcher(dir, statePath, (request) => {
      if (down) return "down";
      if (failing && new URL(request.url).pathname.includes(failing))
        return Response.json({ error: { code: "internal", message: "boom" } }, { status: 500 });
      return undefined;
    });
    const retrying = () => watcher.events().filter((e) => e.event === "retrying");
    await vi.waitFor(() => expect(watcher.events().filter((e) => e.event === "created")).toHaveLength(3), {
      timeout: 30_000,
    });

    // The service down: the grown file is reported once, however many looks it waits (the files
    // before it, unchanged, make no call that could say the service is back).
    down = true;
    grow(b);
    await vi.waitFor(() => expect(retrying()).toHaveLength(1), { timeout: 20_000 });
    await new Promise((done) => setTimeout(done, 1000));
    expect(retrying()).toHaveLength(1);
    down = false;
    await vi.waitFor(() => holds(b), { timeout: 20_000, interval: 100 });

    // A session that keeps failing holds back its own file only: the files after it go on.
    failing = a.id;
    grow(a);
    grow(b);
    grow(c);
    await vi.waitFor(
      async () => {
        await holds(b);
        await holds(c);
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(retrying().filter((e) => e.file === a.path)).toHaveLength(1);
    failing = undefined;
    await vi.waitFor(() => holds(a), { timeout: 20_000, interval: 100 });
    await watcher.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("records a file's project when the request recording it failed the first time", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-project-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const [file] = piFiles(dir, ["project"]) as [PiFile];
    // The header write that records the project fails, as on a connection lost, until `down` is off.
    let down = true;
    const watcher = startWatcher(dir, statePath, (request) =>
      down && request.method === "PATCH" ? "down" : undefined,
    );
    await vi.waitFor(() => expect(watcher.events().map((e) => e.event)).toContain("retrying"), {
      timeout: 20_000,
    });
    down = false;
    await vi.waitFor(() => expect(watcher.events().map((e) => e.event)).toContain("unchanged"), {
      timeout: 20_000,
    });
    await watcher.stop();
    const header = await createClient({ baseUrl: server.url }).storage(file.id).getHeader();
    // The pi session ran in /Users/badlogic/workspaces/pi-mono: a folder outside any repository here.
    expect(header.metadata.project).toBe("pi-mono");
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("tries again after an error answer that is not the service's, a proxy's page or an edge's 429", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-files-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const [file] = piFiles(dir, ["a"]) as [PiFile];
    let answer: (() => Response) | undefined;
    const watcher = startWatcher(dir, statePath, () => answer?.());
    await vi.waitFor(() => expect(watcher.events().map((e) => e.event)).toContain("created"), {
      timeout: 30_000,
    });
    const answers = [
      () =>
        new Response("<html><body>Request blocked</body></html>", {
          status: 403,
          headers: { "Content-Type": "text/html" },
        }),
      () => new Response("error code: 1015", { status: 429, headers: { "Retry-After": "0" } }),
    ];
    for (const [index, next] of answers.entries()) {
      answer = next;
      grow(file);
      await vi.waitFor(
        () => expect(watcher.events().filter((e) => e.event === "retrying")).toHaveLength(index + 1),
        {
          timeout: 20_000,
        },
      );
      // Once the service answers again, the file is sent without growing.
      answer = undefined;
      await vi.waitFor(() => holds(file), { timeout: 20_000, interval: 100 });
    }
    expect(watcher.events().map((e) => e.event)).not.toContain("failed");
    await watcher.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("goes on past files that are gone or cannot be read", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-files-"));
    const statePath = join(mkdtempSync(join(tmpdir(), "sync-watch-state-")), "state.json");
    const [a, b] = piFiles(dir, ["a", "b"]) as [PiFile, PiFile];
    symlinkSync(join(dir, "missing.jsonl"), join(dir, "dangling.jsonl"));
    symlinkSync(join(dir, "loop.jsonl"), join(dir, "loop.jsonl"));
    // The next lines of `a` are refused, and both files deleted while the answer comes back.
    let deleting = false;
    const watcher = startWatcher(dir, statePath, (request) => {
      if (!deleting || !new URL(request.url).pathname.includes(a.id)) return undefined;
      rmSync(a.path);
      rmSync(b.path);
      return Response.json({ error: { code: "invalid_request", message: "refused" } }, { status: 400 });
    });
    await vi.waitFor(() => expect(watcher.events().filter((e) => e.event === "created")).toHaveLength(2), {
      timeout: 30_000,
    });
    deleting = true;
    grow(a);
    grow(b);
    await vi.waitFor(() => expect(watcher.events().map((e) => e.event)).toContain("failed"), {
      timeout: 20_000,
    });
    const [c] = piFiles(dir, ["c"]) as [PiFile];
    await vi.waitFor(() => holds(c), { timeout: 20_000, interval: 100 });
    // The watcher says what it did once the service answered it: looked at until it has.
    await vi.waitFor(
      () => expect(watcher.events().map((e) => e.event)).toEqual(["created", "created", "failed", "created"]),
      { timeout: 10_000, interval: 100 },
    );
    await watcher.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("waits between looks without piling listeners on its stop signal", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sync-watch-idle-"));
    const stop = new AbortController();
    const done = watchFiles(createClient({ baseUrl: server.url }), dir, captured(), {
      intervalMs: 10,
      json: true,
      signal: stop.signal,
      statePath: join(dir, "state.json"),
    });
    // Some fifty looks at an empty folder: one wait at a time listens for the stop.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(getEventListeners(stop.signal, "abort").length).toBeLessThanOrEqual(1);
    stop.abort();
    expect(await done).toBe(0);
    expect(getEventListeners(stop.signal, "abort")).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses what --watch cannot do, before anything is sent", async () => {
    const output = captured();
    const errors: string[] = [];
    const run = (args: string[]) =>
      main(args, { ...output, err: (text) => errors.push(text) }, { CF_SESSIONS_URL: server.url });
    expect(await run(["sync", "--watch", "--id", "x", tmpdir()])).toBe(2);
    expect(await run(["sync", "--watch", "--interval", "0", tmpdir()])).toBe(2);
    const state = join(mkdtempSync(join(tmpdir(), "sync-watch-usage-")), "state.json");
    expect(await run(["sync", "--watch", "--format", "pie", "--state", state, tmpdir()])).toBe(2);
    expect(errors.join("")).toMatch(
      /--id applies to one file[\s\S]*--interval is 10 to 60000[\s\S]*--format is native, pi, claude-code or codex, not pie/,
    );
    expect(existsSync(state)).toBe(false);
  });
});
