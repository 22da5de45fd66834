import { createWriteStream, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { RemoteRepo } from "../client";
import { createClient } from "../client";
import type { ExistingSessions, ImportFormat, ImportWarning, SearchHit, SessionMatch } from "../core";
import {
  checkExportFormat,
  checkFormat,
  contentText,
  detectFormat,
  parseImport,
  SessionError,
} from "../core";
import { backup, restore } from "./backup";
import { drawTree } from "./tree-text";

/*
 * `cf-sessions`: the service from a terminal. Configured by flags or SESSIONS_URL /
 * SESSIONS_TOKEN; `--json` for scripts; one-line errors and a non-zero exit code on failure.
 */

const HELP: Record<string, string> = {
  main: `cf-sessions: branchable agent sessions, from the terminal

usage: cf-sessions <command> [options]

commands:
  list                        sessions, newest first
  show <id>                   a session's entries in append order
  tree <id>                   a session's tree: branches, the leaf and labels marked
  context <id>                what a model is sent from the leaf (or --leaf <entry>)
  import <file|dir>           import session files: native, pi, Claude Code, Codex (a directory: every .jsonl under it)
  export <id>                 a session as NDJSON (native or pi)
  fork <id> <entry>           a new session holding the path to <entry>
  rm <id>                     delete a session (restorable for the service's recovery window)
  undelete <id>               restore a deleted session
  search <query>              the tenant's sessions matching a query (or one session's entries: --session)
  backup <dir>                every session of the tenant into a folder (resumes an interrupted backup)
  restore <dir|file>          a backup folder (or a tenant export file) back into the tenant

options (every command):
  --url <url>       the service (default: $SESSIONS_URL, else http://127.0.0.1:8787)
  --token <key>     an API key (default: $SESSIONS_TOKEN)
  --json            machine-readable output
  -h, --help        help for a command: cf-sessions <command> --help`,
  list: `usage: cf-sessions list [--limit N] [--order updated|created] [--all]

  --limit N     sessions per page (1-200, default 50)
  --order       updated (default) or created, newest first
  --all         every page, not just the first`,
  show: `usage: cf-sessions show <id> [--type t1,t2] [--limit N] [--after seq]

  Entries in append order (seq, type, id, parent, a line of content).`,
  tree: `usage: cf-sessions tree <id>

  The tree: branches indent, chains stay level; the leaf and labels are marked.`,
  context: `usage: cf-sessions context <id> [--leaf <entry>]

  The messages, model, thinking level and tools buildContext returns.`,
  import: `usage: cf-sessions import <file|dir> [--format native|pi|claude-code|codex] [--id <id>]

  A file, or every .jsonl file under a directory (~/.pi/agent/sessions, ~/.claude/projects,
  ~/.codex/sessions), with progress and a summary of imported / skipped (already there) / failed.
  The format is told from the first lines when --format is not given. A file's session id is kept
  (Claude Code and Codex sessions get one made from theirs, so importing again skips them); --id
  (one file only) chooses it.
  What a file needed repaired to import (a torn last line, a missing parent, a repeated line)
  is listed by file and line.`,
  export: `usage: cf-sessions export <id> [--format native|pi] [--out <file>]

  Streams the session as NDJSON to stdout or --out.`,
  fork: `usage: cf-sessions fork <id> <entry> [--id <new id>] [--name <name>] [--before]

  --before      fork at the parent of a user message (to edit and resend it)`,
  rm: `usage: cf-sessions rm <id> [--purge]

  Deletes the session: it can be restored (cf-sessions undelete) until the service's recovery
  window closes (seven days by default).
  --purge       delete it for good, now (a deleted session too)`,
  undelete: `usage: cf-sessions undelete <id>

  Brings back a deleted session, whole, within the recovery window.`,
  search: `usage: cf-sessions search <query> [--session <id>] [--limit N] [--order newest|rank] [--thinking]

  Without --session: the tenant's sessions, best first, with what matched in their name, labels,
  preview or text. With --session: that session's entries, newest first (--order rank: best
  first); --thinking searches the model's thinking too.
  The query: words (all required, matched after stemming), "a phrase", prefix*, a OR b, -word.`,
  backup: `usage: cf-sessions backup <dir>

  Every session of the tenant into <dir>/sessions/<id>.ndjson (native exports), with progress.
  <dir>/backup.json records how far it got: run the same command again to resume an interrupted
  backup after its last complete session. Exit code 1 when sessions could not be read or the
  export stopped early.`,
  restore: `usage: cf-sessions restore <dir|file> [--existing skip|refuse]

  A backup folder (or a file saved from GET /v1/export) back into the tenant, a few MiB per
  request, with progress. Sessions already there are skipped (--existing refuse reports them as
  refused instead); run it again to resume. Exit code 1 when a session failed or was refused.`,
};

class UsageError extends Error {}

interface Output {
  out(text: string): void;
  err(text: string): void;
  isTTY: boolean;
}

function fail(message: string): never {
  throw new UsageError(message);
}

function arg(positionals: string[], index: number, name: string): string {
  const value = positionals[index];
  if (value === undefined) fail(`missing <${name}>`);
  return value;
}

function oneLine(text: string, max = 100): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A line describing an entry's content. */
function gist(entry: Record<string, unknown>): string {
  switch (entry.type) {
    case "message": {
      const message = entry.message as { role: string; content?: unknown; summary?: unknown };
      return `${message.role}: ${oneLine(contentText(message.content) || String(message.summary ?? ""))}`;
    }
    case "model_change":
      return `${entry.provider}/${entry.modelId}`;
    case "thinking_level_change":
      return String(entry.thinkingLevel);
    case "label":
      return `${entry.targetId} = ${entry.label ?? "(cleared)"}`;
    case "leaf":
      return `→ ${entry.targetId ?? "(none)"}`;
    case "session_info":
      return String(entry.name ?? "(cleared)");
    case "compaction":
    case "branch_summary":
      return oneLine(String(entry.summary));
    default:
      return String(entry.customType ?? "");
  }
}

/** Every `.jsonl` file under a folder, in a stable order. */
function sessionFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  const files: string[] = [];
  const stack = [path];
  while (stack.length > 0) {
    const dir = stack.pop() as string;
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) stack.push(full);
      else if (name.endsWith(".jsonl") || name.endsWith(".ndjson")) files.push(full);
    }
  }
  return files.sort();
}

