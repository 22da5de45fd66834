import type { PlannedWrite } from "../../core/append";
import type { ContextSettings } from "../../core/context";
import { deriveState, projectEntries } from "../../core/context";
import type { ContextEditEntry } from "../../core/entries";
import { langGraphMessagesHeld } from "../../core/framework-custom-messages";

/*
 * The context at the head, kept in memory while the head only grows. Agents build the context at
 * the head after every turn: kept, and grown entry by entry as appends arrive, it costs nothing to
 * rebuild. Contexts over CONTEXT_CACHE_CHARS are read from storage each time.
 */

/** Characters of projected messages kept in memory for the context at the head. */
const CONTEXT_CACHE_CHARS = 6 * 1024 * 1024;

export interface KeptContext {
  leafId: string;
  readonly compactionId: string | undefined;
  /** The LangGraph checkpoint whose messages value the context holds, if any. */
  readonly checkpointId: string | null;
  settings: ContextSettings;
  /** The context's edits: one written before its target (a hand-made file) applies to it when it arrives. */
  readonly edits: ReadonlyMap<string, ContextEditEntry>;
  /** Each message's JSON. */
  readonly pieces: string[];
  chars: number;
  /** `pieces` joined with commas, once asked for (the inside of the messages array). */
  joined: string | undefined;
}

/** How to build the head's context from storage: its settings and its messages page by page. */
export interface ContextSource {
  compactionId: string | undefined;
  checkpointId: string | null;
  settings: ContextSettings;
  edits: ReadonlyMap<string, ContextEditEntry>;
  pages: Iterable<string[]>;
}

export class HeadContext {
  #kept: KeptContext | undefined;
  /** A head whose context was found too large to keep (so it is not read twice each time). */
  #tooLarge: string | undefined;

  /** The kept context at `leafId`, built from `source` when missing; undefined when too large to keep. */
  get(leafId: string, source: () => ContextSource): KeptContext | undefined {
    if (this.#kept?.leafId === leafId) return this.#kept;
    if (this.#tooLarge === leafId) return undefined;
    const { compactionId, checkpointId, settings, edits, pages } = source();
    const pieces: string[] = [];
    let chars = 0;
    for (const page of pages) {
      for (const piece of page) {
        pieces.push(piece);
        chars += piece.length;
      }
      if (chars > CONTEXT_CACHE_CHARS) {
        this.#tooLarge = leafId;
        return undefined;
      }
    }
    this.#kept = { leafId, compactionId, checkpointId, settings, edits, pieces, chars, joined: undefined };
    return this.#kept;
  }

  /**
   * Keeps the context current after a write: entries appended under the head extend it; anything
   * else (a compaction, a context edit, which changes an earlier message, a LangGraph checkpoint
   * that decides anew which messages its value stands for, a branch, a move) drops it, to be
   * rebuilt when next asked.
   */
  follow(writes: readonly PlannedWrite[], leafId: string | null): void {
    const kept = this.#kept;
    if (!kept) return;
    for (const { entry } of writes) {
      if (entry.type === "leaf") {
        if (entry.targetId === kept.leafId) continue;
      } else if (
        entry.parentId === kept.leafId &&
        entry.type !== "compaction" &&
        entry.type !== "context_edit" &&
        !this.#replacesMessages(entry)
      ) {
        const projecting = { edits: kept.edits, checkpointId: null };
        for (const message of projectEntries([entry], kept.compactionId, projecting)) {
          const piece = JSON.stringify(message);
          kept.pieces.push(piece);
          kept.chars += piece.length;
        }
        kept.settings = deriveState([entry], kept.settings);
        kept.leafId = entry.id;
        kept.joined = undefined;
        continue;
      }
      this.#kept = undefined;
      return;
    }
    if (kept.leafId !== leafId || kept.chars > CONTEXT_CACHE_CHARS) this.#kept = undefined;
  }

  /** Whether an entry changes which messages a LangGraph checkpoint's value stands for in the kept context. */
  #replacesMessages(entry: PlannedWrite["entry"]): boolean {
    if (entry.type !== "custom") return false;
    const held = langGraphMessagesHeld(entry);
    return held === "value" || (held === "changes" && this.#kept?.checkpointId != null);
  }

  /** Forgets the kept context and what was known of its size (after a reset or a rollback). */
  drop(): void {
    this.#kept = undefined;
    this.#tooLarge = undefined;
  }
}
