import type { Line, PlacedLine } from "./agent-export";
import { customLine, HeldEntries, LineOrder } from "./agent-export";
import type { InputContent } from "./agent-log";
import { asString, isRecord } from "./agent-log";
import type { UserLineEdits } from "./claude-code-blocks";
import { editedAssistantContent, filledAssistantContent, filledUserContent } from "./claude-code-blocks";
import type { BranchEdits } from "./context-edits";
import { applyContextEdit } from "./context-edits";
import type { CompactionEntry, ContextEditEntry, SessionEntry } from "./entries";
import { sessionEntries } from "./interchange";
import type { AgentMessage, AssistantMessage, ToolResultMessage, UserMessage } from "./messages";
import type { Session } from "./session";
import type { SourceFields } from "./source-lines";
import { sourceOf } from "./source-lines";

/*
 * The lines of a Claude Code transcript a session was made from, as its export writes them again:
 * each entry keeps its lines without what it holds (`sourceLines`, their places in
 * `sourceLineNumbers`), and they are filled again from the entry, in the file's order. Lines the
 * Claude Agent SDK store wrote whole (an entry's `line`) go back as they are.
 *
 * A context edit on the current branch changes the lines of the entry it names as it changes the
 * entry's message in the context: the blocks the entry holds are written from the edited message,
 * or left out for an edit that leaves the message out; the line keeps its uuid, its place in the
 * chain and everything else it holds. A line left with no block becomes a note (`leftOut`).
 */

const PREFIX = "claude-code:";

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
export class TranscriptIndex extends HeldEntries {
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

/** What a line an edit left with no block says in its place. */
export const LEFT_OUT_NOTE = "A context edit left this message out of the context.";

/**
 * A user or assistant line an edit left with no block, as a note in its place: Claude Code sends
 * no such line to the model and the import reads it as no message, and the lines under it keep
 * their parent. Any other line goes as it is.
 */
function leftOut(line: Line): Line {
  const message = isRecord(line.message) ? line.message : undefined;
  const empty = Array.isArray(message?.content) && message.content.length === 0;
  if ((line.type !== "user" && line.type !== "assistant") || !empty) return line;
  const { message: _message, toolUseResult: _result, ...rest } = line;
  return {
    ...rest,
    type: "system",
    subtype: "informational",
    content: LEFT_OUT_NOTE,
    isMeta: true,
    level: "info",
  };
}

/** The message an edit leaves of an entry's: undefined when it leaves it out. */
function edited(
  message: AgentMessage,
  edit: Pick<ContextEditEntry, "replacement">,
): AgentMessage | undefined {
  return applyContextEdit([message], edit)[0];
}

/** A user message's content as parts (a string as one text part). */
function partsOf(message: UserMessage | undefined): InputContent[] {
  if (!message) return [];
  const content = message.content;
  return typeof content === "string" ? [{ type: "text", text: content }] : (content as InputContent[]);
}

/** What the branch's edits leave of a user line's entries (undefined when none names one). */
function userLineEdits(group: UserGroup, edits: BranchEdits): UserLineEdits | undefined {
  const results = new Map<number, ToolResultMessage | null>();
  let parts: InputContent[] | undefined;
  let result = 0;
  for (const entry of group.entries) {
    const message = messageOf(entry);
    const edit = edits.get(entry.id);
    if (message?.role === "toolResult") {
      if (edit) results.set(result, (edited(message, edit) as ToolResultMessage | undefined) ?? null);
      result++;
    } else if (message?.role === "user" && edit)
      parts = partsOf(edited(message, edit) as UserMessage | undefined);
  }
  return results.size > 0 || parts ? { results, ...(parts ? { parts } : {}) } : undefined;
}

function userLine(group: UserGroup, edits: BranchEdits): Line {
  const results = group.entries
    .map(messageOf)
    .filter((m): m is ToolResultMessage => m?.role === "toolResult");
  const userEntry = group.entries.find((e) => messageOf(e)?.role === "user");
  const user = userEntry && (messageOf(userEntry) as UserMessage);
  const userEdit = userEntry && edits.get(userEntry.id);
  const line = { ...group.line };
  const message = isRecord(line.message) ? line.message : {};
  if (!Object.hasOwn(message, "content")) {
    // A user line whose content was a string holds nothing but the user message.
    const content =
      user && userEdit ? (edited(user, userEdit) as UserMessage | undefined)?.content : user?.content;
    line.message = { ...message, content: content ?? (userEdit ? [] : "") };
  } else if (Array.isArray(message.content)) {
    const parts = Array.isArray(user?.content) ? (user.content as InputContent[]) : [];
    const content = filledUserContent(message.content, results, parts, userLineEdits(group, edits));
    line.message = { ...message, content };
  }
  const written = withDetails(line, results);
  return group.entries.some((entry) => edits.has(entry.id)) ? leftOut(written) : written;
}

/** A user line with its one result's details as `toolUseResult`, when it does not hold one. */
function withDetails(line: Line, results: readonly ToolResultMessage[]): Line {
  const details = results.length === 1 ? results[0]?.details : undefined;
  if (!Object.hasOwn(line, "toolUseResult") && details !== undefined) line.toolUseResult = details;
  return line;
}

/**
 * An assistant entry's lines, each line's blocks filled from the message in order; under an edit,
 * the edited message's blocks where the entry's first one stood (none when it is left out).
 */
function assistantLines(
  entry: SessionEntry,
  lines: Line[],
  edit: Pick<ContextEditEntry, "replacement"> | undefined,
): Line[] {
  const stored = messageOf(entry) as AssistantMessage | undefined;
  const message = stored && edit ? (edited(stored, edit) as AssistantMessage | undefined) : stored;
  const parts = message?.content ?? [];
  let next = 0;
  let placed = false;
  return lines.map((line) => {
    const held = isRecord(line.message) ? line.message : undefined;
    if (!held || !Array.isArray(held.content)) return line;
    if (edit) {
      const written = editedAssistantContent(held.content, parts, placed);
      placed = written.placed;
      return leftOut({ ...line, message: { ...held, content: written.content } });
    }
    const filled = filledAssistantContent(held.content, parts, next);
    next = filled.next;
    return { ...line, message: { ...held, content: filled.content } };
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
export class OwnLines {
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

/**
 * The transcript's own lines, from every entry made from one, in the order the file had them, the
 * entries `edits` names as the edits leave them.
 */
export async function* sourceLines(
  session: Session,
  imported: boolean,
  index: TranscriptIndex,
  own: OwnLines,
  edits: BranchEdits,
): AsyncGenerator<PlacedLine> {
  if (!index.hasLines) return;
  const order = new LineOrder(own.out);
  let group: UserGroup | undefined;
  const closeGroup = function* (): Generator<PlacedLine> {
    if (group) yield* order.put(userLine(group, edits), group.at, group.number);
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
    else if (messageOf(entry)?.role === "assistant")
      written = assistantLines(entry, held, edits.get(entry.id));
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
