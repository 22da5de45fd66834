import { constants } from "node:buffer";
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../src/client";
import type { AgentMessage } from "../../src/core/messages";
import { assistant, toolResult, user } from "../conformance/fixtures";
import type { DevServer } from "../support/dev-server";
import { freePort, startDevServer } from "../support/dev-server";

/*
 * The command line against the real service (wrangler dev): import a folder of pi sessions, then
 * look at what was imported the ways a person would.
 */

const root = resolve(import.meta.dirname, "../..");
let server: DevServer;
let folder: string;

type Pi = Omit<SessionManager, "appendMessage"> & { appendMessage(message: AgentMessage): string };

function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(root, "dist/cli.js"), ...args],
      { env: { ...process.env, CF_SESSIONS_URL: server.url, ...env }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) =>
        done({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** A pi session file as pi writes it. */
function writePiSession(dir: string, build: (pi: Pi) => void): { id: string; path: string } {
  const manager = SessionManager.inMemory("/home/me/project");
  build(manager as unknown as Pi);
  const header = manager.getHeader();
  const path = join(dir, `${header?.id}.jsonl`);
  writeFileSync(path, `${[header, ...manager.getEntries()].map((e) => JSON.stringify(e)).join("\n")}\n`);
  return { id: header?.id as string, path };
}

let branched: { id: string };
let toolSession: { id: string };
let torn: { id: string; path: string };

beforeAll(async () => {
  server = await startDevServer();
  folder = mkdtempSync(join(tmpdir(), "pi-sessions-"));
  mkdirSync(join(folder, "--home-me-project--"));
  branched = writePiSession(join(folder, "--home-me-project--"), (pi) => {
    const q = pi.appendMessage(user("what is the plan?"));
    const first = pi.appendMessage(assistant("plan A"));
    pi.appendLabelChange(first, "first idea");
    pi.branch(q);
    pi.appendModelChange("anthropic", "claude-opus");
    pi.appendMessage(assistant("plan B"));
  });
  toolSession = writePiSession(folder, (pi) => {
    pi.appendMessage(user("read the config"));
    pi.appendMessage(
      assistant("reading", { toolCalls: [{ id: "c1", name: "read", arguments: { path: "config.json" } }] }),
    );
    pi.appendMessage(toolResult("c1", "read", "{}"));
  });
  writeFileSync(
    join(folder, "broken.jsonl"),
    '{"type":"session","version":3,"id":"broken-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n{"type":"message"\n{"type":"custom","id":"c1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","customType":"x"}\n',
  );
  // A pi process that stopped mid-write: the last line is torn.
  torn = writePiSession(folder, (pi) => {
    pi.appendMessage(user("before the crash"));
  });
  writeFileSync(torn.path, `${readFileSync(torn.path, "utf8")}{"type":"message","id":"ab`);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe("command line", () => {
  it("imports a folder of pi sessions with a summary, and skips them the second time", async () => {
    const first = await cli(["import", folder, "--format", "pi"]);
    expect(first.stdout).toContain("imported 3, skipped 0 (already there), failed 1");
    expect(first.stderr).toMatch(/failed: .*broken\.jsonl: line 2:/);
    expect(first.stderr).toContain(`warning: ${torn.path}: line 3: the last line was cut short`);
    expect(first.code).toBe(1);
    const again = await cli(["import", folder, "--json"]);
    expect(JSON.parse(again.stdout)).toMatchObject({
      imported: [],
      skipped: [branched.id, toolSession.id, torn.id].sort(),
      failed: [{}],
      warnings: [],
    });
  });

  it("prints one progress line per file where stderr is no terminal", async () => {
    const dir = mkdtempSync(join(folder, "progress-"));
    const one = writePiSession(dir, (pi) => void pi.appendMessage(user("first")));
    const two = writePiSession(dir, (pi) => void pi.appendMessage(user("second")));
    const [a, b] = [one, two].sort((x, y) => x.path.localeCompare(y.path));
    const first = await cli(["import", dir]);
    expect(first.stderr).toBe(`[1/2] imported ${a?.id}: ${a?.path}\n[2/2] imported ${b?.id}: ${b?.path}\n`);
    const again = await cli(["import", dir, "--progress", "plain"]);
    expect(again.stderr).toContain(`[1/2] skipped ${a?.id} (already there): ${a?.path}\n`);
    expect(again.stderr).toContain("cf-sessions sync adds what their files gained since");
    expect((await cli(["import", dir, "--progress", "none"])).stderr).toBe("");
    expect((await cli(["import", dir, "--progress", "fancy"])).stderr).toBe(
      "cf-sessions: --progress is bar, plain or none, not fancy\n",
    );
  });

  it("syncs a folder pi keeps writing: new files imported, grown ones appended, edited ones refused", async () => {
    const dir = mkdtempSync(join(folder, "sync-"));
    const grows = writePiSession(dir, (pi) => {
      pi.appendMessage(user("step one"));
      pi.appendMessage(assistant("done one"));
    });
    const edited = writePiSession(dir, (pi) => void pi.appendMessage(user("as first written")));
    const first = await cli(["sync", dir, "--progress", "none"]);
    expect(first.stdout).toBe("imported 2, appended 0 (0 entries), unchanged 0, conflicts 0, failed 0\n");
    expect(first.code).toBe(0);

    const last = JSON.parse(readFileSync(grows.path, "utf8").trim().split("\n").at(-1) as string);
    const next = (id: string, parentId: string, text: string) =>
      `${JSON.stringify({ type: "message", id, parentId, timestamp: new Date().toISOString(), message: user(text) })}\n`;
    appendFileSync(
      grows.path,
      next("a1000001", last.id, "step two") + next("a1000002", "a1000001", "step three"),
    );
    writeFileSync(edited.path, readFileSync(edited.path, "utf8").replace("as first written", "rewritten"));
    const before = JSON.parse((await cli(["show", edited.id, "--json"])).stdout);

    const second = await cli(["sync", dir, "--json"]);
    expect(second.code).toBe(1);
    expect(JSON.parse(second.stdout)).toEqual({
      imported: [],
      appended: [{ id: grows.id, entries: 2 }],
      unchanged: [],
      empty: [],
      conflicts: [
        { file: edited.path, id: edited.id, error: expect.stringContaining("nothing was written") },
      ],
      failed: [],
      warnings: [],
    });
    expect(second.stderr).toContain(`appended 2 to ${grows.id}: ${grows.path}`);
    expect(second.stderr).toContain(`conflict ${edited.id}: ${edited.path}`);
    expect(JSON.parse((await cli(["show", edited.id, "--json"])).stdout)).toEqual(before);
    const context = await cli(["context", grows.id]);
    expect(context.stdout).toContain("user: step three");

    rmSync(edited.path);
    const third = await cli(["sync", dir, "--progress", "none"]);
    expect(third.stdout).toBe("imported 0, appended 0 (0 entries), unchanged 1, conflicts 0, failed 0\n");
    expect(third.code).toBe(0);
  });

  it("imports and syncs a pi file that starts with a byte order mark, and refuses one holding a byte that is not UTF-8 at its line, writing nothing", async () => {
    const dir = mkdtempSync(join(folder, "encoding-"));
    const marked = writePiSession(dir, (pi) => {
      pi.appendMessage(user("written by an editor that marks its files"));
      pi.appendMessage(assistant("read all the same"));
    });
    writeFileSync(marked.path, `\uFEFF${readFileSync(marked.path, "utf8")}`);
    const imported = await cli(["import", marked.path, "--json"]);
    expect(JSON.parse(imported.stdout)).toMatchObject({ imported: [marked.id], failed: [] });
    expect(imported.code).toBe(0);
    expect((await cli(["context", marked.id])).stdout).toContain(
      "user: written by an editor that marks its files",
    );
    const named = await cli(["import", marked.path, "--format", "pi", "--json"]);
    expect(JSON.parse(named.stdout)).toMatchObject({ skipped: [marked.id], failed: [] });
    const synced = await cli(["sync", marked.path, "--json"]);
    expect(JSON.parse(synced.stdout)).toMatchObject({ unchanged: [marked.id], failed: [] });

    // A byte no UTF-8 text holds (0xff), in the third line: the file is refused there, not sent
    // with the byte changed into U+FFFD.
    const broken = writePiSession(dir, (pi) => {
      pi.appendMessage(user("caf\u00e9"));
      pi.appendMessage(assistant("noted"));
    });
    const lines = readFileSync(broken.path);
    const at = lines.indexOf(Buffer.from("\u00e9"));
    writeFileSync(
      broken.path,
      Buffer.concat([lines.subarray(0, at), Buffer.from([0xff]), lines.subarray(at + 2)]),
    );
    for (const command of [["import"], ["import", "--format", "pi"], ["sync"]]) {
      const refused = await cli([...command, broken.path, "--json"]);
      expect(JSON.parse(refused.stdout)).toMatchObject({
        failed: [{ file: broken.path, error: "line 2: not valid UTF-8" }],
      });
      expect(refused.code).toBe(1);
      expect((await cli(["show", broken.id])).stderr).toMatch(/not_found/);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("imports a Claude Code projects tree and a Codex sessions tree, and skips them the second time", async () => {
    const fixtures = join(root, "test/fixtures");
    const projects = join(folder, "claude/projects");
    mkdirSync(join(projects, "-path-to-Demo/5c0375b4-57a5-4f26-b12d-d022ee4e51b7/subagents"), {
      recursive: true,
    });
    mkdirSync(join(projects, "-tmp-workspace"), { recursive: true });
    copyFileSync(
      join(fixtures, "claude-code/1.0.98-parallel-tools.jsonl"),
      join(projects, "-path-to-Demo/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"),
    );
    const sidechains = readFileSync(join(fixtures, "claude-code/1.0.108-sidechains.jsonl"), "utf8");
    // Cut short as by a crash while Claude Code wrote its last line.
    writeFileSync(
      join(projects, "-path-to-Demo/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"),
      `${sidechains}{"parentUuid":`,
    );
    writeFileSync(
      join(projects, "-path-to-Demo/5c0375b4-57a5-4f26-b12d-d022ee4e51b7/subagents/agent-a1b2c3.jsonl"),
      [
        {
          type: "user",
          uuid: "s1",
          parentUuid: null,
          isSidechain: true,
          agentId: "a1b2c3",
          message: { role: "user", content: "explore" },
        },
        {
          type: "assistant",
          uuid: "s2",
          parentUuid: "s1",
          isSidechain: true,
          agentId: "a1b2c3",
          message: {
            id: "m1",
            role: "assistant",
            model: "claude-haiku-4-5",
            content: [{ type: "text", text: "found" }],
          },
        },
      ]
        .map((l) =>
          JSON.stringify({
            ...l,
            sessionId: "5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
            timestamp: "2025-09-03T00:47:19.293Z",
          }),
        )
        .join("\n"),
    );
    copyFileSync(
      join(fixtures, "claude-code/2.1.152-redacted.jsonl"),
      join(projects, "-tmp-workspace/06090cb1-3e64-433a-bc7e-a621c0f596d2.jsonl"),
    );
    // Files Claude Code writes beside its sessions, naming none: file snapshots, session titles.
    const snapshots = join(projects, "-path-to-Demo/0b7e1c1a-5d2f-4c3e-9a41-6f0d2c8e7b10.jsonl");
    writeFileSync(
      snapshots,
      `${JSON.stringify({
        type: "file-history-snapshot",
        messageId: "m-1",
        snapshot: { messageId: "m-1", trackedFileBackups: {}, timestamp: "2026-02-10T21:54:53.209Z" },
        isSnapshotUpdate: false,
      })}\n`,
    );
    const titles = join(projects, "-tmp-workspace/3f9a2b7c-1e4d-4b8a-8c6f-2d5e9a0b1c3d.jsonl");
    writeFileSync(
      titles,
      `${[
        { type: "summary", summary: "Parser work", leafUuid: "a1b2c3d4-0000-4000-8000-000000000001" },
        { type: "summary", summary: "Fixing tests", leafUuid: "a1b2c3d4-0000-4000-8000-000000000002" },
      ]
        .map((l) => JSON.stringify(l))
        .join("\n")}\n`,
    );
    const first = await cli(["import", projects, "--format", "claude-code"]);
    expect(first.stdout).toContain(
      "imported 4, skipped 0 (already there), failed 0, empty 2 (no conversation)",
    );
    expect(first.stderr).toMatch(
      /warning: .*5c0375b4-57a5-4f26-b12d-d022ee4e51b7\.jsonl: line 54: torn last line/,
    );
    expect(first.stderr).toContain(`skipped (no conversation): ${snapshots}`);
    expect(first.code).toBe(0);
    const again = JSON.parse((await cli(["import", projects, "--json"])).stdout);
    expect(again.imported).toEqual([]);
    expect(again.failed).toEqual([]);
    expect(again.empty).toEqual([snapshots, titles]);
    // Given alone, such a file is refused, saying why, and nothing is written.
    const ids = async () =>
      (JSON.parse((await cli(["list", "--json", "--all"])).stdout) as Array<{ id: string }>).map((s) => s.id);
    const listed = await ids();
    for (const alone of [snapshots, titles]) {
      const refused = await cli(["import", alone, "--json"]);
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout)).toMatchObject({
        imported: [],
        failed: [{ file: alone, error: expect.stringContaining("no conversation in the file") }],
      });
    }
    expect(await ids()).toEqual(listed);
    expect(again.skipped.sort()).toEqual(
      [
        "claude-code-06090cb1-3e64-433a-bc7e-a621c0f596d2",
        "claude-code-1af7fc5e-8455-4414-9ccd-011d40f70b2a",
        "claude-code-5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
        "claude-code-5c0375b4-57a5-4f26-b12d-d022ee4e51b7-agent-a1b2c3",
      ].sort(),
    );

    const sessions = join(folder, "codex/sessions");
    mkdirSync(join(sessions, "2025/11/17"), { recursive: true });
    mkdirSync(join(sessions, "2026/06/05"), { recursive: true });
    copyFileSync(
      join(fixtures, "codex/0.58.0-shell-calls.jsonl"),
      join(sessions, "2025/11/17/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"),
    );
    copyFileSync(
      join(fixtures, "codex/0.135.0-redacted.jsonl"),
      join(sessions, "2026/06/05/rollout-2026-06-05T10-28-20-019e9625-802f-7e91-840a-cfe88d14117a.jsonl"),
    );
    const codex = JSON.parse((await cli(["import", sessions, "--json"])).stdout);
    expect(codex.imported.sort()).toEqual([
      "codex-019a93b9-f380-7600-98ff-940e6b99603c",
      "codex-019e9625-802f-7e91-840a-cfe88d14117a",
    ]);
    const context = await cli(["context", "codex-019a93b9-f380-7600-98ff-940e6b99603c"]);
    expect(context.stdout).toContain("model: openai/gpt-5.1-codex");
    expect(context.stdout).toContain("thinking: high");
    expect((await cli(["import", sessions])).stdout).toContain(
      "imported 0, skipped 2 (already there), failed 0",
    );
  });

  it("lists sessions, as text and as JSON", async () => {
    const listed = await cli(["list", "--json", "--all"]);
    expect(listed.code).toBe(0);
    const ids = (JSON.parse(listed.stdout) as Array<{ id: string }>).map((s) => s.id);
    expect(ids).toEqual(expect.arrayContaining([branched.id, toolSession.id]));
    const text = await cli(["list"]);
    expect(text.stdout).toContain(branched.id);
    expect(text.stdout).toContain("what is the plan?");
    const codex = await cli(["list", "--json", "--all", "--prefix", "codex-"]);
    const codexIds = (JSON.parse(codex.stdout) as Array<{ id: string }>).map((s) => s.id);
    expect(codexIds.length).toBeGreaterThanOrEqual(2);
    expect(codexIds.every((id) => id.startsWith("codex-"))).toBe(true);
    const refused = await cli(["list", "--prefix", "no spaces"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("prefix");
  });

  it("draws the tree with its branches, the leaf and labels marked", async () => {
    const { stdout, code } = await cli(["tree", branched.id]);
    expect(code).toBe(0);
    const lines = stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^user \S+$/);
    expect(lines.some((l) => /^├─ assistant \S+ \[first idea\]$/.test(l))).toBe(true);
    expect(lines.some((l) => /^└─ model_change \S+$/.test(l))).toBe(true);
    expect(lines.at(-1)).toMatch(/^ {3}assistant \S+ {2}← leaf$/);
  });

  it("writes as JSON the tree of a chain deeper than JSON.stringify goes", async () => {
    const id = `cli-chain-${Date.now()}`;
    const created = await fetch(`${server.url}/v1/sessions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id }),
    });
    expect(created.status).toBe(201);
    for (let batch = 0; batch < 5; batch++) {
      const appended = await fetch(`${server.url}/v1/sessions/${id}/entries`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          entries: Array.from({ length: 1000 }, (_, i) => ({
            type: "message",
            message: { role: "user", content: `m${batch * 1000 + i}`, timestamp: 1 },
          })),
        }),
      });
      expect(appended.status).toBe(201);
    }
    const { stdout, stderr, code } = await cli(["tree", id, "--json"]);
    expect(code, stderr).toBe(0);
    const { leafId, roots } = JSON.parse(stdout);
    let depth = 0;
    let last: { id: string } | undefined;
    for (let node = roots[0]; node; node = node.children[0]) {
      depth++;
      last = node;
    }
    expect(depth).toBe(5000);
    expect(last?.id).toBe(leafId);
  });

  it("prints the context a model gets, for the leaf or any entry", async () => {
    const text = await cli(["context", branched.id]);
    // What the command said on stderr, should it fail.
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("model: openai/gpt-test");
    expect(text.stdout).toContain("assistant: plan B");
    expect(text.stdout).not.toContain("plan A");
    const entries = JSON.parse((await cli(["show", branched.id, "--json"])).stdout) as Array<{
      id: string;
      message?: { content: unknown };
    }>;
    const planA = entries.find((e) => JSON.stringify(e.message?.content ?? "").includes("plan A"));
    const other = JSON.parse(
      (await cli(["context", branched.id, "--leaf", planA?.id as string, "--json"])).stdout,
    );
    expect(other.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
    expect(JSON.stringify(other.messages)).toContain("plan A");
  });

  it("shows entries, exports, forks and deletes", async () => {
    const shown = await cli(["show", toolSession.id]);
    expect(shown.stdout).toMatch(/toolResult/);
    const out = join(folder, "exported.jsonl");
    expect((await cli(["export", toolSession.id, "--format", "pi", "--out", out])).code).toBe(0);
    const lines = readFileSync(out, "utf8").trim().split("\n");
    expect(JSON.parse(lines[0] as string)).toMatchObject({ type: "session", version: 3, id: toolSession.id });
    expect(lines.length).toBe(4);
    // As the transcript Claude Code writes, and the rollout Codex writes, for its conversation.
    const asLines = (text: string) =>
      text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { type: string; message?: { content: unknown } });
    const transcript = asLines((await cli(["export", toolSession.id, "--format", "claude-code"])).stdout);
    expect(transcript[0]).toMatchObject({ type: "user", message: { content: "read the config" } });
    expect(JSON.stringify(transcript)).toContain('"type":"tool_use"');
    const rollout = asLines((await cli(["export", toolSession.id, "--format", "codex"])).stdout);
    expect(rollout[0]?.type).toBe("session_meta");
    expect(JSON.stringify(rollout)).toContain('"type":"function_call_output"');
    const entries = JSON.parse((await cli(["show", toolSession.id, "--json"])).stdout) as Array<{
      id: string;
    }>;
    const forked = await cli([
      "fork",
      toolSession.id,
      entries[1]?.id as string,
      "--id",
      "cli-fork",
      "--json",
    ]);
    expect(JSON.parse(forked.stdout)).toMatchObject({
      id: "cli-fork",
      entryCount: 2,
      parentSession: { id: toolSession.id },
    });
    expect((await cli(["rm", "cli-fork"])).stdout).toBe("deleted cli-fork\n");
  });

  it("searches the tenant and a session, and deletes, restores and purges", async () => {
    // The tenant's search reads the directory, which hears of a session's text by its report.
    const found = (tenant: { stdout: string }) =>
      JSON.parse(tenant.stdout).map((r: { session: { id: string } }) => r.session.id);
    const reported = Date.now() + 15_000;
    let tenant = await cli(["search", "plan", "--json"]);
    while (tenant.code === 0 && !found(tenant).includes(branched.id) && Date.now() < reported) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      tenant = await cli(["search", "plan", "--json"]);
    }
    expect(tenant.code).toBe(0);
    expect(found(tenant)).toContain(branched.id);
    const text = await cli(["search", "plan"]);
    expect(text.stdout).toContain(branched.id);
    expect(text.stdout).toMatch(/text: .*«plan»/);
    const hits = await cli(["search", "plan", "--session", branched.id]);
    expect(hits.code).toBe(0);
    expect(hits.stdout).toMatch(/assistant \(off branch\) {2}«plan» A/);
    expect(hits.stdout).toMatch(/assistant {2}«plan» B/);
    expect((await cli(["search", "!!!"])).code).toBe(1);

    expect((await cli(["rm", toolSession.id])).stdout).toBe(`deleted ${toolSession.id}\n`);
    expect((await cli(["show", toolSession.id])).code).toBe(1);
    expect((await cli(["undelete", toolSession.id])).stdout).toBe(`restored ${toolSession.id} (3 entries)\n`);
    expect((await cli(["show", toolSession.id])).code).toBe(0);
  });

  it("backs the tenant up into a folder, resumes a cut backup, and restores it", async () => {
    // Two streams beside the sessions, one of them a path with a folder and a space.
    const streamPaths = ["backup-notes", "backup/with space"];
    for (const path of streamPaths) {
      const url = `${server.url}/v1/stream/${encodeURI(path)}`;
      const made = await fetch(url, {
        method: "PUT",
        headers: { "Content-Type": "text/plain" },
        body: "one ",
      });
      expect(made.status).toBe(201);
      expect(
        (await fetch(url, { method: "POST", headers: { "Content-Type": "text/plain" }, body: "two" })).status,
      ).toBe(204);
    }
    const dir = join(folder, "backup");
    const first = await cli(["backup", dir, "--json"]);
    expect(first.code).toBe(0);
    const state = JSON.parse(first.stdout);
    expect(state).toMatchObject({ complete: true, failed: [], resumed: false, streams: 2 });
    expect(readdirSync(join(dir, "streams")).sort()).toEqual(
      streamPaths.map((path) => `${encodeURIComponent(path)}.ndjson`).sort(),
    );
    const listed = JSON.parse((await cli(["list", "--json", "--all"])).stdout) as Array<{ id: string }>;
    expect(state.sessions).toBe(listed.length);
    const files = readdirSync(join(dir, "sessions")).sort();
    expect(files).toEqual(listed.map((s) => `${s.id}.ndjson`).sort());
    const exported = await cli(["export", branched.id]);
    expect(readFileSync(join(dir, "sessions", `${branched.id}.ndjson`), "utf8")).toBe(`${exported.stdout}`);
    expect((await cli(["backup", dir])).stdout).toMatch(/is complete already/);

    // Cut after the first two sessions: the backup resumes after the second one's cursor.
    const stream = await (await fetch(`${server.url}/v1/export`)).text();
    const lines = stream
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    const cursors = lines.filter((l) => l.type === "cursor").map((l) => l.cursor);
    const order = lines.filter((l) => l.type === "session").map((l) => l.id as string);
    const cut = join(folder, "cut");
    mkdirSync(join(cut, "sessions"), { recursive: true });
    for (const id of order.slice(0, 2))
      copyFileSync(join(dir, "sessions", `${id}.ndjson`), join(cut, "sessions", `${id}.ndjson`));
    writeFileSync(
      join(cut, "backup.json"),
      JSON.stringify({ ...state, cursor: cursors[1], sessions: 2, complete: false }),
    );
    const resumed = await cli(["backup", cut, "--json"]);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      complete: true,
      resumed: true,
      written: order.length - 2 + streamPaths.length,
    });
    expect(readdirSync(join(cut, "sessions")).sort()).toEqual(files);

    // Everything is there already: a restore skips it all.
    const again = await cli(["restore", dir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(
      `restored 0, skipped ${files.length} (already there), refused 0, failed 0; streams: restored 0, skipped 2, refused 0, failed 0\n`,
    );
    const refused = await cli(["restore", dir, "--existing", "refuse"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^refused: /m);
    // Gone for good, then back from the backup, as it was.
    expect((await cli(["rm", branched.id, "--purge"])).stdout).toBe(`purged ${branched.id}\n`);
    const back = await cli(["restore", dir, "--json"]);
    expect(JSON.parse(back.stdout)).toMatchObject({ imported: 1, skipped: files.length - 1, failed: 0 });
    expect((await cli(["export", branched.id])).stdout).toBe(exported.stdout);
    // A stream deleted comes back from the backup with its appends.
    const gone = `${server.url}/v1/stream/${encodeURI("backup/with space")}`;
    expect((await fetch(gone, { method: "DELETE" })).status).toBe(204);
    const streamBack = JSON.parse((await cli(["restore", dir, "--json"])).stdout);
    expect(streamBack.streams).toMatchObject({ imported: 1, skipped: 1, failed: 0 });
    const reread = await fetch(`${gone}?offset=-1`);
    expect(await reread.text()).toBe("one two");
    expect(reread.headers.get("Stream-Next-Offset")).toBe("0000000000000002_0000000000000007");
    // A file saved from GET /v1/export restores too.
    const file = join(folder, "tenant.ndjson");
    writeFileSync(file, stream);
    const fromFile = await cli(["restore", file]);
    expect(fromFile.stdout).toBe(
      `restored 0, skipped ${order.length} (already there), refused 0, failed 0; streams: restored 0, skipped 2, refused 0, failed 0\n`,
    );
    expect(fromFile.stderr).not.toContain("warning");
    // A file whose end line counts other sessions than it holds says so.
    writeFileSync(file, stream.replace(/{"type":"end","sessions":\d+/, '{"type":"end","sessions":999'));
    const miscounted = await cli(["restore", file]);
    expect(miscounted.code).toBe(0);
    expect(miscounted.stderr).toMatch(
      new RegExp(
        `^warning: line \\d+: the end line counts 999 sessions; the file holds ${order.length} complete ones$`,
        "m",
      ),
    );
  });

  it("restores a file cut inside a session without that session, and says the file has no end line", async () => {
    const stream = await (await fetch(`${server.url}/v1/export`)).text();
    const lines = stream.trim().split("\n");
    const exported = await cli(["export", toolSession.id]);
    // Cut between two entry lines of the session: its header and first entry, no cursor line.
    const header = lines.findIndex(
      (line) => line.includes(`"type":"session"`) && line.includes(toolSession.id),
    );
    const cut = join(folder, "tenant-cut.ndjson");
    writeFileSync(cut, `${lines.slice(0, header + 2).join("\n")}\n`);
    expect((await cli(["rm", toolSession.id, "--purge"])).stdout).toBe(`purged ${toolSession.id}\n`);
    const restored = await cli(["restore", cut]);
    expect(restored.code).toBe(1);
    expect(restored.stdout).toMatch(/, failed 1(;|\n)/);
    expect(restored.stderr).toMatch(
      new RegExp(`^failed: ${toolSession.id}: the export was cut short in this session`, "m"),
    );
    expect(restored.stderr).toMatch(
      new RegExp(`^warning: line ${header + 2}: the file has no end line: it was cut short`, "m"),
    );
    expect((await cli(["show", toolSession.id])).code).toBe(1);
    // The whole file brings it back as it was.
    const whole = join(folder, "tenant-whole.ndjson");
    writeFileSync(whole, stream);
    expect(JSON.parse((await cli(["restore", whole, "--json"])).stdout)).toMatchObject({
      imported: 1,
      failed: 0,
    });
    expect((await cli(["export", toolSession.id])).stdout).toBe(exported.stdout);

    // Cut right after a session's cursor line: that session is restored whole, the rest is not,
    // and the restore fails for what it could not reach.
    const cursor = lines.findIndex((line, n) => n > header && line.startsWith('{"type":"cursor"'));
    const between = join(folder, "tenant-between.ndjson");
    writeFileSync(between, `${lines.slice(0, cursor + 1).join("\n")}\n`);
    expect((await cli(["rm", toolSession.id, "--purge"])).code).toBe(0);
    const partly = await cli(["restore", between, "--json"]);
    expect(partly.code).toBe(1);
    expect(JSON.parse(partly.stdout)).toMatchObject({ imported: 1, failed: 0, cutShort: true });
    expect(partly.stderr).toMatch(/^warning: line \d+: the file has no end line: it was cut short/m);
    expect((await cli(["export", toolSession.id])).stdout).toBe(exported.stdout);
  });

  it("fails a backup in one line when a file cannot be written, and resumes it after", async () => {
    const dir = join(folder, "unwritable");
    mkdirSync(join(dir, "sessions"), { recursive: true });
    const listed = JSON.parse((await cli(["list", "--json", "--all"])).stdout) as Array<{ id: string }>;
    // No session's file can be opened: each is a link into a folder that does not exist.
    const partials = listed.map(({ id }) => join(dir, "sessions", `${id}.ndjson.partial`));
    for (const partial of partials) symlinkSync(join(dir, "missing", "file"), partial);
    const failed = await cli(["backup", dir]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(
      /^cf-sessions: ENOENT: no such file or directory, open '.*\.ndjson\.partial'\n$/,
    );
    expect(readdirSync(join(dir, "sessions")).filter((name) => name.endsWith(".ndjson"))).toEqual([]);
    for (const partial of partials) rmSync(partial, { force: true });
    const resumed = await cli(["backup", dir, "--json"]);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ complete: true, sessions: listed.length });
  });

  it("reads again the sessions a backup could not read, and forgets them once read", async () => {
    const stamp = Date.now();
    const id = `backup-retried-${stamp}`;
    const made = await fetch(`${server.url}/v1/sessions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id }),
    });
    expect(made.status).toBe(201);
    const exported = (await cli(["export", id])).stdout;
    const error = { code: "internal", message: "boom" };
    const state = {
      format: "cf-tenant",
      version: 1,
      cursor: null,
      sessions: 0,
      streams: 0,
      startedAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
    };

    // A complete backup: the session is read on its own, one deleted since is forgotten, and a
    // stream waits for a new backup.
    const complete = join(folder, "backup-retried");
    mkdirSync(join(complete, "sessions"), { recursive: true });
    const stream = { id: `backup-retried-stream-${stamp}`, error, stream: true };
    writeFileSync(
      join(complete, "backup.json"),
      JSON.stringify({
        ...state,
        complete: true,
        failed: [{ id, error }, { id: `backup-gone-${stamp}`, error }, stream],
      }),
    );
    const retried = await cli(["backup", complete, "--json"]);
    expect(JSON.parse(retried.stdout)).toMatchObject({
      complete: true,
      sessions: 1,
      written: 1,
      failed: [stream],
    });
    expect(readFileSync(join(complete, "sessions", `${id}.ndjson`), "utf8")).toBe(exported);
    expect(JSON.parse(readFileSync(join(complete, "backup.json"), "utf8")).failed).toEqual([stream]);

    // A backup resumed before the session: read whole with the others, it is no longer listed.
    const resumed = join(folder, "backup-retried-resumed");
    mkdirSync(join(resumed, "sessions"), { recursive: true });
    writeFileSync(
      join(resumed, "backup.json"),
      JSON.stringify({ ...state, complete: false, failed: [{ id, error }] }),
    );
    const again = await cli(["backup", resumed, "--json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ complete: true, failed: [] });
    expect(readFileSync(join(resumed, "sessions", `${id}.ndjson`), "utf8")).toBe(exported);
    expect((await cli(["rm", id, "--purge"])).code).toBe(0);
    rmSync(complete, { recursive: true, force: true });
    rmSync(resumed, { recursive: true, force: true });
  });

  it("backs up a stream whose path is too long for a file name and ids that differ only in case, and restores them", async () => {
    // 600 characters, each slash percent-encoded in a file name: over the 255 bytes a name may have.
    const longPath = `long/${"segment/".repeat(74)}end`;
    const longUrl = `${server.url}/v1/stream/${encodeURI(longPath)}`;
    const made = await fetch(longUrl, {
      method: "PUT",
      headers: { "Content-Type": "text/plain" },
      body: "far",
    });
    expect(made.status).toBe(201);
    const twins = ["Case-Twin", "case-twin"];
    for (const id of twins) {
      const created = await fetch(`${server.url}/v1/sessions`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id, name: id }),
      });
      expect(created.status).toBe(201);
    }
    const dir = join(folder, "backup-names");
    const backedUp = await cli(["backup", dir, "--json"]);
    expect(backedUp.stderr).toBe("");
    expect(JSON.parse(backedUp.stdout)).toMatchObject({ complete: true, failed: [] });
    // Each name fits, and no two names are one where the file system ignores case.
    for (const of of ["sessions", "streams"]) {
      const names = readdirSync(join(dir, of));
      for (const name of names) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(240);
      expect(new Set(names.map((name) => name.toLowerCase())).size).toBe(names.length);
    }
    const exported = await Promise.all(twins.map(async (id) => (await cli(["export", id])).stdout));

    // A file named as backups were before (its id as it is) is restored all the same.
    const [older] = readdirSync(join(dir, "sessions")).filter((name) =>
      readFileSync(join(dir, "sessions", name), "utf8").includes('"id":"Case-Twin"'),
    );
    renameSync(join(dir, "sessions", older as string), join(dir, "sessions", "Case-Twin.ndjson"));

    expect((await fetch(longUrl, { method: "DELETE" })).status).toBe(204);
    for (const id of twins) expect((await cli(["rm", id, "--purge"])).code).toBe(0);
    const restored = JSON.parse((await cli(["restore", dir, "--json"])).stdout);
    expect(restored).toMatchObject({ imported: 2, failed: 0, streams: { imported: 1, failed: 0 } });
    expect(await (await fetch(`${longUrl}?offset=-1`)).text()).toBe("far");
    for (const [i, id] of twins.entries()) expect((await cli(["export", id])).stdout).toBe(exported[i]);

    expect((await fetch(longUrl, { method: "DELETE" })).status).toBe(204);
    for (const id of twins) expect((await cli(["rm", id, "--purge"])).code).toBe(0);
  });

  it("restores the rest of a backup past a session with a line the service refuses and a file too large to send, sending neither", async () => {
    const stamp = Date.now();
    const [a, big, huge, d] = ["a", "b", "c", "d"].map((name) => `restore-past-${name}-${stamp}`) as [
      string,
      string,
      string,
      string,
    ];
    const stream = `restore-past-${stamp}`;
    const header = (id: string) =>
      JSON.stringify({
        type: "session",
        format: "cf-session",
        version: 1,
        id,
        createdAt: "2026-01-01T00:00:00.000Z",
      });
    const entry = (id: string, text: string) =>
      JSON.stringify({
        type: "custom",
        id,
        parentId: null,
        timestamp: "2026-01-01T00:00:01.000Z",
        customType: "note",
        data: { text },
      });
    // Over the 17 MiB a line of an import may hold, in characters of two bytes each.
    const overlong = entry("c2", "\u00e9".repeat(9 * 1024 * 1024));
    const dir = join(folder, "backup-past-failures");
    mkdirSync(join(dir, "sessions"), { recursive: true });
    mkdirSync(join(dir, "streams"));
    for (const id of [a, d])
      writeFileSync(join(dir, "sessions", `${id}.ndjson`), `${header(id)}\n${entry("c1", "kept")}\n`);
    const bigFile = join(dir, "sessions", `${big}.ndjson`);
    writeFileSync(bigFile, `${header(big)}\n${entry("c1", "kept")}\n${overlong}\n`);
    // Over the longest string a restore can read it into (a sparse file: no room taken on disk).
    const hugeFile = join(dir, "sessions", `${huge}.ndjson`);
    writeFileSync(hugeFile, `${header(huge)}\n`);
    truncateSync(hugeFile, 600 * 1024 * 1024);
    writeFileSync(
      join(dir, "streams", `${stream}.ndjson`),
      `${JSON.stringify({ type: "stream", path: stream, contentType: "text/plain", ttlSeconds: null, expiresAt: null, closed: false })}\n{"type":"stream_append","base64":"b25l"}\n`,
    );
    const restored = await cli(["restore", dir]);
    // Neither failed session was sent: the service wrote nothing of them, and what was sent with
    // them, or after them, is restored.
    expect({ ...restored, stderr: restored.stderr.split("\n").sort() }).toEqual({
      code: 1,
      stdout:
        "restored 2, skipped 0 (already there), refused 0, failed 2; streams: restored 1, skipped 0, refused 0, failed 0\n",
      stderr: [
        "",
        `failed: ${big}: line 3 of ${bigFile} is longer than 17825792 bytes, the longest line the service takes`,
        `failed: ${huge}: ${hugeFile} is 629145600 bytes: a restore sends a session in one request, of at most ${constants.MAX_STRING_LENGTH - 1}`,
      ],
    });
    for (const id of [a, d]) expect((await cli(["show", id])).code).toBe(0);
    for (const id of [big, huge]) expect((await cli(["show", id])).stderr).toMatch(/not_found/);
    expect(await (await fetch(`${server.url}/v1/stream/${stream}?offset=-1`)).text()).toBe("one");
    for (const id of [a, d]) expect((await cli(["rm", id, "--purge"])).code).toBe(0);

    // Sessions one after another in a file are read the same way, the line counted in the file.
    const file = join(folder, "past-failures.ndjson");
    writeFileSync(
      file,
      [
        header(a),
        entry("c1", "kept"),
        header(big),
        entry("c1", "kept"),
        overlong,
        header(d),
        entry("c1", "kept"),
      ]
        .map((line) => `${line}\n`)
        .join(""),
    );
    const fromFile = await cli(["restore", file]);
    expect(fromFile).toEqual({
      code: 1,
      stdout: "restored 2, skipped 0 (already there), refused 0, failed 1\n",
      stderr: `failed: ${big}: line 5 of ${file} is longer than 17825792 bytes, the longest line the service takes\n`,
    });
    for (const id of [a, d]) expect((await cli(["show", id])).code).toBe(0);
    expect((await cli(["show", big])).stderr).toMatch(/not_found/);

    // The tenant as it was for the tests after this one.
    for (const id of [a, d]) expect((await cli(["rm", id, "--purge"])).code).toBe(0);
    expect((await fetch(`${server.url}/v1/stream/${stream}`, { method: "DELETE" })).status).toBe(204);
    rmSync(dir, { recursive: true, force: true });
    rmSync(file);
  });

  it("restores a backup past a session holding a byte that is not UTF-8, sending none of it and naming its line", async () => {
    const stamp = Date.now();
    const [kept, broken] = ["kept", "broken"].map((name) => `restore-utf8-${name}-${stamp}`) as [
      string,
      string,
    ];
    const header = (id: string) =>
      Buffer.from(
        `${JSON.stringify({ type: "session", format: "cf-session", version: 1, id, createdAt: "2026-01-01T00:00:00.000Z" })}\n`,
      );
    const entry = (text: Buffer) =>
      Buffer.concat([
        Buffer.from(
          '{"type":"custom","id":"c1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","customType":"note","data":{"text":"',
        ),
        text,
        Buffer.from('"}}\n'),
      ]);
    const good = Buffer.concat([header(kept), entry(Buffer.from("caf\u00e9"))]);
    // A byte no UTF-8 text holds (0xff) in the second line.
    const bad = Buffer.concat([header(broken), entry(Buffer.from([0x63, 0x61, 0x66, 0xff]))]);
    const dir = join(folder, "backup-not-utf8");
    mkdirSync(join(dir, "sessions"), { recursive: true });
    writeFileSync(join(dir, "sessions", `${kept}.ndjson`), good);
    const badFile = join(dir, "sessions", `${broken}.ndjson`);
    writeFileSync(badFile, bad);
    const restored = await cli(["restore", dir]);
    expect(restored).toEqual({
      code: 1,
      stdout: "restored 1, skipped 0 (already there), refused 0, failed 1\n",
      stderr: `failed: ${broken}: line 2 of ${badFile} is not valid UTF-8\n`,
    });
    expect((await cli(["show", kept, "--json"])).stdout).toContain("caf\u00e9");
    expect((await cli(["show", broken])).stderr).toMatch(/not_found/);
    expect((await cli(["rm", kept, "--purge"])).code).toBe(0);

    // Sessions one after another in a file are read the same way, the line counted in the file.
    const file = join(folder, "not-utf8.ndjson");
    writeFileSync(file, Buffer.concat([bad, good]));
    expect(await cli(["restore", file])).toEqual({
      code: 1,
      stdout: "restored 1, skipped 0 (already there), refused 0, failed 1\n",
      stderr: `failed: ${broken}: line 2 of ${file} is not valid UTF-8\n`,
    });
    expect((await cli(["show", kept, "--json"])).stdout).toContain("caf\u00e9");
    expect((await cli(["show", broken])).stderr).toMatch(/not_found/);

    expect((await cli(["rm", kept, "--purge"])).code).toBe(0);
    rmSync(dir, { recursive: true, force: true });
    rmSync(file);
  });

  it("restores a backup that stopped early or could not read some sessions, and says so with exit code 1", async () => {
    const id = `restore-unfinished-${Date.now()}`;
    const dir = join(folder, "backup-unfinished");
    mkdirSync(join(dir, "sessions"), { recursive: true });
    writeFileSync(
      join(dir, "sessions", `${id}.ndjson`),
      `${JSON.stringify({ type: "session", format: "cf-session", version: 1, id, createdAt: "2026-01-01T00:00:00.000Z" })}\n`,
    );
    const state = {
      format: "cf-tenant",
      version: 1,
      cursor: null,
      sessions: 1,
      streams: 0,
      failed: [],
      complete: false,
      startedAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
    };
    writeFileSync(join(dir, "backup.json"), JSON.stringify(state));
    const stopped = await cli(["restore", dir]);
    expect(stopped.code).toBe(1);
    expect(stopped.stdout).toBe("restored 1, skipped 0 (already there), refused 0, failed 0\n");
    expect(stopped.stderr).toBe(
      `warning: the backup in ${dir} stopped early (backup.json): what it did not reach is not restored; cf-sessions backup ${dir} finishes it\n`,
    );
    expect((await cli(["show", id])).code).toBe(0);

    const failed = [{ id: "unread-1", error: { code: "internal", message: "boom" } }];
    writeFileSync(join(dir, "backup.json"), JSON.stringify({ ...state, complete: true, failed }));
    const unread = await cli(["restore", dir, "--json"]);
    expect(unread.code).toBe(1);
    expect(JSON.parse(unread.stdout)).toMatchObject({
      skipped: 1,
      unfinishedBackup: { complete: true, failed },
    });
    expect(unread.stderr).toBe(`warning: the backup in ${dir} could not read 1 (not restored): unread-1\n`);

    writeFileSync(join(dir, "backup.json"), JSON.stringify({ ...state, complete: true }));
    expect((await cli(["restore", dir])).code).toBe(0);
    expect((await cli(["rm", id, "--purge"])).code).toBe(0);
    rmSync(dir, { recursive: true, force: true });
  });

  it("backs up and restores an export a session was deleted from while it was sent, leaving that session out", async () => {
    const id = `deleted-mid-export-${Date.now()}`;
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    expect((await post("/v1/sessions", { id })).status).toBe(201);
    expect(
      (await post(`/v1/sessions/${id}/entries`, { type: "message", message: user("soon gone") })).status,
    ).toBe(201);
    const lines = (await (await fetch(`${server.url}/v1/export`)).text()).trim().split("\n");
    const header = lines.findIndex(
      (line) => line.startsWith('{"type":"session"') && line.includes(`"id":"${id}"`),
    );
    const cursor = lines.findIndex((line, at) => at > header && line.startsWith('{"type":"cursor"'));
    const end = JSON.parse(lines.at(-1) as string) as { sessions: number };
    // The stream as the service sends it when the session is deleted once its first entry went out.
    const gone = { type: "error", id, error: { code: "not_found", message: `session ${id} does not exist` } };
    const sent = `${[
      ...lines.slice(0, header + 2),
      JSON.stringify(gone),
      ...lines.slice(cursor + 1, -1),
      JSON.stringify({ ...end, sessions: end.sessions - 1 }),
    ].join("\n")}\n`;
    expect((await cli(["rm", id, "--purge"])).code).toBe(0);

    const file = join(folder, "tenant-deleted-mid-export.ndjson");
    writeFileSync(file, sent);
    const restored = await cli(["restore", file, "--json"]);
    expect(restored.code).toBe(0);
    expect(JSON.parse(restored.stdout)).toMatchObject({
      failed: 0,
      refused: 0,
      problems: [{ id, status: "skipped", error: { code: "not_found" } }],
      warnings: [],
    });
    expect(restored.stderr).toContain(`skipped: ${id}: deleted while it was exported`);
    expect((await cli(["show", id])).code).toBe(1);
    // Told apart from a session skipped for being there already.
    const said = await cli(["restore", file]);
    expect(said.stdout).toMatch(/skipped \d+ \(already there\), left out 1 \(deleted while exported\)/);

    const sending = createServer((_request, response) => {
      response.writeHead(200, { "Content-Type": "application/x-ndjson" });
      response.end(sent);
    });
    await new Promise<void>((done) => sending.listen(0, "127.0.0.1", done));
    const dir = join(folder, "backup-deleted-mid-export");
    try {
      const { port } = sending.address() as AddressInfo;
      const backedUp = await cli(["backup", dir, "--json"], { CF_SESSIONS_URL: `http://127.0.0.1:${port}` });
      expect(backedUp.code).toBe(0);
      expect(JSON.parse(backedUp.stdout)).toMatchObject({
        complete: true,
        sessions: end.sessions - 1,
        failed: [],
      });
      expect(readdirSync(join(dir, "sessions")).filter((name) => name.includes(id))).toEqual([]);
    } finally {
      sending.closeAllConnections();
      await new Promise((done) => sending.close(done));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("backs up an export a stream was deleted or expired from while it was sent, leaving that stream out", async () => {
    const header = (path: string) =>
      JSON.stringify({
        type: "stream",
        path,
        contentType: "text/plain",
        ttlSeconds: null,
        expiresAt: null,
        closed: false,
      });
    const sent = `${[
      JSON.stringify({ type: "export", format: "cf-tenant", version: 1 }),
      header("deleted-mid-export"),
      JSON.stringify({
        type: "error",
        path: "deleted-mid-export",
        error: { code: "gone", message: "this stream was deleted" },
      }),
      header("expired-mid-export"),
      JSON.stringify({
        type: "error",
        path: "expired-mid-export",
        error: { code: "not_found", message: "no such stream" },
      }),
      JSON.stringify({ type: "end", sessions: 0 }),
    ].join("\n")}\n`;
    const sending = createServer((_request, response) => {
      response.writeHead(200, { "Content-Type": "application/x-ndjson" });
      response.end(sent);
    });
    await new Promise<void>((done) => sending.listen(0, "127.0.0.1", done));
    const dir = join(folder, "backup-streams-gone");
    try {
      const service = { CF_SESSIONS_URL: `http://127.0.0.1:${(sending.address() as AddressInfo).port}` };
      const first = await cli(["backup", dir], service);
      expect(first).toMatchObject({ code: 0, stderr: "" });
      expect(first.stdout).toBe(`backed up 0 sessions and 0 streams into ${dir}\n`);
      expect(JSON.parse(readFileSync(join(dir, "backup.json"), "utf8"))).toMatchObject({
        complete: true,
        failed: [],
      });
      const again = await cli(["backup", dir], service);
      expect(again).toMatchObject({ code: 0, stderr: "" });
      expect(again.stdout).toBe(
        `the backup in ${dir} is complete already (0 sessions); use another folder for a new one\n`,
      );
      expect((await cli(["restore", dir])).code).toBe(0);
    } finally {
      sending.closeAllConnections();
      await new Promise((done) => sending.close(done));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("explains itself and fails in one line with a non-zero code", async () => {
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("commands:");
    for (const command of [
      "list",
      "show",
      "tree",
      "context",
      "import",
      "sync",
      "export",
      "fork",
      "rm",
      "undelete",
      "search",
      "backup",
      "restore",
    ]) {
      const commandHelp = await cli([command, "--help"]);
      expect(commandHelp.code).toBe(0);
      expect(commandHelp.stdout).toContain(`usage: cf-sessions ${command}`);
    }
    const missing = await cli(["show", "no-such-session"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("cf-sessions: not_found: session does not exist\n");
    const usage = await cli(["tree"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe("cf-sessions: missing <id>\n");
    expect((await cli(["frobnicate"])).code).toBe(2);
    // Nothing listens there: a port just found free.
    const closed = `http://127.0.0.1:${await freePort()}`;
    const unreachable = await cli(["list"], { CF_SESSIONS_URL: closed });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toBe(
      `cf-sessions: cannot reach the service at ${closed} (GET /v1/sessions: connect ECONNREFUSED ${closed.slice(7)}); is it running? Another: --url or CF_SESSIONS_URL\n`,
    );
    const flagged = await cli(["list", "--url", closed, "--verbose"]);
    expect(flagged.stderr.split("\n")[0]).toBe(`cf-sessions: service ${closed} (--url)`);
    expect(flagged.stderr).toContain(`cannot reach the service at ${closed} `);
    const verbose = await cli(["list", "--verbose", "--json"]);
    expect(verbose.stderr).toBe(`cf-sessions: service ${server.url} (CF_SESSIONS_URL)\n`);
    expect(verbose.code).toBe(0);
  });

  it("says which limit a --limit passes and why, before sending anything", async () => {
    const list = await cli(["list", "--limit", "500"]);
    expect(list.code).toBe(2);
    expect(list.stderr).toBe(
      "cf-sessions: --limit is 1 to 200: the service sends at most 200 sessions a page (--all reads every page)\n",
    );
    const show = await cli(["show", toolSession.id, "--limit", "5000"]);
    expect(show.code).toBe(2);
    expect(show.stderr).toBe(
      "cf-sessions: --limit is 1 to 1000: the service sends at most 1000 entries a page (--after <seq> shows the ones after)\n",
    );
  });

  it("refuses a key holding a line break or a control character, without repeating it", async () => {
    const session = writePiSession(mkdtempSync(join(folder, "key-")), (pi) => {
      pi.appendMessage(user("never sent"));
    });
    for (const [args, env, where] of [
      [["import", session.path], { CF_SESSIONS_TOKEN: "csk_live_SECRET123\nsecond" }, "in CF_SESSIONS_TOKEN"],
      [["import", session.path, "--token", "csk_live_SECRET123\rsecond"], {}, "given by --token"],
      [["list"], { CF_SESSIONS_TOKEN: "csk_live_SECRET123\u0001second" }, "in CF_SESSIONS_TOKEN"],
    ] as const) {
      const refused = await cli([...args], env);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toBe(
        `cf-sessions: the key ${where} holds a line break or another control character: an API key is one line\n`,
      );
      expect(refused.stdout).toBe("");
    }
    expect((await cli(["show", session.id])).stderr).toBe("cf-sessions: not_found: session does not exist\n");
  });

  it("refuses a service URL holding a user or password, or that is no http(s) URL, without repeating it", async () => {
    const port = await freePort();
    for (const [args, env, where] of [
      [["list"], { CF_SESSIONS_URL: `http://alice:s3cretPass@127.0.0.1:${port}` }, "CF_SESSIONS_URL"],
      [["list", "--verbose", "--url", `http://:s3cretPass@127.0.0.1:${port}`], {}, "--url"],
    ] as const) {
      const refused = await cli([...args], env);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toBe(
        `cf-sessions: the service URL (${where}) holds a user or password: give the key with --token or CF_SESSIONS_TOKEN instead\n`,
      );
      expect(refused.stdout).toBe("");
    }
    const notHttp = await cli(["list"], { CF_SESSIONS_URL: "ftp://s3cretPass.example/" });
    expect(notHttp).toMatchObject({ code: 2, stdout: "" });
    expect(notHttp.stderr).toBe(
      "cf-sessions: the service URL (CF_SESSIONS_URL) is not an http or https URL\n",
    );
    const notUrl = await cli(["list", "--url", "s3cretPass"]);
    expect(notUrl.stderr).toBe(
      "cf-sessions: the service URL (--url) is not a URL, such as http://127.0.0.1:8787\n",
    );
  });

  it("refuses an unknown --format as bad usage, before sending anything", async () => {
    // Nothing listens there: a command that sent a request would fail to connect instead.
    const closed = { CF_SESSIONS_URL: `http://127.0.0.1:${await freePort()}` };
    const expected = "cf-sessions: --format is native, pi, claude-code or codex, not pie\n";
    for (const args of [
      ["import", folder, "--format", "pie"],
      ["sync", folder, "--format", "pie"],
      ["export", toolSession.id, "--format", "pie"],
    ]) {
      const refused = await cli(args, closed);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toBe(expected);
      expect(refused.stdout).toBe("");
    }
  });

  it("lists sessions in aligned columns", async () => {
    // A session with no name and no preview: its line ends after its entries.
    const bare = `list-bare-${Date.now()}`;
    await createClient({ baseUrl: server.url }).create({ id: bare });
    const lines = (await cli(["list"])).stdout.trimEnd().split("\n");
    expect(lines.some((line) => line.startsWith(`${bare} `) && /\d$/.test(line))).toBe(true);
    expect(lines[0]).toMatch(/^ID +UPDATED +ENTRIES +NAME +PREVIEW$/);
    const start = (line: string, column: string) => line.indexOf(column);
    const updated = start(lines[0] as string, "UPDATED");
    const entriesEnd = start(lines[0] as string, "ENTRIES") + "ENTRIES".length;
    for (const line of lines.slice(1)) {
      expect(line.slice(updated)).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(line.slice(0, entriesEnd)).toMatch(/\d$/);
      expect(line.length === entriesEnd || line.slice(entriesEnd, entriesEnd + 2) === "  ").toBe(true);
    }
    expect((await cli(["rm", bare, "--purge"])).code).toBe(0);
  });

  it("leaves no file behind when an export fails, and keeps the one that was there", async () => {
    const out = join(folder, "missing.jsonl");
    const failed = await cli(["export", "no-such-session", "--out", out]);
    expect(failed.code).toBe(1);
    expect(existsSync(out)).toBe(false);
    writeFileSync(out, "before\n");
    expect((await cli(["export", "no-such-session", "--out", out])).code).toBe(1);
    expect(readFileSync(out, "utf8")).toBe("before\n");
    expect(readdirSync(folder).filter((name) => name.includes("partial"))).toEqual([]);
  });

  it("fails in one line, leaving no partial file, when the file written cannot be opened or grow", async () => {
    const session = writePiSession(mkdtempSync(join(folder, "out-")), (pi) => {
      pi.appendMessage(user("to be exported"));
    });
    expect((await cli(["import", session.path])).code).toBe(0);
    const nowhere = await cli(["export", session.id, "--out", join(folder, "no-such-dir", "out.jsonl")]);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/^cf-sessions: ENOENT: [^\n]*\n$/);
    // A file size limit of zero: the hidden file opens, and its first write fails (EFBIG).
    const dir = mkdtempSync(join(folder, "full-"));
    const full = await new Promise<{ code: number; stderr: string }>((done) =>
      execFile(
        "sh",
        [
          "-c",
          'ulimit -f 0; exec "$0" "$@"',
          process.execPath,
          join(root, "dist/cli.js"),
          "export",
          session.id,
          "--out",
          join(dir, "out.jsonl"),
        ],
        { env: { ...process.env, CF_SESSIONS_URL: server.url } },
        (error, _stdout, stderr) => done({ code: typeof error?.code === "number" ? error.code : 0, stderr }),
      ),
    );
    expect(full.code).toBe(1);
    expect(full.stderr).toMatch(/^cf-sessions: EFBIG: [^\n]*\n$/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("prints what sessions hold as visible escapes, never as controls the terminal obeys or lines of its own", async () => {
    // A name that retitles the terminal, clears it, forges a row and shows the rest of the line
    // right to left; a label that forges a node.
    const name = "evil\u001b]0;owned\u0007\u001b[2J\nFAKE row\u009b31m\u2028\u202etxt.exe\u2066\u200f";
    const label = "x\n└─ assistant zzz  ← leaf";
    const id = `cli-controls-${Date.now()}`;
    const session = await createClient({ baseUrl: server.url }).create({ id, name });
    const question = await session.appendMessage(user(`the plan\u001b[2J\r\nFAKE: ${name}`));
    await session.appendLabel(question, label);
    await session.appendCustomEntry(`kind\u001b[31m\nFAKE`);
    const entries = await session.getEntries();
    /** Every control character but the line ends the command line writes itself. */
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
    const controls = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;
    const printed = async (args: string[]) => {
      const { code, stdout, stderr } = await cli(args);
      expect(code, stderr).toBe(0);
      expect(stdout, args[0]).not.toMatch(controls);
      return stdout.trimEnd().split("\n");
    };

    const listed = await printed(["list", "--prefix", id]);
    expect(listed).toHaveLength(2);
    expect(listed[1]).toContain(
      "evil\\u001b]0;owned\\u0007\\u001b[2J\\u000aFAKE row\\u009b31m\\u2028\\u202etxt.exe\\u2066\\u200f",
    );
    const tree = await printed(["tree", id]);
    expect(tree).toHaveLength(entries.length);
    expect(tree.some((line) => line.includes("[x\\u000a└─ assistant zzz  ← leaf]"))).toBe(true);
    expect(tree.filter((line) => line.includes("← leaf"))).toHaveLength(2);
    const shown = await printed(["show", id]);
    expect(shown).toHaveLength(entries.length);
    expect(shown.some((line) => line.includes(`${question} = x\\u000a└─ assistant zzz`))).toBe(true);
    expect(shown.join("\n")).toContain(
      "the plan\\u001b[2J FAKE: evil\\u001b]0;owned\\u0007\\u001b[2J FAKE row",
    );
    expect(shown.at(-1)).toMatch(/ custom +\S+ .*kind\\u001b\[31m\\u000aFAKE$/);
    const context = await printed(["context", id]);
    expect(context.at(-1)).toMatch(/^user: the plan\\u001b\[2J FAKE: evil\\u001b/);
    const hits = await printed(["search", "plan", "--session", id]);
    expect(hits).toHaveLength(1);
    expect(hits[0]).toContain("«plan»\\u001b[2J");

    // Scripts get the service's text exactly.
    const json = await cli(["list", "--prefix", id, "--json"]);
    expect(JSON.parse(json.stdout)[0].name).toBe(name);
    expect(json.stdout).toBe(`${JSON.stringify(JSON.parse(json.stdout))}\n`);
  });
});

describe("command line against a service that holds its answer", () => {
  it("streams an export to stdout line by line as the service sends it, and fails when the stream breaks", async () => {
    let answer: ServerResponse | undefined;
    const held = createServer((_request, response) => {
      response.writeHead(200, { "Content-Type": "application/x-ndjson" });
      response.write('{"type":"session","id":"held"}\n{"type":"message","id":"m1"}\n');
      answer = response;
    });
    await new Promise<void>((done) => held.listen(0, "127.0.0.1", done));
    const { port } = held.address() as AddressInfo;
    try {
      const child = spawn(process.execPath, [join(root, "dist/cli.js"), "export", "held"], {
        env: { ...process.env, CF_SESSIONS_URL: `http://127.0.0.1:${port}` },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => {
        stdout += chunk;
      });
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
      });
      const exited = new Promise<number | null>((done) => child.once("exit", done));
      await expect
        .poll(() => stdout, { timeout: 20_000 })
        .toBe('{"type":"session","id":"held"}\n{"type":"message","id":"m1"}\n');
      // The lines are out while the service still holds the rest.
      expect(answer?.writableEnded).toBe(false);
      answer?.socket?.destroy();
      expect(await exited).toBe(1);
      expect(stderr).toMatch(/^cf-sessions: [^\n]+\n$/);
    } finally {
      held.closeAllConnections();
      await new Promise((done) => held.close(done));
    }
  });
});

describe("command line against a service that answers in pages", () => {
  it("reads a tenant search over every answer the service carries it in, and says a session's search is still indexing", async () => {
    const asked: URL[] = [];
    const result = (id: string) => ({
      session: { id, name: `plan ${id}` },
      score: 1000,
      matches: [{ field: "name", snippet: `plan ${id}`, highlights: [[0, 4]] }],
    });
    const paging = createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://127.0.0.1");
      asked.push(url);
      response.writeHead(200, { "Content-Type": "application/json" });
      if (url.pathname === "/v1/search") {
        const first = url.searchParams.get("cursor") === null;
        response.end(
          JSON.stringify(
            first
              ? { results: [result("s1")], nextCursor: "after-s1" }
              : { results: [result("s2")], nextCursor: null },
          ),
        );
      } else response.end(JSON.stringify({ hits: [], nextCursor: null, indexing: true }));
    });
    await new Promise<void>((done) => paging.listen(0, "127.0.0.1", done));
    const { port } = paging.address() as AddressInfo;
    const service = { CF_SESSIONS_URL: `http://127.0.0.1:${port}` };
    try {
      const text = await cli(["search", "plan", "--limit", "2"], service);
      expect(text.code).toBe(0);
      expect(text.stdout).toBe("s1  plan s1\n    name: «plan» s1\ns2  plan s2\n    name: «plan» s2\n");
      const json = await cli(["search", "plan", "--limit", "2", "--json"], service);
      expect(JSON.parse(json.stdout).map((r: { session: { id: string } }) => r.session.id)).toEqual([
        "s1",
        "s2",
      ]);
      // The next answer is asked for with the same query and limit.
      const next = asked.find((url) => url.searchParams.get("cursor") === "after-s1");
      expect(next?.searchParams.get("q")).toBe("plan");
      expect(next?.searchParams.get("limit")).toBe("2");

      const indexing = await cli(["search", "plan", "--session", "s1"], service);
      expect(indexing.code).toBe(0);
      expect(indexing.stdout).toBe("no matches\n");
      expect(indexing.stderr).toMatch(/^note: entries of a large write are still being indexed/);
    } finally {
      paging.closeAllConnections();
      await new Promise((done) => paging.close(done));
    }
  });
});

describe("command line against a service whose error says more than it should", () => {
  it("prints the service's error message as visible escapes, on one line", async () => {
    const refusing = createServer((_request, response) => {
      response.writeHead(409, { "Content-Type": "application/json" });
      response.end(
        JSON.stringify({
          error: {
            code: "wrong_jurisdiction",
            message: "moved\u001b]0;owned\u0007\u001b[2J\ncf-sessions: FAKE",
          },
        }),
      );
    });
    await new Promise<void>((done) => refusing.listen(0, "127.0.0.1", done));
    const { port } = refusing.address() as AddressInfo;
    try {
      const { code, stderr } = await new Promise<{ code: number; stderr: string }>((done) =>
        execFile(
          process.execPath,
          [join(root, "dist/cli.js"), "show", "s1"],
          { env: { ...process.env, CF_SESSIONS_URL: `http://127.0.0.1:${port}` } },
          (error, _stdout, stderr) =>
            done({ code: typeof error?.code === "number" ? error.code : 0, stderr }),
        ),
      );
      expect(code).toBe(1);
      expect(stderr).toBe(
        "cf-sessions: wrong_jurisdiction: moved\\u001b]0;owned\\u0007\\u001b[2J\\u000acf-sessions: FAKE\n",
      );
    } finally {
      refusing.closeAllConnections();
      await new Promise((done) => refusing.close(done));
    }
  });
});

describe("command line writing into a pipe its reader closed", () => {
  /** Runs the command line with stdout's reader closing at `close` (at once, or at its first output). */
  async function closedEarly(
    args: string[],
    url: string,
    close: "at once" | "after the first output",
    env: Record<string, string> = {},
  ) {
    const child = spawn(process.execPath, [join(root, "dist/cli.js"), ...args], {
      env: { ...process.env, CF_SESSIONS_URL: url, ...env },
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((done) => child.once("exit", done));
    if (close === "at once") child.stdout.destroy();
    else child.stdout.once("data", () => child.stdout.destroy());
    const code = await Promise.race([
      exited,
      new Promise((done) => setTimeout(done, 20_000, "still running")),
    ]);
    if (code === "still running") child.kill();
    return { code, stderr };
  }

  it("ends quietly with exit code 0 when what it prints is no longer read (cf-sessions list | head -1)", async () => {
    expect(await closedEarly(["list", "--all"], server.url, "at once")).toEqual({ code: 0, stderr: "" });
  });

  it("ends a mirror whose reader goes away as a failure (exit code 1), for its service manager to start it again", async () => {
    const state = join(mkdtempSync(join(tmpdir(), "watch-state-")), "state.json");
    const run = await closedEarly(["sync", "--watch", folder, "--state", state], server.url, "at once");
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^cf-sessions: .*EPIPE/m);
  });

  it("ends a streamed export quietly with exit code 0 when its reader goes away", async () => {
    let answer: ServerResponse | undefined;
    const held = createServer((_request, response) => {
      response.writeHead(200, { "Content-Type": "application/x-ndjson" });
      response.write('{"type":"session","id":"held"}\n');
      answer = response;
    });
    await new Promise<void>((done) => held.listen(0, "127.0.0.1", done));
    const { port } = held.address() as AddressInfo;
    try {
      const run = closedEarly(["export", "held"], `http://127.0.0.1:${port}`, "after the first output");
      await expect.poll(() => answer, { timeout: 20_000 }).toBeDefined();
      // More lines than a pipe holds, once the reader is gone.
      const line = `{"type":"message","id":"m","text":"${"x".repeat(1000)}"}\n`;
      const more = setInterval(() => answer?.write(line.repeat(100)), 20);
      try {
        expect(await run).toEqual({ code: 0, stderr: "" });
      } finally {
        clearInterval(more);
      }
    } finally {
      held.closeAllConnections();
      await new Promise((done) => held.close(done));
    }
  });
});

describe("command line with a key, against a service that requires one", () => {
  // npm start listening beyond loopback serves no dev tenant: every request needs a key.
  const keys = { a: "cli-key-a", b: "cli-key-b" };
  const digest = (key: string) => createHash("sha256").update(key).digest("hex");
  let keyed: DevServer;
  const stamp = Date.now();
  const ids = { a: `keyed-a-${stamp}`, b: `keyed-b-${stamp}` };

  beforeAll(async () => {
    keyed = await startDevServer({
      everyAddress: true,
      vars: {
        API_KEYS: JSON.stringify({ [digest(keys.a)]: "cli-tenant-a", [digest(keys.b)]: "cli-tenant-b" }),
      },
      timeoutMs: 90_000,
    });
    for (const tenant of ["a", "b"] as const) {
      const created = await fetch(`${keyed.url}/v1/sessions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${keys[tenant]}`, "Content-Type": "application/json" },
        body: JSON.stringify({ id: ids[tenant] }),
      });
      expect(created.status).toBe(201);
    }
  }, 120_000);

  afterAll(async () => {
    await keyed?.stop();
  });

  /** The command line against the keyed service, with no key but what `env` or the flags give. */
  const keyedCli = (args: string[], env: Record<string, string> = {}) =>
    cli(args, { CF_SESSIONS_URL: keyed.url, CF_SESSIONS_TOKEN: "", ...env });

  /** The session ids a key's tenant shows, one `show` each. */
  async function visible(env: Record<string, string>, flags: string[] = []) {
    const seen: string[] = [];
    for (const id of [ids.a, ids.b]) {
      const shown = await keyedCli(["show", id, "--json", ...flags], env);
      if (shown.code === 0) seen.push(id);
      else expect(shown.stderr).toBe("cf-sessions: not_found: session does not exist\n");
    }
    return seen;
  }

  it("sends the key in CF_SESSIONS_TOKEN, and the one given by --token over it", async () => {
    expect(await visible({ CF_SESSIONS_TOKEN: keys.a })).toEqual([ids.a]);
    expect(await visible({}, ["--token", keys.b])).toEqual([ids.b]);
    expect(await visible({ CF_SESSIONS_TOKEN: keys.a }, [`--token=${keys.b}`])).toEqual([ids.b]);
    // A key read from a file with its line end (CRLF) is the key.
    expect(await visible({ CF_SESSIONS_TOKEN: `${keys.a}\r\n` })).toEqual([ids.a]);
  });

  it("refuses a wrong or missing key with the service's error and where the key came from", async () => {
    const fromEnv = await keyedCli(["show", ids.a], { CF_SESSIONS_TOKEN: "not-a-key" });
    expect(fromEnv).toEqual({
      code: 1,
      stdout: "",
      stderr: "cf-sessions: unauthorized: unknown key (the key in CF_SESSIONS_TOKEN)\n",
    });
    const fromFlag = await keyedCli(["show", ids.a, "--token", "not-a-key"], { CF_SESSIONS_TOKEN: keys.a });
    expect(fromFlag).toEqual({
      code: 1,
      stdout: "",
      stderr: "cf-sessions: unauthorized: unknown key (the key given by --token)\n",
    });
    const none = await keyedCli(["show", ids.a]);
    expect(none).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "cf-sessions: unauthorized: missing Authorization: Bearer <key> (no key given: --token <key> or CF_SESSIONS_TOKEN)\n",
    });
  });

  it("stops an import at a refused key, and writes nothing", async () => {
    const dir = mkdtempSync(join(folder, "keyed-"));
    const first = writePiSession(dir, (pi) => void pi.appendMessage(user("first")));
    writePiSession(dir, (pi) => void pi.appendMessage(user("second")));
    const refused = await keyedCli(["import", dir, "--token", "not-a-key"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe("cf-sessions: unauthorized: unknown key (the key given by --token)\n");
    // What it did before the refusal, and the files it did not try.
    expect(refused.stdout).toBe(
      "imported 0, skipped 0 (already there), failed 0, not tried 2 (the key was refused)\n",
    );
    const said = await keyedCli(["import", dir, "--token", "not-a-key", "--json"]);
    expect(said.code).toBe(1);
    expect(JSON.parse(said.stdout)).toMatchObject({ imported: [], failed: [], notTried: expect.any(Array) });
    expect(JSON.parse(said.stdout).notTried).toHaveLength(2);
    expect(said.stderr).toBe("cf-sessions: unauthorized: unknown key (the key given by --token)\n");
    const read = await fetch(`${keyed.url}/v1/sessions/${first.id}`, {
      headers: { Authorization: `Bearer ${keys.a}` },
    });
    expect(read.status).toBe(404);
    // The same files with the tenant's key import.
    const imported = await keyedCli(["import", dir, "--json"], { CF_SESSIONS_TOKEN: keys.a });
    expect(JSON.parse(imported.stdout).imported).toHaveLength(2);
  });
});
