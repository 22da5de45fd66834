import { mkdirSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import type { RemoteRepo } from "../client";
import { sleep } from "../client/backoff";
import { UnexplainedAnswerError } from "../client/transport";
import { isUuid } from "../core/agent-ids";
import { sha256Hex } from "../core/bytes";
import type { SessionEntry } from "../core/entries";
import { SessionError } from "../core/errors";
import { detectFormat, parseImport } from "../core/import-formats";
import type { ImportedSession, ImportFormat } from "../core/interchange";
import { checkFormat, importBatches, leafAfter } from "../core/interchange";
import { canonicalJson } from "../core/json";
import { decodeNdjson } from "../core/ndjson";
import { nameAsFile } from "../core/sync-import";
import { writeFileAtomically } from "./atomic-file";
import { sessionFiles } from "./import-files";
import { type Output, terminalSafe } from "./output";
import { recordProject } from "./project-key";

/*
 * `sync --watch`: a folder of session files (pi, Claude Code, Codex) mirrored while the agents
 * write them. Each file is read a line at a time (`linesApart`), so the entries of its first lines
 * never change as it grows. The first time a file is seen its session is synced whole (made, or
 * checked against what the service holds and completed); from then on only the entries past those
 * sent go out, written with their ids, a few times a second. What was sent of each file is kept
 * in a state file, so a restart goes on where it stopped. A write whose answer was lost (a dropped
 * connection) is found written when sent again (`already_exists`), and a sync of the whole file
 * then adds only what the service lacks: nothing is written twice. A file replaced by another (as
 * `pull` writes one, the service's export) is synced whole: its lines may be the export's of
 * entries the service holds, which a sync pairs with them. A file that shrank in place, or whose
 * entries sent before now read otherwise, was rewritten: it is reported, and mirrored no further.
 */

/** What was sent of one file. */
interface FileState {
  format: ImportFormat;
  /** The session it is mirrored to. */
  id: string;
  /** Bytes of whole lines read. */
  size: number;
  /** The file's inode when it was read: another is a file put in its place. */
  inode?: number;
  /** Entries sent, and the digest of the last of them. */
  sent: number;
  last: string | null;
  leafId: string | null;
  /** Why the file is no longer mirrored. */
  stopped?: "rewritten" | "conflict";
}

interface WatchState {
  version: 1;
  files: Record<string, FileState>;
}

export interface WatchOptions {
  format?: string | undefined;
  /** The state file (default: `defaultStatePath`). */
  statePath: string;
  /** Milliseconds between two looks at the folder. */
  intervalMs: number;
  json: boolean;
  /** Stops the watch (after the look under way); the state is saved. */
  signal: AbortSignal;
}

/** The default state file of a folder mirrored to a service. */
export async function defaultStatePath(
  dir: string,
  baseUrl: string,
  env: Record<string, string | undefined>,
) {
  const base = env.XDG_STATE_HOME || join(homedir(), ".local", "state");
  const key = (await sha256Hex(`${resolve(dir)}\n${baseUrl}`)).slice(0, 16);
  return join(base, "cf-sessions", `sync-${key}.json`);
}

function readState(path: string): WatchState {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return { version: 1, files: {} };
  }
  const state = JSON.parse(text) as WatchState;
  if (state?.version !== 1 || typeof state.files !== "object")
    throw new Error(`${path} is not a state file of cf-sessions sync --watch`);
  return state;
}

/** Saves the state whole or not at all (a restart never reads half of it). */
async function saveState(path: string, state: WatchState): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  await writeFileAtomically(
    path,
    (async function* () {
      yield JSON.stringify(state);
    })(),
  );
}

/** A file's size; `undefined` when it is gone or cannot be read. */
function sizeOf(path: string): number | undefined {
  return statOf(path)?.size;
}

function statOf(path: string): { size: number; inode: number } | undefined {
  try {
    const { size, ino } = statSync(path);
    return { size, inode: ino };
  } catch {
    return undefined;
  }
}

/**
 * The text of a file up to its last line end (a line being written is read once it is whole), and
 * how many bytes of the file that is; `undefined` when it is gone or cannot be read. The text is
 * checked as UTF-8: a line holding a byte that is not fails the file at that line.
 */
function wholeLines(path: string): { text: string; bytes: number } | undefined {
  let read: Uint8Array;
  try {
    read = readFileSync(path);
  } catch {
    return undefined;
  }
  const whole = read.subarray(0, read.lastIndexOf(0x0a) + 1);
  return { text: decodeNdjson(whole), bytes: whole.byteLength };
}

