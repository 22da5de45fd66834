import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join, sep } from "node:path";
import type { RemoteRepo } from "../client";
import { SessionError } from "../core/errors";
import { detectFormat, holdsNoConversation, parseImport } from "../core/import-formats";
import type { ImportFormat, ImportWarning } from "../core/interchange";
import { decodeNdjson } from "../core/ndjson";
import type { SyncSummary } from "../core/sync-import";
import { fail, type Output, oneOf, terminalSafe } from "./output";
import { recordProject } from "./project-key";

/*
 * `import` and `sync`: every session file under a folder, one request each, with progress and a
 * summary. `import` makes the sessions that are not there yet and skips the rest; `sync` also
 * appends what a file gained since it was last synced (agents only ever append to their files),
 * and reports a file its session no longer matches as a conflict, writing nothing.
 */

/** Whether `path` is itself a link (false for what cannot be read). */
function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Every `.jsonl` or `.ndjson` file under a folder, each once, in a stable order. What is under it
 * and cannot be read (gone since the folder was listed, a dangling or looping link, a folder not
 * open to this user) is left out; the folder itself must be readable.
 */
export function sessionFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  const files: string[] = [];
  // The folders in the order they are found, shallowest first, each once by its real path: a
  // link back up the tree (to the folder given or one that holds it), or to a folder found
  // already, is passed over, so links neither repeat files, nor make the walk endless, nor lead it
  // out of the folder given.
  const folders = [path];
  const root = realpathSync(path);
  const found = new Set([root]);
  const holdsRoot = (folder: string) => root.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);
  // Files too, by their real paths: one reached by links and by its own path is listed once, by
  // its own path (an agent's folder may hold a link to its newest file, as Codex's `latest`).
  const foundFiles = new Map<string, number>();
  for (let next = 0; next < folders.length; next++) {
    const dir = folders[next] as string;
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch (error) {
      if (dir === path) throw error;
      continue;
    }
    for (const name of names) {
      const full = join(dir, name);
      // A folder's real path, whatever links lead to it; undefined for a file.
      let folder: string | undefined;
      let real: string;
      try {
        real = realpathSync(full);
        if (statSync(real).isDirectory()) folder = real;
      } catch {
        continue;
      }
      if (folder === undefined) {
        if (!name.endsWith(".jsonl") && !name.endsWith(".ndjson")) continue;
        const listed = foundFiles.get(real);
        if (listed === undefined) {
          foundFiles.set(real, files.push(full) - 1);
        } else if (isLink(files[listed] as string) && !isLink(full)) {
          files[listed] = full;
        }
      } else if (!found.has(folder) && !holdsRoot(folder)) {
        found.add(folder);
        folders.push(full);
      }
    }
  }
  return files.sort();
}

/** What happened to each file, as `--json` prints it. */
interface Report {
  imported: string[];
  /** `sync` only: sessions that gained entries, and how many. */
  appended: Array<{ id: string; entries: number }>;
  /** Already there (`import`), or holding the whole file already (`sync`: "unchanged"). */
  skipped: string[];
  /** Files of a folder that hold no conversation (Claude Code's file snapshots or titles alone). */
  empty: string[];
  /** `sync` only: files their session differs from; nothing was written. */
  conflicts: Array<{ file: string; id: string; error: string }>;
  failed: Array<{ file: string; error: string }>;
  warnings: Array<{ file: string } & ImportWarning>;
}

type Progress = "bar" | "plain" | "none";

function progressLine(output: Output, progress: Progress, done: number, total: number, line: string): void {
  if (progress === "plain") output.err(`[${done}/${total}] ${terminalSafe(line)}\n`);
  else if (progress === "bar") {
    const width = 30;
    const filled = Math.round((done / total) * width);
    output.err(`\r[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total}`);
    if (done === total) output.err("\n");
  }
}

/**
 * Syncs a file's text into session `id`. `sync --watch` keeps each line of a Claude Code or Codex
 * file as entries of its own (`linesApart`), where a read of the whole file folds the lines of a
 * streamed answer into one entry: a file the whole reading conflicts with is read a line at a time
 * and synced again (a conflict writes nothing), so a mirrored session takes what its file gained.
 * When both readings conflict, the whole reading's conflict is reported.
 */
async function syncText(
  client: RemoteRepo,
  text: string,
  format: ImportFormat,
  id: string,
): Promise<SyncSummary & { warnings: ImportWarning[] }> {
  try {
    return await client.syncFile(text, { format, id });
  } catch (error) {
    const conflict = error instanceof SessionError && error.code === "already_exists";
    if (!conflict || (format !== "claude-code" && format !== "codex")) throw error;
    const apart = parseImport(format, text, { linesApart: true });
    const synced = await client.syncSession(apart, { id }).catch((again: unknown) => {
      throw again instanceof SessionError && again.code === "already_exists" ? error : again;
    });
    return { status: synced.status, appended: synced.appended, warnings: apart.warnings };
  }
}

