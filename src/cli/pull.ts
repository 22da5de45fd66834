import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import type { RemoteRepo } from "../client";
import { EXPORT_RECORD } from "../core/codex-items";
import { isTreeEntry } from "../core/entries";
import { SessionError } from "../core/errors";
import { isValidId } from "../core/ids";
import { parseImport } from "../core/import-formats";
import { canonicalJson, tryParseJson } from "../core/json";
import { planSync } from "../core/sync-import";
import { writeFileAtomically } from "./atomic-file";
import { codexProvider } from "./codex-config";
import { sessionFiles } from "./import-files";
import { fail } from "./output";
import { isAsPulled, notePulled } from "./pulled-files";

/*
 * `pull`: a session written to the folder where a coding agent looks for the project on this
 * machine, as that agent's own file, so the agent resumes it there (`claude --resume <id>`,
 * `codex resume`, pi's session picker). Whatever wrote the session (an import of that agent on
 * another machine, another agent, HTTP, a framework), the service's export makes the file; the
 * working folder its lines record becomes the local checkout's.
 */

export const PULL_AGENTS = ["claude-code", "codex", "pi"] as const;
export type PullAgent = (typeof PULL_AGENTS)[number];

type Line = Record<string, unknown>;
type Env = Record<string, string | undefined>;

/** How Claude Code names a project's folder: every character but letters and digits a dash. */
const CLAUDE_PROJECT_CHARS = 200;

/** Claude Code's string hash (Java's), of which a long folder name keeps the base-36 digits. */
function claudeHash(text: string): string {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = ((hash << 5) - hash + text.charCodeAt(i)) | 0;
  return Math.abs(hash).toString(36);
}

/** The folder Claude Code keeps a project's sessions in, under its config folder. */
export function claudeProjectDir(project: string, env: Env): string {
  const config = env.CLAUDE_CONFIG_DIR || join(homedir(), ".claude");
  const name = project.replace(/[^a-zA-Z0-9]/g, "-");
  const folder =
    name.length <= CLAUDE_PROJECT_CHARS
      ? name
      : `${name.slice(0, CLAUDE_PROJECT_CHARS)}-${claudeHash(project)}`;
  return join(config, "projects", folder);
}

/** The folder pi keeps a working folder's sessions in. */
export function piSessionDir(project: string, env: Env): string {
  const agent = env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
  return join(agent, "sessions", `--${project.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`);
}

/** A timestamp as pi puts it in file names: UTC, `2026-01-01T10-20-30-123Z`. */
function piFileTime(iso: string): string {
  const time = new Date(Number.isNaN(Date.parse(iso)) ? Date.now() : Date.parse(iso)).toISOString();
  return time.replace(/[:.]/g, "-");
}

/** A time as Codex names its day folders and files: local time, `2026/01/01` and `2026-01-01T10-20-30`. */
function codexLocalTime(at: Date): { day: [string, string, string]; time: string } {
  const two = (n: number) => String(n).padStart(2, "0");
  const day: [string, string, string] = [
    String(at.getFullYear()).padStart(4, "0"),
    two(at.getMonth() + 1),
    two(at.getDate()),
  ];
  return {
    day,
    time: `${day.join("-")}T${two(at.getHours())}-${two(at.getMinutes())}-${two(at.getSeconds())}`,
  };
}

/**
 * The rollout Codex keeps of a thread, wherever under its sessions folder and whatever time it is
 * named by (`rollout-<time>-<thread id>.jsonl`); of several, the one written last, which the agent
 * went on in. `undefined` when there is none.
 */
function codexRollout(home: string, threadId: string): string | undefined {
  const sessions = join(home, "sessions");
  if (!existsSync(sessions)) return undefined;
  const rollouts = sessionFiles(sessions).filter((path) => {
    const name = basename(path);
    const named = /^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-/.exec(name);
    return named !== null && name.slice(named[0].length) === `${threadId}.jsonl`;
  });
  const written = (path: string) => statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  return rollouts.sort((a, b) => written(a) - written(b)).at(-1);
}

/**
 * An id from the session's metadata as part of a file name. Metadata says anything, so only an id
 * of the service's own syntax (no separator, not only dots) names a file: the file stays in the
 * agent's folder.
 */
function fileId(id: string, what: string): string {
  if (!isValidId(id)) fail(`${what} ${JSON.stringify(id)} cannot name a file`);
  return id;
}

interface Placed {
  path: string;
  lines: Line[];
  syncsInto: string;
}

/**
 * The file an agent's lines go to, the lines with the local checkout as their working folder, and
 * the session `cf-sessions sync` of the file writes into (named as the import names the agent's
 * sessions).
 */
