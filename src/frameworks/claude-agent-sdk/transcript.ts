import type { AgentMessage, AssistantMessage, EntryInput, StoredEntry, ToolResultMessage } from "../../core";
import { isValidId, newId } from "../../core";
import { CallGroups } from "../../core/claude-code-call-groups";
import type { BranchLines } from "../../core/claude-code-export";
import { parseClaudeCode } from "../../core/public/interchange";

/*
 * A Claude Code transcript line as entries, by the Claude Code import's mapping (`parseClaudeCode`),
 * one line at a time: a user or assistant line becomes its messages (a compaction for a compact
 * summary), chained under the entry of its `parentUuid`, and the last of them keeps the line itself
 * in `line`; any other line is a `custom` entry (`customType` "claude-code:<type>") whose `data` is
 * the line, as the import makes it. So the transcript reads back exactly, and the session shows it
 * as a conversation tree. Unlike a whole-file import, the streamed blocks of one API message stay
 * one message each (a line once written is never rewritten), and the settings entries the import
 * derives across lines (model and thinking changes) are left out: each assistant message names its
 * model. A tool result takes its tool's name and id from its call, the nearest on the branch it
 * hangs from (stored before, or in an earlier line of the same append) that the transcript showed
 * under the id it names: a call written elsewhere went out under an id Anthropic takes, which
 * Claude Code answers by. Tool results hang as the import's `CallGroups` says for lines read apart,
 * so parallel calls' results stay on the conversation's path. A line under one the transcript
 * made a uuid for (an entry whose id is no UUID) goes on under its entry, and one under a line
 * the transcript repeated of what a compaction kept (the user went back to it) under a compaction
 * repeating the summary (`BranchLines.rewindAt`), so the summary stays in the context.
 */

export type TranscriptLine = Record<string, unknown> & { type: string; uuid?: string };

const PREFIX = "claude-code:";

/** Where lines hang: the entry of each uuid seen (the last of its chain), and the main chain's head. */
export interface TranscriptPlaces {
  entryOf: Map<string, string>;
  head: string | null;
  /**
   * Where the session went on elsewhere (over HTTP, MCP, an import) past the lines written here:
   * its leaf, which holds no line; or the line its head was moved back to. The transcript `load`
   * gives ends there, so a line whose parent is a line of it that names no entry hangs from it.
   */
  continues?: string | null;
  /** Each stored entry's parent, by id: the branches tool results find their calls on. */
  parentOf: Map<string, string | null>;
  /** The tool calls of each stored reply that made any (call id → tool name), by entry id. */
  callsOf: Map<string, Map<string, string>>;
  /**
   * The replies of `callsOf` that hold no line (written elsewhere): the transcript shows their
   * calls under ids of its own.
   */
  unlined: Set<string>;
  /** Where the next tool results hang. */
  groups: CallGroups;
}

/** Places to plan an append on: what it notes leaves `places` as it was. */
export function copyPlaces(places: TranscriptPlaces): TranscriptPlaces {
  return {
    ...places,
    entryOf: new Map(places.entryOf),
    parentOf: new Map(places.parentOf),
    callsOf: new Map(places.callsOf),
    unlined: new Set(places.unlined),
    groups: places.groups.copy(),
  };
}

/** Notes an entry's parent and, for a reply, the tools it called. */
function noteEntry(places: TranscriptPlaces, entry: Record<string, unknown>): void {
  if (entry.type === "leaf" || typeof entry.id !== "string") return;
  const parentId = typeof entry.parentId === "string" ? entry.parentId : null;
  places.parentOf.set(entry.id, parentId);
  places.groups.noteEntry(entry.id, parentId, entry.type === "custom");
  const message = entry.type === "message" ? (entry.message as AgentMessage) : undefined;
  if (message?.role !== "assistant") return;
  const calls = new Map<string, string>();
  for (const part of (message as AssistantMessage).content) {
    if (part.type === "toolCall") calls.set(part.id, part.name);
  }
  if (calls.size > 0) places.callsOf.set(entry.id, calls);
}

/** The call a line's first tool result answers, of the entries it was written as. */
function firstResultOf(entries: readonly Record<string, unknown>[]): string | undefined {
  for (const entry of entries) {
    const message = entry.type === "message" ? (entry.message as AgentMessage) : undefined;
    if (message?.role === "toolResult") return (message as ToolResultMessage).toolCallId;
  }
  return undefined;
}

/**
 * Notes where a line's tool calls and results leave the next results, `entries` the line's (first
 * to last), after they are noted.
 */