/** A file parsed here first: its format and the id it imports under (the service checks it again). */
function readSessionFile(
  text: string,
  format: ImportFormat | undefined,
): { format: ImportFormat; id: string } {
  const detected = format ?? detectFormat(text);
  if (!detected) throw new Error("cannot tell the format from the first lines; give --format");
  return { format: detected, id: parseImport(detected, text).header.id };
}

function progress(output: Output, done: number, total: number): void {
  if (!output.isTTY) return;
  const width = 30;
  const filled = Math.round((done / total) * width);
  output.err(`\r[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total}`);
  if (done === total) output.err("\n");
}

async function importPaths(
  client: RemoteRepo,
  path: string,
  values: Record<string, unknown>,
  output: Output,
  json: boolean,
) {
  const format = values.format === undefined ? undefined : checkFormat(String(values.format));
  const files = sessionFiles(path);
  if (values.id !== undefined && files.length > 1) fail("--id applies to a single file");
  const report = {
    imported: [] as string[],
    skipped: [] as string[],
    failed: [] as Array<{ file: string; error: string }>,
    warnings: [] as Array<{ file: string } & ImportWarning>,
  };
  for (const [index, file] of files.entries()) {
    let id: string | undefined;
    try {
      const text = readFileSync(file, "utf8");
      const read = readSessionFile(text, format);
      id = values.id === undefined ? read.id : String(values.id);
      const imported = await client.importFile(text, { format: read.format, id });
      report.imported.push(imported.info.id);
      for (const warning of imported.warnings) report.warnings.push({ file, ...warning });
    } catch (error) {
      if (error instanceof SessionError && error.code === "already_exists") report.skipped.push(id ?? file);
      else report.failed.push({ file, error: error instanceof Error ? error.message : String(error) });
    }
    progress(output, index + 1, files.length);
  }
  if (json) output.out(JSON.stringify(report));
  else {
    for (const { file, line, message } of report.warnings)
      output.err(`warning: ${file}: line ${line}: ${message}\n`);
    for (const { file, error } of report.failed) output.err(`failed: ${file}: ${error}\n`);
    output.out(
      `imported ${report.imported.length}, skipped ${report.skipped.length} (already there), failed ${report.failed.length}`,
    );
  }
  return report.failed.length > 0 ? 1 : 0;
}

