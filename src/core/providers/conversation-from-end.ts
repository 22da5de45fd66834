import type { ModelRef } from "../context";
import { isSystemMessageEntry, keptFrom, modelSetBy, projectEntries } from "../context";
import type { CompactionEntry, ContextEditEntry, TreeEntry } from "../entries";
import { langGraphMessagesHeld } from "../framework-custom-messages";
import type { AgentMessage } from "../messages";
import { LastTurnStart } from "./last-turn";
import type { Conversation } from "./provider-entries";

/*
 * The conversation at the end of a path, read from its end a few entries at a time, for storages
 * that keep a path's entries out of memory: it costs what the context's last turn and the path's
 * latest model cost, not the path's length. It is the conversation `conversationOf` gives for the
 * whole path, cut to its last turn. Read backwards, every context edit comes before its target
 * (an edit names an earlier entry), the first compaction is the latest and the first LangGraph
 * checkpoint holding the messages channel decides whether the context starts at it.
 */

/** Entries read together, from the end of the path towards its root. */
const READ_BATCH = 16;

/** An entry of the path as an index knows it, without its payload. */
export interface PathStep {
  id: string;
  type: string;
}

/**
 * The conversation at the end of the path `steps` (root first): its last turn (all of its
 * messages when it starts at the beginning) and its model. `read` gives the entries at the
 * positions asked for, in that order; only the ones the answer depends on are asked for.
 */
export function conversationFromEnd(
  steps: readonly PathStep[],
  read: (positions: readonly number[]) => TreeEntry[],
): Conversation {
  const reader = new ReaderFromEnd(steps);
  for (let end = steps.length; end > 0 && !reader.done; end -= READ_BATCH) {
    const positions: number[] = [];
    for (let at = Math.max(0, end - READ_BATCH); at < end; at++) {
      if (reader.wants(at, (steps[at] as PathStep).type)) positions.push(at);
    }
    const entries = read(positions);
    for (let i = positions.length - 1; i >= 0; i--)
      reader.take(positions[i] as number, entries[i] as TreeEntry);
  }
  return reader.finish();
}

/** What reading a path backwards has learnt so far. */
class ReaderFromEnd {
  readonly #steps: readonly PathStep[];
  /** The path's model; undefined until an entry naming one (or the root) is reached. */
  #model: ModelRef | null | undefined;
  /** The context's last turn, once its start is found. */
  #turn: AgentMessage[] | undefined;
  readonly #turnStart = new LastTurnStart();
  /** The messages read after the last turn's start is known to lie earlier, latest last. */
  readonly #pieces: AgentMessage[][] = [];
  /** The first position of the path the context holds: 0 until a compaction or checkpoint says. */
  #contextFrom = 0;
  #compaction: CompactionEntry | undefined;
  /** Undefined until the latest checkpoint holding the messages channel is read; null for none. */
  #checkpointId: string | null | undefined;
  readonly #edits = new Map<string, ContextEditEntry>();

  constructor(steps: readonly PathStep[]) {
    this.#steps = steps;
  }

  get done(): boolean {
    return this.#turn !== undefined && this.#model !== undefined;
  }

  /** Whether the entry at `at`, of type `type`, can change the answer. */
  wants(at: number, type: string): boolean {
    if (this.#turn === undefined && at >= this.#contextFrom) return true;
    return this.#model === undefined && (type === "model_change" || type === "message");
  }

  take(at: number, entry: TreeEntry): void {
    // The model of the nearest entry that sets one (`modelSetBy`: a reply naming none does not).
    if (this.#model === undefined) this.#model = modelSetBy(entry);
    if (this.#turn !== undefined || at < this.#contextFrom) return;
    this.#inContext(at, entry);
    if (at <= this.#contextFrom) this.#contextStart();
  }

  finish(): Conversation {
    if (this.#turn === undefined) this.#contextStart();
    return { messages: this.#turn ?? [], model: this.#model ?? null };
  }

  #inContext(at: number, entry: TreeEntry): void {
    if (this.#compaction === undefined && entry.type === "compaction") {
      // It opens the context, and keeps the entries from its first kept one (see `keptFrom`).
      this.#compaction = entry;
      this.#contextFrom = keptFrom(
        this.#steps.map((step) => step.id),
        at,
        entry,
      );
      return;
    }
    // The compaction carries the prompt the kept part's system messages replay to (pi 1.6).
    if (this.#compaction !== undefined && isSystemMessageEntry(entry)) return;
    if (entry.type === "context_edit" && !this.#edits.has(entry.targetId))
      this.#edits.set(entry.targetId, entry);
    if (this.#checkpointId === undefined) {
      const held = langGraphMessagesHeld(entry);
      if (held === "value") {
        // The checkpoint's messages stand for everything before it, the compaction included.
        this.#checkpointId = entry.id;
        this.#compaction = undefined;
        this.#contextFrom = at;
      } else if (held === "changes") this.#checkpointId = null;
    }
    this.#add(this.#project(entry));
  }

  /** The context's first messages are reached: the compaction's, when one opens it. */
  #contextStart(): void {
    if (this.#compaction) this.#add(this.#project(this.#compaction));
    this.#turn ??= this.#pieces.flat();
  }

  #project(entry: TreeEntry): AgentMessage[] {
    return projectEntries([entry], this.#compaction?.id, {
      edits: this.#edits,
      checkpointId: this.#checkpointId ?? null,
    });
  }

  #add(messages: AgentMessage[]): void {
    if (this.#turn !== undefined) return;
    const start = this.#turnStart.find(messages);
    if (start === undefined) this.#pieces.unshift(messages);
    else this.#turn = [...messages.slice(start), ...this.#pieces.flat()];
  }
}
