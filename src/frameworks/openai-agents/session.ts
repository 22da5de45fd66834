import type { AgentInputItem, Session as AgentsSession } from "@openai/agents-core";
import type {
  AgentMessage,
  EntryInput,
  ModelRef,
  Session,
  SessionRepo,
  StoredEntry,
  TreeEntry,
} from "../../core";
import { newId, SessionError } from "../../core";
import { checkSessionId } from "../../core/ids";
import { repeatCompaction, rewindTo } from "../../core/rewind";
import type { Piece } from "../conversation";
import { keepOriginal } from "../conversation";
import { SessionHandles } from "../session-handles";
import {
  checkItems,
  FRAMEWORK,
  itemEntries,
  itemPieces,
  messageItems,
  pieceItems,
  readMessages,
  withoutLastItem,
} from "./items";

export interface CfSessionsSessionOptions {
  /** Where the conversation is kept: a `RemoteRepo` (the service) or any of the library's repos. */
  repo: SessionRepo;
  /**
   * The session to keep the items in (our id syntax): one this adapter made, or any other, whoever
   * wrote it; a new session when absent.
   */
  sessionId?: string;
  /** The model the agent talks to, recorded on its replies (default: OpenAI, the model unnamed). */
  model?: ModelRef;
}

/** The conversation on the current branch: its items, and the entries each came from. */
interface History {
  items: AgentInputItem[];
  /** Per item, the index of the piece of the context that holds it. */
  holders: number[];
  pieces: ReturnType<typeof itemPieces>;
  branch: StoredEntry<TreeEntry>[];
  leafId: string | null;
}

/** How many entries back from the head a result's call is looked for. */
const TURN_READS = 64;

/** Whether a function result in `items` answers a call made before them (the SDK saves a turn in parts). */
function answersEarlierCalls(items: readonly AgentInputItem[]): boolean {
  const calls = new Set<string>();
  for (const item of items) {
    if (item.type === "function_call") calls.add(item.callId);
    else if (item.type === "function_call_result" && !calls.has(item.callId)) return true;
  }
  return false;
}

/**
 * The branch's last turn, read from the head back a few entries: the assistant message whose calls
 * results added next answer (stored as `call_id|item_id`) and the results it has. Nothing past a
 * user message, a compaction (its kept messages are the turn) or `TURN_READS` entries.
 */
async function lastTurn(session: Session): Promise<AgentMessage[]> {
  const turn: AgentMessage[] = [];
  let id = await session.getLeafId();
  for (let read = 0; id !== null && read < TURN_READS; read++) {
    const entry = await session.getEntry(id);
    if (entry === undefined || entry.type === "leaf") break;
    if (entry.type === "compaction") return [...(entry.retainedTail ?? []), ...turn];
    if (entry.type === "branch_summary" || entry.type === "custom_message") break;
    if (entry.type === "message") {
      turn.unshift(entry.message);
      if (entry.message.role === "assistant" || entry.message.role === "user") break;
    }
    id = entry.parentId;
  }
  return turn;
}

/** The summary other doors read for a compaction of the SDK's. */
const COMPACTED =
  "Earlier turns of this conversation were compacted by the OpenAI Agents SDK; what it kept of them follows.";

/**
 * An OpenAI Agents SDK session over cf-sessions: the conversation is the session's current branch,
 * each run of items the messages it stands for (user, assistant with its reasoning and calls,
 * tool results), the items kept beside them exactly. `addItems` is one append; `popItem` and
 * `clearSession` move the head back (the tree keeps what they removed, as a branch), and
 * `replaceHistoryWithCompaction` appends a `compaction` entry keeping the replacement. Any
 * session reads as items, whoever wrote it.
 */
export class CfSessionsSession implements AgentsSession {
  readonly #handles: SessionHandles;
  readonly #id: string;
  readonly #model: ModelRef | undefined;

  constructor(options: CfSessionsSessionOptions) {
    this.#handles = new SessionHandles(options.repo);
    this.#id = options.sessionId === undefined ? newId() : checkSessionId(options.sessionId);
    this.#model = options.model;
  }

