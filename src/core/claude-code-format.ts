import type { InputContent, LogLine } from "./agent-log";
import {
  agentSession,
  asString,
  count,
  derivedSessionId,
  entryTimestamp,
  isRecord,
  readLogLines,
  thinkingLevel,
  without,
} from "./agent-log";
import {
  assistantBlock,
  heldBlock,
  isToolResultBlock,
  toolResultBlock,
  userBlock,
} from "./claude-code-blocks";
import { CallGroups } from "./claude-code-call-groups";
import { isHeadNote } from "./claude-code-resume";
import type { CompactionEntry, MessageEntry, SessionEntry } from "./entries";
import type { ImportedSession, ImportWarning, ParseOptions } from "./interchange";
import type { AssistantMessage, ThinkingLevel, ToolResultMessage } from "./messages";
import { blockText } from "./messages";
import { lineError } from "./ndjson";
import {
  anthropicAssistantBlock,
  anthropicStopReason,
  anthropicUsage,
  anthropicUserBlock,
} from "./providers/from-anthropic";
import { hasToolCall, toolResultMessage } from "./providers/incoming";
import { keptItem } from "./source-lines";

/*
 * Claude Code sessions (`~/.claude/projects/<project>/<session>.jsonl`): one JSON line per event,
 * a tree by `uuid`/`parentUuid`. Claude Code writes each streamed content block of an API message
 * as its own line; those lines become one assistant message, also across lines that are no
 * messages (hook progress) written between them. Lines that are not messages are kept as `custom`
 * entries (`customType` "claude-code:<type>", the line as `data`), and every entry made from lines
 * keeps what it does not hold of them in `sourceLines` (see source-lines.ts), so nothing is lost
 * and the export writes the file back as it was.
 *
 * Parallel tool calls: Claude Code hangs each result from the line of its own call and recovers
 * them when it reads the file again; here they hang as `CallGroups` says, so the context holds
 * every call's result. Read with `linesApart`, the lines of one API message stay entries of their
 * own, a group named by its first.
 */

const PREFIX = "claude-code";
/** Where custom entries written before any message are spliced: no entry id can be this. */
const ROOT = "\u0000root";

interface State {
  model: string | undefined;
  thinking: ThinkingLevel;
}

class ClaudeCodeReader {
  readonly entries: SessionEntry[] = [];
  readonly lines: number[] = [];
  readonly warnings: ImportWarning[];
  /** The entry a line's children hang from, by the line's uuid. */
  readonly #entryOf = new Map<string, string>();
  /** Custom entries spliced under an entry (or the root): children of the entry hang from them. */
  readonly #spliced = new Map<string, string>();
  readonly #state = new Map<string, State>();
  /** The entry of each API message's first line, by entry id: further blocks merge into it. */
  readonly #replies = new Map<string, MessageEntry>();
  readonly #toolNames = new Map<string, string>();
  readonly #groups = new CallGroups();
  readonly #uuids: Set<string>;
  readonly #subagent: boolean;
  readonly #linesApart: boolean;
  #head: string | null = null;
  #timestamp: string;

  constructor(
    lines: LogLine[],
    warnings: ImportWarning[],
    subagent: boolean,
    createdAt: string,
    linesApart: boolean,
  ) {
    this.warnings = warnings;
    this.#subagent = subagent;
    this.#linesApart = linesApart;
    this.#timestamp = createdAt;
    this.#uuids = new Set(lines.map((l) => l.value.uuid).filter((u): u is string => typeof u === "string"));
  }

  get leafId(): string | null {
    return this.#head;
  }

