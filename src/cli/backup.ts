import { constants } from "node:buffer";
import { createHash } from "node:crypto";
import type { WriteStream } from "node:fs";
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { RemoteRepo } from "../client";
import { SessionError } from "../core/errors";
import { tryParseJson } from "../core/json";
import { MAX_NDJSON_LINE_BYTES } from "../core/limits";
import { decodeNdjson, decodeNdjsonLine } from "../core/ndjson";
import type { ImportedStreamStatus } from "../core/stream-backup";
import type { ExistingSessions, ImportedSessionStatus, TenantImportReport } from "../core/tenant-stream";
import { StreamEnds, TENANT_FORMAT, TENANT_VERSION } from "../core/tenant-stream";
import { write, writeFileAtomically } from "./atomic-file";
import { fileLines } from "./file-lines";

/*
 * `cf-sessions backup <dir>` and `cf-sessions restore <dir>`: a whole tenant to a folder, one
 * file per session (`sessions/<id>.ndjson`, its native export) and per stream
 * (`streams/<path>.ndjson`: its header line and appends), and back; ids and paths are named as
 * `fileName` says.
 *
 * A backup follows the tenant's export stream. A session's file is written under a temporary
 * name and renamed once the stream closes the session with its cursor; `backup.json` then records
 * that cursor, so a backup cut short (network, Ctrl-C) resumes after the last complete session
 * when run again, and a complete backup that could not read some sessions reads them again, one
 * at a time. A restore sends the files in requests of a few MiB; sessions already there are
 * skipped, so it resumes by being run again too. A request that fails fails the sessions it
 * carries, and the restore goes on with the next.
 */

/** What `backup.json` holds. */
export interface BackupState {
  format: typeof TENANT_FORMAT;
  version: typeof TENANT_VERSION;
  /** The cursor after the last complete session or stream: where a resumed backup starts. */
  cursor: string | null;
  sessions: number;
  /** Streams backed up (absent in backups made before streams were). */
  streams?: number;
  /** Sessions (and streams) the backup could not read, each once: read again by the next run. */
  failed: Array<{ id: string; error: unknown /** `id` is a stream's path. */; stream?: true }>;
  complete: boolean;
  startedAt: string;
  updatedAt: string;
}

/** Called as work is done, with a short line about it. */
export type Progress = (text: string) => void;

/** Request bodies a restore sends: about this many bytes of sessions (a larger session goes alone). */
const RESTORE_REQUEST_BYTES = 8 * 1024 * 1024;

/** The largest file a restore sends: a session goes in one request, read as one string. */
const MAX_RESTORE_FILE_BYTES = constants.MAX_STRING_LENGTH - 1;

/** The longest file name most file systems take, in bytes. */
const MAX_FILE_NAME_BYTES = 255;

/**
 * The name of the file holding the session or stream `key` names (its id or path), `.partial`
 * while written: percent-encoded, capitals too, so that two names differing only in case stay apart
 * on a file system that ignores case; the SHA-256 of `key` when that is too long for a file name. A
 * restore reads the id or path from the file's header line, so it reads any name, older ones too.
 */
function fileName(key: string): string {
  let encoded = "";
  for (const char of key)
    encoded += /[A-Z]/.test(char)
      ? `%${char.charCodeAt(0).toString(16).toUpperCase()}`
      : encodeURIComponent(char);
  const name = `${encoded}.ndjson`;
  if (Buffer.byteLength(`${name}.partial`) <= MAX_FILE_NAME_BYTES) return name;
  return `${createHash("sha256").update(key).digest("hex")}.ndjson`;
}

