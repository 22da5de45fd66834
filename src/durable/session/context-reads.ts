import type { ContextVersion } from "../../core/context-answer";
import {
  contextHead,
  fingerprint,
  formatContextVersion,
  parseContextVersion,
} from "../../core/context-answer";
import type { AgentMessage } from "../../core/messages";
import { LastTurnStart } from "../../core/providers/last-turn";
import type { Conversation } from "../../core/providers/provider-entries";
import { NO_CONVERSATION } from "../../core/providers/provider-entries";
import type { Node } from "./entry-rows";
import { CopyNeeded, readsAfterCopy } from "./entry-rows";
import type { KeptContext, StoreParts } from "./session-state";

/*
 * A session's contexts as the object answers them: a leaf's context as JSON text (the head's from
 * memory when kept, a delta when the caller's version only grew, else built from storage a page
 * at a time), its version, and what the append rules see of a conversation (its last turn and
 * model). Reads only; the head's kept context is grown by the writes.
 */

/**
 * A context answer as JSON text: whole (`text`, the head's kept context), or its head and its
 * messages a page at a time, read as they are pulled.
 */
export type ContextBody = {
  /** `full`: the whole context; `delta`: what was appended since the version asked about. */
  kind: "full" | "delta";
  /** Where it came from: the head's context kept in memory, read from storage, or a delta. */
  source: "kept" | "built" | "delta";
} & ({ text: string } | { head: string; pages: Iterable<string[]> });

export class ContextReads {
  readonly #parts: StoreParts;

  constructor(parts: StoreParts) {
    this.#parts = parts;
  }

