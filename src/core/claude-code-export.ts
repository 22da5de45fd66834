import type { Line, PlacedLine } from "./agent-export";
import { conversation, customLine, HeldEntries, inSessionOrder, LineOrder, lineTime } from "./agent-export";
import { isUuid, uuidFor, uuidFrom } from "./agent-ids";
import type { InputContent } from "./agent-log";
import { asString, isRecord } from "./agent-log";
import { filledAssistantContent, filledUserContent, toolResultBlock } from "./claude-code-blocks";
import { headNoteFields, ResumeReader } from "./claude-code-resume";
import type { CompactionEntry, SessionEntry, TreeEntry } from "./entries";
import { sessionEntries } from "./interchange";
import type { AgentMessage, AssistantMessage, ToolResultMessage, UserMessage } from "./messages";
import { ANTHROPIC_IMAGE_TYPES, imageTypeFor, unsupportedImageNote } from "./providers/image-types";
import { toModelMessage } from "./providers/pi-messages";
import { ANTHROPIC_IDS, AnsweredCallIds } from "./providers/tool-call-ids";
import type { Session } from "./session";
import type { SourceFields } from "./source-lines";
import { sourceOf } from "./source-lines";

/*
 * A session as a Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`).
 *
 * What was imported from a Claude Code file goes back as the lines it was made from, in the file's
 * order: each entry keeps its lines without what it holds (`sourceLines`, their places in
 * `sourceLineNumbers`), and the export fills them again from the entry. Lines the Claude Agent
 * SDK store wrote whole (an entry's `line`) go back as they are.
 *
 * What was written anywhere else (over HTTP, by pi, by another agent, or here after the import)
 * becomes the lines Claude Code writes for the conversation on the current branch: a user line per
 * user message and per tool result, an assistant line per reply (thinking signed by Anthropic kept,
 * other thinking as text, tool-call ids as Anthropic takes them), messages of pi's own roles as the
 * user messages pi sends for them, the latest compaction as a `compact_boundary` and the summary
 * line after it (then the messages it kept), and the session's name as a `custom-title` line. On
 * the other branches, what a line of the file hangs from is written too, as the lines it has on its
 * own branch, so every line's parent comes before it. A head Claude Code would not resume at (moved
 * back) is told by a note after every line (see claude-code-resume.ts).
 */

/** The version of Claude Code whose line shapes new lines follow. */
export const CLAUDE_CODE_VERSION = "2.1.38";

const PREFIX = "claude-code:";

export interface ClaudeCodeExportOptions {
  /**
   * The `sessionId` of the lines: by default the one the session was imported with when its id was
   * made from that one or it is no fork (a fork has its own), else a UUID made from its id.
   */
  sessionId?: string;
  /** The working folder of new lines: by default the one the session recorded. */
  cwd?: string;
}

/** The lines an entry was made from, however it keeps them. */
type EntryLines =
  | { kind: "source"; lines: Array<{ line: Line; number: number }> }
  | { kind: "whole"; line: Line; number?: number };

/**
 * The lines an entry holds. `imported`: whether the session was imported from a Claude Code file
 * (only then are its entries' source lines Claude Code's; another agent's import keeps its own).
 */
function linesOf(entry: SessionEntry, imported: boolean): EntryLines | undefined {
  const source = imported ? sourceOf(entry as SourceFields) : undefined;
  if (source) return { kind: "source", lines: source };
  const held = (entry as { line?: unknown }).line;
  if (isRecord(held)) return { kind: "whole", line: held };
  const custom = customLine(entry, PREFIX);
  return custom && { kind: "whole", ...custom };
}

/** The uuids of the lines an entry holds. */
function uuidsOf(lines: EntryLines): string[] {
  const held = lines.kind === "source" ? lines.lines.map((l) => l.line) : [lines.line];
  return held.map((line) => asString(line.uuid)).filter((u): u is string => u !== undefined);
}

/**
 * Which entries the transcript's lines hold, and the uuid a new line under an entry names as its
 * parent: the entry's last line's, or that of the nearest entry above it that has one.
 */