function saveState(dir: string, state: BackupState): void {
  state.updatedAt = new Date().toISOString();
  const path = join(dir, "backup.json");
  writeFileSync(`${path}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}

function readState(dir: string): BackupState | undefined {
  const path = join(dir, "backup.json");
  if (!existsSync(path)) return undefined;
  const state = JSON.parse(readFileSync(path, "utf8")) as BackupState;
  if (state.format !== TENANT_FORMAT) throw new Error(`${path} is not a cf-sessions backup`);
  return state;
}

function finish(stream: WriteStream): Promise<void> {
  return new Promise((resolve, reject) =>
    stream.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
}

export interface BackupResult {
  state: BackupState;
  /** Sessions written by this run. */
  written: number;
  /** Whether this run resumed an earlier one. */
  resumed: boolean;
  /** Whether the backup in `dir` was complete before this run (which then read again what it could not). */
  completeBefore: boolean;
}

type Failure = BackupState["failed"][number];

/** Drops what was recorded of the session `id` (or the stream at path `id`) as not read. */
function forgetFailure(state: BackupState, id: string, stream: boolean): void {
  state.failed = state.failed.filter((f) => f.id !== id || (f.stream === true) !== stream);
}

/** Records that a session or stream could not be read, in place of what was recorded of it before. */
function recordFailure(state: BackupState, failure: Failure): void {
  forgetFailure(state, failure.id, failure.stream === true);
  state.failed.push(failure);
}

/**
 * Reads again, one at a time, the sessions a complete backup could not read (a stream is read
 * only with the others, by a new backup); resolves to how many it wrote. A session deleted since is
 * not in the tenant any more, as the export leaves it out.
 */
async function retryFailed(client: RemoteRepo, dir: string, state: BackupState, progress: Progress) {
  let written = 0;
  for (const failure of state.failed.filter((f) => !f.stream)) {
    try {
      const path = join(dir, "sessions", fileName(failure.id));
      await writeFileAtomically(path, client.storage(failure.id).exportLines("native"));
      forgetFailure(state, failure.id, false);
      state.sessions++;
      written++;
    } catch (error) {
      if (error instanceof SessionError && error.code === "not_found")
        forgetFailure(state, failure.id, false);
      else {
        const message = error instanceof Error ? error.message : String(error);
        const code = error instanceof SessionError ? error.code : "unavailable";
        recordFailure(state, { id: failure.id, error: { code, message } });
      }
    }
    saveState(dir, state);
    progress(`backed up ${state.sessions} sessions, ${state.failed.length} not read`);
  }
  return written;
}

/** Whether an export's error line says its session or stream was deleted (or expired) while sent. */
function leftTheTenant(record: { path?: string; error?: unknown }): boolean {
  const code = (record.error as { code?: unknown } | undefined)?.code;
  return code === "not_found" || (record.path !== undefined && code === "gone");
}

/**
 * Backs the tenant up into `dir`, resuming a backup left incomplete there, or reading again the
 * sessions a complete one could not read.
 */
export async function backup(client: RemoteRepo, dir: string, progress: Progress): Promise<BackupResult> {
  const sessionsDir = join(dir, "sessions");
  const streamsDir = join(dir, "streams");
  mkdirSync(sessionsDir, { recursive: true });
  const earlier = readState(dir);
  if (earlier?.complete) {
    const retried = earlier.failed.some((f) => !f.stream);
    const written = retried ? await retryFailed(client, dir, earlier, progress) : 0;
    return { state: earlier, written, resumed: retried, completeBefore: true };
  }
  const now = new Date().toISOString();
  const state: BackupState = earlier ?? {
    format: TENANT_FORMAT,
    version: TENANT_VERSION,
    cursor: null,
    sessions: 0,
    streams: 0,
    failed: [],
    complete: false,
    startedAt: now,
    updatedAt: now,
  };
  let file: { path: string; stream: WriteStream; of: "sessions" | "streams"; key: string } | undefined;
  let written = 0;
  /** Closes the session's (or stream's) file: kept (renamed into place) once complete, else removed. */
  const close = async (complete: boolean) => {
    if (!file) return;
    const { path, stream, of, key } = file;
    file = undefined;
    try {
      await finish(stream);
    } catch (error) {
      rmSync(`${path}.partial`, { force: true });
      // A file given up on may have failed too: only a complete file's failure fails the backup.
      if (complete) throw error;
      return;
    }
    if (!complete) {
      rmSync(`${path}.partial`, { force: true });
      return;
    }
    renameSync(`${path}.partial`, path);
    // Read whole this time: a failure recorded of it by an earlier run is mended.
    forgetFailure(state, key, of === "streams");
    if (of === "streams") state.streams = (state.streams ?? 0) + 1;
    else state.sessions++;
    written++;
  };
  const open = async (of: "sessions" | "streams", key: string, line: string) => {
    await close(false);
    if (of === "streams") mkdirSync(streamsDir, { recursive: true });
    const path = join(of === "streams" ? streamsDir : sessionsDir, fileName(key));
    const stream = createWriteStream(`${path}.partial`);
    // The file may fail (it cannot be opened, the disk is full) while the next line is awaited:
    // its error is held by the stream and thrown by the next write or the close.
    stream.on("error", () => undefined);
    file = { path, stream, of, key };
    await write(file.stream, line);
  };
  try {
    for await (const line of client.exportTenant(state.cursor ?? undefined)) {
      const record = JSON.parse(line) as {
        type: string;
        id?: string;
        path?: string;
        cursor?: string;
        error?: unknown;
      };
      switch (record.type) {
        case "export":
          break;
        case "session":
          await open("sessions", String(record.id), line);
          break;
        case "stream":
          await open("streams", String(record.path), line);
          break;
        case "cursor": {
          await close(true);
          state.cursor = record.cursor ?? null;
          saveState(dir, state);
          progress(`backed up ${state.sessions} sessions, ${state.streams ?? 0} streams`);
          break;
        }
        case "error":
          await close(false);
          // A session deleted while it was sent (not_found), or a stream deleted (gone) or expired
          // (not_found) while it was, is not in the tenant any more, as the export leaves out one
          // deleted before: nothing to read again.
          if (leftTheTenant(record)) {
            forgetFailure(state, String(record.path ?? record.id), record.path !== undefined);
            saveState(dir, state);
            break;
          }
          recordFailure(
            state,
            record.path === undefined
              ? { id: String(record.id), error: record.error }
              : { id: String(record.path), error: record.error, stream: true },
          );
          saveState(dir, state);
          break;
        case "end":
          state.complete = true;
          saveState(dir, state);
          break;
        default:
          if (file) await write(file.stream, line);
      }
    }
  } finally {
    await close(false);
  }
  return { state, written, resumed: earlier !== undefined, completeBefore: false };
}

/** The first line of a file, read without reading the rest (to name what it holds, bad bytes and all). */
async function firstLine(path: string): Promise<string> {
  for await (const line of fileLines(path)) return new TextDecoder().decode(line);
  return "";
}

/**
 * Counts as failed, for `error`, every session and stream whose header line is in `text`: the
 * body of a request that failed, or the first line of a file too large to send.
 */
function failAll(result: RestoreResult, text: string, error: { code: string; message: string }): void {
  for (const [header] of text.matchAll(/^\{"type":"(session|stream)".*$/gm)) {
    const { type, id, path } = (tryParseJson(header) ?? {}) as {
      type?: string;
      id?: unknown;
      path?: unknown;
    };
    if (type === "stream") {
      result.streams.failed++;
      result.streams.problems.push({ path: typeof path === "string" ? path : null, status: "failed", error });
    } else {
      result.failed++;
      result.problems.push({ id: typeof id === "string" ? id : null, status: "failed", error });
    }
  }
}

/** Whether the service refuses `line` in an import as too long. */
function isOverlong(line: string): boolean {
  // A UTF-16 unit is at most three bytes of UTF-8: the bytes are counted only when that could matter.
  return line.length * 3 > MAX_NDJSON_LINE_BYTES && Buffer.byteLength(line) > MAX_NDJSON_LINE_BYTES;
}

/** The number of the first line of `text` the service refuses in an import as too long, if one is. */
function overlongLine(text: string): number | undefined {
  let number = 1;
  for (let start = 0; start < text.length; number++) {
    const newline = text.indexOf("\n", start);
    const end = newline < 0 ? text.length : newline;
    if ((end - start) * 3 > MAX_NDJSON_LINE_BYTES && isOverlong(text.slice(start, end))) return number;
    start = end + 1;
  }
  return undefined;
}

/**
 * What failed a session holding a line the service refuses: it is not sent, so a request never
 * carries what the service answers before it has read it all (that answer would fail the sessions
 * sent with it, and a connection it leaves unread can fail the next request).
 */
function tooLongToSend(file: string, line: number): { code: string; message: string } {
  return {
    code: "payload_too_large",
    message: `line ${line} of ${file} is longer than ${MAX_NDJSON_LINE_BYTES} bytes, the longest line the service takes`,
  };
}

/** What failed a session holding a line that is not UTF-8: it is not sent, with that byte or another. */
function notUtf8ToSend(file: string, line: number): { code: string; message: string } {
  return { code: "invalid_request", message: `line ${line} of ${file} is not valid UTF-8` };
}

/**
 * The sessions of a backup folder, or of a tenant export file, as request bodies of a few MiB. A
 * file's end line stays here (each body is a stream of its own): it is checked against the sessions
 * the file completed, and what does not add up, or a file with no end line, goes to the result's
 * `warnings`; a file too large to send, or a session holding a line the service refuses, goes to its
 * failures.
 */
async function* restoreBodies(path: string, result: RestoreResult): AsyncGenerator<string> {
  const { warnings } = result;
  let body = "";
  const add = function* (text: string) {
    if (body && body.length + text.length > RESTORE_REQUEST_BYTES) {
      yield body;
      body = "";
    }
    body += text;
  };
  if (statSync(path).isDirectory()) {
    for (const of of ["sessions", "streams"]) {
      const dir = join(path, of);
      const files = existsSync(dir)
        ? readdirSync(dir)
            .filter((name) => name.endsWith(".ndjson"))
            .sort()
        : [];
      for (const name of files) {
        const file = join(dir, name);
        const { size } = statSync(file);
        if (size > MAX_RESTORE_FILE_BYTES) {
          failAll(result, await firstLine(file), {
            code: "payload_too_large",
            message: `${file} is ${size} bytes: a restore sends a session in one request, of at most ${MAX_RESTORE_FILE_BYTES}`,
          });
          continue;
        }
        const bytes = readFileSync(file);
        let text: string;
        try {
          text = decodeNdjson(bytes);
        } catch (error) {
          if (!(error instanceof SessionError)) throw error;
          const { line } = error.details as { line: number };
          failAll(result, new TextDecoder().decode(bytes), notUtf8ToSend(file, line));
          continue;
        }
        if (!text.endsWith("\n")) text += "\n";
        const overlong = overlongLine(text);
        if (overlong === undefined) yield* add(text);
        else failAll(result, text.slice(0, text.indexOf("\n")), tooLongToSend(file, overlong));
      }
    }
  } else {
    // A stream from GET /v1/export: split where each session's header line starts. A session of
    // the export goes with the export's opening line before it, so the service fails it when no
    // cursor line follows it (the file was cut short in it) as it would in the whole file.
    const ends = new StreamEnds("the file", warnings);
    let opening: string | undefined;
    let session = "";
    // The first line of `session` the service would refuse: the session is not sent.
    let overlong: number | undefined;
    // The first line of `session`, or of the export's opening line it goes with, that is not UTF-8:
    // the session is not sent (its text read with U+FFFD in the bad byte's place, only to name it).
    let openingNotUtf8: number | undefined;
    let notUtf8: number | undefined;
    const finish = function* () {
      const bad = openingNotUtf8 ?? notUtf8;
      if (bad !== undefined) failAll(result, session, notUtf8ToSend(path, bad));
      else if (overlong !== undefined) failAll(result, session, tooLongToSend(path, overlong));
      else if (session) yield* add(session);
      session = "";
      overlong = undefined;
      notUtf8 = undefined;
    };
    let number = 0;
    for await (const bytes of fileLines(path)) {
      number++;
      let line: string;
      let utf8 = true;
      try {
        line = decodeNdjsonLine(bytes, number);
      } catch {
        line = new TextDecoder().decode(bytes).replace(/\r$/, "");
        utf8 = false;
      }
      if (!line.trim()) continue;
      // The stream's own lines, told by how they start: a session's lines are not parsed here.
      const type = /^\{"type":"(export|cursor|end|session|stream)"/.exec(line)?.[1];
      ends.read(number, type, type === "end" ? tryParseJson(line) : undefined);
      if (type === "export") {
        opening = line;
        openingNotUtf8 = utf8 ? undefined : number;
      }
      if (type === "export" || type === "end") continue;
      if (type === "session" || type === "stream") {
        yield* finish();
        if (ends.within) session = `${opening}\n`;
      }
      if (!utf8) notUtf8 ??= number;
      // A header line stays, to name what failed; a longer line is not held.
      if (type === undefined && isOverlong(line)) overlong ??= number;
      else session += `${line}\n`;
    }
    yield* finish();
    if (ends.within) {
      const message =
        "the file has no end line: it was cut short (what follows its last cursor line is not restored; GET /v1/export?cursor=<that cursor> resumes it)";
      warnings.push({ line: number, message });
      result.cutShort = true;
    }
  }
  if (body) yield body;
}

/** The service's reports added up; `warnings` also holds what the file itself does not add up to. */
export type RestoreResult = Omit<TenantImportReport, "sessions" | "streams"> & {
  /**
   * The sessions that failed or were refused, and those skipped for a reason of their own (deleted
   * while the export was being sent), not for being there already.
   */
  problems: ImportedSessionStatus[];
  /** The streams, counted as the sessions are, and those that failed or were refused. */
  streams: {
    imported: number;
    skipped: number;
    refused: number;
    failed: number;
    problems: ImportedStreamStatus[];
  };
  /**
   * What the `backup.json` of a backup folder says it lacks, when it lacks anything: the backup
   * stopped early (`complete` false), or sessions it could not read (`failed`).
   */
  unfinishedBackup?: Pick<BackupState, "complete" | "failed">;
  /** The export file has no end line: what it held past its last cursor line is not restored. */
  cutShort?: true;
};

/** Adds up what the service reports of one request. */
function addReport(result: RestoreResult, report: TenantImportReport): void {
  for (const status of ["imported", "skipped", "refused", "failed"] as const)
    result[status] += report[status];
  for (const session of report.sessions)
    if (session.status !== "imported" && (session.status !== "skipped" || session.error))
      result.problems.push(session);
  for (const stream of report.streams ?? []) {
    result.streams[stream.status]++;
    if (stream.status === "failed" || stream.status === "refused") result.streams.problems.push(stream);
  }
  result.warnings.push(...report.warnings);
}

/** Restores a backup folder (or a tenant export file) into the tenant. */
export async function restore(
  client: RemoteRepo,
  path: string,
  existing: ExistingSessions,
  progress: Progress,
): Promise<RestoreResult> {
  const result: RestoreResult = {
    imported: 0,
    skipped: 0,
    refused: 0,
    failed: 0,
    problems: [],
    streams: { imported: 0, skipped: 0, refused: 0, failed: 0, problems: [] },
    warnings: [],
  };
  const state = statSync(path).isDirectory() ? readState(path) : undefined;
  if (state && (!state.complete || state.failed.length > 0))
    result.unfinishedBackup = { complete: state.complete, failed: state.failed };
  for await (const body of restoreBodies(path, result)) {
    try {
      addReport(result, await client.importTenant(body, { existing }));
    } catch (error) {
      // A key the service refuses fails every request alike: the restore stops at the first.
      if (error instanceof SessionError && (error.code === "unauthorized" || error.code === "forbidden"))
        throw error;
      // Refused whole (too large for the service, say) or unanswered: what it carried failed.
      const code = error instanceof SessionError ? error.code : "unavailable";
      failAll(result, body, { code, message: error instanceof Error ? error.message : String(error) });
    }
    progress(
      `restored ${result.imported}, skipped ${result.skipped}, failed ${result.failed + result.refused}`,
    );
  }
  return result;
}
