import * as z from "zod";
import { codexProviderOf, withCodexProvider } from "./codex-format";
import { continuedExport } from "./continued-export";
import type { SessionEntry } from "./entries";
import { isTreeEntry } from "./entries";
import { SessionError } from "./errors";
import type { ImportedSession, ImportHeader } from "./interchange";
import { importBatches, writeImport } from "./interchange";
import { sameEntry, writtenHere } from "./same-entry";
import { Session } from "./session";
import type { SessionStorage } from "./storage";

/*
 * Importing a file again after it grew. Agents append to their session files and never rewrite
 * them, so a file whose session is already here either starts with exactly the entries stored
 * (then only what follows is new), or is an agent's file made from the session's export and gone
 * on in (`continuedExport`: what follows the export's lines is new), or was changed some other
 * way, and then nothing is overwritten.
 */

/** What a sync did: made the session, appended what the file gained, or found nothing new. */
export const SyncSummary = z
  .object({
    status: z.enum(["created", "appended", "unchanged"]),
    appended: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: "entries written (head moves not counted)" }),
  })
  .meta({ id: "SyncSummary" });
export type SyncSummary = z.infer<typeof SyncSummary>;
export type SyncStatus = SyncSummary["status"];

export interface SyncResult extends SyncSummary {
  session: Session;
}

export interface SyncTarget {
  /** The session's storage, or undefined when there is no such session. */
  open(id: string): Promise<SessionStorage | undefined>;
  /** Makes an empty session with the header; `already_exists` when the id is taken. */
  create(header: ImportHeader): Promise<SessionStorage>;
  /**
   * Refuses, before anything is written, entries the session has no room for (its quotas); the
   * batches are checked again as they are written.
   */
  admit?(storage: SessionStorage, entries: readonly SessionEntry[]): Promise<void>;
}

/** Runs `open`, answering undefined for a session that does not exist. */
export async function openIfExists<T>(open: () => Promise<T>): Promise<T | undefined> {
  try {
    return await open();
  } catch (error) {
    if (error instanceof SessionError && error.code === "not_found") return undefined;
    throw error;
  }
}

function diverged(id: string, entryId: string | undefined): SessionError {
  return new SessionError(
    "already_exists",
    entryId === undefined
      ? `session ${id} holds entries the file does not; nothing was written`
      : `session ${id} differs from the file from entry ${entryId} on; nothing was written`,
    { id, ...(entryId === undefined ? {} : { entryId }) },
  );
}

/**
 * How many of the file's entries the session holds already: its tree entries must be the file's
 * first ones, the same in every field (head moves are not compared: moving the head elsewhere
 * changes no entry), in the order they were stored, or in that order with one of them moved later:
 * a pi export puts the head's entry after the others, where pi resumes, and what pi appends after
 * it is stored after them all. What was written here about the conversation and the file does not
 * hold is passed over (`writtenHere`). Anything else is `already_exists`.
 */
async function storedPrefix(
  storage: SessionStorage,
  entries: readonly SessionEntry[],
): Promise<{ next: number; notesPassed: boolean }> {
  const fileIds = new Set(entries.map((entry) => entry.id));
  let next = 0;
  let notesPassed = false;
  /** The file's next tree entry if it is `stored`: then it is taken. */
  const takes = (stored: Record<string, unknown>) => {
    while (next < entries.length && !isTreeEntry(entries[next] as SessionEntry)) next++;
    const expected = entries[next];
    if (expected === undefined || !sameEntry(stored, expected)) return false;
    next++;
    return true;
  };
  // The stored entry the file has further on, and the file's entry where it was stored.
  let moved: { entry: Record<string, unknown>; at: string | undefined } | undefined;
  let movedTaken = false;
  for await (const { seq: _seq, ...stored } of new Session(storage).allEntries()) {
    if (stored.type === "leaf" || takes(stored)) continue;
    if (writtenHere(stored) && !fileIds.has(stored.id)) {
      notesPassed ||= stored.type === "custom_message";
      continue;
    }
    const at = entries.slice(next).find((entry) => isTreeEntry(entry))?.id;
    if (moved !== undefined && !movedTaken && takes(moved.entry)) {
      movedTaken = true;
      if (takes(stored)) continue;
    }
    if (moved !== undefined) throw diverged(storage.id, moved.at);
    if (at === undefined) throw diverged(storage.id, undefined);
    moved = { entry: stored, at };
  }
  if (moved !== undefined && !movedTaken && !takes(moved.entry)) throw diverged(storage.id, moved.at);
  return { next, notesPassed };
}