  /**
   * The tree entry a context starts from. In a fork still copying its path, one without a row here
   * may be an entry of the part still to copy: the object learns of it first (`CopyNeeded`).
   */
  #node(id: string): Node {
    const { copy, rows, paths } = this.#parts;
    if (copy.copying && !rows.node(id) && copy.refOf(id) !== null) throw new CopyNeeded({ ids: [id] });
    return paths.treeNode(id);
  }

  /**
   * In a fork still copying its path, a context is read at once when everything it reads comes
   * after the part still to copy (see `PathReads.readsAfter`); else it waits for the copy.
   */
  #readable(leaf: Node | undefined, compacted: boolean): void {
    const next = this.#parts.copy.state?.next;
    if (next) readsAfterCopy(leaf ? this.#parts.paths.readsAfter(leaf, next, compacted) : false);
  }

  /** The version of a leaf's context (the head's when undefined): what its ETag names. */
  contextVersion(leafId?: string | null): string {
    return formatContextVersion(this.#version(this.#parts.row.start(leafId)).current);
  }

  #version(start: string | null): { current: ContextVersion; leaf: Node | undefined } {
    const { header, incarnation } = this.#parts.row.live();
    const leaf = start === null ? undefined : this.#node(start);
    const current: ContextVersion = {
      life: fingerprint(incarnation),
      leafSeq: leaf?.seq ?? 0,
      compactionSeq: leaf?.last_compaction ?? 0,
      prompt: fingerprint(header.systemPrompt ?? ""),
    };
    return { current, leaf };
  }

  /**
   * The context of a leaf (the head when undefined) as JSON text, in chunks read as they are
   * pulled, with its version. Given the version of a context read before (`since`), the answer is
   * only what was appended since when the context just grew; else the whole context with
   * `reset: true`. The first chunk is made at once, so a missing session or leaf fails here; the
   * head's whole context comes from memory when it is kept.
   */
  context(leafId?: string | null, since?: string): ContextBody {
    const { header, leafId: head } = this.#parts.row.live();
    const systemPrompt = header.systemPrompt ?? "";
    const start = this.#parts.row.start(leafId);
    const { current, leaf } = this.#version(start);
    this.#readable(leaf, true);
    const version = formatContextVersion(current);
    const previous = since === undefined ? undefined : parseContextVersion(since);
    // A fork still copying answers whole: whether an edit in the part still to copy reaches what
    // was appended is not known here.
    const copying = this.#parts.copy.copying;
    if (previous && !copying && previous.life === current.life && previous.prompt === current.prompt) {
      const delta = this.#delta(previous, leaf);
      if (delta) {
        const { settings } = leaf ? this.#parts.paths.settings(leaf) : this.#parts.paths.contextPlan(null);
        return {
          kind: "delta",
          source: "delta",
          head: contextHead(systemPrompt, settings, { version, since }, "append"),
          // A delta holds no edit, no entry an edit names and no checkpoint holding the messages
          // (see #delta): nothing to apply.
          pages: this.#parts.paths.projectedPages(delta.seqs, delta.compactionId, {
            edits: new Map(),
            checkpointId: null,
          }),
        };
      }
    }
    const extra = since === undefined ? { version } : { version, reset: true };
    if (start !== null && start === head) {
      const kept = this.#keptHead(start);
      if (kept) {
        kept.joined ??= kept.pieces.join(",");
        const text = `${contextHead(systemPrompt, kept.settings, extra, "messages")}[${kept.joined}]}`;
        return { kind: "full", source: "kept", text };
      }
    }
    const plan = this.#parts.paths.contextPlan(start);
    return {
      kind: "full",
      source: "built",
      head: contextHead(systemPrompt, plan.settings, extra, "messages"),
      pages: this.#parts.paths.messagePages(plan),
    };
  }

  /**
   * What the context of `leaf` adds to the one `previous` names, when it only grew: the same
   * compaction, the old leaf on the new one's path, and no context edit or LangGraph checkpoint
   * holding the messages reaching the part between (either may change an earlier message). Costs
   * the part between the two, and a look at the session's edits and checkpoints.
   */
  #delta(
    previous: ContextVersion,
    leaf: Node | undefined,
  ): { seqs: number[]; compactionId: string | undefined } | undefined {
    if ((leaf?.last_compaction ?? 0) !== previous.compactionSeq) return undefined;
    const compactionId =
      leaf?.last_compaction == null ? undefined : this.#parts.rows.nodeAt(leaf.last_compaction)?.id;
    if (previous.leafSeq === 0) {
      // From no leaf: everything the context holds now (no compaction, so the whole path).
      if (previous.compactionSeq !== 0) return undefined;
      const seqs = leaf ? this.#parts.paths.pathSeqs(leaf.id) : [];
      return this.#reached(seqs) ? undefined : { seqs, compactionId };
    }
    const from = this.#parts.rows.nodeAt(previous.leafSeq);
    if (!from || !leaf || from.type === "leaf") return undefined;
    const seqs = this.#parts.paths.pathAfter(from, leaf);
    // An edit changes an earlier message: the context did not only grow.
    if (!seqs || this.#reached(seqs)) return undefined;
    return { seqs, compactionId };
  }

  #reached(seqs: readonly number[]): boolean {
    return this.#parts.paths.editsReach(seqs) || this.#parts.paths.checkpointsReach(seqs);
  }

  /** The model the context at `entryId` names (its last model change or reply); `not_found` without it. */
  modelAt(entryId: string): { provider: string; modelId: string } | null {
    this.#parts.row.live();
    const node = this.#node(entryId);
    this.#readable(node, false);
    return this.#parts.paths.settings(node).settings.model;
  }

  /** The head's context from memory, built when missing; undefined when too large to keep. */
  #keptHead(head: string): KeptContext | undefined {
    return this.#parts.head.get(head, () => {
      const plan = this.#parts.paths.contextPlan(head);
      return {
        compactionId: plan.compaction?.id,
        checkpointId: plan.checkpointId,
        settings: plan.settings,
        edits: plan.edits,
        pages: this.#parts.paths.messagePages(plan),
      };
    });
  }

  /**
   * The conversation a provider's message appended under `entryId` continues: the context's last
   * turn (read from its end) and its model. No entry of that id: none.
   */
  conversationAt(entryId: string): Conversation {
    const { copy } = this.#parts;
    const node = this.#parts.rows.node(entryId);
    if (!node && copy.copying && copy.refOf(entryId) !== null) throw new CopyNeeded({ ids: [entryId] });
    if (!node || node.type === "leaf") return NO_CONVERSATION;
    this.#readable(node, true);
    const kept = entryId === this.#parts.row.live().leafId ? this.#keptHead(entryId) : undefined;
    if (kept) {
      const messages: AgentMessage[] = [];
      const turn = new LastTurnStart();
      for (let i = kept.pieces.length - 1; i >= 0; i--) {
        const piece = [JSON.parse(kept.pieces[i] as string) as AgentMessage];
        const start = turn.find(piece);
        messages.push(...piece.slice(start));
        if (start !== undefined) break;
      }
      return { messages: messages.reverse(), model: kept.settings.model };
    }
    const plan = this.#parts.paths.contextPlan(entryId);
    return { messages: this.#parts.paths.lastTurn(plan), model: plan.settings.model };
  }
}