  #write<T>(write: (session: Session) => Promise<T>): Promise<T> {
    return this.#handles.write({ id: this.#id, metadata: { openaiAgents: true } }, write);
  }

  /** The session, or undefined while nothing was written to it. */
  #session(): Promise<Session | undefined> {
    return this.#handles.find(this.#id);
  }

  async getSessionId(): Promise<string> {
    await this.#write(async () => undefined);
    return this.#id;
  }

  async #history(session: Session): Promise<History> {
    const branch = await session.getBranch();
    const pieces = itemPieces(branch);
    const history: History = { items: [], holders: [], pieces, branch, leafId: branch.at(-1)?.id ?? null };
    pieces.forEach((piece, index) => {
      for (const item of pieceItems(piece)) {
        history.items.push(item);
        history.holders.push(index);
      }
    });
    return history;
  }

  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && !Number.isInteger(limit)) {
      throw new SessionError("invalid_request", "limit must be an integer");
    }
    const session = await this.#session();
    if (!session || (limit !== undefined && limit <= 0)) return [];
    const { items } = await this.#history(session);
    return limit === undefined ? items : items.slice(Math.max(0, items.length - limit));
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    const checked = checkItems(items);
    if (checked.length === 0) return;
    await this.#write(async (session) => {
      const history = answersEarlierCalls(checked) ? await lastTurn(session) : [];
      await session.appendEntries(itemEntries(checked, this.#model, history));
    });
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    const session = await this.#session();
    if (!session) return undefined;
    const { items, holders, pieces, branch, leafId } = await this.#history(session);
    const item = items.at(-1);
    const piece = pieces[holders.at(-1) ?? -1];
    const first = piece?.entries[0];
    if (item === undefined || piece === undefined || first === undefined) return undefined;
    const kept = items.filter((_, index) => holders[index] === holders.at(-1)).slice(0, -1);
    if (first.type === "compaction") {
      // The last item is one a compaction kept: a compaction with its summary keeps the others.
      // The SDK's own compaction is always written again: its items, not only their messages, are
      // what it keeps (an item of no message, its opaque summary say, leaves the messages as they were).
      const { retainedTail, records } = piece.records
        ? { retainedTail: readMessages(kept, this.#model), records: kept }
        : tailWithoutLastItem(piece);
      const rewind = piece.records
        ? repeatCompaction(first, first.parentId, { retainedTail })
        : rewindTo(branch, { entryId: first.id, retainedTail });
      const entries = records ? keepOriginal(rewind.entries, FRAMEWORK, records) : rewind.entries;
      await this.#goOn(session, rewind.parentId, entries, leafId);
      return item;
    }
    let after: EntryInput[] = [];
    if (piece.records === undefined && shownAsWritten(piece)) {
      // Another door's message, shown as written: it goes on without the item's block, as it was
      // otherwise, or is left behind when the item is all it stands for.
      const rest = first.type === "message" ? withoutLastItem(first.message) : undefined;
      if (rest) after = [{ type: "message", message: rest }];
    } else if (kept.length > 0) {
      // The item shares its records with others (a reply's reasoning and calls): they go on alone.
      after = itemEntries(kept, this.#model);
    }
    // Back to where the item's entries began, the latest compaction kept on the branch.
    const rewind = rewindTo(branch, { entryId: first.parentId });
    const [head, ...rest] = after;
    const chained = head ? [{ ...head, parentId: rewind.parentId } as EntryInput, ...rest] : [];
    await this.#goOn(session, rewind.parentId, [...rewind.entries, ...chained], leafId);
    return item;
  }

  /** Appends `entries`, or with none moves the head to `parentId`, if the head is still `expectedLeafId`. */
  async #goOn(
    session: Session,
    parentId: string | null,
    entries: EntryInput[],
    expectedLeafId: string | null,
  ): Promise<void> {
    if (entries.length === 0) await session.setLeafId(parentId, { expectedLeafId });
    else await session.appendEntries(entries, { expectedLeafId });
  }

  async clearSession(): Promise<void> {
    const session = await this.#session();
    if (session) await session.setLeafId(null);
  }

  async replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
    const checked = checkItems(items);
    await this.#write(async (session) => {
      const history = await this.#history(session);
      const tokensBefore = Math.ceil(JSON.stringify(history.items).length / 4);
      await this.#compaction(session, checked, history.leafId, tokensBefore);
    });
  }

  /**
   * Appends a compaction whose context is `items`: their messages retained, the items kept beside.
   * The SDK's summary, if it made one, is an item only its model reads: other doors are told that
   * what follows is what was kept of earlier turns, and nothing more.
   */
  async #compaction(
    session: Session,
    items: AgentInputItem[],
    expectedLeafId: string | null,
    tokensBefore: number,
  ): Promise<void> {
    const retainedTail = readMessages(items, this.#model);
    const compaction: EntryInput = {
      type: "compaction",
      summary: COMPACTED,
      tokensBefore,
      retainedTail,
      fromHook: true,
    };
    await session.appendEntries(keepOriginal([compaction], FRAMEWORK, items), { expectedLeafId });
  }
}

/**
 * What a compaction's piece of another door keeps without the last item it shows: its retained
 * tail without that item's block (`withoutLastItem`); when that item is the summary, no tail, and
 * no items shown for it (`records` empty).
 */
function tailWithoutLastItem(piece: Piece): { retainedTail: AgentMessage[]; records?: unknown[] } {
  const messages = piece.messages;
  const lead = messages.findIndex((message) => message.role === "compactionSummary") + 1;
  const last = messages.findLastIndex((message) => messageItems(message).length > 0);
  if (last < lead) return { retainedTail: [], records: [] };
  const rest = withoutLastItem(messages[last] as AgentMessage);
  return { retainedTail: [...messages.slice(lead, last), ...(rest ? [rest] : [])] };
}

/**
 * Whether a piece of another door is one message entry that the items show as it was written: not
 * changed by a context edit (results added before it for calls gone past are not its own).
 */
function shownAsWritten(piece: Piece): boolean {
  const [entry, ...others] = piece.entries;
  return (
    entry?.type === "message" &&
    others.length === 0 &&
    JSON.stringify(piece.messages.at(-1)) === JSON.stringify(entry.message)
  );
}