function placed(agent: PullAgent, lines: Line[], project: string, env: Env): Placed {
  if (agent === "claude-code") {
    // The last sessionId is the session's: a resumed conversation's file starts with lines copied
    // from the one it continued, and Claude Code resumes it by the id of its own lines.
    const sessionId = lines.map((line) => line.sessionId).findLast((id) => typeof id === "string");
    if (typeof sessionId !== "string") fail("the export named no Claude Code session id");
    const moved = lines.map((line) => (typeof line.cwd === "string" ? { ...line, cwd: project } : line));
    const name = `${fileId(sessionId, "the export's Claude Code session id")}.jsonl`;
    return {
      path: join(claudeProjectDir(project, env), name),
      lines: moved,
      syncsInto: `claude-code-${sessionId}`,
    };
  }
  if (agent === "codex") {
    const meta = lines.find((line) => line.type === "session_meta")?.payload as Line | undefined;
    if (typeof meta?.id !== "string") fail("the export has no Codex session_meta line");
    const threadId = fileId(meta.id, "the export's Codex session id");
    const home = env.CODEX_HOME || join(homedir(), ".codex");
    // codex resume lists only the threads of the provider it runs with: the rollout's is this
    // machine's, whichever provider the session's model came from.
    const provider = codexProvider(home);
    const moved = lines.map((line) => {
      const payload = line.payload as Line | undefined;
      if (line.type === "session_meta" && payload)
        return {
          ...line,
          payload: {
            ...payload,
            ...(typeof payload.cwd === "string" ? { cwd: project } : {}),
            model_provider: provider,
          },
        };
      if (line.type === "turn_context" && typeof payload?.cwd === "string")
        return { ...line, payload: { ...payload, cwd: project } };
      return line;
    });
    // The thread's rollout there already, else one named as Codex names them, in local time.
    const existing = codexRollout(home, threadId);
    const syncsInto = `codex-${threadId}`;
    if (existing) return { path: existing, lines: moved, syncsInto };
    const { day, time } = codexLocalTime(new Date(Date.parse(String(meta.timestamp)) || Date.now()));
    return {
      path: join(home, "sessions", ...day, `rollout-${time}-${threadId}.jsonl`),
      lines: moved,
      syncsInto,
    };
  }
  const header = lines[0];
  if (header?.type !== "session" || typeof header.id !== "string")
    fail("the export has no pi session header");
  const time = typeof header.timestamp === "string" ? header.timestamp : new Date().toISOString();
  const moved = [{ ...header, cwd: project }, ...lines.slice(1)];
  return {
    path: join(piSessionDir(project, env), `${piFileTime(time)}_${header.id}.jsonl`),
    lines: moved,
    syncsInto: header.id,
  };
}

async function exported(client: RemoteRepo, id: string, agent: PullAgent): Promise<Line[]> {
  const lines: Line[] = [];
  for await (const text of client.storage(id).exportLines(agent)) {
    for (const line of text.split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line) as Line);
  }
  return lines;
}

/** A line as JSON to compare, without the record a Codex rollout's `session_meta` holds of its export. */
function comparable(line: unknown): string {
  const value = line as Line | undefined;
  const payload = value?.payload as Line | undefined;
  if (value?.type !== "session_meta" || typeof payload !== "object" || payload === null)
    return canonicalJson(line);
  const { [EXPORT_RECORD]: _made, ...meta } = payload;
  return canonicalJson({ ...value, payload: meta });
}

/**
 * Whether the file at `path` holds nothing the session does not: nothing there yet; only lines of
 * the export (a rollout's record of the export it was made from aside), in whatever order (a pi
 * export puts the head's entry last, where pi resumes); or only entries the session it syncs into
 * holds, a sync of it writing nothing (the lines of a branch the session's head left, which an
 * export to Claude Code or Codex leaves out). A line the agent appended there and the session does
 * not hold yet (not synced) makes it false, and so does a line that differs.
 */
async function holdsNothingNew(client: RemoteRepo, agent: PullAgent, file: Placed): Promise<boolean> {
  if (!existsSync(file.path)) return true;
  const existing = readFileSync(file.path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
  if (isMadeUpName(existing.at(-1), file.lines)) existing.pop();
  const exported = new Set(file.lines.map(comparable));
  if (existing.every((text) => exported.has(comparable(tryParseJson(text) ?? text)))) return true;
  // The file read as a sync reads it: whole, then a line at a time.
  for (const linesApart of agent === "pi" ? [false] : [false, true]) {
    try {
      const parsed = parseImport(agent, existing.join("\n"), { linesApart });
      const plan = await planSync(client.storage(file.syncsInto), parsed);
      return !plan.entries.some((entry) => isTreeEntry(entry));
    } catch (error) {
      // A file that does not read, or no session to sync into: not all the session's. One that
      // differs from the session read whole may not a line at a time.
      if (!(error instanceof SessionError)) throw error;
      if (error.code === "invalid_request" || error.code === "not_found") return false;
      if (error.code !== "already_exists") throw error;
    }
  }
  return false;
}

/** The name a line gives the session: pi's `session_info`, Claude Code's `custom-title`, Codex's rename. */
function titleOf(line: Line | undefined): string | undefined {
  const text = (value: unknown) => (typeof value === "string" ? value : undefined);
  if (line?.type === "session_info") return text(line.name);
  if (line?.type === "custom-title") return text(line.customTitle);
  const payload = line?.payload as Line | undefined;
  if (line?.type === "event_msg" && payload?.type === "thread_name_updated") return text(payload.thread_name);
  return undefined;
}

/**
 * Whether a file's last line is the one an export ends with to give the file the session's name
 * (pi's `session_info` of an id of its own, Claude Code's `custom-title`, Codex's
 * `thread_name_updated`): written after whatever the session holds, so one pulled before is not
 * the start of the next. One naming the session as the export does now holds nothing the session
 * does not.
 */
function isMadeUpName(text: string | undefined, lines: readonly Line[]): boolean {
  if (text === undefined) return false;
  const line = tryParseJson(text) as Line | undefined;
  const name = titleOf(line);
  if (name === undefined) return false;
  if (line?.type === "session_info" && lines.some((exported) => exported.id === line.id)) return false;
  const named = lines.findLast((exported) => titleOf(exported) !== undefined);
  return named !== undefined && titleOf(named) === name;
}

/** Writes lines whole or not at all: the agent never reads half a file. */
async function writeWhole(path: string, lines: readonly Line[]): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  await writeFileAtomically(
    path,
    (async function* () {
      for (const line of lines) yield `${JSON.stringify(line)}\n`;
    })(),
  );
}