  read(line: LogLine): void {
    const value = line.value;
    this.#timestamp = entryTimestamp(value.timestamp, this.#timestamp);
    const uuid = asString(value.uuid);
    if (uuid !== undefined && this.#entryOf.has(uuid)) {
      this.warnings.push({
        line: line.line,
        message: `uuid ${uuid} already seen; the line is kept as a custom entry`,
      });
      this.#splice(line, "duplicate");
      return;
    }
    if (
      uuid !== undefined &&
      (value.type === "user" || value.type === "assistant") &&
      isRecord(value.message)
    ) {
      if (value.type === "assistant") this.#assistant(line, uuid);
      else if (value.isCompactSummary === true) this.#compactSummary(line, uuid);
      else this.#user(line, uuid);
    } else if (uuid !== undefined && value.type === "system" && value.subtype === "compact_boundary") {
      this.#compactBoundary(line, uuid);
    } else if (uuid !== undefined && isHeadNote(value) && this.#headNote(value, uuid)) {
      return;
    } else if (uuid !== undefined) {
      const parentId = this.#parent(line, value.parentUuid);
      this.#push(line, {
        type: "custom",
        id: uuid,
        parentId,
        customType: `${PREFIX}:${String(value.type)}`,
        data: value,
        sourceLineNumbers: [line.line],
      });
      this.#entryOf.set(uuid, uuid);
      if (this.#main(value) && parentId !== null && parentId === this.#head) this.#head = uuid;
    } else {
      this.#splice(line, String(value.type));
    }
  }

  /**
   * The note an export writes under the session's head when it is not where Claude Code would
   * resume: the head, no entry. False when it names no line read before.
   */
  #headNote(value: Record<string, unknown>, uuid: string): boolean {
    const at = typeof value.parentUuid === "string" ? this.#entryOf.get(value.parentUuid) : undefined;
    if (at === undefined) return false;
    this.#entryOf.set(uuid, at);
    if (this.#main(value)) this.#head = at;
    return true;
  }

  #main(value: Record<string, unknown>): boolean {
    return value.isSidechain !== true || this.#subagent;
  }

  /** A line that is no tree node: a custom entry at the head of the main chain. */
  #splice(line: LogLine, kind: string): void {
    const id = `l${line.line}`;
    const under = this.#head;
    this.#push(line, {
      type: "custom",
      id,
      parentId: under,
      customType: `${PREFIX}:${kind}`,
      data: line.value,
      sourceLineNumbers: [line.line],
    });
    this.#spliced.set(under ?? ROOT, id);
    this.#head = id;
  }

  /** The entry a line hangs from: its parent's, after any custom entries spliced there. */
  #parent(line: LogLine, parentUuid: unknown, main = this.#main(line.value)): string | null {
    let id: string | null;
    if (typeof parentUuid !== "string") id = null;
    else {
      id = this.#entryOf.get(parentUuid) ?? null;
      if (id === null) {
        const where = this.#uuids.has(parentUuid) ? "a later line" : "no line of the file";
        this.warnings.push({
          line: line.line,
          message: `parentUuid ${parentUuid} names ${where}; kept as a root`,
        });
        return null;
      }
    }
    if (id === null && !main) return null;
    let key = id === null ? ROOT : this.#groups.following(id);
    for (let next = this.#spliced.get(key); next !== undefined; next = this.#spliced.get(key)) key = next;
    return key === ROOT ? null : key;
  }

  #push(line: LogLine, entry: Record<string, unknown>): void {
    const full = { ...entry, timestamp: this.#timestamp } as SessionEntry & { parentId: string | null };
    const parentState = full.parentId === null ? undefined : this.#state.get(full.parentId);
    const state: State = { model: parentState?.model, thinking: parentState?.thinking ?? "off" };
    if (full.type === "model_change") state.model = full.modelId;
    if (full.type === "thinking_level_change") state.thinking = full.thinkingLevel;
    this.#state.set(full.id, state);
    this.#groups.noteEntry(full.id, full.parentId, full.type === "custom");
    this.entries.push(full);
    this.lines.push(line.line);
  }

  /**
   * Appends `entries` as a chain under `parentId`. The line's uuid names its first message (or
   * compaction, or custom entry); settings before it and further messages get ids made from it.
   * The line's children hang from the last.
   */
  #chain(line: LogLine, uuid: string, parentId: string | null, entries: Record<string, unknown>[]): string {
    let parent = parentId;
    let named = false;
    entries.forEach((entry, index) => {
      let id: string;
      if (entry.type === "model_change") id = `${uuid}:model`;
      else if (entry.type === "thinking_level_change") id = `${uuid}:thinking`;
      else if (!named) {
        id = uuid;
        named = true;
      } else id = `${uuid}:${index}`;
      this.#push(line, { ...entry, id, parentId: parent });
      parent = id;
    });
    this.#entryOf.set(uuid, parent as string);
    if (this.#main(line.value)) this.#head = parent;
    return parent as string;
  }

  #messageTimestamp(): number {
    return Date.parse(this.#timestamp);
  }

  #user(line: LogLine, uuid: string): void {
    const value = line.value;
    const message = value.message as Record<string, unknown>;
    const content = message.content;
    const parentId = this.#parent(line, value.parentUuid);
    const timestamp = this.#messageTimestamp();
    const entries: Record<string, unknown>[] = [];
    const results: ToolResultMessage[] = [];
    let userContent: string | InputContent[] | undefined;
    // The content as kept beside the entries: a hole for each block they hold.
    let kept: unknown[] = [];
    if (typeof content === "string") userContent = content;
    else if (Array.isArray(content)) {
      const parts: InputContent[] = [];
      kept = content.map((block) => {
        if (isToolResultBlock(block)) {
          const result = this.#toolResult(block, timestamp);
          results.push(result);
          return heldBlock(block, toolResultBlock(result), ["tool_use_id"]);
        }
        const part = anthropicUserBlock(block);
        if (!part) return keptItem(block);
        parts.push(part);
        return heldBlock(block as Record<string, unknown>, userBlock(part));
      });
      if (parts.length > 0) userContent = parts;
    }
    const details = results.length === 1 && "toolUseResult" in value ? value.toolUseResult : undefined;
    if (details !== undefined) (results[0] as ToolResultMessage).details = details;
    for (const result of results) entries.push({ type: "message", message: result });
    const level = isRecord(value.thinkingMetadata) ? thinkingLevel(value.thinkingMetadata.level) : undefined;
    if (userContent !== undefined) {
      if (level !== undefined && level !== this.#stateAt(parentId).thinking) {
        entries.push({ type: "thinking_level_change", thinkingLevel: level });
      }
      entries.push({ type: "message", message: { role: "user", content: userContent, timestamp } });
    }
    if (entries.length === 0) {
      this.#chain(line, uuid, parentId, [
        { type: "custom", customType: `${PREFIX}:user`, data: value, sourceLineNumbers: [line.line] },
      ]);
      return;
    }
    const rest = without(value, ...(details === undefined ? [] : ["toolUseResult"]));
    rest.message = Array.isArray(content) ? { ...message, content: kept } : without(message, "content");
    Object.assign(entries[0] as Record<string, unknown>, {
      sourceLines: [rest],
      sourceLineNumbers: [line.line],
    });
    const callId = results[0]?.toolCallId;
    if (callId === undefined) {
      this.#chain(line, uuid, parentId, entries);
      return;
    }
    const under = this.#groups.resultsParent(callId, parentId);
    const first = this.entries.length;
    this.#chain(line, uuid, under, entries);
    const ids = this.entries.slice(first).map((entry) => entry.id);
    this.#groups.noteResults(callId, under, ids);
  }

  /** A `tool_result` block as a result message (the line's `toolUseResult` is added by the caller). */
  #toolResult(block: Record<string, unknown>, timestamp: number): ToolResultMessage {
    const id = block.tool_use_id as string;
    const content: InputContent[] = [];
    if (typeof block.content === "string") content.push({ type: "text", text: block.content });
    else if (Array.isArray(block.content)) {
      for (const item of block.content) {
        const part = anthropicUserBlock(item);
        if (part) content.push(part);
      }
    }
    const toolName = this.#toolNames.get(id) ?? "unknown";
    return toolResultMessage(id, toolName, content, block.is_error === true, timestamp);
  }

  #stateAt(id: string | null): State {
    return (id === null ? undefined : this.#state.get(id)) ?? { model: undefined, thinking: "off" };
  }

  #assistant(line: LogLine, uuid: string): void {
    const value = line.value;
    const message = value.message as Record<string, unknown>;
    const blocks = Array.isArray(message.content) ? message.content : [];
    const parts: AssistantMessage["content"] = [];
    const kept = blocks.map((block) => {
      const part = anthropicAssistantBlock(block);
      if (!part) return keptItem(block);
      parts.push(part);
      if (part.type === "toolCall") this.#toolNames.set(part.id, part.name);
      return heldBlock(block as Record<string, unknown>, assistantBlock(part));
    });
    const rest = without(value);
    rest.message = Array.isArray(message.content) ? { ...message, content: kept } : message;

    // A further streamed block of the message its parent line belongs to.
    const apiId = asString(message.id);
    const parentUuid = asString(value.parentUuid);
    const above = parentUuid === undefined ? undefined : this.#entryOf.get(parentUuid);
    const openId = this.#groups.openMessage(apiId, above);
    const open = openId === undefined ? undefined : this.#replies.get(openId);
    const calls = parts.flatMap((part) => (part.type === "toolCall" ? [part.id] : []));
    if (open && !this.#linesApart) {
      const merged = open.message as AssistantMessage;
      merged.content.push(...parts);
      if (isRecord(message.usage)) merged.usage = anthropicUsage(message.usage);
      if (message.stop_reason != null || merged.stopReason !== "error") {
        merged.stopReason = anthropicStopReason(message.stop_reason, hasToolCall(merged.content)).stopReason;
      }
      markUnfinished(merged, value, blocks);
      (open.sourceLines as unknown[]).push(rest);
      (open.sourceLineNumbers as number[]).push(line.line);
      this.#entryOf.set(uuid, open.id);
      this.#groups.noteFurtherLine(open.id, calls);
      return;
    }

    const parentId = this.#parent(line, value.parentUuid);
    const model = asString(message.model);
    const entries: Record<string, unknown>[] = [];
    if (model !== undefined && model !== "<synthetic>" && model !== this.#stateAt(parentId).model) {
      entries.push({ type: "model_change", provider: "anthropic", modelId: model });
    }
    const assistant: AssistantMessage = {
      role: "assistant",
      content: parts,
      api: "anthropic-messages",
      provider: "anthropic",
      model: model ?? "unknown",
      usage: anthropicUsage(message.usage),
      stopReason: anthropicStopReason(message.stop_reason, hasToolCall(parts)).stopReason,
      timestamp: this.#messageTimestamp(),
    };
    markUnfinished(assistant, value, blocks);
    entries.push({
      type: "message",
      message: assistant,
      sourceLines: [rest],
      sourceLineNumbers: [line.line],
    });
    const last = this.#chain(line, uuid, parentId, entries);
    if (open) {
      // A further line of an API message read apart: the next result of the group hangs after it.
      this.#groups.noteFurtherLine(open.id, calls, last);
      return;
    }
    const entry = this.entries[this.entries.length - 1] as MessageEntry;
    this.#replies.set(entry.id, entry);
    this.#groups.noteMessage(entry.id, apiId, calls);
  }

  /** The boundary becomes the compaction (its summary follows on the next line). */
  #compactBoundary(line: LogLine, uuid: string): void {
    const value = line.value;
    const metadata = isRecord(value.compactMetadata) ? value.compactMetadata : {};
    // The boundary starts a new chain (parentUuid null); where it was written is its logical parent.
    const logical = asString(value.logicalParentUuid);
    const parentId =
      logical !== undefined && this.#entryOf.has(logical) ? this.#parent(line, logical) : this.#head;
    const preserved = isRecord(metadata.preservedSegment) ? metadata.preservedSegment : {};
    const head = asString(preserved.headUuid);
    const firstKept = head === undefined ? undefined : this.#entryOf.get(head);
    const compaction: Record<string, unknown> = {
      type: "compaction",
      summary: "",
      tokensBefore: count(metadata.preTokens),
      sourceLines: [value],
      sourceLineNumbers: [line.line],
    };
    if (firstKept !== undefined) compaction.firstKeptEntryId = firstKept;
    this.#chain(line, uuid, parentId, [compaction]);
  }

  /** The summary Claude Code continued from: the summary of the boundary it follows, or a compaction of its own. */
  #compactSummary(line: LogLine, uuid: string): void {
    const value = line.value;
    const message = value.message as Record<string, unknown>;
    const summary = blockText(message.content);
    const rest = without(value);
    // A summary written as text is the compaction's summary; written otherwise it is kept as it is.
    rest.message = typeof message.content === "string" ? without(message, "content") : message;
    const parentUuid = asString(value.parentUuid);
    const boundary = parentUuid === undefined ? undefined : this.#entryOf.get(parentUuid);
    const entry = this.entries.find((e) => e.id === boundary && e.type === "compaction") as
      | CompactionEntry
      | undefined;
    if (entry && entry.summary === "" && !this.#linesApart) {
      entry.summary = summary;
      (entry.sourceLines as unknown[]).push(rest);
      (entry.sourceLineNumbers as number[]).push(line.line);
      this.#entryOf.set(uuid, entry.id);
      return;
    }
    const compaction: Record<string, unknown> = {
      type: "compaction",
      summary,
      tokensBefore: 0,
      sourceLines: [rest],
      sourceLineNumbers: [line.line],
    };
    // Read apart from its boundary, the summary keeps what the boundary kept.
    if (entry?.firstKeptEntryId !== undefined) compaction.firstKeptEntryId = entry.firstKeptEntryId;
    this.#chain(line, uuid, this.#parent(line, value.parentUuid), [compaction]);
  }
}