/** What a sync writes into a session that exists: the file's entries it lacks, and the file's head. */
export interface SyncPlan {
  /** The file as the session reads it (a rollout with the Codex provider the session stored). */
  read: ImportedSession;
  /** The entries to append, under stored ones or each other. */
  entries: SessionEntry[];
  /** Where the session's head goes. */
  leafId: string | null;
}

/**
 * What a sync of the file writes into the session of `storage`: what follows the entries the
 * session holds (`storedPrefix`), or what an agent's file made from the session's export holds
 * beyond it (`continuedExport`, first when a note the file may hold as the export's lines was
 * passed over); nothing when the session holds it all. A file that is neither is `already_exists`.
 */
export async function planSync(storage: SessionStorage, file: ImportedSession): Promise<SyncPlan> {
  const session = new Session(storage);
  // A rollout `pull` gave the local Codex's provider is read with the one the session stored.
  const provider = codexProviderOf((await session.getHeader()).metadata);
  const read = provider === undefined ? file : withCodexProvider(file, provider);
  try {
    const { next, notesPassed } = await storedPrefix(storage, read.entries);
    const entries = read.entries.slice(next);
    // A note passed over may be in the file as the lines its export wrote (as a Codex user
    // message): then only what follows them is new.
    const continued = notesPassed && entries.length > 0 ? await continuedExport(session, read) : undefined;
    return continued ? { read, ...continued } : { read, entries, leafId: read.leafId };
  } catch (error) {
    if (!(error instanceof SessionError && error.code === "already_exists")) throw error;
    const continued = await continuedExport(session, read);
    if (continued === undefined) throw error;
    return { read, ...continued };
  }
}

/**
 * Names the session as its file does when `written` (the file's entries just written) holds the line
 * that gave the name: the agent renamed the session after an earlier sync. The name is a
 * `session_info` under that line's entry, its id made from it, so a sync run again after a lost
 * answer names it once. Resolves to whether it wrote the name, which leaves the head on it (the
 * caller puts it back on the file's).
 */
export async function nameAsFile(
  storage: SessionStorage,
  file: ImportedSession,
  written: readonly SessionEntry[],
): Promise<boolean> {
  const { namedBy } = file;
  const name = file.header.name;
  if (namedBy === undefined || name === undefined || !written.some((entry) => entry.id === namedBy))
    return false;
  const id = `${namedBy}:name`;
  if ((await storage.getInfo()).name === name || (await storage.getEntry(id))) return false;
  await new Session(storage).appendSessionName(name, { id, parentId: namedBy });
  return true;
}

/**
 * Writes a parsed file into the session of its id (or `id`): a new session when there is none;
 * when the session holds the file's first entries, or the file is its export gone on in, the rest
 * are appended and the head goes where the file's is; when it holds the whole file, nothing is
 * written. A session that differs from the file is `already_exists`, and nothing is written.
 */
export async function syncImport(
  file: ImportedSession,
  options: { id?: string | undefined },
  target: SyncTarget,
): Promise<SyncResult> {
  const id = options.id ?? file.header.id;
  const storage = await target.open(id);
  const treeEntries = (entries: readonly SessionEntry[]) => entries.filter((e) => isTreeEntry(e)).length;
  if (!storage) {
    const created = await writeImport(file, { id }, target.create);
    return { session: new Session(created), status: "created", appended: treeEntries(file.entries) };
  }
  const session = new Session(storage);
  const { read, entries: rest, leafId } = await planSync(storage, file);
  if (treeEntries(rest) === 0) return { session, status: "unchanged", appended: 0 };
  await target.admit?.(storage, rest);
  // The file's parser checked every entry; the parents of the rest are stored or in the rest. Each
  // batch is atomic, and a sync cut short between batches goes on where it stopped when run again.
  for (const batch of importBatches(rest)) await storage.importEntries(batch, { validated: true });
  await nameAsFile(storage, read, rest);
  if ((await storage.getLeafId()) !== leafId) await storage.setLeafId(leafId);
  return { session, status: "appended", appended: treeEntries(rest) };
}
