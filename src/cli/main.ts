import { parseArgs } from "node:util";
import { ConnectionError, createClient } from "../client";
import { SessionError } from "../core/errors";
import { EXPORT_FORMATS, IMPORT_FORMATS } from "../core/interchange";
import { MAX_ENTRIES_PAGE, MAX_SESSIONS_PAGE } from "../core/limits";
import { MAX_SEARCH_HITS } from "../core/search";
import { treeToJson } from "../core/tree";
import { drawTree } from "../core/tree-text";
import { writeFileAtomically } from "./atomic-file";
import { backup, restore } from "./backup";
import { entryLine, gist, messageLine } from "./entry-line";
import { importFiles } from "./import-files";
import { columns, fail, type Output, oneLine, oneOf, terminalSafe, UsageError } from "./output";
import { localFolderOf, remoteKey } from "./project-key";
import { PULL_AGENTS, pullSession } from "./pull";
import { search } from "./search";
import { followSession } from "./tail";
import { defaultStatePath, watchFiles } from "./watch-files";

/*
 * `cf-sessions`: the service from a terminal. Configured by flags or CF_SESSIONS_URL /
 * CF_SESSIONS_TOKEN; `--json` for scripts; one-line errors and a non-zero exit code on failure.
 */

const DEFAULT_URL = "http://127.0.0.1:8787";

