import type {
  AgentMessage,
  AssistantMessage,
  EntryInput,
  StoredEntry,
  ToolCall,
  ToolResultMessage,
  TreeEntry,
} from "../core";
import { projectContext } from "../core/context";
import { latestEdits } from "../core/context-edits";
import { NO_RESULT_TEXT } from "../core/providers/normalize";
import { toModelMessage } from "../core/providers/pi-messages";
import { callIdPart } from "../core/providers/tool-call-ids";

/*
 * What the adapters share. A framework's records become first-class entries (messages, tool
 * calls and results, compactions) through the core's readers, and the last entry a record (or a
 * run of them) became keeps it exactly, beside the entry, in `original`, so the framework reads
 * it back deep-equal. Any session, whoever wrote it, reads back as the pieces of its context: a
 * framework's own records where entries it wrote are in the context as they were written, and
 * otherwise the messages each entry contributes, for the adapter to turn into its records.
 */

/** What a framework gave, kept on the last of the entries it became. */
export interface Original {
  /** The adapter that wrote it: `openai-agents`, `ai-sdk`, `langgraph`. */
  framework: string;
  /** The framework's records, exactly as given. */
  records: unknown[];
  /** How many entries, chained and ending with this one, the records became. */
  entries: number;
}

/** `entries` (a chain) with the records they stand for kept on the last of them. */
export function keepOriginal<E extends EntryInput>(
  entries: readonly E[],
  framework: string,
  records: unknown[],
): E[] {
  const original: Original = { framework, records, entries: entries.length };
  return entries.map((entry, index) => (index === entries.length - 1 ? { ...entry, original } : entry));
}

export function originalOf(entry: TreeEntry, framework: string): Original | undefined {
  const original = (entry as { original?: Partial<Original> }).original;
  return original?.framework === framework && Array.isArray(original.records)
    ? { framework, records: original.records, entries: Math.max(1, Number(original.entries) || 1) }
    : undefined;
}

/** A part of a session's context: entries in context order, with the framework's records or their messages. */
export interface Piece {
  entries: StoredEntry<TreeEntry>[];
  /** The messages these entries contribute to the context. */
  messages: AgentMessage[];
  /** The framework's own records, where it wrote these entries and the context holds them as written. */
  records?: unknown[];
}

/**
 * The context of `path` (a branch, root first) as pieces, in order: runs of entries `framework`
 * wrote, holding their records, and each other entry with its messages. `recordsOf` names the
 * records an entry holds in a shape of its own (a custom entry, a session written by an earlier
 * release). A context edit on an entry, or a compaction that kept only part of a run, makes its
 * entries read as their messages.
 */
export function conversationPieces(
  path: readonly StoredEntry<TreeEntry>[],
  framework: string,
  recordsOf: (entry: StoredEntry<TreeEntry>) => unknown[] | undefined = () => undefined,
): Piece[] {
  const projected = projectContext(path);
  const edits = latestEdits(projected.map(({ entry }) => entry));
  const pieces: Piece[] = [];
  for (const { entry, messages } of projected) {
    const stored = entry as StoredEntry<TreeEntry>;
    const edited = edits.has(entry.id);
    const own = edited ? undefined : recordsOf(stored);
    if (own) {
      pieces.push({ entries: [stored], messages, records: own });
      continue;
    }
    const original = edited ? undefined : originalOf(entry, framework);
    const before = original ? pieces.slice(pieces.length - (original.entries - 1)) : [];
    const whole =
      original !== undefined &&
      before.length === original.entries - 1 &&
      [...before.map((piece) => piece.entries[0]), stored].every(
        (link, index, chain) =>
          link !== undefined &&
          !edits.has(link.id) &&
          (index === 0 || link.parentId === chain[index - 1]?.id),
      ) &&
      before.every((piece) => piece.entries.length === 1 && piece.records === undefined);
    if (!original || !whole) {
      pieces.push({ entries: [stored], messages });
      continue;
    }
    pieces.splice(pieces.length - before.length);
    pieces.push({
      entries: [...before.flatMap((piece) => piece.entries), stored],
      messages: [...before.flatMap((piece) => piece.messages), ...messages],
      records: original.records,
    });
  }
  return pieces;
}

