import { randomUUID } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { link, open, readFile, rename, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import * as z from "zod";
import { SessionError } from "../core/errors";
import { nowIso } from "../core/ids";
import { tryParseJson } from "../core/json";
import { errnoCode, unlessMissing } from "./errno";
import { LOCK_FILE } from "./layout";
import { pidNamespace, sharesPidNamespace } from "./pid-namespace";
import { bootOf, processStart, processStartOf } from "./process-start";

/**
 * What a lock file holds: who wrote it (with when its process started, to tell it from a later
 * process given the same pid, and the pid namespace its pid is in), and a token so its owner can
 * tell the file is still its own.
 */
const LockOwner = z.object({
  pid: z.number().int().positive(),
  hostname: z.string(),
  started: z.string().catch(""),
  pidNamespace: z.string().catch(""),
  createdAt: z.string().catch(""),
  token: z.string().catch(""),
});
export type LockOwner = z.infer<typeof LockOwner>;

type Holder =
  | { kind: "live" | "stale"; text: string; owner: LockOwner }
  | { kind: "unreadable"; text: string };

/** Rounds of "create, else inspect and maybe take over" before giving up on a contended lock. */
const ATTEMPTS = 3;

/**
 * The right to write one session, held as a `lock` file in its folder. The file is created with
 * `wx`, so of two openers exactly one gets it, across processes and across repos of one process.
 * A lock is taken over when its process is known to run no more: it ran before this host's last
 * boot, or, in this pid namespace, no process has its pid or the one that has it started later. A
 * lock from another host or another pid namespace (another container on this host), or one that
 * does not say its namespace, is respected, since its process cannot be checked from here.
 *
 * The error for a held lock is `forbidden`: the caller may not write this session now. No error
 * code means "locked" (`leaf_conflict` is about `If-Match`, `already_exists` about ids).
 */
export class SessionLock {
  private constructor(
    readonly file: string,
    readonly owner: LockOwner,
  ) {}

  /** Takes the lock of the session in `folder`; fails with ENOENT when the folder does not exist. */
  static async acquire(folder: string, sessionId: string): Promise<SessionLock> {
    const file = join(folder, LOCK_FILE);
    const owner: LockOwner = {
      pid: process.pid,
      hostname: hostname(),
      started: processStart(),
      pidNamespace: pidNamespace(),
      createdAt: nowIso(),
      token: randomUUID(),
    };
    let holder: Holder | undefined;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (await create(file, owner)) return new SessionLock(file, owner);
      holder = await inspect(file);
      if (holder === undefined) continue;
      if (holder.kind !== "stale") break;
      await takeOver(file, holder.text);
    }
    throw heldError(sessionId, file, holder);
  }

  /** The same lock once its folder has been renamed to `folder` (a created session moved into place). */
  movedTo(folder: string): SessionLock {
    return new SessionLock(join(folder, LOCK_FILE), this.owner);
  }

  /** Removes the lock file if it is still this lock's (a missing file is already released). */
  async release(): Promise<void> {
    const text = await unlessMissing(readFile(this.file, "utf8"));
    if (text === undefined || parseOwner(text)?.token !== this.owner.token) return;
    await unlessMissing(unlink(this.file));
  }
}

/** Creates the lock file; false when one exists. */
async function create(file: string, owner: LockOwner): Promise<boolean> {
  let handle: FileHandle;
  try {
    handle = await open(file, "wx");
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return false;
    throw error;
  }
  try {
    await handle.writeFile(JSON.stringify(owner));
    await handle.sync();
    await handle.close();
    return true;
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(file).catch(() => undefined);
    throw error;
  }
}

/** Who holds the lock; undefined when the file vanished in the meantime. */
async function inspect(file: string): Promise<Holder | undefined> {
  const text = await unlessMissing(readFile(file, "utf8"));
  if (text === undefined) return undefined;
  const owner = parseOwner(text);
  if (!owner) return { kind: "unreadable", text };
  return { kind: isRunning(owner) ? "live" : "stale", text, owner };
}

function parseOwner(text: string): LockOwner | undefined {
  return LockOwner.safeParse(tryParseJson(text)).data;
}

function isRunning(owner: LockOwner): boolean {
  if (owner.hostname !== hostname()) return true;
  const started = processStart();
  // A process of an earlier boot runs no more, in whichever pid namespace it ran.
  if (bootOf(owner.started) !== "" && bootOf(started) !== "" && bootOf(owner.started) !== bootOf(started))
    return false;
  // A pid of another namespace names another process here.
  if (!sharesPidNamespace(owner.pidNamespace)) return true;
  // This process's pid: held by this process (another repo, or another thread), or left by an
  // earlier process that had the pid, which started at another time.
  if (owner.pid === process.pid) return owner.started === started;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    if (errnoCode(error) === "ESRCH") return false;
  }
  // A process has the pid: the owner, unless it started at another time (a later process given it).
  const now = processStartOf(owner.pid);
  return owner.started === "" || now === "" || now === owner.started;
}

/**
 * Removes a stale lock so the next `create` can take it. Unlinking by name could remove a lock
 * another opener has just created in its place, so the stale file is first renamed aside and
 * checked: if what was moved is not the stale lock, it is put back.
 */
async function takeOver(file: string, staleText: string): Promise<void> {
  const aside = `${file}.stale-${randomUUID()}`;
  try {
    await rename(file, aside);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return;
    throw error;
  }
  try {
    const moved = await readFile(aside, "utf8");
    if (moved !== staleText) await link(aside, file).catch(() => undefined);
  } finally {
    await unlink(aside).catch(() => undefined);
  }
}

function heldError(sessionId: string, file: string, holder: Holder | undefined): SessionError {
  if (holder?.kind === "unreadable") {
    return new SessionError(
      "forbidden",
      `session ${sessionId} is locked by ${file}, which is being written or is damaged; remove it if no process has the session open`,
      { id: sessionId, lockFile: file },
    );
  }
  const owner = holder && "owner" in holder ? holder.owner : undefined;
  const elsewhere =
    owner && owner.hostname === hostname() && !sharesPidNamespace(owner.pidNamespace)
      ? ` in another pid namespace (or one its lock does not name), which cannot be checked from here; remove ${file} if it no longer runs`
      : "";
  return new SessionError(
    "forbidden",
    owner
      ? `session ${sessionId} is open for writing by process ${owner.pid} on ${owner.hostname}${elsewhere}`
      : `session ${sessionId} is open for writing by another process`,
    { id: sessionId, lockFile: file, ...(owner ? { pid: owner.pid, hostname: owner.hostname } : {}) },
  );
}