/**
 * A reply Claude Code marked as no answer: `isApiErrorMessage` when its request failed (the error
 * in `errorDetails`, else the line's text), `isAbortedMidStream` when it was stopped while it
 * streamed.
 */
function markUnfinished(
  assistant: AssistantMessage,
  value: Record<string, unknown>,
  blocks: unknown[],
): void {
  const details = asString(value.errorDetails);
  if (value.isApiErrorMessage === true) {
    assistant.stopReason = "error";
    assistant.errorMessage = details ?? (blockText(blocks) || "API error");
  } else if (value.isAbortedMidStream === true) {
    assistant.stopReason = "aborted";
    if (details !== undefined) assistant.errorMessage = details;
  }
}

/** The value of the last line that has `key` as a string. */
function lastString(lines: LogLine[], key: string): { value: string; line: number } | undefined {
  const found = lines.findLast((line) => typeof line.value[key] === "string" && line.value[key] !== "");
  return found && { value: found.value[key] as string, line: found.line };
}

/**
 * A Claude Code session file as a session: id `claude-code-<sessionId>` (the last sessionId in the
 * file: a resumed conversation's file starts with lines copied from the one it continued); a
 * subagent's transcript (every message on a sidechain) is `claude-code-<sessionId>-agent-<agentId>`.
 */