function noteGroups(
  places: TranscriptPlaces,
  line: TranscriptLine,
  entries: readonly Record<string, unknown>[],
): void {
  const last = entries.at(-1);
  if (last === undefined || typeof last.id !== "string") return;
  const message = last.type === "message" ? (last.message as AgentMessage) : undefined;
  if (message?.role === "assistant") {
    const apiId = (line.message as { id?: unknown } | undefined)?.id;
    const id = typeof apiId === "string" ? apiId : undefined;
    const above = typeof line.parentUuid === "string" ? places.entryOf.get(line.parentUuid) : undefined;
    const calls = [...(places.callsOf.get(last.id)?.keys() ?? [])];
    const first = places.groups.openMessage(id, above);
    if (first === undefined) places.groups.noteMessage(last.id, id, calls);
    else places.groups.noteFurtherLine(first, calls, last.id);
    return;
  }
  const callId = firstResultOf(entries);
  const parentId = entries[0]?.parentId;
  if (callId === undefined || parentId === undefined) return;
  const ids = entries.map((entry) => entry.id as string);
  places.groups.noteResults(callId, typeof parentId === "string" ? parentId : null, ids);
}

/**
 * The call a result naming `wireId` answers, its stored id and tool name: the nearest on the
 * branch up from `entryId` shown as `wireId`, a line's call by its own id and any other by the one
 * the transcript gave it (`shown.storedCallId`).
 */
function answeredCall(
  places: TranscriptPlaces,
  wireId: string,
  entryId: string | null,
  shown: BranchLines,
): { id: string; name: string } | undefined {
  const stored = shown.storedCallId(wireId);
  for (let at = entryId; at !== null; at = places.parentOf.get(at) ?? null) {
    const id = places.unlined.has(at) ? stored : wireId;
    const name = places.callsOf.get(at)?.get(id);
    if (name !== undefined) return { id, name };
  }
  return undefined;
}

function isMain(line: TranscriptLine): boolean {
  return line.isSidechain !== true;
}

/** The line an entry holds, or undefined for an entry that holds none (the rest of a chain). */
export function lineOf(entry: StoredEntry): TranscriptLine | undefined {
  if ("line" in entry && entry.line !== null && typeof entry.line === "object")
    return entry.line as TranscriptLine;
  const custom = entry.type === "custom" && entry.customType.startsWith(PREFIX);
  return custom && entry.data !== null && typeof entry.data === "object"
    ? (entry.data as TranscriptLine)
    : undefined;
}

/**
 * Where lines written before hang from, read back from the session's entries in append order. A
 * `leaf` that holds no line is where the session went on elsewhere, and one that holds a line with
 * others after it is where its head was moved back to: new lines go on from there.
 */
export async function placesOf(
  entries: AsyncIterable<StoredEntry>,
  leaf: string | null,
): Promise<TranscriptPlaces> {
  const places: TranscriptPlaces = {
    entryOf: new Map(),
    head: null,
    parentOf: new Map(),
    callsOf: new Map(),
    unlined: new Set(),
    groups: new CallGroups(),
  };
  const lined = new Set<string>();
  const mainLined = new Set<string>();
  // The entries of the line being read, first to last: the first named by its uuid, the rest after it.
  let lineEntries: StoredEntry[] = [];
  for await (const entry of entries) {
    noteEntry(places, entry);
    const first = lineEntries[0];
    if (first !== undefined && entry.id.startsWith(`${first.id}:`)) lineEntries.push(entry);
    else lineEntries = [entry];
    const line = lineOf(entry);
    if (!line) {
      // A reply written elsewhere is one line of the transcript: its calls' results follow one another.
      const calls = places.callsOf.get(entry.id);
      if (calls) {
        places.unlined.add(entry.id);
        places.groups.noteMessage(entry.id, undefined, [...calls.keys()]);
      }
      continue;
    }
    lined.add(entry.id);
    if (isMain(line)) mainLined.add(entry.id);
    noteGroups(places, line, lineEntries);
    lineEntries = [];
    if (typeof line.uuid === "string") places.entryOf.set(line.uuid, entry.id);
    if (isMain(line)) places.head = entry.id;
  }
  // Moved back to a line with lines after it, the head is told by a note `load` ends with (see
  // claude-code-resume.ts), which names no entry: a line under it hangs from the head too.
  const movedBack = leaf !== null && mainLined.has(leaf) && leaf !== places.head;
  if (leaf !== null && (!lined.has(leaf) || movedBack)) {
    places.continues = leaf;
    places.head = leaf;
  }
  return places;
}