class TranscriptIndex extends HeldEntries {
  readonly #uuidOf = new Map<string, string>();
  readonly #imported: boolean;

  constructor(imported: boolean) {
    super();
    this.#imported = imported;
  }

  note(entry: SessionEntry): void {
    const lines = entry.type === "leaf" ? undefined : linesOf(entry, this.#imported);
    const uuids = lines && uuidsOf(lines);
    this.read(entry, uuids);
    const last = uuids?.at(-1);
    if (last !== undefined) this.#uuidOf.set(entry.id, last);
  }

  settle(): void {
    for (const id of this.finish()) this.#uuidOf.set(id, this.ownerOf(id) ?? id);
  }

  hangFrom(id: string | null): string | null {
    for (let at = id; at !== null; at = this.parentOf(at)) {
      const uuid = this.#uuidOf.get(at);
      if (uuid !== undefined) return uuid;
    }
    return null;
  }
}

/** A user line and the entries it was made into (its results, a thinking change, the user message). */
interface UserGroup {
  uuid: string;
  line: Line;
  number: number;
  /** Where its first entry stands in the session. */
  at: number;
  entries: SessionEntry[];
}

function messageOf(entry: SessionEntry): AgentMessage | undefined {
  return entry.type === "message" ? entry.message : undefined;
}

function userLine(group: UserGroup): Line {
  const results = group.entries
    .map(messageOf)
    .filter((m): m is ToolResultMessage => m?.role === "toolResult");
  const user = group.entries.map(messageOf).find((m): m is UserMessage => m?.role === "user");
  const line = { ...group.line };
  const message = isRecord(line.message) ? line.message : {};
  if (!Object.hasOwn(message, "content")) line.message = { ...message, content: user?.content ?? "" };
  else if (Array.isArray(message.content)) {
    const parts = Array.isArray(user?.content) ? (user.content as InputContent[]) : [];
    line.message = { ...message, content: filledUserContent(message.content, results, parts) };
  }
  const details = results.length === 1 ? results[0]?.details : undefined;
  if (!Object.hasOwn(line, "toolUseResult") && details !== undefined) line.toolUseResult = details;
  return line;
}

/** An assistant entry's lines, each line's blocks filled from the message in order. */
function assistantLines(entry: SessionEntry, lines: Line[]): Line[] {
  const parts = (messageOf(entry) as AssistantMessage | undefined)?.content ?? [];
  let next = 0;
  return lines.map((line) => {
    const message = isRecord(line.message) ? line.message : undefined;
    if (!message || !Array.isArray(message.content)) return line;
    const filled = filledAssistantContent(message.content, parts, next);
    next = filled.next;
    return { ...line, message: { ...message, content: filled.content } };
  });
}

/** A compaction's lines: the summary line's text is the compaction's summary. */
function compactionLines(entry: CompactionEntry, lines: Line[]): Line[] {
  return lines.map((line) => {
    const message = isRecord(line.message) ? line.message : undefined;
    if (line.type !== "user" || !message || Object.hasOwn(message, "content")) return line;
    return { ...line, message: { ...message, content: entry.summary } };
  });
}

function isMember(group: UserGroup, id: string): boolean {
  return id === group.uuid || id.startsWith(`${group.uuid}:`);
}

/**
 * The transcript's own lines as they go out: under the export's session id where they carry the
 * one the session was imported with (a fork's lines carry its source's), and the name they give
 * the session, read as the import reads it.
 */
class OwnLines {
  readonly #from: string | undefined;
  readonly #to: string;
  readonly #uuids = new Set<unknown>();
  readonly #summaries: Line[] = [];
  #title: string | undefined;

  constructor(from: string | undefined, to: string) {
    this.#from = from;
    this.#to = to;
  }

