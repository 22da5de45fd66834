import type { AgentInputItem, Session as AgentsSession } from "@openai/agents-core";
import type { Session, SessionRepo, StoredEntry } from "../../core";
import { newId, SessionError } from "../../core";
import { checkSessionId } from "../../core/internal";
import { SessionHandles } from "../session-handles";
import { COMPACTION, checkItems, compactedItems, itemEntry, itemOf } from "./items";

export interface CfSessionsSessionOptions {
  /** Where the conversation is kept: a `RemoteRepo` (the service) or any of the library's repos. */
  repo: SessionRepo;
  /** The session to keep the items in (our id syntax); a new session when absent. */
  sessionId?: string;
}

/** The conversation on the current branch: its items, and the entries they came from. */
interface History {
  items: AgentInputItem[];
  /** Per item, the entry holding it (a compaction holds several). */
  holders: StoredEntry[];
  leafId: string | null;
}

/**
 * An OpenAI Agents SDK session over cf-sessions: the conversation is the session's current branch,
 * each item a `custom_message` entry holding it exactly. `addItems` is one append; `popItem` and
 * `clearSession` move the head back (the tree keeps what they removed, as a branch), and
 * `replaceHistoryWithCompaction` appends our `compaction` entry, so the tree keeps what it replaced.
 */
export class CfSessionsSession implements AgentsSession {
  readonly #handles: SessionHandles;
  readonly #id: string;

  constructor(options: CfSessionsSessionOptions) {
    this.#handles = new SessionHandles(options.repo);
    this.#id = options.sessionId === undefined ? newId() : checkSessionId(options.sessionId);
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
    const history: History = { items: [], holders: [], leafId: branch.at(-1)?.id ?? null };
    for (const entry of branch) {
      const replaced = compactedItems(entry);
      if (replaced) {
        history.items = [...replaced];
        history.holders = replaced.map(() => entry);
        continue;
      }
      const item = itemOf(entry);
      if (item) {
        history.items.push(item);
        history.holders.push(entry);
      }
    }
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
    await this.#write((session) => session.appendEntries(checked.map(itemEntry)));
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    const session = await this.#session();
    if (!session) return undefined;
    const { items, holders, leafId } = await this.#history(session);
    const item = items.at(-1);
    const holder = holders.at(-1);
    if (item === undefined || holder === undefined) return undefined;
    if (holder.type === "compaction") {
      // The last item is one a compaction kept: a new compaction keeps the others.
      await this.#compaction(session, items.slice(0, -1), leafId, holder.tokensBefore);
    } else {
      await session.setLeafId(holder.parentId, { expectedLeafId: leafId });
    }
    return item;
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

  async #compaction(
    session: Session,
    items: AgentInputItem[],
    expectedLeafId: string | null,
    tokensBefore: number,
  ): Promise<void> {
    const summary = `The conversation before this point, replaced by ${items.length} item(s) of the OpenAI Agents SDK`;
    const compaction = { summary, tokensBefore, details: { customType: COMPACTION, items }, fromHook: true };
    await session.appendCompaction(compaction, { expectedLeafId });
  }
}
