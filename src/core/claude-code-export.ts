import type { Line } from "./agent-export";
import { inSessionOrder } from "./agent-export";
import { isUuid, uuidFor, uuidFrom } from "./agent-ids";
import { asString, isRecord } from "./agent-log";
import type { BranchLines } from "./claude-code-new-lines";
import { branchLines, LineWriter, newLines } from "./claude-code-new-lines";
import { OwnLines, sourceLines, TranscriptIndex } from "./claude-code-own-lines";
import { headNoteFields, ResumeReader } from "./claude-code-resume";
import { latestEdits } from "./context-edits";
import { sessionEntries } from "./interchange";
import type { Session } from "./session";

export type { BranchLines } from "./claude-code-new-lines";

/*
 * A session as a Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`).
 *
 * What was imported from a Claude Code file goes back as the lines it was made from, in the file's
 * order: each entry keeps its lines without what it holds (`sourceLines`, their places in
 * `sourceLineNumbers`), and the export fills them again from the entry. Lines the Claude Agent
 * SDK store wrote whole (an entry's `line`) go back as they are (claude-code-own-lines.ts).
 *
 * What was written anywhere else (over HTTP, by pi, by another agent, or here after the import)
 * becomes the lines Claude Code writes for the conversation on the current branch: a user line per
 * user message and per tool result, an assistant line per reply (thinking signed by Anthropic kept,
 * other thinking as text, tool-call ids as Anthropic takes them), messages of pi's own roles as the
 * user messages pi sends for them, the latest compaction as a `compact_boundary` and the summary
 * line after it (then the messages it kept), and the session's name as a `custom-title` line. On
 * the other branches, what a line of the file hangs from is written too, as the lines it has on its
 * own branch, so every line's parent comes before it (claude-code-new-lines.ts). A head Claude Code would not resume at (moved
 * back) is told by a note after every line (see claude-code-resume.ts).
 */

/** The version of Claude Code whose line shapes new lines follow. */
export const CLAUDE_CODE_VERSION = "2.1.38";

export interface ClaudeCodeExportOptions {
  /**
   * The `sessionId` of the lines: by default the one the session was imported with when its id was
   * made from that one or it is no fork (a fork has its own), else a UUID made from its id.
   */
  sessionId?: string;
  /** The working folder of new lines: by default the one the session recorded. */
  cwd?: string;
}

/** The fields new lines carry, from what the session recorded of where it ran. */
async function lineFields(
  session: Session,
  options: ClaudeCodeExportOptions,
): Promise<{ fields: Line; sessionId: string; importedId: string | undefined }> {
  const header = await session.getHeader();
  const metadata = header.metadata;
  const recorded = (key: string) => (isRecord(metadata[key]) ? (metadata[key] as Line) : {});
  const claudeCode = recorded("claudeCode");
  const codex = recorded("codex");
  const git = isRecord(codex.git) ? codex.git : {};
  const fromId = /^claude-code-([0-9a-f-]{36})$/i.exec(header.id)?.[1];
  const importedId = asString(claudeCode.sessionId);
  // A fork holds its source's id: it goes out under one of its own. A session imported under an
  // id of the caller's choosing keeps the file's.
  const own =
    importedId !== undefined &&
    (header.parentSession === undefined ||
      header.id === `claude-code-${importedId}` ||
      header.id.startsWith(`claude-code-${importedId}-agent-`));
  const sessionId =
    options.sessionId ?? (own ? importedId : isUuid(fromId) ? fromId : await uuidFor(header.id));
  const cwd =
    options.cwd ?? asString(claudeCode.cwd) ?? asString(recorded("pi").cwd) ?? asString(codex.cwd) ?? "";
  const gitBranch = asString(claudeCode.gitBranch) ?? asString(git.branch);
  const agentId = asString(claudeCode.agentId);
  return {
    sessionId,
    importedId,
    fields: {
      isSidechain: agentId !== undefined,
      userType: "external",
      cwd,
      sessionId,
      version: asString(claudeCode.version) ?? CLAUDE_CODE_VERSION,
      ...(gitBranch === undefined ? {} : { gitBranch }),
      ...(agentId === undefined ? {} : { agentId }),
    },
  };
}

/** Which of the session's entries the transcript's own lines hold, and what new lines hang from. */
async function transcriptIndex(session: Session, imported: boolean): Promise<TranscriptIndex> {
  const index = new TranscriptIndex(imported);
  for await (const entry of sessionEntries(session)) index.note(entry);
  index.settle();
  return index;
}

/**
 * What the session's transcript (`exportClaudeCode`) shows under ids of its own on its current
 * branch, which lines Claude Code writes name: a call written elsewhere goes out under an id
 * Anthropic takes, and what the latest compaction kept goes out again after its summary under
 * uuids made for it (`BranchLines`).
 */
export async function transcriptLines(session: Session): Promise<BranchLines> {
  const [leafId, header] = await Promise.all([session.getLeafId(), session.getHeader()]);
  const index = await transcriptIndex(session, isRecord(header.metadata.claudeCode));
  return branchLines(session, leafId, index);
}

/**
 * A session as a Claude Code transcript, line by line (each ending in a newline): the lines it was
 * imported from as they were, and lines for what was written elsewhere on the current branch, each
 * where its entry stands in the session.
 */
export async function* exportClaudeCode(
  session: Session,
  options: ClaudeCodeExportOptions = {},
): AsyncGenerator<string> {
  const [leafId, name, header, { fields, sessionId, importedId }] = await Promise.all([
    session.getLeafId(),
    session.getName(),
    session.getHeader(),
    lineFields(session, options),
  ]);
  const imported = isRecord(header.metadata.claudeCode);
  const index = await transcriptIndex(session, imported);
  const own = new OwnLines(importedId, sessionId);
  const writer = () => new LineWriter(fields, sessionId);
  const head = { line: null as string | null };
  const written = newLines(session, leafId, index, writer, head);
  // The session's latest entry as its head ends the file, where Claude Code resumes; any other
  // head is checked against the lines as Claude Code reads them.
  const resume =
    leafId !== null && !index.isLatest(leafId) && !fields.isSidechain ? new ResumeReader() : undefined;
  // Edits on the current branch change the lines of the entries they name, as the context does.
  const edits = index.hasLines ? latestEdits(await session.getBranch(leafId)) : new Map();
  for await (const text of inSessionOrder(sourceLines(session, imported, index, own, edits), written)) {
    resume?.note(text);
    yield text;
  }
  const headLine = head.line;
  const headMessage = headLine === null ? undefined : resume?.messageAt(headLine);
  if (resume && headLine !== null && headMessage !== undefined && resume.resumed() !== headMessage) {
    const uuid = await uuidFrom(`${header.id}/head/${headLine}`);
    const timestamp = (await session.getEntry(leafId as string))?.timestamp ?? header.createdAt;
    yield `${JSON.stringify(writer().line(headLine, "system", headNoteFields(), uuid, timestamp))}\n`;
  }
  // A fork's name is its own, not the one its lines give.
  if (name !== undefined && (!index.hasLines || index.namedHere || name !== own.name))
    yield `${JSON.stringify(writer().title(name))}\n`;
}
