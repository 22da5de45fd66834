import type { Line, PlacedLine } from "./agent-export";
import { conversation, lineTime } from "./agent-export";
import { isUuid, uuidFrom } from "./agent-ids";
import type { InputContent } from "./agent-log";
import { toolResultBlock } from "./claude-code-blocks";
import type { TranscriptIndex } from "./claude-code-own-lines";
import { latestCompaction } from "./context";
import type { TreeEntry } from "./entries";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "./messages";
import { ANTHROPIC_IMAGE_TYPES, imageTypeFor, unsupportedImageNote } from "./providers/image-types";
import { toModelMessage } from "./providers/pi-messages";
import { ANTHROPIC_IDS, AnsweredCallIds } from "./providers/tool-call-ids";
import type { Rewind, RewindPoint } from "./rewind";
import { rewindTo } from "./rewind";
import type { Session } from "./session";

/*
 * The lines a Claude Code transcript gets for what no line of the file it was made from holds
 * (written over HTTP, by pi, by another agent, or after the import): the lines Claude Code writes
 * for the conversation on a branch, each made from its entry so that the entry goes out as the
 * same line on every branch it is on.
 */

/** Fields every new line carries, and what makes the lines of messages. */
export class LineWriter {
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

  /** The stored id of the call this writer's lines show as `wireId` (as it is, for one they do not show). */
  storedCallId(wireId: string): string {
    return this.#callIds.storedOf(wireId);
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
 * `made`, when given, gets for each line whose uuid was made (`MadeLine`) the point just after it.
 */
async function* linesOf(
  path: TreeEntry[],
  index: TranscriptIndex,
  writer: LineWriter,
  sessionId: string,
  written: Set<string>,
  made?: Map<string, MadeLine>,
): AsyncGenerator<PlacedLine, string | null> {
  let parent: string | null = null;
  const latest = latestCompaction(path);
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
    // Where the latest compaction's retained tail starts: after its summary (a system message may lead).
    const tailFrom =
      entry.id === latest?.id ? messages.findIndex((m) => m.role === "compactionSummary") + 1 : 0;
    for (const [position, message] of messages.entries()) {
      if (message.role === "compactionSummary" && entry.type === "compaction") {
        const boundary = await uuidOf();
        made?.set(boundary, { entryId: entry.id, kept: false });
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
        made?.set(summary, { entryId: entry.id, kept: false });
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
      if (kept) made?.set(uuid, { entryId: entry.id, kept: true });
      else if (tailFrom > 0 && position >= tailFrom)
        made?.set(uuid, {
          entryId: entry.id,
          retainedTail: messages.slice(tailFrom, position + 1),
          kept: true,
        });
      else if (uuid !== entry.id) made?.set(uuid, { entryId: entry.id, kept: false });
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

/** What the lines `newLines` writes for a branch show under ids of their own. */
export interface BranchLines {
  /** The stored id of the call shown as `wireId`: one no line of the transcript holds goes out under an id Anthropic takes. */
  storedCallId(wireId: string): string;
  /**
   * Where a line Claude Code writes under the line `uuid` goes on, when that is a line the
   * transcript made a uuid for (`MadeLine`): under the entry it was written for, and for one
   * repeating what the branch's latest compaction kept after its summary (the user went back to
   * it), `rewindTo` the entry it repeats, so the summary stays. Undefined for any other uuid.
   */
  rewindAt(uuid: string): Rewind | undefined;
}

/**
 * A line whose uuid was made from its entry (its id is no UUID, or the entry has more lines than
 * one, or the line repeats what the latest compaction kept): the point just after it, and whether
 * it repeats what that compaction kept.
 */
interface MadeLine extends RewindPoint {
  kept: boolean;
}

/** The lines of the branch to `leafId` as `newLines` writes them (`BranchLines`). */
export async function branchLines(
  session: Session,
  leafId: string | null,
  index: TranscriptIndex,
): Promise<BranchLines> {
  const sessionId = (await session.getHeader()).id;
  const writer = new LineWriter({}, sessionId);
  const branch = (await session.getBranch(leafId)) as TreeEntry[];
  const places = new Map<string, () => Rewind>();
  /** Notes where a line under each line made for `path` goes on, lines noted first kept. */
  const note = async (path: TreeEntry[], writer: LineWriter) => {
    const made = new Map<string, MadeLine>();
    for await (const _line of linesOf(path, index, writer, sessionId, new Set(), made)) {
      // Each line's calls get their ids, and each line its uuid, as it is made.
    }
    for (const [uuid, { kept, ...point }] of made) {
      if (places.has(uuid)) continue;
      places.set(uuid, () => (kept ? rewindTo(path, point) : { parentId: point.entryId, entries: [] }));
    }
  };
  await note(branch, writer);
  // The other branches' lines the transcript shows, for what its own lines hang from.
  const onBranch = new Set(branch.map((entry) => entry.id));
  for (const tip of index.unheldParents()) {
    if (!onBranch.has(tip))
      await note((await session.getBranch(tip)) as TreeEntry[], new LineWriter({}, sessionId));
  }
  return {
    storedCallId: (wireId) => writer.storedCallId(wireId),
    rewindAt: (uuid) => places.get(uuid)?.(),
  };
}

/**
 * Lines for what no line of the transcript holds: the conversation on the current branch, and on
 * every other branch what a line of the transcript hangs from, so each line's parent is written
 * before it. Each branch's lines are the ones it gets as the current branch. `head.line` becomes
 * the uuid of the head's last line.
 */
export async function* newLines(
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
    for await (const line of linesOf(path, index, writer(), sessionId, written)) others.push(line);
  }
  // Stable: each branch's lines stay in order, and a line follows those of its place written first.
  others.sort((a, b) => a.at - b.at);
  let next = 0;
  const lines = linesOf(branch, index, writer(), sessionId, new Set());
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