  readonly out = (line: Line): Line => {
    this.#uuids.add(line.uuid);
    const text = (key: string) => (typeof line[key] === "string" && line[key] !== "" ? line[key] : undefined);
    if (line.type === "custom-title") this.#title = text("customTitle") ?? this.#title;
    if (line.type === "summary" && text("summary") !== undefined) this.#summaries.push(line);
    const moved = this.#from !== undefined && line.sessionId === this.#from && this.#from !== this.#to;
    return moved ? { ...line, sessionId: this.#to } : line;
  };

  /** The name the lines written give the session: the last title, else the last summary of a line here. */
  get name(): string | undefined {
    return this.#title ?? asString(this.#summaries.findLast((l) => this.#uuids.has(l.leafUuid))?.summary);
  }
}

/** The transcript's own lines, from every entry made from one, in the order the file had them. */
async function* sourceLines(
  session: Session,
  imported: boolean,
  index: TranscriptIndex,
  own: OwnLines,
): AsyncGenerator<PlacedLine> {
  if (!index.hasLines) return;
  const order = new LineOrder(own.out);
  let group: UserGroup | undefined;
  const closeGroup = function* (): Generator<PlacedLine> {
    if (group) yield* order.put(userLine(group), group.at, group.number);
    group = undefined;
  };
  for await (const entry of sessionEntries(session)) {
    if (entry.type === "leaf") continue;
    if (group && isMember(group, entry.id)) {
      group.entries.push(entry);
      continue;
    }
    yield* closeGroup();
    const lines = linesOf(entry, imported);
    if (!lines) continue;
    const at = index.at(entry.id);
    if (lines.kind === "whole") {
      yield* order.put(lines.line, at, lines.number);
      continue;
    }
    const [first, ...rest] = lines.lines;
    if (!first) continue;
    const held = lines.lines.map((l) => l.line);
    let written: Line[];
    if (entry.type === "compaction") written = compactionLines(entry, held);
    else if (messageOf(entry)?.role === "assistant") written = assistantLines(entry, held);
    else {
      group = {
        uuid: asString(first.line.uuid) ?? entry.id,
        line: first.line,
        number: first.number,
        at,
        entries: [entry],
      };
      continue;
    }
    yield* order.put(written[0] as Line, at, first.number);
    rest.forEach((l, n) => {
      order.later(written[n + 1] as Line, at, l.number);
    });
  }
  yield* closeGroup();
  yield* order.rest();
}

/** Fields every new line carries, and what makes the lines of messages. */
class LineWriter {
  readonly #fields: Line;
  readonly #sessionId: string;
  readonly #callIds = new AnsweredCallIds(ANTHROPIC_IDS);

  constructor(fields: Line, sessionId: string) {
    this.#fields = fields;
    this.#sessionId = sessionId;
  }

  /** A result's wire id: the id of the call it answers, or one of its own when no call waits for it. */
  #answer(storedId: string): string {
    return this.#callIds.result(storedId) ?? this.#callIds.allocate(storedId);
  }

  line(parentUuid: string | null, type: string, fields: Line, uuid: string, timestamp: string): Line {
    return { parentUuid, ...this.#fields, type, ...fields, uuid, timestamp };
  }

  title(name: string): Line {
    return { type: "custom-title", customTitle: name, sessionId: this.#sessionId };
  }

  /** A user's or a tool result's text or image, an image as a type Anthropic reads or a note. */
  #block(part: InputContent): Line {
    if (part.type === "text") return { type: "text", text: part.text };
    const mediaType = imageTypeFor(part.mimeType, ANTHROPIC_IMAGE_TYPES);
    if (!mediaType) return { type: "text", text: unsupportedImageNote(part.mimeType) };
    return { type: "image", source: { type: "base64", media_type: mediaType, data: part.data } };
  }

  #userContent(content: unknown): unknown {
    if (typeof content === "string") return content;
    return (Array.isArray(content) ? (content as InputContent[]) : []).map((part) => this.#block(part));
  }

  #assistantContent(message: AssistantMessage): Line[] {
    const signed = message.provider === "anthropic";
    const blocks: Line[] = [];
    for (const part of message.content) {
      if (part.type === "text") {
        if (part.text) blocks.push({ type: "text", text: part.text });
      } else if (part.type === "toolCall") {
        blocks.push({
          type: "tool_use",
          id: this.#callIds.allocate(part.id),
          name: part.name,
          input: part.arguments,
        });
      } else if (signed && part.redacted === true && part.thinkingSignature) {
        blocks.push({ type: "redacted_thinking", data: part.thinkingSignature });
      } else if (signed && part.thinkingSignature) {
        blocks.push({ type: "thinking", thinking: part.thinking, signature: part.thinkingSignature });
      } else if (part.redacted !== true && part.thinking.trim()) {
        // Thinking another model wrote cannot go back to Claude as thinking: it goes as text.
        blocks.push({ type: "text", text: part.thinking });
      }
    }
    return blocks;
  }

