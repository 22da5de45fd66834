import type { ContextSettings } from "../../core/context";
import { deriveState, isSystemMessageEntry, keptFrom, projectEntries } from "../../core/context";
import { latestEdits } from "../../core/context-edits";
import type { CompactionEntry, ContextEditEntry, StoredEntry, TreeEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import type { AgentMessage } from "../../core/messages";
import { LastTurnStart } from "../../core/providers/last-turn";
import type { Sql } from "../sql";
import { jsonLists } from "../sql";
import type { EntryRows, Node } from "./entry-rows";

/*
 * Paths of a session's tree, walked over the rows' parent seqs without reading payloads, and the
 * context of a leaf read from them: which entries it projects (core's rules decide, on the ids the
 * walk found) and its messages page by page.
 */

/** Entries read at a time when looking for a context's last turn from its end. */
const TURN_READ = 16;

/** Checkpoints read at a time when looking for the one a context holds, from its end. */
const CHECKPOINT_READ = 16;

/** An entry on a path, without its payload. */
export interface Step {
  seq: number;
  id: string;
  type: string;
  role: string | null;
  depth: number;
  [key: string]: SqlStorageValue;
}

/** The context of a leaf before its messages are read. */
export interface ContextPlan {
  /** The latest compaction on the path: it projects first (its summary and retained tail). */
  compaction?: StoredEntry<CompactionEntry>;
  /** The entries projected after it, in order: the kept part, then what follows the compaction. */
  seqs: number[];
  /**
   * The compaction's first kept entry, when the context keeps from it: where `keptFrom` finds the
   * kept part to start (a system message there is not among `seqs`).
   */
  firstKeptSeq?: number;
  /** The latest thinking, model and tools entries on the path, in path order. */
  settingSeqs: number[];
  settings: ContextSettings;
  /** The latest context edit of each target among the projected entries. */
  edits: ReadonlyMap<string, ContextEditEntry>;
  /**
   * The LangGraph checkpoint whose messages value the context holds (`messagesCheckpoint`), if any:
   * it stands for everything before it (the compaction too), so `seqs` start with it.
   */
  checkpointId: string | null;
}

/**
 * Seqs of the path `buildSessionContext` needs besides a context's `seqs` to build that context:
 * its latest settings entries and, with a compaction, the compaction and its first kept entry.
 */
export function contextOutside(plan: ContextPlan): number[] {
  if (!plan.compaction) return plan.settingSeqs;
  const firstKept = plan.firstKeptSeq === undefined ? [] : [plan.firstKeptSeq];
  return [...plan.settingSeqs, plan.compaction.seq, ...firstKept];
}

/** Whether a context opens with its compaction's messages (no checkpoint after it stands for them). */
function opens(
  plan: Pick<ContextPlan, "compaction" | "checkpointId">,
): plan is { compaction: StoredEntry<CompactionEntry>; checkpointId: null } {
  return plan.compaction !== undefined && plan.checkpointId === null;
}

export class PathReads {
  readonly #rows: EntryRows;
  readonly #sql: Sql;

  constructor(rows: EntryRows, sql: Sql) {
    this.#rows = rows;
    this.#sql = sql;
  }

  /** The tree entry `id`; `not_found` for no entry or a `leaf` record. */
  treeNode(id: string): Node {
    const node = this.#rows.node(id);
    if (!node || node.type === "leaf")
      throw new SessionError("not_found", `entry ${id} does not exist`, { id });
    return node;
  }

  /** The path from `seq` up towards the root, stopping below `minDepth`: leaf first, ids only. */
  #walk(seq: number, minDepth = 0): Step[] {
    return this.#sql<Step>`
      WITH RECURSIVE path(seq, id, type, role, parent_seq, depth) AS (
        SELECT seq, id, type, role, parent_seq, depth FROM entries WHERE seq = ${seq}
        UNION ALL
        SELECT e.seq, e.id, e.type, e.role, e.parent_seq, e.depth FROM path JOIN entries e ON e.seq = path.parent_seq
        WHERE e.depth >= ${minDepth}
      )
      SELECT seq, id, type, role, depth FROM path`.toArray();
  }

  /**
   * Seqs of the entries on the path from `seq` up to depth `minDepth`, `seq` first: `#walk` when
   * only the seqs are wanted, a third of the row data on a long path.
   */
  ancestors(seq: number, minDepth = 0): number[] {
    return this.#sql<{ seq: number }>`
      WITH RECURSIVE path(seq, parent_seq, depth) AS (
        SELECT seq, parent_seq, depth FROM entries WHERE seq = ${seq}
        UNION ALL
        SELECT e.seq, e.parent_seq, e.depth FROM path JOIN entries e ON e.seq = path.parent_seq
        WHERE e.depth >= ${minDepth}
      )
      SELECT seq FROM path`
      .toArray()
      .map((row) => row.seq);
  }

  /**
   * Which of `seqs` lie on the path from `seq` up to depth `minDepth`: one walk that keeps only
   * them, so what it holds is as large as `seqs`, however long the path.
   */
  onPath(seq: number, seqs: readonly number[], minDepth: number): Set<number> {
    return new Set(
      this.#sql<{ seq: number }>`
        WITH RECURSIVE path(seq, parent_seq) AS (
          SELECT seq, parent_seq FROM entries WHERE seq = ${seq}
          UNION ALL
          SELECT e.seq, e.parent_seq FROM path JOIN entries e ON e.seq = path.parent_seq
          WHERE e.depth >= ${minDepth}
        )
        SELECT seq FROM path WHERE seq IN (SELECT value FROM json_each(${JSON.stringify(seqs)}))`
        .toArray()
        .map((row) => row.seq),
    );
  }

  /** Whether `ancestor` is `node` or one of its ancestors: one walk, no higher than `ancestor`. */
  isAncestor(ancestor: Node, node: Node): boolean {
    if (ancestor.depth === null || node.depth === null || ancestor.depth > node.depth) return false;
    return this.onPath(node.seq, [ancestor.seq], ancestor.depth).has(ancestor.seq);
  }

  /** Seqs of the path root → `leafId` (on a path, seq grows from parent to child). */
  pathSeqs(leafId: string | null): number[] {
    if (leafId === null) return [];
    return this.ancestors(this.treeNode(leafId).seq).reverse();
  }

  /**
   * What the context of `leafId` projects, without reading payloads but the compaction's and the
   * settings entries'. Costs what the kept part costs, however long the history.
   */
  contextPlan(leafId: string | null): ContextPlan {
    if (leafId === null) {
      return { seqs: [], settingSeqs: [], settings: deriveState([]), edits: new Map(), checkpointId: null };
    }
    const leaf = this.treeNode(leafId);
    const { settingSeqs, settings } = this.settings(leaf);
    if (leaf.last_compaction === null) {
      const { seqs, checkpointId } = this.#fromCheckpoint(this.pathSeqs(leafId));
      return { seqs, settingSeqs, settings, edits: this.#edits(seqs), checkpointId };
    }
    const [compaction] = this.#rows.entries([leaf.last_compaction]) as [StoredEntry<CompactionEntry>];
    const path = this.#compactedPath(leaf, compaction);
    const at = path.findIndex((step) => step.seq === compaction.seq);
    const from = keptFrom(
      path.map((step) => step.id),
      at,
      compaction,
    );
    // The compaction carries the prompt the kept part's system messages replay to (pi 1.6).
    const kept = path.slice(from, at).filter((step) => !isSystemMessageEntry(step));
    const { seqs, checkpointId } = this.#fromCheckpoint(
      [...kept, ...path.slice(at + 1)].map((step) => step.seq),
    );
    const edits = this.#edits(checkpointId === null ? [compaction.seq, ...seqs] : seqs);
    const firstKept = from < at ? { firstKeptSeq: (path[from] as Step).seq } : {};
    return { compaction, seqs, ...firstKept, settingSeqs, settings, edits, checkpointId };
  }

  /**
   * A context's entries (`seqs`, in path order) from the LangGraph checkpoint whose messages value
   * the context holds (core's `messagesCheckpoint`), with its id; all of them when there is none:
   * the last of them holding the channel as a value, unless one holding it as changes follows.
   */
  #fromCheckpoint(seqs: number[]): { seqs: number[]; checkpointId: string | null } {
    const none = { seqs, checkpointId: null };
    const first = seqs[0];
    const last = seqs[seqs.length - 1];
    if (first === undefined || last === undefined) return none;
    const among = new Set(seqs);
    const value = this.#lastHolding("value", among, first, last);
    if (value === undefined || this.#lastHolding("changes", among, value + 1, last) !== undefined)
      return none;
    const checkpoint = this.#rows.nodeAt(value) as Node;
    return { seqs: seqs.slice(seqs.indexOf(value)), checkpointId: checkpoint.id };
  }

  /**
   * The last entry of `among`, between seqs `from` and `to`, holding the LangGraph messages
   * channel as `held`: read from the checkpoints' index backwards a few at a time, no payload.
   */
  #lastHolding(
    held: "value" | "changes",
    among: ReadonlySet<number>,
    from: number,
    to: number,
  ): number | undefined {
    for (let last = to; ; ) {
      const seqs = this.#sql<{ seq: number }>`SELECT seq FROM entries
        WHERE messages_held = ${held} AND seq >= ${from} AND seq <= ${last} ORDER BY seq DESC LIMIT ${CHECKPOINT_READ}`
        .toArray()
        .map((row) => row.seq);
      const found = seqs.find((seq) => among.has(seq));
      if (found !== undefined) return found;
      if (seqs.length < CHECKPOINT_READ) return undefined;
      last = (seqs[seqs.length - 1] as number) - 1;
    }
  }

  /**
   * Whether appending the entries of `seqs` to a context may change messages it held before: one
   * of them holds a LangGraph messages channel as a value, or holds it at all in a session with a
   * checkpoint holding it as a value (whose messages the context may hold until then). Read from
   * the checkpoints' index, no payload.
   */
  checkpointsReach(seqs: readonly number[]): boolean {
    const held = jsonLists(seqs).flatMap((list) =>
      this.#sql<{ messages_held: string }>`SELECT messages_held FROM entries
        WHERE messages_held IN ('value', 'changes') AND seq IN (SELECT value FROM json_each(${list}))`
        .toArray()
        .map((row) => row.messages_held),
    );
    if (held.includes("value")) return true;
    if (!held.includes("changes")) return false;
    return this.#sql`SELECT 1 AS one FROM entries WHERE messages_held = 'value' LIMIT 1`.toArray().length > 0;
  }

  /**
   * The latest context edit of each target among the entries of `seqs`: the session's edits are
   * found through the type index (most sessions have none), and only those among `seqs` are read.
   */
  #edits(seqs: readonly number[]): Map<string, ContextEditEntry> {
    const all = this.#sql<{ seq: number }>`SELECT seq FROM entries WHERE type = 'context_edit' ORDER BY seq`
      .toArray()
      .map((row) => row.seq);
    if (all.length === 0) return new Map();
    const among = new Set(seqs);
    const mine = all.filter((seq) => among.has(seq));
    return latestEdits(this.#rows.entries(mine) as TreeEntry[]);
  }

  /** The latest thinking, model and tools entries on a leaf's path, and what they set: three reads. */
  settings(leaf: Node): Pick<ContextPlan, "settingSeqs" | "settings"> {
    const settingSeqs = [leaf.last_thinking, leaf.last_model, leaf.last_tools]
      .filter((seq): seq is number => seq !== null)
      .sort((a, b) => a - b);
    return { settingSeqs, settings: deriveState(this.#rows.entries(settingSeqs) as TreeEntry[]) };
  }

  /**
   * Whether the context of `leaf` reads only rows after `row` (a seq and its depth on the leaf's
   * path): its latest settings and, with `compacted`, a compaction with all it keeps. A fork still
   * copying its path holds exactly the rows after it, so such a context is read from them at once.
   * `true` when it does; the id of the highest entry it keeps when it does once that entry (on the
   * path above `row`) is copied too; `false` when it needs more.
   */
  readsAfter(leaf: Node, row: { seq: number; depth: number }, compacted: boolean): boolean | string {
    const after = (seq: number | null) => seq === null || seq > row.seq;
    if (!after(leaf.last_thinking) || !after(leaf.last_model) || !after(leaf.last_tools)) return false;
    if (!compacted) return true;
    if (leaf.last_compaction === null || !after(leaf.last_compaction)) return false;
    const [compaction] = this.#rows.entries([leaf.last_compaction]) as [StoredEntry<CompactionEntry>];
    const compactionNode = this.treeNode(compaction.id);
    if (compaction.retainedTail || compaction.firstKeptEntryId === undefined) return true;
    const firstKept = this.#rows.node(compaction.firstKeptEntryId);
    if (!firstKept) return compaction.firstKeptEntryId;
    return Math.min(firstKept.depth ?? 0, compactionNode.depth ?? 0) > row.depth;
  }

  /**
   * The part of the path a compaction's context can reach, root first: from the compaction, or
   * from its first kept entry when that lies higher up (whether it is on the path is for
   * `keptFrom` to decide).
   */
  #compactedPath(leaf: Node, compaction: StoredEntry<CompactionEntry>): Step[] {
    const compactionNode = this.treeNode(compaction.id);
    let minDepth = compactionNode.depth ?? 0;
    if (!compaction.retainedTail && compaction.firstKeptEntryId !== undefined) {
      const firstKept = this.#rows.node(compaction.firstKeptEntryId);
      if (firstKept?.depth !== null && firstKept !== undefined)
        minDepth = Math.min(minDepth, firstKept.depth);
    }
    return this.#walk(leaf.seq, minDepth).reverse();
  }

  /**
   * Seqs of the path `buildSessionContext` needs for `leafId`: what its context projects and what
   * it needs besides (`contextOutside`); without a compaction or checkpoint, the whole path.
   */
  contextSeqs(leafId: string | null): number[] {
    const plan = this.contextPlan(leafId);
    return [...new Set([...contextOutside(plan), ...plan.seqs])].sort((a, b) => a - b);
  }

  /**
   * The context's last turn (see `LastTurnStart`; all of its messages when it starts at the
   * beginning), read backwards a few entries at a time: costs what the last turn costs.
   */
  lastTurn(plan: ContextPlan): AgentMessage[] {
    const compactionId = plan.compaction?.id;
    const projecting = { edits: plan.edits, checkpointId: plan.checkpointId };
    const read: AgentMessage[][] = [];
    const turnStart = new LastTurnStart();
    const cut = (messages: AgentMessage[]): AgentMessage[] | undefined => {
      const start = turnStart.find(messages);
      if (start === undefined) return undefined;
      read.unshift(messages.slice(start));
      return read.flat();
    };
    for (let end = plan.seqs.length; end > 0; end -= TURN_READ) {
      const entries = this.#rows.entries(plan.seqs.slice(Math.max(0, end - TURN_READ), end)) as TreeEntry[];
      const messages = projectEntries(entries, compactionId, projecting);
      const turn = cut(messages);
      if (turn) return turn;
      read.unshift(messages);
    }
    const opening = opens(plan) ? projectEntries([plan.compaction], compactionId, projecting) : [];
    return cut(opening) ?? [...opening, ...read.flat()];
  }

  /** The context's messages as JSON, a page of entries at a time. */
  *messagePages(
    plan: Pick<ContextPlan, "compaction" | "seqs" | "edits" | "checkpointId">,
  ): Generator<string[]> {
    const compactionId = plan.compaction?.id;
    const projecting = { edits: plan.edits, checkpointId: plan.checkpointId };
    if (opens(plan)) {
      yield projectEntries([plan.compaction], compactionId, projecting).map((m) => JSON.stringify(m));
    }
    yield* this.projectedPages(plan.seqs, compactionId, projecting);
  }

  /**
   * The messages the entries of `seqs` project to (with the context's edits and checkpoint), as
   * JSON, a page of entries at a time.
   */
  *projectedPages(
    seqs: readonly number[],
    compactionId: string | undefined,
    projecting: { edits: ReadonlyMap<string, ContextEditEntry>; checkpointId: string | null },
  ): Generator<string[]> {
    for (let rest = seqs; rest.length > 0; ) {
      const page = this.#rows.page(rest);
      yield projectEntries(page.entries as TreeEntry[], compactionId, projecting).map((m) =>
        JSON.stringify(m),
      );
      rest = page.rest;
    }
  }

  /**
   * Whether context edits reach the entries of `seqs`: one of them is an edit, or an edit names
   * one of them (only a hand-made file holds an edit before its target; pi writes it after).
   * Entries appended to a context with an edit among them did not only grow it. Edits are found by
   * their targets' index, no payload read.
   */
  editsReach(seqs: readonly number[]): boolean {
    return jsonLists(seqs).some(
      (list) =>
        this.#sql<{ one: number }>`
        SELECT 1 AS one FROM entries WHERE type = 'context_edit' AND seq IN (SELECT value FROM json_each(${list}))
        UNION ALL
        SELECT 1 FROM entries
        WHERE edit_target IN (SELECT id FROM entries WHERE seq IN (SELECT value FROM json_each(${list})))
        LIMIT 1`.toArray().length > 0,
    );
  }

  /**
   * Seqs of the entries on `to`'s path after `from`, in path order, when `from` is `to` or one of
   * its ancestors; undefined otherwise. Walks only the part between the two.
   */
  pathAfter(from: Node, to: Node): number[] | undefined {
    if (from.depth === null || to.depth === null || from.depth > to.depth) return undefined;
    const seqs = this.ancestors(to.seq, from.depth);
    if (seqs[seqs.length - 1] !== from.seq) return undefined;
    return seqs.slice(0, -1).reverse();
  }
}