/** What `pull` wrote: the session's file, and its subagents' transcripts (Claude Code). */
export interface Pulled {
  path: string;
  subagents: string[];
}

/**
 * Refuses to overwrite a file the agent went on in since (not synced) unless `force`: what it wrote
 * there since is not overwritten unasked. A sync brings it into session `id` only when the file's
 * session is named as that one: otherwise (a session written elsewhere than that agent) it makes a
 * session of its own.
 */
async function keepWentOn(
  client: RemoteRepo,
  agent: PullAgent,
  file: Placed,
  id: string,
  env: Env,
  force: boolean,
): Promise<void> {
  if (force || isAsPulled(file.path, env) || (await holdsNothingNew(client, agent, file))) return;
  throw new Error(
    file.syncsInto === id
      ? `${file.path} holds lines the session does not: sync it first (cf-sessions sync ${file.path}), or pull --force to overwrite it`
      : `${file.path} holds lines the session does not; cf-sessions sync ${file.path} would write them into a session of their own (${file.syncsInto}), not into ${id}: pull --force to overwrite it`,
  );
}

/**
 * Writes the session where `agent` looks for the project at `projectDir`. For Claude Code, the
 * transcripts of its subagents imported beside it (`<id>-agent-<agent id>`) go where Claude Code
 * keeps them: `<session uuid>/subagents/agent-<agent id>.jsonl` beside the session's file. A file
 * is replaced when it is what the last pull wrote there, or holds nothing the session does not;
 * when one of them (the session's or a subagent's) holds what the agent went on with there
 * (unsynced), every file is left as it is, and nothing is written, unless `force`.
 */
export async function pullSession(
  client: RemoteRepo,
  id: string,
  agent: PullAgent,
  projectDir: string,
  env: Env,
  options: { force?: boolean | undefined } = {},
): Promise<Pulled> {
  const project = resolve(projectDir);
  const force = options.force === true;
  const file = placed(agent, await exported(client, id, agent), project, env);
  await keepWentOn(client, agent, file, id, env, force);
  // Every subagent's file named before any is written: one that cannot be named writes nothing.
  const named: { id: string; path: string; agentId: string }[] = [];
  if (agent === "claude-code") {
    const folder = join(file.path.slice(0, -".jsonl".length), "subagents");
    const prefix = `${id}-agent-`;
    let cursor: string | null = null;
    do {
      const page = await client.list({ prefix, cursor, limit: 200 });
      for (const info of page.sessions) {
        const claudeCode = info.metadata.claudeCode as Record<string, unknown> | undefined;
        const agentId = fileId(
          typeof claudeCode?.agentId === "string" ? claudeCode.agentId : info.id.slice(prefix.length),
          "the subagent id",
        );
        named.push({ id: info.id, path: join(folder, `agent-${agentId}.jsonl`), agentId });
      }
      cursor = page.nextCursor;
    } while (cursor);
  }
  // Every subagent's file checked before any is written (a sync names its session after the
  // session's file's, as the import does).
  const subagents: Placed[] = [];
  for (const sub of named) {
    const { lines } = placed(agent, await exported(client, sub.id, agent), project, env);
    const subFile = { path: sub.path, lines, syncsInto: `${file.syncsInto}-agent-${sub.agentId}` };
    await keepWentOn(client, agent, subFile, sub.id, env, force);
    subagents.push(subFile);
  }
  for (const sub of subagents) {
    await writeWhole(sub.path, sub.lines);
    await notePulled(sub.path, env);
  }
  // The session's own file last: once it is there, so are its subagents'.
  await writeWhole(file.path, file.lines);
  await notePulled(file.path, env);
  return { path: file.path, subagents: subagents.map((sub) => sub.path) };
}