/** The entry a line hangs from: its parent's, the logical parent of a compaction, or the head. */
function parentOf(line: TranscriptLine, places: TranscriptPlaces): string | null {
  if (typeof line.uuid !== "string") return places.head;
  const parent = typeof line.parentUuid === "string" ? places.entryOf.get(line.parentUuid) : undefined;
  if (parent !== undefined) return places.groups.following(parent);
  // A line the transcript gave for an entry written elsewhere is named by the entry's id.
  if (typeof line.parentUuid === "string" && places.parentOf.has(line.parentUuid)) return line.parentUuid;
  if (line.type === "system" && line.subtype === "compact_boundary") {
    const logical =
      typeof line.logicalParentUuid === "string" ? places.entryOf.get(line.logicalParentUuid) : undefined;
    return logical === undefined ? places.head : places.groups.following(logical);
  }
  // A line under one the transcript gave that stands for no entry (the note it ends with at a head
  // moved back); else a root: the first line, a subagent's first line, or a parent the store never
  // saw.
  return typeof line.parentUuid === "string" ? (places.continues ?? null) : null;
}

function isConversation(line: TranscriptLine): boolean {
  return (
    line.type === "user" ||
    line.type === "assistant" ||
    (line.type === "system" && line.subtype === "compact_boundary")
  );
}

/** The import's entries for a message (or compaction) line, or undefined when it maps to none. */
function messageEntries(line: TranscriptLine): Record<string, unknown>[] | undefined {
  if (!isConversation(line) || typeof line.uuid !== "string" || !isValidId(line.uuid)) return undefined;
  try {
    const { entries } = parseClaudeCode(`${JSON.stringify(line)}\n`);
    const kept = entries
      .filter((entry) => entry.type !== "model_change" && entry.type !== "thinking_level_change")
      .map(
        ({ sourceLines: _lines, sourceLineNumbers: _numbers, ...entry }: Record<string, unknown>) => entry,
      );
    return kept.length > 0 && kept.every((entry) => entry.type !== "custom") ? kept : undefined;
  } catch {
    // A line the import refuses on its own (no sessionId, say) is still kept, as a custom entry.
    return undefined;
  }
}

/** What a transcript of a session written elsewhere shows under ids of its own, for one that shows none. */
const NOTHING_SHOWN: BranchLines = { storedCallId: (wireId) => wireId, rewindAt: () => undefined };

/**
 * The entries for new lines (in order), placing each under its parent; `places` follows along.
 * `shown`: what the transcript `load` gave showed under ids of its own (`transcriptLines`), for
 * the calls of `places.unlined` and lines under lines whose uuids it made.
 */
export function transcriptEntries(
  lines: readonly TranscriptLine[],
  places: TranscriptPlaces,
  shown: BranchLines = NOTHING_SHOWN,
): EntryInput[] {
  const out: EntryInput[] = [];
  const rewound = new Map<string, string | null>();
  /**
   * Where a line under one the transcript made a uuid for goes on (`BranchLines.rewindAt`), the
   * entries that takes appended first.
   */
  const underMade = (line: TranscriptLine): string | null | undefined => {
    const uuid = line.parentUuid;
    if (typeof line.uuid !== "string" || typeof uuid !== "string") return undefined;
    if (places.entryOf.has(uuid) || places.parentOf.has(uuid)) return undefined;
    if (!rewound.has(uuid)) {
      const rewind = shown.rewindAt(uuid);
      if (rewind === undefined) return undefined;
      for (const entry of rewind.entries) {
        out.push(entry);
        noteEntry(places, entry);
      }
      rewound.set(uuid, rewind.parentId);
    }
    return rewound.get(uuid);
  };
  for (const line of lines) {
    const made = underMade(line);
    let parentId = made === undefined ? parentOf(line, places) : made;
    const messages = messageEntries(line);
    const first = out.length;
    let last: string;
    if (messages) {
      const wireId = firstResultOf(messages);
      if (wireId !== undefined) {
        const callId = answeredCall(places, wireId, parentId, shown)?.id ?? wireId;
        parentId = places.groups.resultsParent(callId, parentId);
      }
      messages.forEach((entry, index) => {
        const last = index === messages.length - 1;
        const message = entry.message as AgentMessage | undefined;
        if (message?.role === "toolResult") {
          const result = message as ToolResultMessage;
          const call = answeredCall(places, result.toolCallId, parentId, shown);
          if (call !== undefined) entry.message = { ...result, toolCallId: call.id, toolName: call.name };
        }
        const stored = { ...entry, parentId, ...(last ? { line } : {}) };
        out.push(stored as EntryInput);
        noteEntry(places, stored);
        parentId = entry.id as string;
      });
      last = parentId as string;
    } else {
      const id = typeof line.uuid === "string" && isValidId(line.uuid) ? line.uuid : newId();
      const stored = { type: "custom", id, parentId, customType: `${PREFIX}${line.type}`, data: line };
      out.push(stored as EntryInput);
      noteEntry(places, stored);
      last = id;
    }
    noteGroups(places, line, out.slice(first) as Record<string, unknown>[]);
    if (typeof line.uuid === "string") places.entryOf.set(line.uuid, last);
    if (isMain(line)) places.head = last;
  }
  return out;
}