/**
 * A file's lines so far as the session a sync of the whole file makes. Claude Code names a
 * session's file after it (`<sessionId>.jsonl`), and a resumed conversation's file starts with lines
 * copied from the one it continued, carrying that one's id: the whole file is read by its last
 * sessionId, which is its name, so the name gives the session while only copied lines are written.
 */
function asWholeFile(file: string, format: ImportFormat, parsed: ImportedSession): ImportedSession {
  const named = basename(file, ".jsonl");
  const fields = parsed.header.metadata.claudeCode as Record<string, unknown> | undefined;
  // A subagent's transcript is named after its agent, not its session.
  if (format !== "claude-code" || !isUuid(named) || parsed.header.id !== `claude-code-${fields?.sessionId}`)
    return parsed;
  const metadata = { ...parsed.header.metadata, claudeCode: { ...fields, sessionId: named } };
  return { ...parsed, header: { ...parsed.header, id: `claude-code-${named}`, metadata } };
}

const digest = (entry: SessionEntry | undefined) => (entry === undefined ? null : canonicalJson(entry));

/**
 * A failure that trying again would not mend: a refusal of what the file holds (by its reader, or
 * by the service in its own words), not a failure of the service or of what stands before it.
 */
function refusal(error: unknown): boolean {
  return (
    error instanceof SessionError &&
    !(error instanceof UnexplainedAnswerError) &&
    !["unavailable", "internal", "rate_limited", "misconfigured", "unauthorized", "forbidden"].includes(
      error.code,
    )
  );
}

class Mirror {
  readonly #client: RemoteRepo;
  readonly #output: Output;
  readonly #options: WatchOptions;
  readonly #state: WatchState;
  /**
   * Files that could not be read as sessions, or whose new lines the service refused, by size:
   * looked at again once they change.
   */
  readonly #unread = new Map<string, number>();
  /**
   * Files whose whole lines were all sent while a last line was being written, by their size then:
   * read again once their size changes.
   */
  readonly #halfWritten = new Map<string, number>();
  /**
   * Files waiting for the service, by the failure reported: a failure is reported once for a file,
   * until the file is sent or fails otherwise.
   */
  readonly #failures = new Map<string, string>();

  constructor(client: RemoteRepo, output: Output, options: WatchOptions, state: WatchState) {
    this.#client = client;
    this.#output = output;
    this.#options = options;
    this.#state = state;
  }

  #report(event: Record<string, unknown>, line: string): void {
    if (this.#options.json) this.#output.out(JSON.stringify(event));
    else this.#output.out(terminalSafe(line));
  }

