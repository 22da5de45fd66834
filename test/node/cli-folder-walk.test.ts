import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sessionFiles } from "../../src/cli/import-files";
import { freePort } from "../support/dev-server";

/*
 * The command line's walk of a folder of session files, which `import`, `sync`, `sync --watch` and
 * `pull --to codex` list files with, where links lead back up the tree. The walk runs in the
 * command line as a person runs it, so that one that never ends is stopped and seen.
 */

const root = resolve(import.meta.dirname, "../..");
const folders: string[] = [];

afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A folder holding `a/x.jsonl` and the links given (path → target), each to a folder. */
function folderWith(links: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "folder-walk-"));
  folders.push(dir);
  mkdirSync(join(dir, "a"));
  mkdirSync(join(dir, "b"));
  // Not a session file of any format: it fails on this machine, before anything is sent.
  writeFileSync(join(dir, "a", "x.jsonl"), "not a session\n");
  for (const [path, target] of Object.entries(links)) symlinkSync(target, join(dir, path), "dir");
  return dir;
}

/** `cf-sessions import <dir> --json`, stopped after 20 s: its report, or "still running". */
async function importFolder(dir: string): Promise<{ failed: Array<{ file: string }> } | "still running"> {
  const child = spawn(process.execPath, [join(root, "dist/cli.js"), "import", dir, "--json"], {
    env: { ...process.env, CF_SESSIONS_URL: `http://127.0.0.1:${await freePort()}` },
  });
  let stdout = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  const exited = new Promise<void>((done) => child.once("close", () => done()));
  const outcome = await Promise.race([
    exited.then(() => "exited" as const),
    new Promise<"still running">((later) => setTimeout(() => later("still running"), 20_000)),
  ]);
  if (outcome === "still running") {
    child.kill("SIGKILL");
    await exited;
    return outcome;
  }
  return JSON.parse(stdout);
}

describe("a folder whose links lead back up the tree", () => {
  it("lists each file once where a link leads to a folder above it", async () => {
    const dir = folderWith({ "a/up": ".." });
    const report = await importFolder(dir);
    expect(report).not.toBe("still running");
    expect(report).toMatchObject({ failed: [{ file: join(dir, "a", "x.jsonl") }] });
    expect((report as { failed: unknown[] }).failed).toHaveLength(1);
  }, 30_000);

  it("ends, listing each file once, where two links lead back up (paths that would double at each step)", async () => {
    const dir = folderWith({ "a/up": "..", "b/up2": ".." });
    const report = await importFolder(dir);
    expect(report).not.toBe("still running");
    expect(report).toMatchObject({ failed: [{ file: join(dir, "a", "x.jsonl") }] });
    expect((report as { failed: unknown[] }).failed).toHaveLength(1);
  }, 30_000);

  it("does not leave the folder given by a link to a folder that holds it", () => {
    const outer = folderWith({});
    writeFileSync(join(outer, "b", "beside.jsonl"), "not in the folder given\n");
    symlinkSync("../..", join(outer, "a", "out"), "dir");
    expect(sessionFiles(join(outer, "a"))).toEqual([join(outer, "a", "x.jsonl")]);
  });

  it("lists a folder reached by a link and by its own path once, by the path found first", () => {
    const dir = folderWith({ "b/link": "../a" });
    expect(sessionFiles(dir)).toEqual([join(dir, "a", "x.jsonl")]);
  });

  it("lists a file reached by links and by its own path once, by its own path", () => {
    const dir = folderWith({});
    symlinkSync("a/x.jsonl", join(dir, "0-latest.jsonl"), "file");
    symlinkSync("../a/x.jsonl", join(dir, "b", "same.jsonl"), "file");
    symlinkSync("x.jsonl", join(dir, "a", "again.jsonl"), "file");
    expect(sessionFiles(dir)).toEqual([join(dir, "a", "x.jsonl")]);
  });

  it("lists a file reached only by links once, by the link found first", () => {
    const outside = folderWith({});
    const dir = folderWith({});
    symlinkSync(join(outside, "a", "x.jsonl"), join(dir, "b", "one.jsonl"), "file");
    symlinkSync(join(outside, "a", "x.jsonl"), join(dir, "b", "two.jsonl"), "file");
    expect(sessionFiles(join(dir, "b"))).toEqual([join(dir, "b", "one.jsonl")]);
  });
});
