import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFile, stat, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pidNamespace } from "../../src/node/pid-namespace";
import { bootOf, processStart, processStartOf } from "../../src/node/process-start";
import { user } from "../conformance/fixtures";
import { expectCode } from "../conformance/storage";
import { tempRoots } from "./temp-root";

const temp = tempRoots();
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill();
});

function lockFile(root: string, id: string): string {
  return join(root, "sessions", id, "lock");
}

/** A real second Node process, running `code`; imports nothing of the project. */
function node(code: string): ChildProcess {
  const child = spawn(process.execPath, ["-e", code], { stdio: "ignore" });
  children.push(child);
  return child;
}

/** The pid of a process that has exited, so no process runs with it now. */
async function deadPid(): Promise<number> {
  const child = node("");
  const pid = child.pid as number;
  if (child.exitCode === null) await once(child, "exit");
  return pid;
}

/** Writes a lock as another process of this pid namespace would (`started` left out unless given). */
async function writeLock(
  root: string,
  id: string,
  pid: number,
  host = hostname(),
  fields: Record<string, unknown> = {},
): Promise<void> {
  await writeFile(
    lockFile(root, id),
    JSON.stringify({
      pid,
      hostname: host,
      pidNamespace: pidNamespace(),
      createdAt: new Date().toISOString(),
      ...fields,
    }),
  );
}

/** A running process that is not this one. */
function liveChild(): number {
  return node("setTimeout(() => {}, 60_000)").pid as number;
}

/** A session with one entry and no lock. */
async function unlockedSession(root: string, id: string): Promise<void> {
  const repo = await temp.repo(root);
  await (await repo.create({ id })).appendMessage(user("q"));
  await repo.cleanup();
}