/** A snippet with its matches marked for a terminal: «match». */
function markMatches(snippet: string, highlights: readonly [number, number][]): string {
  let out = "";
  let at = 0;
  for (const [start, end] of highlights) {
    out += `${snippet.slice(at, start)}«${snippet.slice(start, end)}»`;
    at = end;
  }
  return oneLine(out + snippet.slice(at), 160);
}

async function search(
  client: RemoteRepo,
  query: string,
  values: Record<string, unknown>,
  output: Output,
  json: boolean,
  number: (value: string | undefined) => number | undefined,
): Promise<number> {
  const limit = number(values.limit as string | undefined);
  if (values.session !== undefined) {
    const order =
      values.order === undefined
        ? undefined
        : values.order === "rank"
          ? "rank"
          : values.order === "newest"
            ? "newest"
            : fail("--order is newest or rank");
    const page = await client.storage(String(values.session)).search({
      q: query,
      ...(limit === undefined ? {} : { limit }),
      ...(order === undefined ? {} : { order }),
      ...(values.thinking ? { thinking: true } : {}),
    });
    if (json) output.out(JSON.stringify(page));
    else if (page.hits.length === 0) output.out("no matches");
    else {
      output.out(
        page.hits
          .map(
            (hit: SearchHit) =>
              `${String(hit.seq).padStart(6)}  ${hit.entryId}  ${hit.role ?? hit.type}${hit.onBranch ? "" : " (off branch)"}${hit.field === "thinking" ? " [thinking]" : ""}  ${markMatches(hit.snippet, hit.highlights)}`,
          )
          .join("\n"),
      );
    }
    return 0;
  }
  const { results } = await client.search(query, limit === undefined ? {} : { limit });
  if (json) output.out(JSON.stringify(results));
  else if (results.length === 0) output.out("no matches");
  else {
    output.out(
      results
        .map((result) => {
          const lines = [`${result.session.id}  ${result.session.name ?? ""}`.trimEnd()];
          for (const match of result.matches as SessionMatch[])
            lines.push(`    ${match.field}: ${markMatches(match.snippet, match.highlights)}`);
          return lines.join("\n");
        })
        .join("\n"),
    );
  }
  return 0;
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        url: { type: "string" },
        token: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        limit: { type: "string" },
        order: { type: "string" },
        all: { type: "boolean" },
        type: { type: "string" },
        after: { type: "string" },
        leaf: { type: "string" },
        format: { type: "string" },
        id: { type: "string" },
        name: { type: "string" },
        out: { type: "string" },
        before: { type: "boolean" },
        purge: { type: "boolean" },
        session: { type: "string" },
        thinking: { type: "boolean" },
        existing: { type: "string" },
      },
    });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
}