  /** Looks at every file once; resolves to whether anything changed in the state. */
  async look(dir: string): Promise<boolean> {
    let changed = false;
    for (const file of sessionFiles(dir)) {
      try {
        changed = (await this.#file(file)) || changed;
        this.#failures.delete(file);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (refusal(error)) {
          // What this file holds is refused (a line the reader or the service takes for bad input):
          // reported once, and looked at again when the file changes; the other files go on.
          this.#failures.delete(file);
          const size = sizeOf(file);
          if (size !== undefined) this.#unread.set(file, size);
          this.#report({ event: "failed", file, error: message }, `failed: ${file}: ${message}`);
          continue;
        }
        // The service unreachable or failing: the file is tried again at the next look, the other
        // files go on.
        if (this.#failures.get(file) !== message)
          this.#report({ event: "retrying", file, error: message }, `retrying: ${file}: ${message}`);
        this.#failures.set(file, message);
      }
    }
    return changed;
  }

  async #file(file: string): Promise<boolean> {
    const known = this.#state.files[file];
    if (known?.stopped) return false;
    // A file gone or not readable (deleted since the folder was listed, say) is left for now.
    const stat = statOf(file);
    if (stat === undefined) return false;
    const { size, inode } = stat;
    // A file put in the place of the one mirrored (as `pull` writes one) is synced whole, as a file
    // seen for the first time is, whatever it starts with: an export after the head moved back is
    // shorter, and a rollout's lines are read under ids its export records.
    const replaced = known?.inode !== undefined && known.inode !== inode;
    const grown = known && !replaced ? known : undefined;
    if (grown && size === grown.size) return false;
    if (this.#unread.get(file) === size) return false;
    if (grown && size < grown.size) return this.#stop(file, grown, "rewritten");
    if (this.#halfWritten.get(file) === size) return false;
    const read = wholeLines(file);
    if (read === undefined) return false;
    const { text, bytes } = read;
    if (grown && bytes === grown.size) {
      this.#halfWritten.set(file, size);
      return false;
    }
    const format =
      known?.format ?? (this.#options.format ? checkFormat(this.#options.format) : detectFormat(text));
    let parsed: ImportedSession;
    try {
      if (!format) throw new Error("not a session file (yet)");
      parsed = parseImport(format, text, { linesApart: true });
    } catch (error) {
      if (known) throw error;
      // Not a session yet (a Codex file before its session line, say): looked at again as it grows.
      this.#unread.set(file, size);
      return false;
    }
    this.#unread.delete(file);
    if (!known) parsed = asWholeFile(file, format as ImportFormat, parsed);
    const next: FileState = {
      format: format as ImportFormat,
      id: known?.id ?? parsed.header.id,
      size: bytes,
      inode,
      sent: parsed.entries.length,
      last: digest(parsed.entries.at(-1)),
      leafId: parsed.leafId,
    };
    if (!grown) return this.#first(file, parsed, next);
    if (parsed.entries.length < grown.sent || digest(parsed.entries[grown.sent - 1]) !== grown.last)
      return this.#stop(file, grown, "rewritten");
    const rest = parsed.entries.slice(grown.sent);
    // Writing entries leaves the session's head on the last of them, which is not the file's head
    // when the last lines are a subagent's (written while its main chain waits): it is put back.
    const head = rest.length > 0 ? await this.#send(parsed, next.id, rest) : grown.leafId;
    const renamed = await nameAsFile(this.#client.storage(next.id), parsed, rest);
    if (parsed.leafId !== null && (renamed || head !== parsed.leafId))
      await this.#client.storage(next.id).setLeafId(parsed.leafId);
    this.#state.files[file] = next;
    const count = rest.filter((entry) => entry.type !== "leaf").length;
    if (count > 0)
      this.#report(
        { event: "appended", file, id: next.id, entries: count },
        `appended ${count} to ${next.id}: ${file}`,
      );
    return true;
  }

  /** A file seen for the first time: its session made, or checked and completed. */
  async #first(file: string, parsed: ImportedSession, next: FileState): Promise<boolean> {
    try {
      const { status, appended } = await this.#client.syncSession(parsed, { id: next.id });
      // Recorded whatever the sync did: a first look whose recording failed is mended by the next.
      await recordProject(this.#client.storage(next.id), parsed.header.metadata);
      this.#state.files[file] = next;
      this.#report(
        { event: status, file, id: next.id, entries: appended },
        status === "unchanged"
          ? `watching ${next.id}: ${file}`
          : `${status === "created" ? "imported" : `appended ${appended} to`} ${next.id}: ${file}`,
      );
      return true;
    } catch (error) {
      if (!(error instanceof SessionError && error.code === "already_exists")) throw error;
      // The session holds other entries: imported whole before (streamed answers folded), or edited.
      this.#report(
        { event: "conflict", file, id: next.id, error: error.message },
        `conflict: ${file}: ${error.message}; not mirrored`,
      );
      this.#state.files[file] = { ...next, stopped: "conflict" };
      return true;
    }
  }

  /**
   * Writes entries as they are, a batch at a time. A batch found written already (its answer lost
   * before), or under a line the session holds as another entry (a line the session's export wrote,
   * in a file `pull` made), has the service sync the whole file instead, which adds only what it
   * lacks, under the entries it holds. Resolves to where the session's head is left, `undefined`
   * when that is not known.
   */
  async #send(
    parsed: ImportedSession,
    id: string,
    entries: readonly SessionEntry[],
  ): Promise<string | null | undefined> {
    const storage = this.#client.storage(id);
    for (const batch of importBatches(entries)) {
      try {
        await storage.importEntries(batch);
      } catch (error) {
        const code = error instanceof SessionError ? error.code : undefined;
        if (code !== "already_exists" && code !== "parent_not_found") throw error;
        // A sync that writes puts the head on the file's; one that finds everything there leaves it.
        const { status } = await this.#client.syncSession(parsed, { id });
        return status === "unchanged" ? undefined : parsed.leafId;
      }
    }
    return leafAfter(entries);
  }

  #stop(file: string, known: FileState, why: "rewritten"): boolean {
    this.#state.files[file] = { ...known, stopped: why };
    this.#report(
      { event: why, file, id: known.id },
      `rewritten: ${file} no longer starts with what was mirrored to ${known.id}; not mirrored further`,
    );
    return true;
  }
}

/** Mirrors a folder until `options.signal` stops it; resolves to the exit code. */
export async function watchFiles(
  client: RemoteRepo,
  dir: string,
  output: Output,
  options: WatchOptions,
): Promise<number> {
  statSync(dir);
  const state = readState(options.statePath);
  const mirror = new Mirror(client, output, options, state);
  output.err(`cf-sessions: watching ${resolve(dir)}; state in ${options.statePath}\n`);
  while (!options.signal.aborted) {
    if (await mirror.look(dir)) await saveState(options.statePath, state);
    await sleep(options.intervalMs, options.signal);
  }
  return 0;
}