describe("JSONLRepo session lock", () => {
  it("lets one repo write a session and refuses the others until it cleans up", async () => {
    const root = await temp.root();
    const first = await temp.repo(root);
    const second = await temp.repo(root);
    const session = await first.create({ id: "shared" });
    await session.appendMessage(user("q"));

    const error = await expectCode(second.open("shared"), "forbidden");
    expect(error.message).toBe(
      `session shared is open for writing by process ${process.pid} on ${hostname()}`,
    );
    await expectCode(second.delete("shared"), "forbidden");
    await expectCode(second.fork("shared", "anything"), "forbidden");
    expect((await second.list()).sessions.map((info) => info.id)).toEqual(["shared"]);

    await first.cleanup();
    await expect(stat(lockFile(root, "shared"))).rejects.toMatchObject({ code: "ENOENT" });
    const reopened = await second.open("shared");
    expect((await reopened.getInfo()).entryCount).toBe(1);
    await expectCode(first.open("shared"), "forbidden");
  });

  it("hands out one storage per session within a repo", async () => {
    const root = await temp.root();
    await unlockedSession(root, "same");
    const repo = await temp.repo(root);
    const [a, b] = await Promise.all([repo.open("same"), repo.open("same")]);
    expect(a?.storage).toBe(b?.storage);
    expect((await repo.open("same")).storage).toBe(a?.storage);

    // An open right after a cleanup that is not awaited waits for it, and does not lock itself out.
    const closing = a?.storage.cleanup();
    const fresh = await repo.open("same");
    await closing;
    expect(fresh.storage).not.toBe(a?.storage);
    expect((await fresh.getInfo()).entryCount).toBe(1);
  });

  it("releases the lock when the session is closed or deleted", async () => {
    const root = await temp.root();
    const first = await temp.repo(root);
    const second = await temp.repo(root);
    const session = await first.create({ id: "released" });
    await session.storage.cleanup();
    const taken = await second.open("released");
    await taken.delete();
    expect((await first.create({ id: "released" })).id).toBe("released");
  });

  it("takes over a lock left by a process that has exited", async () => {
    const root = await temp.root();
    await unlockedSession(root, "orphan");
    const pid = await deadPid();
    await writeLock(root, "orphan", pid);

    const session = await (await temp.repo(root)).open("orphan");
    expect((await session.getInfo()).entryCount).toBe(1);
    const lock = JSON.parse(await readFile(lockFile(root, "orphan"), "utf8"));
    expect(lock).toMatchObject({ pid: process.pid, hostname: hostname() });
    expect(lock.pid).not.toBe(pid);
  });

  it("takes over a lock left by an earlier process that had this process's pid", async () => {
    const root = await temp.root();
    await unlockedSession(root, "reused");
    const repo = await temp.repo(root);
    // A process restarted in this pid namespace may be given the pid again; after a reboot, in
    // whichever namespace (a container restarted runs as pid 1 again), any process may have it.
    const boot = bootOf(processStart());
    const earlier = [
      {
        pid: process.pid,
        hostname: hostname(),
        token: "old",
        pidNamespace: pidNamespace(),
        started: `${boot}:1`,
      },
      { pid: process.pid, hostname: hostname(), token: "old", started: "another boot:1" },
    ];
    for (const lock of earlier) {
      await writeFile(lockFile(root, "reused"), JSON.stringify(lock));
      const session = await repo.open("reused");
      expect((await session.getInfo()).entryCount).toBe(1);
      const taken = JSON.parse(await readFile(lockFile(root, "reused"), "utf8"));
      expect(taken).toMatchObject({ pid: process.pid, hostname: hostname() });
      expect(taken.token).not.toBe("old");
      await session.storage.cleanup();
    }
  });

  it("respects a lock held by another running process until it exits", async () => {
    const root = await temp.root();
    await unlockedSession(root, "busy");
    const child = node("setTimeout(() => {}, 60_000)");
    const pid = child.pid as number;
    await writeLock(root, "busy", pid);
    const repo = await temp.repo(root);

    const error = await expectCode(repo.open("busy"), "forbidden");
    expect(error.message).toContain(`process ${pid}`);
    expect(error.details).toMatchObject({ id: "busy", pid });

    child.kill();
    if (child.exitCode === null && child.signalCode === null) await once(child, "exit");
    expect((await (await repo.open("busy")).getInfo()).entryCount).toBe(1);
  });

  it("takes over a lock from an earlier boot, whichever process has its pid now", async () => {
    const root = await temp.root();
    await unlockedSession(root, "rebooted");
    const repo = await temp.repo(root);
    // pid 1 always runs; a lock from another namespace is no one's either once the host rebooted.
    const earlier = [{}, { pidNamespace: "pid:[1]" }, { pidNamespace: undefined }];
    for (const fields of earlier) {
      await writeLock(root, "rebooted", 1, hostname(), { ...fields, started: "an earlier boot:12345" });
      const session = await repo.open("rebooted");
      expect((await session.getInfo()).entryCount).toBe(1);
      const taken = JSON.parse(await readFile(lockFile(root, "rebooted"), "utf8"));
      expect(taken).toMatchObject({
        pid: process.pid,
        started: processStart(),
        pidNamespace: pidNamespace(),
      });
      await session.storage.cleanup();
    }
  });

  it("takes over a lock whose pid a process started later has, and respects its owner's", async () => {
    const root = await temp.root();
    await unlockedSession(root, "pid-reused");
    const repo = await temp.repo(root);
    const pid = liveChild();
    const started = processStartOf(pid);
    expect(started).not.toBe("");

    // The lock's process had the pid before this one, which started at another tick.
    await writeLock(root, "pid-reused", pid, hostname(), { started: `${bootOf(started)}:1` });
    const session = await repo.open("pid-reused");
    expect((await session.getInfo()).entryCount).toBe(1);
    await session.storage.cleanup();

    // The process that has the pid wrote it.
    await writeLock(root, "pid-reused", pid, hostname(), { started });
    const before = await readFile(lockFile(root, "pid-reused"), "utf8");
    const error = await expectCode(repo.open("pid-reused"), "forbidden");
    expect(error.details).toMatchObject({ id: "pid-reused", pid });
    expect(await readFile(lockFile(root, "pid-reused"), "utf8")).toBe(before);
  });

  it("respects a lock from another pid namespace, or one that does not say its namespace", async () => {
    const root = await temp.root();
    await unlockedSession(root, "container");
    const repo = await temp.repo(root);
    const started = `${bootOf(processStart())}:1`;
    // Another container of this host, sharing the folder and the hostname: its pid names no process
    // here, or another one (this process's own, as two containers both run as pid 1).
    const others = [
      { pid: await deadPid(), fields: { started, pidNamespace: "pid:[1]" } },
      { pid: process.pid, fields: { started, pidNamespace: "pid:[1]" } },
      { pid: await deadPid(), fields: { started, pidNamespace: undefined } },
      { pid: await deadPid(), fields: { pidNamespace: undefined } },
    ];
    for (const { pid, fields } of others) {
      await writeLock(root, "container", pid, hostname(), fields);
      const before = await readFile(lockFile(root, "container"), "utf8");
      const error = await expectCode(repo.open("container"), "forbidden");
      expect(error.message).toBe(
        `session container is open for writing by process ${pid} on ${hostname()} in another pid namespace (or one its lock does not name), which cannot be checked from here; remove ${lockFile(root, "container")} if it no longer runs`,
      );
      expect(await readFile(lockFile(root, "container"), "utf8")).toBe(before);
    }
  });

  it("respects locks it cannot check: another host's, and an unreadable one", async () => {
    const root = await temp.root();
    await unlockedSession(root, "remote");
    const repo = await temp.repo(root);

    await writeLock(root, "remote", await deadPid(), `not-${hostname()}`);
    await expectCode(repo.open("remote"), "forbidden");

    await writeFile(lockFile(root, "remote"), "");
    const error = await expectCode(repo.open("remote"), "forbidden");
    expect(error.message).toContain(lockFile(root, "remote"));
  });
});