const HELP: Record<string, string> = {
  main: `cf-sessions: branchable agent sessions, from the terminal

usage: cf-sessions <command> [options]

commands:
  list                        sessions, newest first
  show <id>                   a session's entries in append order
  tree <id>                   a session's tree: branches, the leaf and labels marked
  context <id>                what a model is sent from the leaf (or --leaf <entry>)
  import <file|dir>           import session files: native, pi, Claude Code, Codex (a directory: every .jsonl under it)
  sync <file|dir>             import, and append to sessions imported before what their files gained since
                              (--watch <dir>: a live mirror, until stopped)
  export <id>                 a session as a file: native, pi, Claude Code or Codex
  pull <id> --to <agent>      a session into Claude Code's, Codex's or pi's folder, to resume it there
  fork <id> <entry>           a new session holding the path to <entry>
  rm <id>                     delete a session (restorable for the service's recovery window)
  undelete <id>               restore a deleted session
  tail <id>                   follow a session's entries as they are written (like tail -f)
  search <query>              the tenant's sessions matching a query (or one session's entries: --session)
  backup <dir>                every session of the tenant into a folder (resumes an interrupted backup)
  restore <dir|file>          a backup folder (or a tenant export file) back into the tenant

options (every command):
  --url <url>       the service (default: $CF_SESSIONS_URL, else http://127.0.0.1:8787)
  --token <key>     an API key (default: $CF_SESSIONS_TOKEN)
  --json            machine-readable output
  --verbose         say which service is used, on stderr
  -h, --help        help for a command: cf-sessions <command> --help`,
  list: `usage: cf-sessions list [--limit N] [--order updated|created] [--prefix p] [--all]
                        [--project <key|remote>]

  --limit N     sessions per page (1-200, default 50)
  --order       updated (default) or created, newest first
  --prefix p    only the sessions whose id starts with p
  --all         every page, not just the first
  --project     only the sessions of a project: its key as imports record it
                (github.com/acme/app, or github.com/acme/app/services/api for a folder in it; a
                folder outside a repository: its name) or a git remote URL`,
  show: `usage: cf-sessions show <id> [--type t1,t2] [--limit N] [--after seq]

  Entries in append order (seq, type, id, parent, a line of content).
  --limit N     entries (1-1000, default 1000); --after <seq> for the ones after`,
  tree: `usage: cf-sessions tree <id>

  The tree: branches indent, chains stay level; the leaf and labels are marked.`,
  context: `usage: cf-sessions context <id> [--leaf <entry>]

  The messages, model, thinking level and tools buildContext returns.`,
  import: `usage: cf-sessions import <file|dir> [--format native|pi|claude-code|codex] [--id <id>]
                          [--progress bar|plain|none]

  A file, or every .jsonl file under a directory (~/.pi/agent/sessions, ~/.claude/projects,
  ~/.codex/sessions), with progress and a summary of imported / skipped (already there) / failed.
  The format is told from the first lines when --format is not given. A file's session id is kept
  (Claude Code and Codex sessions get one made from theirs, so importing again skips them); --id
  (one file only) chooses it. To bring in what files gained since, use cf-sessions sync.
  What a file needed repaired to import (a torn last line, a missing parent, a repeated line)
  is listed by file and line.
  --progress    bar (the default on a terminal), plain (one line per file, the default
                otherwise) or none`,
  sync: `usage: cf-sessions sync <file|dir> [--format native|pi|claude-code|codex] [--id <id>]
                        [--progress bar|plain|none]
       cf-sessions sync --watch <dir> [--format pi|claude-code|codex] [--state <file>]
                        [--interval <ms>]

  As import, for a folder that keeps growing (run it every hour): a file whose session is not
  there yet is imported; a session holding the start of its file gets the rest appended; one
  holding the whole file is unchanged. A file its session differs from (edited, or the session
  gained entries of its own) is a conflict: nothing is written, and the exit code is 1.
  Summary: imported / appended (entries) / unchanged / conflicts / failed.

  --watch mirrors the folder until stopped (Ctrl-C, SIGTERM): new lines reach the service within
  a second, only what is new is sent, and a restart goes on where it stopped (what was sent is
  kept in the state file it names; --state chooses it). Each line of a file stays entries of its
  own (a streamed answer's blocks are a message each), so the entries already sent never change;
  a sync without --watch reads a file mirrored so the same way. A file rewritten (shorter, or
  changed before its end) is reported and mirrored no further; one whose session was imported
  whole before is a conflict. --interval: between looks (default 250).`,
  export: `usage: cf-sessions export <id> [--format native|pi|claude-code|codex] [--out <file>]

  Streams the session as NDJSON to stdout or --out: native (default), a pi session file, a Claude
  Code transcript or a Codex rollout. A session imported from one of those formats goes back to it
  as it was; any other becomes the file the agent would have written for its conversation.`,
  pull: `usage: cf-sessions pull <id> --to claude-code|codex|pi [--project <dir>] [--force]

  Writes the session where that agent looks for the project at <dir> on this machine, as its own
  file, so it resumes there (default: when the current folder is in a checkout of the repository
  the session's project is in, that project's folder in it; else the current folder): claude --resume <id> in <dir>,
  codex resume, or pi's session list. Claude Code's folder is under $CLAUDE_CONFIG_DIR
  (~/.claude), Codex's under $CODEX_HOME (~/.codex), pi's under $PI_CODING_AGENT_DIR (~/.pi/agent).
  Whatever wrote the session, it is the agent's file of its conversation (a session imported
  from that agent: the lines it came from), its working folder <dir>; a Claude Code session's
  subagent transcripts go beside it. Prints the file written.
  A file there already that holds lines the session does not (the agent went on in it, and it was
  not synced since) is left as it is, with exit code 1: sync it first, or --force to overwrite it.`,
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
  backup after its last complete session, or to read again the sessions a complete one could not.
  Exit code 1 when sessions could not be read or the export stopped early.`,
  restore: `usage: cf-sessions restore <dir|file> [--existing skip|refuse]

  A backup folder (or a file saved from GET /v1/export) back into the tenant, a few MiB per
  request, with progress. Sessions already there are skipped (--existing refuse reports them as
  refused instead), and so are those deleted while the export was sent (each named, with why);
  run it again to resume. Exit code 1 when a session failed or was refused, when the file has no
  end line (it was cut short: what followed is not restored), or when the folder's backup.json
  says the backup stopped early or could not read some sessions.`,
  tail: `usage: cf-sessions tail <id> [--after seq]

  Prints each entry as it is written, and head moves, until the session is deleted or you stop
  it (Ctrl-C); the text of an answer being generated shows as it comes (▸), then its entry.
  --after replays the entries after that seq first. Reconnects by itself after a dropped
  connection, missing nothing. --json: one event per line, and in-flight text as "chunk" lines.`,
};

/** A project as given to --project: a key as is, a git remote URL as its key. */
function projectArgument(given: string): string {
  return /:\/\/|^[^/]*@|^[^/:]+:[^/]/.test(given) ? remoteKey(given) : given.replace(/\/+$/, "");
}

function arg(positionals: string[], index: number, name: string): string {
  const value = positionals[index];
  if (value === undefined) fail(`missing <${name}>`);
  return value;
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
        verbose: { type: "boolean" },
        progress: { type: "string" },
        help: { type: "boolean", short: "h" },
        limit: { type: "string" },
        order: { type: "string" },
        prefix: { type: "string" },
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
        watch: { type: "boolean" },
        state: { type: "string" },
        interval: { type: "string" },
        to: { type: "string" },
        project: { type: "string" },
        force: { type: "boolean" },
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
  if (!Object.hasOwn(HELP, command) || command === "main")
    fail(`unknown command ${command}; see cf-sessions --help`);
  if (values.help) {
    output.out(HELP[command] as string);
    return 0;
  }
  const json = values.json === true;
  const [baseUrl, from] = values.url
    ? [values.url, "--url"]
    : env.CF_SESSIONS_URL
      ? [env.CF_SESSIONS_URL, "CF_SESSIONS_URL"]
      : [DEFAULT_URL, "the default"];
  checkServiceUrl(baseUrl, from);
  if (values.verbose) output.err(`cf-sessions: service ${baseUrl} (${from})\n`);
  const client = createClient({ baseUrl, token: apiKey(values.token, env) });
  const number = (value: string | undefined) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n)) fail(`not a whole number: ${value}`);
    return n;
  };
  /** `--limit`, checked against the page size the service allows, before any request. */
  const limit = (max: number, what: string, more: string) => {
    const n = number(values.limit);
    if (n !== undefined && (n < 1 || n > max))
      fail(`--limit is 1 to ${max}: the service sends at most ${max} ${what} a page (${more})`);
    return n;
  };
  /** Progress redrawn on one line of a terminal; none elsewhere. */
  const redraw = (text: string) => {
    if (output.isTTY) output.err(`\r${text}`);
  };

  switch (command) {
    case "list": {
      const order = oneOf("order", values.order, ["updated", "created"] as const);
      const pageSize = limit(MAX_SESSIONS_PAGE, "sessions", "--all reads every page");
      const sessions = [];
      let cursor: string | null = null;
      const project = values.project === undefined ? undefined : projectArgument(values.project);
      do {
        const page = await client.list({ limit: pageSize, order, cursor, prefix: values.prefix, project });
        sessions.push(...page.sessions);
        cursor = values.all ? page.nextCursor : null;
      } while (cursor);
      if (json) output.out(JSON.stringify(sessions));
      else if (sessions.length === 0) output.out("no sessions");
      else {
        const rows = sessions.map((s) => [
          terminalSafe(s.id),
          terminalSafe(s.updatedAt),
          String(s.entryCount),
          terminalSafe(s.name ?? ""),
          s.preview ? `“${oneLine(s.preview, 60)}”` : "",
        ]);
        output.out(columns([["ID", "UPDATED", "ENTRIES", "NAME", "PREVIEW"], ...rows], [2]).join("\n"));
      }
      return 0;
    }
    case "show": {
      const session = await client.open(arg(rest, 0, "id"));
      const types = values.type?.split(",") as never;
      const entries = await session.getEntries({
        limit: limit(MAX_ENTRIES_PAGE, "entries", "--after <seq> shows the ones after") ?? MAX_ENTRIES_PAGE,
        after: number(values.after),
        ...(types ? { type: types } : {}),
      });
      output.out(json ? JSON.stringify(entries) : entries.map((e) => entryLine(e, gist(e))).join("\n"));
      return 0;
    }
    case "tree": {
      const storage = client.storage(arg(rest, 0, "id"));
      const [tree, info] = await Promise.all([storage.getTree(), storage.getInfo()]);
      // Written without recursion: a chain of a few thousand entries is deeper than JSON.stringify goes.
      if (json) output.out(`{"leafId":${JSON.stringify(info.leafId)},"roots":${treeToJson(tree)}}`);
      else
        output.out(tree.length === 0 ? "(empty)" : drawTree(tree, info.leafId).map(terminalSafe).join("\n"));
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
        output.out(
          [...head.map(terminalSafe), "", ...context.messages.map((m) => messageLine(m, 200))].join("\n"),
        );
      }
      return 0;
    }
    case "import":
    case "sync": {
      const format = oneOf("format", values.format, IMPORT_FORMATS);
      if (command === "sync" && values.watch) {
        const dir = arg(rest, 0, "dir");
        if (values.id !== undefined) fail("--id applies to one file, not to --watch");
        const intervalMs = number(values.interval) ?? 250;
        if (intervalMs < 10 || intervalMs > 60_000) fail("--interval is 10 to 60000 milliseconds");
        const stop = new AbortController();
        const interrupt = () => stop.abort();
        process.once("SIGINT", interrupt);
        process.once("SIGTERM", interrupt);
        try {
          return await watchFiles(client, dir, output, {
            format,
            intervalMs,
            json,
            signal: stop.signal,
            statePath: values.state ?? (await defaultStatePath(dir, baseUrl, env)),
          });
        } finally {
          process.off("SIGINT", interrupt);
          process.off("SIGTERM", interrupt);
        }
      }
      return importFiles(client, arg(rest, 0, "file|dir"), output, {
        mode: command,
        format,
        id: values.id,
        progress: values.progress,
        json,
      });
    }
    case "export": {
      const format = oneOf("format", values.format, EXPORT_FORMATS);
      const lines = client.storage(arg(rest, 0, "id")).exportLines(format);
      if (values.out) await writeFileAtomically(values.out, lines);
      else for await (const line of lines) await output.stream(line);
      return 0;
    }
    case "pull": {
      const id = arg(rest, 0, "id");
      const agent = oneOf("to", values.to, PULL_AGENTS) ?? fail("--to is claude-code, codex or pi");
      // Without --project: the local checkout of the session's project, when this folder is in one.
      const recorded =
        values.project === undefined ? (await client.storage(id).getHeader()).metadata.project : undefined;
      const local = typeof recorded === "string" ? localFolderOf(recorded, process.cwd()) : undefined;
      const { path, subagents } = await pullSession(
        client,
        id,
        agent,
        values.project ?? local ?? process.cwd(),
        env,
        { force: values.force },
      );
      const also = subagents.length === 0 ? "" : ` (and ${subagents.length} subagent transcripts beside it)`;
      output.out(
        json
          ? JSON.stringify({ id, agent, path, subagents })
          : terminalSafe(`pulled ${id} into ${path}${also}`),
      );
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
          : terminalSafe(`forked into ${info.id} (${info.entryCount} entries, leaf ${info.leafId})`),
      );
      return 0;
    }
    case "tail": {
      const session = await client.open(arg(rest, 0, "id"));
      const stop = new AbortController();
      const interrupt = () => stop.abort();
      process.once("SIGINT", interrupt);
      try {
        await followSession(session, output, { after: number(values.after), json, signal: stop.signal });
      } finally {
        process.off("SIGINT", interrupt);
      }
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
      output.out(
        json ? JSON.stringify(info) : terminalSafe(`restored ${info.id} (${info.entryCount} entries)`),
      );
      return 0;
    }
    case "search":
      return search(client, arg(rest, 0, "query"), output, {
        session: values.session,
        limit: limit(MAX_SEARCH_HITS, "hits", "the best ones come first"),
        order: values.order,
        thinking: values.thinking,
        json,
      });
    case "backup": {
      const dir = arg(rest, 0, "dir");
      const { state, written, resumed, completeBefore } = await backup(client, dir, redraw);
      if (output.isTTY && written > 0) output.err("\n");
      for (const { id, error } of state.failed)
        output.err(`${terminalSafe(`failed: ${id}: ${JSON.stringify(error)}`)}\n`);
      if (json) output.out(JSON.stringify({ ...state, written, resumed }));
      else if (!state.complete)
        output.out(
          `the export stopped early after ${state.sessions} sessions; run the same command to resume`,
        );
      else if (completeBefore && !resumed)
        output.out(
          `the backup in ${dir} is complete already (${state.sessions} sessions); use another folder for a new one`,
        );
      else {
        const unread = state.failed.length > 0 ? `, ${state.failed.length} could not be read` : "";
        output.out(
          `backed up ${state.sessions} sessions and ${state.streams ?? 0} streams into ${dir}${unread}`,
        );
      }
      return state.complete && state.failed.length === 0 ? 0 : 1;
    }
    case "restore": {
      const existing = oneOf("existing", values.existing, ["skip", "refuse"] as const) ?? "skip";
      const path = arg(rest, 0, "dir|file");
      const result = await restore(client, path, existing, redraw);
      if (output.isTTY) output.err("\n");
      for (const problem of result.problems) {
        const line = problem.error?.line === undefined ? "" : ` (line ${problem.error.line})`;
        output.err(
          `${terminalSafe(`${problem.status}: ${problem.id ?? "(unreadable header)"}: ${problem.error?.message ?? ""}${line}`)}\n`,
        );
      }
      for (const problem of result.streams.problems) {
        const line = problem.error?.line === undefined ? "" : ` (line ${problem.error.line})`;
        output.err(
          `${terminalSafe(`${problem.status}: stream ${problem.path ?? "(unreadable header)"}: ${problem.error?.message ?? ""}${line}`)}\n`,
        );
      }
      for (const warning of result.warnings)
        output.err(`${terminalSafe(`warning: line ${warning.line}: ${warning.message}`)}\n`);
      const { streams, unfinishedBackup } = result;
      if (unfinishedBackup?.complete === false)
        output.err(
          `warning: the backup in ${path} stopped early (backup.json): what it did not reach is not restored; cf-sessions backup ${path} finishes it\n`,
        );
      if (unfinishedBackup?.failed.length)
        output.err(
          `${terminalSafe(`warning: the backup in ${path} could not read ${unfinishedBackup.failed.length} (not restored): ${unfinishedBackup.failed.map(({ id }) => id).join(", ")}`)}\n`,
        );
      const streamsLine =
        streams.imported + streams.skipped + streams.refused + streams.failed > 0
          ? `; streams: restored ${streams.imported}, skipped ${streams.skipped}, refused ${streams.refused}, failed ${streams.failed}`
          : "";
      // Skipped, but not for being there already: the export says each was deleted while it was sent.
      const leftOut = result.problems.filter((problem) => problem.status === "skipped").length;
      if (json) output.out(JSON.stringify(result));
      else
        output.out(
          `restored ${result.imported}, skipped ${result.skipped - leftOut} (already there)${leftOut > 0 ? `, left out ${leftOut} (deleted while exported)` : ""}, refused ${result.refused}, failed ${result.failed}${streamsLine}`,
        );
      const problems = result.failed + result.refused + streams.failed + streams.refused;
      return problems > 0 || unfinishedBackup || result.cutShort ? 1 : 0;
    }
  }
  return 2;
}

/**
 * Refuses a service URL that is no http(s) URL, or that holds a user or password (a key goes in
 * --token or CF_SESSIONS_TOKEN), without repeating it: what it holds may be a secret.
 */
function checkServiceUrl(value: string, from: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(`the service URL (${from}) is not a URL, such as http://127.0.0.1:8787`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    fail(`the service URL (${from}) is not an http or https URL`);
  if (url.username !== "" || url.password !== "")
    fail(
      `the service URL (${from}) holds a user or password: give the key with --token or CF_SESSIONS_TOKEN instead`,
    );
}