/** Imports or syncs a file or every session file under a folder; resolves to the exit code. */
export async function importFiles(
  client: RemoteRepo,
  path: string,
  output: Output,
  options: { mode: "import" | "sync"; format?: ImportFormat; id?: string; progress?: string; json: boolean },
): Promise<number> {
  const progress: Progress =
    oneOf("progress", options.progress, ["bar", "plain", "none"] as const) ??
    (output.isTTY ? "bar" : "plain");
  const { format } = options;
  const files = sessionFiles(path);
  const folder = statSync(path).isDirectory();
  if (options.id !== undefined && files.length > 1) fail("--id applies to a single file");
  const report: Report = {
    imported: [],
    appended: [],
    skipped: [],
    empty: [],
    conflicts: [],
    failed: [],
    warnings: [],
  };
  let refused: { error: SessionError; notTried: string[] } | undefined;
  for (const [index, file] of files.entries()) {
    let id: string | undefined;
    let line: string;
    try {
      const text = decodeNdjson(readFileSync(file));
      // A file of a folder with no conversation is passed over; given alone, it is refused.
      if (holdsNoConversation(text)) {
        if (!folder)
          throw new Error(
            "no conversation in the file: only lines Claude Code writes beside its sessions (file-history-snapshot, summary); not a session",
          );
        report.empty.push(file);
        progressLine(output, progress, index + 1, files.length, `skipped (no conversation): ${file}`);
        continue;
      }
      // Parsed here first for its format and the id it imports under (the service checks it again).
      const detected = format ?? detectFormat(text);
      if (!detected) throw new Error("cannot tell the format from the first lines; give --format");
      const { header } = parseImport(detected, text);
      id = options.id ?? header.id;
      let warnings: ImportWarning[];
      // The project is recorded whatever became of the file, so that a run whose recording failed
      // is mended by the next one, which finds the session there already.
      if (options.mode === "sync") {
        const synced = await syncText(client, text, detected, id);
        warnings = synced.warnings;
        await recordProject(client.storage(id), header.metadata);
        if (synced.status === "created") report.imported.push(id);
        else if (synced.status === "appended") report.appended.push({ id, entries: synced.appended });
        else report.skipped.push(id);
        line =
          synced.status === "appended"
            ? `appended ${synced.appended} to ${id}: ${file}`
            : `${synced.status === "created" ? "imported" : "unchanged"} ${id}: ${file}`;
      } else {
        const imported = await client.importFile(text, { format: detected, id }).catch((error: unknown) => {
          if (error instanceof SessionError && error.code === "already_exists") return undefined;
          throw error;
        });
        warnings = imported?.warnings ?? [];
        await recordProject(client.storage(id), header.metadata);
        if (imported) {
          report.imported.push(id);
          line = `imported ${id}: ${file}`;
        } else {
          report.skipped.push(id);
          line = `skipped ${id} (already there): ${file}`;
        }
      }
      for (const warning of warnings) report.warnings.push({ file, ...warning });
    } catch (error) {
      // A credential the service refuses fails every file alike: stop at the first, and say what
      // was done before it and which files were not tried.
      if (error instanceof SessionError && (error.code === "unauthorized" || error.code === "forbidden")) {
        refused = { error, notTried: files.slice(index) };
        break;
      }
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof SessionError && error.code === "already_exists" && id !== undefined) {
        report.conflicts.push({ file, id, error: message });
        line = `conflict ${id}: ${file}`;
      } else {
        report.failed.push({ file, error: message });
        line = `failed: ${file}`;
      }
    }
    progressLine(output, progress, index + 1, files.length, line);
  }
  if (options.json) {
    const { imported, appended, skipped, empty, conflicts, failed, warnings } = report;
    const stopped = refused ? { notTried: refused.notTried } : {};
    output.out(
      JSON.stringify(
        options.mode === "sync"
          ? { imported, appended, unchanged: skipped, empty, conflicts, failed, warnings, ...stopped }
          : { imported, skipped, empty, failed, warnings, ...stopped },
      ),
    );
  } else {
    // What the service says of a file is its text, printed as any other.
    for (const { file, line, message } of report.warnings)
      output.err(`${terminalSafe(`warning: ${file}: line ${line}: ${message}`)}\n`);
    for (const { file, error } of report.conflicts)
      output.err(`${terminalSafe(`conflict: ${file}: ${error}`)}\n`);
    for (const { file, error } of report.failed) output.err(`${terminalSafe(`failed: ${file}: ${error}`)}\n`);
    const entries = report.appended.reduce((sum, { entries }) => sum + entries, 0);
    const empty = report.empty.length > 0 ? `, empty ${report.empty.length} (no conversation)` : "";
    const stopped = refused ? `, not tried ${refused.notTried.length} (the key was refused)` : "";
    output.out(
      options.mode === "sync"
        ? `imported ${report.imported.length}, appended ${report.appended.length} (${entries} entries), unchanged ${report.skipped.length}, conflicts ${report.conflicts.length}, failed ${report.failed.length}${empty}${stopped}`
        : `imported ${report.imported.length}, skipped ${report.skipped.length} (already there), failed ${report.failed.length}${empty}${stopped}`,
    );
    // A hint, shown with the progress: a user re-importing a grown file looks for its new entries.
    if (options.mode !== "sync" && report.skipped.length > 0 && progress !== "none")
      output.err(
        "note: import skips sessions already there; cf-sessions sync adds what their files gained since\n",
      );
  }
  // The refusal is the command's error, said last.
  if (refused) throw refused.error;
  return report.failed.length > 0 || report.conflicts.length > 0 ? 1 : 0;
}