async function run(argv: string[], output: Output, env: Record<string, string | undefined>): Promise<number> {
  const { values, positionals } = parse(argv);
  const [command, ...rest] = positionals;
  if (!command || command === "help") {
    output.out(HELP.main as string);
    return command ? 0 : values.help ? 0 : 2;
  }
  if (!HELP[command] || command === "main") fail(`unknown command ${command}; see cf-sessions --help`);
  if (values.help) {
    output.out(HELP[command] as string);
    return 0;
  }
  const json = values.json === true;
  const client = createClient({
    baseUrl: values.url ?? env.SESSIONS_URL ?? "http://127.0.0.1:8787",
    ...((values.token ?? env.SESSIONS_TOKEN) ? { token: values.token ?? env.SESSIONS_TOKEN } : {}),
  });
  const number = (value: string | undefined) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n)) fail(`not a whole number: ${value}`);
    return n;
  };

  switch (command) {
    case "list": {
      const order =
        values.order === undefined
          ? undefined
          : values.order === "created"
            ? "created"
            : values.order === "updated"
              ? "updated"
              : fail("--order is updated or created");
      const sessions = [];
      let cursor: string | null = null;
      do {
        const page = await client.list({ limit: number(values.limit), order, cursor });
        sessions.push(...page.sessions);
        cursor = values.all ? page.nextCursor : null;
      } while (cursor);
      if (json) output.out(JSON.stringify(sessions));
      else if (sessions.length === 0) output.out("no sessions");
      else {
        output.out(
          sessions
            .map(
              (s) =>
                `${s.id}  ${s.updatedAt}  ${String(s.entryCount).padStart(6)} entries  ${s.name ?? ""}${s.preview ? `  “${oneLine(s.preview, 60)}”` : ""}`,
            )
            .join("\n"),
        );
      }
      return 0;
    }
    case "show": {
      const session = await client.open(arg(rest, 0, "id"));
      const types = values.type?.split(",") as never;
      const entries = await session.getEntries({
        limit: number(values.limit) ?? 1000,
        after: number(values.after),
        ...(types ? { type: types } : {}),
      });
      if (json) output.out(JSON.stringify(entries));
      else
        output.out(
          entries
            .map(
              (e) =>
                `${String(e.seq).padStart(6)}  ${e.type.padEnd(21)} ${e.id}  ← ${e.parentId ?? "-"}  ${gist(e)}`,
            )
            .join("\n"),
        );
      return 0;
    }
    case "tree": {
      const storage = client.storage(arg(rest, 0, "id"));
      const [tree, info] = await Promise.all([storage.getTree(), storage.getInfo()]);
      if (json) output.out(JSON.stringify({ leafId: info.leafId, roots: tree }));
      else output.out(tree.length === 0 ? "(empty)" : drawTree(tree, info.leafId).join("\n"));
      return 0;
    }
    case "context": {
      const session = await client.open(arg(rest, 0, "id"));
      const context = await session.buildContext(values.leaf === undefined ? {} : { leafId: values.leaf });
      if (json) output.out(JSON.stringify(context));
      else {
        const head = [
          `model: ${context.model ? `${context.model.provider}/${context.model.modelId}` : "(none)"}`,
          `thinking: ${context.thinkingLevel}`,
        ];
        if (context.activeToolNames) head.push(`tools: ${context.activeToolNames.join(", ")}`);
        if (context.systemPrompt) head.push(`system: ${oneLine(context.systemPrompt)}`);
        const lines = context.messages.map(
          (m) =>
            `${m.role}: ${oneLine(contentText((m as { content?: unknown }).content) || String((m as { summary?: unknown }).summary ?? ""), 200)}`,
        );
        output.out([...head, "", ...lines].join("\n"));
      }
      return 0;
    }
    case "import":
      return importPaths(client, arg(rest, 0, "file|dir"), values, output, json);
    case "export": {
      const format = checkExportFormat(values.format);
      const lines = client.storage(arg(rest, 0, "id")).exportLines(format);
      if (values.out) {
        const file = createWriteStream(values.out);
        for await (const line of lines)
          if (!file.write(line)) await new Promise<void>((r) => file.once("drain", () => r()));
        await new Promise<void>((resolve, reject) =>
          file.end((error?: Error | null) => (error ? reject(error) : resolve())),
        );
      } else {
        let text = "";
        for await (const line of lines) text += line;
        output.out(text.replace(/\n$/, ""));
      }
      return 0;
    }
    case "fork": {
      const fork = await client.fork(arg(rest, 0, "id"), arg(rest, 1, "entry"), {
        ...(values.id ? { id: values.id } : {}),
        ...(values.name ? { name: values.name } : {}),
        ...(values.before ? { position: "before" as const } : {}),
      });
      const info = await fork.getInfo();
      output.out(
        json
          ? JSON.stringify(info)
          : `forked into ${info.id} (${info.entryCount} entries, leaf ${info.leafId})`,
      );
      return 0;
    }
    case "rm": {
      const id = arg(rest, 0, "id");
      if (values.purge) await client.purge(id);
      else await client.delete(id);
      const what = values.purge ? "purged" : "deleted";
      output.out(json ? JSON.stringify({ [what]: id }) : `${what} ${id}`);
      return 0;
    }
    case "undelete": {
      const info = await client.restore(arg(rest, 0, "id"));
      output.out(json ? JSON.stringify(info) : `restored ${info.id} (${info.entryCount} entries)`);
      return 0;
    }
    case "search":
      return search(client, arg(rest, 0, "query"), values, output, json, number);
    case "backup": {
      const dir = arg(rest, 0, "dir");
      const result = await backup(client, dir, (text) => {
        if (output.isTTY) output.err(`\r${text}`);
      });
      if (output.isTTY && result.written > 0) output.err("\n");
      const { state } = result;
      for (const { id, error } of state.failed) output.err(`failed: ${id}: ${JSON.stringify(error)}\n`);
      if (json) output.out(JSON.stringify({ ...state, written: result.written, resumed: result.resumed }));
      else if (state.complete) {
        output.out(
          result.written === 0 && !result.resumed
            ? `the backup in ${dir} is complete already (${state.sessions} sessions); use another folder for a new one`
            : `backed up ${state.sessions} sessions into ${dir}${state.failed.length ? `, ${state.failed.length} could not be read` : ""}`,
        );
      } else
        output.out(
          `the export stopped early after ${state.sessions} sessions; run the same command to resume`,
        );
      return state.complete && state.failed.length === 0 ? 0 : 1;
    }
    case "restore": {
      const existing: ExistingSessions =
        values.existing === undefined || values.existing === "skip"
          ? "skip"
          : values.existing === "refuse"
            ? "refuse"
            : fail("--existing is skip or refuse");
      const result = await restore(client, arg(rest, 0, "dir|file"), existing, (text) => {
        if (output.isTTY) output.err(`\r${text}`);
      });
      if (output.isTTY) output.err("\n");
      for (const problem of result.problems) {
        const line = problem.error?.line === undefined ? "" : ` (line ${problem.error.line})`;
        output.err(
          `${problem.status}: ${problem.id ?? "(unreadable header)"}: ${problem.error?.message ?? ""}${line}\n`,
        );
      }
      if (json) output.out(JSON.stringify(result));
      else {
        output.out(
          `restored ${result.imported}, skipped ${result.skipped} (already there), refused ${result.refused}, failed ${result.failed}`,
        );
      }
      return result.failed + result.refused > 0 ? 1 : 0;
    }
  }
  return 2;
}

/** Runs the command line; resolves to the exit code. */
export async function main(
  argv: string[],
  output: Output,
  env: Record<string, string | undefined>,
): Promise<number> {
  try {
    return await run(argv, output, env);
  } catch (error) {
    if (error instanceof UsageError) {
      output.err(`cf-sessions: ${error.message}\n`);
      return 2;
    }
    if (error instanceof SessionError) output.err(`cf-sessions: ${error.code}: ${error.message}\n`);
    else if (
      error instanceof TypeError &&
      /fetch|ECONNREFUSED/i.test(`${error.message} ${String(error.cause)}`)
    ) {
      output.err(
        `cf-sessions: cannot reach the service (${String((error.cause as Error | undefined)?.message ?? error.message)})\n`,
      );
    } else output.err(`cf-sessions: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