/**
 * The key to send: --token, else CF_SESSIONS_TOKEN, without the whitespace around it (a key file's
 * line end). A key holding a line break or another control character is bad usage, and the error
 * does not repeat it.
 */
function apiKey(token: string | undefined, env: Record<string, string | undefined>): string | undefined {
  const key = (token ?? env.CF_SESSIONS_TOKEN)?.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
  if (key !== undefined && /[\u0000-\u001f\u007f]/.test(key))
    fail(
      `the key ${token === undefined ? "in CF_SESSIONS_TOKEN" : "given by --token"} holds a line break or another control character: an API key is one line`,
    );
  return key;
}

/** Where the key the service refused came from, so the one to fix is named. */
function keySource(argv: readonly string[], env: Record<string, string | undefined>): string {
  if (argv.some((arg) => arg === "--token" || arg.startsWith("--token=")))
    return " (the key given by --token)";
  if (env.CF_SESSIONS_TOKEN) return " (the key in CF_SESSIONS_TOKEN)";
  return " (no key given: --token <key> or CF_SESSIONS_TOKEN)";
}

/** What a refusal says of each field it names (the details of `invalid_request`), in brackets. */
function fieldProblems(details: unknown): string {
  if (!Array.isArray(details)) return "";
  const named = details.filter(
    (d): d is { path: unknown[]; message: string } =>
      typeof d === "object" && d !== null && Array.isArray(d.path) && typeof d.message === "string",
  );
  return named.length === 0 ? "" : ` (${named.map((d) => `${d.path.join(".")}: ${d.message}`).join("; ")})`;
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
    // What the service says of a failure is its text, printed as any other.
    const line =
      error instanceof SessionError
        ? `${error.code}: ${error.message}${fieldProblems(error.details)}${error.code === "unauthorized" ? keySource(argv, env) : ""}`
        : error instanceof ConnectionError
          ? `${error.message}; is it running? Another: --url or CF_SESSIONS_URL`
          : error instanceof Error
            ? error.message
            : String(error);
    output.err(`cf-sessions: ${terminalSafe(line)}\n`);
    return 1;
  }
}