/** The id of one of the messages an entry contributes to a context: its entry's, and which of them it is. */
export function messageIdOf(entryId: string, index: number): string {
  return index === 0 ? entryId : `${entryId}:${index}`;
}

/** Whether an assistant's reply was cut short or failed: not an answer a model goes on from. */
export function isIncomplete(message: AgentMessage): boolean {
  const reply = message as AssistantMessage;
  return reply.role === "assistant" && (reply.stopReason === "error" || reply.stopReason === "aborted");
}

/** The error result a tool call gets when the conversation went on without its own. */
function noResult(call: ToolCall): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: "text", text: NO_RESULT_TEXT }],
    isError: true,
    timestamp: 0,
  };
}

/**
 * Whether `result` answers `call`: it names its id, or only the `call_id` of a pi-ai Responses id
 * (`call_id|item_id`), as an API's own tool output and a framework sent that part write it.
 */
function answers(result: ToolResultMessage, call: ToolCall): boolean {
  return call.id === result.toolCallId || callIdPart(call.id) === result.toolCallId;
}

/** The tool calls of the assistant turn last read, and which of them have their results. */
interface OpenTurn {
  calls: ToolCall[];
  answered: Set<string>;
  /** Whether a result came: an assistant message after it is a new turn. */
  resulted: boolean;
  /**
   * The piece of `paired` a missing result goes at the end of; none for a framework's records (see
   * `answerRecordCalls`).
   */
  at: number | undefined;
}

/**
 * The pieces with tool calls and results paired as every context a model is sent pairs them: a
 * result whose call is not waiting (its reply was left out, or it was answered already) is left
 * out, and a call the conversation went on from without its result (a user message came, or the
 * next turn) gets an error result "No result provided" after the results it got. Calls at the end
 * of the branch stay open: the framework's next step runs them. With `leaveOutIncomplete`, a reply
 * cut short or failed is left out with its calls (the model goes on from the last whole answer).
 * A framework's own records are kept as they were written; their messages say only which calls
 * they make and answer. With `answerRecordCalls`, a call in them that another piece goes on from
 * gets its error result in that piece, before the message that goes on (for a framework that names
 * no message by its place in a piece, so an added result moves no name).
 */
export function pairedPieces(
  pieces: readonly Piece[],
  leaveOutIncomplete: boolean,
  answerRecordCalls = false,
): Piece[] {
  const paired: Piece[] = [];
  let turn: OpenTurn | undefined;
  for (const piece of pieces) {
    const own = piece.records !== undefined;
    const at = own ? undefined : paired.length;
    const messages: AgentMessage[] = [];
    const close = () => {
      const missing = turn?.calls.filter((call) => !turn?.answered.has(call.id)) ?? [];
      if (turn?.at === at || (turn?.at === undefined && answerRecordCalls)) {
        messages.push(...missing.map(noResult));
      } else if (turn?.at !== undefined) paired[turn.at]?.messages.push(...missing.map(noResult));
      turn = undefined;
    };
    for (const message of piece.messages) {
      if (message.role === "toolResult") {
        const result = message as ToolResultMessage;
        const call = turn?.calls.find((call) => answers(result, call) && !turn?.answered.has(call.id));
        if (turn && call) {
          turn.answered.add(call.id);
          turn.resulted = true;
          if (!own) turn.at = at;
        }
        if (own || call) messages.push(message);
        continue;
      }
      if (message.role === "assistant") {
        if (!own && leaveOutIncomplete && isIncomplete(message)) continue;
        if (turn?.resulted) close();
        const calls = (message as AssistantMessage).content.filter((block) => block.type === "toolCall");
        // Assistant messages with nothing between them are one turn (a framework that kept each
        // output item apart).
        if (turn) {
          turn.calls.push(...calls);
          if (!own) turn.at = at;
        } else if (calls.length > 0) turn = { calls, answered: new Set(), resulted: false, at };
        messages.push(message);
        continue;
      }
      if (toModelMessage(message)?.role === "user") close();
      messages.push(message);
    }
    paired.push(own ? piece : { ...piece, messages });
  }
  return paired;
}