  /** The fields of the line a message is written as; undefined for one Claude Code has no line for. */
  messageFields(message: AgentMessage, uuid: string): { type: string; fields: Line } | undefined {
    if (message.role === "assistant") {
      const assistant = message as AssistantMessage;
      const content = this.#assistantContent(assistant);
      if (content.length === 0) return undefined;
      const { input, output, cacheRead, cacheWrite } = assistant.usage;
      return {
        type: "assistant",
        fields: {
          ...unfinishedFields(assistant),
          message: {
            id: `msg_${uuid.replaceAll("-", "")}`,
            type: "message",
            role: "assistant",
            model: assistant.model,
            content,
            stop_reason: STOP_REASONS[assistant.stopReason] ?? null,
            stop_sequence: null,
            usage: {
              input_tokens: input,
              cache_creation_input_tokens: cacheWrite,
              cache_read_input_tokens: cacheRead,
              output_tokens: output,
            },
          },
        },
      };
    }
    if (message.role === "toolResult") {
      const result = message as ToolResultMessage;
      const answered = { ...result, toolCallId: this.#answer(result.toolCallId) };
      const block = toolResultBlock(answered, (part) => this.#block(part));
      return { type: "user", fields: { message: { role: "user", content: [block] } } };
    }
    const user = toModelMessage(message);
    if (user?.role !== "user") return undefined;
    const fields: Line = { message: { role: "user", content: this.#userContent(user.content) } };
    // pi's summaries, custom messages and commands: what the model is told, not what the user typed.
    if (message.role !== "user") fields.isMeta = true;
    return { type: "user", fields };
  }
}

/** A reply without one of these stop reasons did not finish: its line has no `stop_reason`. */
const STOP_REASONS: Record<string, string> = { stop: "end_turn", toolUse: "tool_use", length: "max_tokens" };

/**
 * The marks Claude Code puts on a reply that is no answer: `isApiErrorMessage` on one whose
 * request failed, `isAbortedMidStream` on one stopped while it streamed; `errorDetails` holds the
 * error.
 */
function unfinishedFields(message: AssistantMessage): Line {
  const fields: Line = {};
  if (message.stopReason === "error") fields.isApiErrorMessage = true;
  else if (message.stopReason === "aborted") fields.isAbortedMidStream = true;
  else return fields;
  if (message.errorMessage !== undefined) fields.errorDetails = message.errorMessage;
  return fields;
}

/**
 * Lines for the conversation on a branch where no line of the transcript holds it, each placed
 * where its entry stands (what a compaction kept, where the compaction does). A line's uuid is made
 * from its entry (`key`), so the entry goes out as the same line on every branch it is on. Entries
 * whose key is in `written` went out already: they write nothing again; the others' keys join it.
 */
async function* branchLines(
  path: TreeEntry[],
  index: TranscriptIndex,
  writer: LineWriter,
  sessionId: string,
  written: Set<string>,
): AsyncGenerator<PlacedLine, string | null> {
  let parent: string | null = null;
  // What a compaction from the transcript kept is on the transcript's own lines already.
  let keptOnLines = false;
  let at = Number.NEGATIVE_INFINITY;
  for (const { entry, messages, kept } of conversation(path)) {
    at = Math.max(at, index.at(entry.id));
    if (entry.type === "compaction") keptOnLines = index.held(entry.id);
    if (kept ? keptOnLines : index.held(entry.id)) {
      parent = index.hangFrom(entry.id);
      continue;
    }
    const key = kept ? `${entry.id}/kept` : entry.id;
    const again = written.has(key);
    written.add(key);
    let count = 0;
    const uuidOf = async () => {
      const n = count++;
      return n === 0 && !kept && isUuid(entry.id) ? entry.id : await uuidFrom(`${sessionId}/${key}/${n}`);
    };
    for (const message of messages) {
      if (message.role === "compactionSummary" && entry.type === "compaction") {
        const boundary = await uuidOf();
        const text = `${JSON.stringify(
          writer.line(
            null,
            "system",
            {
              ...(parent === null ? {} : { logicalParentUuid: parent }),
              subtype: "compact_boundary",
              content: "Conversation compacted",
              isMeta: false,
              level: "info",
              compactMetadata: { trigger: "manual", preTokens: entry.tokensBefore },
            },
            boundary,
            entry.timestamp,
          ),
        )}\n`;
        if (!again) yield { at, text };
        const summary = await uuidOf();
        const fields = {
          message: { role: "user", content: entry.summary },
          isCompactSummary: true,
          isVisibleInTranscriptOnly: true,
        };
        const line = writer.line(boundary, "user", fields, summary, entry.timestamp);
        if (!again) yield { at, text: `${JSON.stringify(line)}\n` };
        parent = summary;
        continue;
      }
      const uuid = await uuidOf();
      // Made even when it went out already: tool-call ids are handed out along the branch.
      const fields = writer.messageFields(message, uuid);
      if (!fields) continue;
      const timestamp = lineTime(message, entry);
      const line = writer.line(parent, fields.type, fields.fields, uuid, timestamp);
      if (!again) yield { at, text: `${JSON.stringify(line)}\n` };
      parent = uuid;
    }
  }
  return parent;
}

/**
 * Lines for what no line of the transcript holds: the conversation on the current branch, and on
 * every other branch what a line of the transcript hangs from, so each line's parent is written
 * before it. Each branch's lines are the ones it gets as the current branch. `head.line` becomes
 * the uuid of the head's last line.
 */
async function* newLines(
  session: Session,
  leafId: string | null,
  index: TranscriptIndex,
  writer: () => LineWriter,
  head: { line: string | null },
): AsyncGenerator<PlacedLine> {
  const sessionId = (await session.getHeader()).id;
  const onBranch = new Set(index.path(leafId));
  const branch = [...onBranch].every((id) => index.held(id))
    ? []
    : ((await session.getBranch(leafId)) as TreeEntry[]);
  // The current branch's entries go out on it, however many other branches they are on.
  const written = new Set(
    conversation(branch).map(({ entry, kept }) => (kept ? `${entry.id}/kept` : entry.id)),
  );
  const others: PlacedLine[] = [];
  for (const tip of index.unheldParents()) {
    if (onBranch.has(tip)) continue;
    const path = (await session.getBranch(tip)) as TreeEntry[];
    for await (const line of branchLines(path, index, writer(), sessionId, written)) others.push(line);
  }
  // Stable: each branch's lines stay in order, and a line follows those of its place written first.
  others.sort((a, b) => a.at - b.at);
  let next = 0;
  const lines = branchLines(branch, index, writer(), sessionId, new Set());
  let line = await lines.next();
  for (; !line.done; line = await lines.next()) {
    const at = line.value.at;
    for (; next < others.length && (others[next] as PlacedLine).at < at; next++)
      yield others[next] as PlacedLine;
    yield line.value;
  }
  head.line = branch.length > 0 ? line.value : index.hangFrom(leafId);
  yield* others.slice(next);
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
  const index = new TranscriptIndex(imported);
  for await (const entry of sessionEntries(session)) index.note(entry);
  index.settle();
  const own = new OwnLines(importedId, sessionId);
  const writer = () => new LineWriter(fields, sessionId);
  const head = { line: null as string | null };
  const written = newLines(session, leafId, index, writer, head);
  // The session's latest entry as its head ends the file, where Claude Code resumes; any other
  // head is checked against the lines as Claude Code reads them.
  const resume =
    leafId !== null && !index.isLatest(leafId) && !fields.isSidechain ? new ResumeReader() : undefined;
  for await (const text of inSessionOrder(sourceLines(session, imported, index, own), written)) {
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