export function parseClaudeCode(text: string, options: ParseOptions = {}): ImportedSession {
  const { lines, warnings } = readLogLines(text);
  const session = lastString(lines, "sessionId");
  if (!session) throw lineError(lines[0]?.line ?? 1, "no sessionId in the file: not a Claude Code session");
  const messages = lines.filter((l) => l.value.type === "user" || l.value.type === "assistant");
  const subagent = messages.length > 0 && messages.every((l) => l.value.isSidechain === true);
  let id = derivedSessionId(PREFIX, session.value, session.line);
  if (subagent) {
    const agent = lastString(lines, "agentId") ?? lastString(messages.slice(0, 1), "uuid");
    id = derivedSessionId(id, `agent-${agent?.value ?? "sidechain"}`, agent?.line ?? session.line);
  }
  const first = lines.find((l) => typeof l.value.timestamp === "string");
  const createdAt = entryTimestamp(first?.value.timestamp, new Date(0).toISOString());

  const reader = new ClaudeCodeReader(lines, warnings, subagent, createdAt, options.linesApart === true);
  for (const line of lines) reader.read(line);

  const uuids = new Set(lines.map((l) => l.value.uuid));
  const title = lastString(
    lines.filter((l) => l.value.type === "custom-title"),
    "customTitle",
  );
  const summary = lastString(
    lines.filter((l) => l.value.type === "summary" && uuids.has(l.value.leafUuid)),
    "summary",
  );
  const fields = {
    sessionId: session.value,
    agentId: subagent ? lastString(lines, "agentId")?.value : undefined,
    cwd: lastString(lines, "cwd")?.value,
    gitBranch: lastString(lines, "gitBranch")?.value,
    version: lastString(lines, "version")?.value,
  };
  const header = { id, createdAt, name: title ?? summary };
  return agentSession("claudeCode", header, fields, reader, reader.warnings);
}
