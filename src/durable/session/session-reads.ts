import type { EntryRef } from "../../core/append";
import { blobSlots, parseBlobRef } from "../../core/blob-refs";
import type { OmittedHistory } from "../../core/compaction";
import {
  addOmitted,
  countOmitted,
  DEFAULT_KEEP_RECENT_TOKENS,
  estimateEachMessage,
} from "../../core/compaction";
import type { ProjectOptions } from "../../core/context";
import { projectContext, projectEntries } from "../../core/context";
import type { StoredEntry, TreeEntry } from "../../core/entries";
import { EntryType } from "../../core/entries";
import { SessionError } from "../../core/errors";
import type { EntrySummary } from "../../core/events";
import type { AgentMessage } from "../../core/messages";
import { entryPage } from "../../core/paging";
import type { SessionSearchOptions, SessionSearchPage } from "../../core/search";
import type { EntryQuery } from "../../core/session-schemas";
import type { LeafOptions } from "../../core/storage";
import { assistantUsage, estimateTokens, usageTokens } from "../../core/tokens";
import type { TreeNodeFields } from "../../core/tree";
import { TreeShape } from "../../core/tree-order";
import { TreeLines } from "../../core/tree-text";
import type { Sql } from "../sql";
import { jsonLists } from "../sql";
import type {
  AbandonedPlan,
  CompactionPlan,
  CopiedRows,
  EntryPage,
  ForkStart,
  OmittedCount,
  SearchDigest,
  TreeLinesPage,
  TreeShapePage,
} from "../types";
import type { EntryRows } from "./entry-rows";
import { CopyNeeded, readsAfterCopy } from "./entry-rows";
import { forkStart, readPathPage, refsOnPath } from "./fork-source";
import type { ContextPlan, PathReads } from "./path-reads";
import { contextOutside } from "./path-reads";
import { PAGE_CHARS, SHAPE_ROWS } from "./schema";
import type { StoreParts } from "./session-state";

/** Every type but `leaf`: a record of a head move is no part of the conversation. */
const TREE_ENTRY_TYPES = EntryType.exclude(["leaf"]).options;

/*
 * The reads the object answers of a session's entries: entries and pages of them by seq, paths
 * and the context's path, the tree and its labels, where the leaf stood, what a watcher replays,
 * what a compaction or a fork reads, and search. Each is `not_found` when there is no session.
 * In a fork still copying its path, a read that reaches the part still to copy needs it whole
 * first (`CopyNeeded`): the object copies it, and reads again.
 * Below: what a compaction reads (`CompactionReads`).
 */

export class SessionReads {
  readonly #parts: StoreParts;
  readonly #compaction: CompactionReads;

  constructor(parts: StoreParts) {
    this.#parts = parts;
    this.#compaction = new CompactionReads(parts.rows, parts.paths, parts.sql);
  }

  /** A read of the whole path (or of the entries after `after`) in a fork still copying it: it waits for the copy. */
  #whole(after = 0): void {
    const state = this.#parts.copy.state;
    if (state?.next && after < state.forkSeq) throw new CopyNeeded();
  }

  /** Whether the session holds a row of the entry `id` (a fork still copying may not, yet). */
  holds(id: string): boolean {
    return this.#parts.rows.node(id) !== undefined;
  }

  /** The entry `id` if the session holds its row (a fork still copying may not, yet). */
  heldEntry(id: string): StoredEntry | undefined {
    this.#parts.row.live();
    const node = this.#parts.rows.node(id);
    return node && this.#parts.rows.entries([node.seq])[0];
  }

  /** The entry `id`; in a fork still copying its path, one of that path is read once it is copied. */
  getEntry(id: string): StoredEntry | undefined {
    this.#parts.row.live();
    const node = this.#parts.rows.node(id);
    if (node) return this.#parts.rows.entries([node.seq])[0];
    if (this.#parts.copy.copying && this.#parts.copy.refOf(id) !== null) throw new CopyNeeded({ ids: [id] });
    return undefined;
  }

  /** The entries of these ids that hold blobs (their payloads hold references). */
  entriesHoldingBlobs(ids: readonly string[]): StoredEntry[] {
    this.#parts.row.live();
    return this.#parts.rows.entries(this.#parts.rows.seqsHoldingBlobs(ids));
  }

  /**
   * Reads rows by the seqs an earlier answer named (the pages after its first). Outside a fork's
   * copy a row that is not there went with the session that answer read (purged, and made again
   * under its id since): `not_found`, as for the session itself.
   */
  #named<T>(read: () => T): T {
    try {
      return read();
    } catch (error) {
      if (!(error instanceof CopyNeeded) || this.#parts.copy.copying) throw error;
      throw new SessionError("not_found", "the entries asked for are no longer in the session");
    }
  }

  /** A page of the entries with these seqs, in order. */
  page(seqs: readonly number[]): EntryPage {
    this.#parts.row.live();
    return this.#named(() => this.#parts.rows.page(seqs));
  }

  entrySeqs(query: EntryQuery = {}): number[] {
    this.#parts.row.live();
    this.#whole(entryPage(query).after);
    return this.#parts.rows.seqs(query);
  }

  pathSeqs(leafId?: string | null): number[] {
    this.#whole();
    return this.#parts.paths.pathSeqs(this.#parts.row.start(leafId));
  }

  /**
   * The path `buildSessionContext` needs: what the latest compaction dropped is left out. In a fork
   * still copying, it is read at once when it lies after the part still to copy.
   */
  contextSeqs(leafId?: string | null): number[] {
    return this.#parts.paths.contextSeqs(this.#contextStart(leafId));
  }

  /** The leaf a context starts from; in a fork still copying, once the context can be read. */
  #contextStart(leafId: string | null | undefined): string | null {
    const start = this.#parts.row.start(leafId);
    const { copy, rows, paths } = this.#parts;
    const next = copy.state?.next;
    if (next && start !== null) {
      const leaf = rows.node(start);
      if (!leaf && copy.refOf(start) !== null) throw new CopyNeeded({ ids: [start] });
      if (leaf) readsAfterCopy(paths.readsAfter(leaf, next, true));
    }
    return start;
  }

  /**
   * The entries that stand for a context's messages, in order, and how each projects: its
   * compaction first when it opens with one, or the checkpoint that holds the messages, then its
   * messages, custom messages and branch summaries (entries of other types stand for none). What a
   * reader of a window of them needs, no payload read but the compaction's, the settings' and
   * the edits'.
   */
  contextParts(leafId?: string | null): {
    seqs: number[];
    compactionId: string | undefined;
    projecting: ProjectOptions;
  } {
    const plan = this.#parts.paths.contextPlan(this.#contextStart(leafId));
    const projecting = { edits: plan.edits, checkpointId: plan.checkpointId };
    const compactionId = plan.compaction?.id;
    const opening =
      plan.checkpointId !== null ? plan.seqs.slice(0, 1) : plan.compaction ? [plan.compaction.seq] : [];
    const messages = new Set(
      jsonLists(plan.seqs).flatMap((list) =>
        this.#parts.sql<{ seq: number }>`
          SELECT seq FROM entries WHERE seq IN (SELECT value FROM json_each(${list}))
            AND type IN ('message', 'custom_message', 'branch_summary')`
          .toArray()
          .map((row) => row.seq),
      ),
    );
    const seqs = [...opening, ...plan.seqs.filter((seq) => messages.has(seq) && seq !== opening[0])];
    return { seqs, compactionId, projecting };
  }

  /**
   * Seqs of the `around` tree entries written just before and the `around` just after the entry
   * `centre` (an id, or a seq a search found), and its own, in order: `not_found` when it is no
   * tree entry.
   */
  seqsAround(centre: string | number, around: number): number[] {
    this.#parts.row.live();
    const { rows, copy } = this.#parts;
    let seq = centre;
    if (typeof centre === "string") {
      const node = rows.node(centre);
      if (!node && copy.copying && copy.refOf(centre) !== null) throw new CopyNeeded({ ids: [centre] });
      if (!node || node.type === "leaf")
        throw new SessionError("not_found", "no such entry", { entryId: centre });
      seq = node.seq;
    }
    const at = seq as number;
    // The centre and the `around` before it, by count; read once the rows they span are all there.
    const upTo = rows.treeSeqsUpTo(at, around + 1);
    this.#whole(upTo.length <= around ? 0 : (upTo[0] as number) - 1);
    const before = upTo.at(-1) === at || upTo.length <= around ? upTo : upTo.slice(1);
    const after = around ? this.entrySeqs({ after: at, limit: around, type: TREE_ENTRY_TYPES }) : [];
    return [...before, ...after];
  }

  /** What a compaction at `leafId` reads whole and what it counts (see `CompactionReads` below). */
  compactionPlan(leafId: string, keepRecentTokens: number): CompactionPlan {
    this.#whole();
    this.#parts.row.live();
    return this.#compaction.plan(leafId, keepRecentTokens);
  }

  /** The size of the context at `leafId`, from what is stored (see `CompactionReads` below). */
  contextTokens(leafId: string, keepRecentTokens: number): number {
    this.#whole();
    this.#parts.row.live();
    return this.#compaction.contextTokens(leafId, keepRecentTokens);
  }

  /**
   * What leaving `fromLeafId` for `targetId` abandons, to be summarized: the entries after the
   * deepest entry on both paths, read whole or counted as a compaction's are (see
   * `CompactionReads` below).
   */
  abandonedPlan(fromLeafId: string, targetId: string | null): AbandonedPlan {
    this.#whole();
    this.#parts.row.live();
    const { paths, rows } = this.#parts;
    const from = paths.pathSeqs(fromLeafId);
    const onTarget = new Set(paths.pathSeqs(targetId));
    const ancestor = from.findLastIndex((seq) => onTarget.has(seq));
    const plan = this.#compaction.abandoned(from.slice(ancestor + 1), DEFAULT_KEEP_RECENT_TOKENS);
    const ancestorSeq = from[ancestor];
    return {
      ...plan,
      commonAncestorId: ancestorSeq === undefined ? null : (rows.nodeAt(ancestorSeq)?.id ?? null),
    };
  }

  /** Counts omitted entries from the first of `seqs` for up to `budgetMs` (see `CompactionReads` below). */
  countOmitted(seqs: readonly number[], compactionId: string | undefined, budgetMs: number): OmittedCount {
    this.#whole();
    this.#parts.row.live();
    return this.#compaction.count(seqs, compactionId, budgetMs);
  }

  /** What a compaction at `leafId` reads, counted and read here at once: for work inside the object. */
  compactionPath(
    leafId: string,
    keepRecentTokens: number,
  ): { path: StoredEntry<TreeEntry>[]; omitted?: OmittedHistory } {
    const plan = this.compactionPlan(leafId, keepRecentTokens);
    const path = this.#parts.rows.entries(plan.seqs) as StoredEntry<TreeEntry>[];
    if (plan.omitted.length === 0 || plan.after === undefined) return { path };
    const { counted } = this.countOmitted(plan.omitted, plan.compactionId, Number.POSITIVE_INFINITY);
    return { path, omitted: { ...counted, after: plan.after } };
  }

  /** The whole context path, read at once: for work inside the object. */
  contextEntries(leafId?: string | null): StoredEntry<TreeEntry>[] {
    return this.#parts.rows.entries(this.contextSeqs(leafId)) as StoredEntry<TreeEntry>[];
  }

  /** The leaf as it stood at `asOf` (an ISO 8601 time; see session-state.ts). */
  leafAt(asOf: string): string | null {
    this.#parts.row.live();
    const seq = this.#parts.history.leafSeqAt(Date.parse(asOf), asOf);
    return seq === null ? null : (this.#parts.rows.nodeAt(seq)?.id ?? null);
  }

  /** When the session's history starts (what `asOf` can go back to), as ISO 8601. */
  historyStartsAt(): string {
    const { header } = this.#parts.row.live();
    return new Date(this.#parts.history.startsAt() ?? Date.parse(header.createdAt)).toISOString();
  }

  /** Entries with `after < seq <= bound`, a page of at most `limit`: what a watcher replays. */
  entriesAfter(after: number, bound: number, limit: number): StoredEntry[] {
    this.#whole(after);
    this.#parts.row.live();
    return this.#parts.rows.after(after, bound, limit);
  }

  /** Summaries of the entries with `after < seq <= bound`, at most `limit`: what a watcher without payloads replays. */
  summariesAfter(after: number, bound: number, limit: number): EntrySummary[] {
    this.#whole(after);
    this.#parts.row.live();
    return this.#parts.rows.summariesAfter(after, bound, limit);
  }

  /** A page of the tree's shape after `after`, up to `bound` (none: the first page, which sets it). */
  treeShape(after: number, bound: number | undefined): TreeShapePage {
    this.#whole();
    this.#parts.row.live();
    const last = bound ?? this.#parts.rows.lastSeq();
    const page = this.#parts.rows.treeShape(after, last, SHAPE_ROWS);
    return { ...page, bound: last, done: page.seqs.length < SHAPE_ROWS };
  }

  /** The tree's nodes of these seqs, in order, as many as a page holds. */
  treeNodes(seqs: readonly number[]): TreeNodeFields[] {
    this.#parts.row.live();
    return this.#named(() => this.#parts.rows.treeNodes(seqs, PAGE_CHARS));
  }

  /**
   * `count` lines of the tree drawn as text (`drawTree`, the head marked) from the line in position
   * `from`, and how many it has: the tree of the entries up to seq `bound` (all of them without
   * it), which entries written later never change. The tree's shape is walked whole (a few
   * integers a node), and only the nodes of the lines asked for are read, as many as a page holds.
   */
  treeLines(from: number, count: number, bound?: number): TreeLinesPage {
    this.#whole();
    const { leafId } = this.#parts.row.live();
    const { rows } = this.#parts;
    const shape = new TreeShape();
    const last = rows.lastSeq();
    if (bound !== undefined && bound > last)
      throw new SessionError("invalid_request", `the session has no entry of seq ${bound}`, { bound });
    bound ??= last;
    for (let after = 0; ; ) {
      const page = rows.treeShape(after, bound, SHAPE_ROWS);
      shape.add(page.seqs, page.parents);
      if (page.seqs.length < SHAPE_ROWS) break;
      after = page.seqs[page.seqs.length - 1] as number;
    }
    const { seqs, closes, places } = shape.order();
    const drawing = new TreeLines();
    const start = Math.min(from, seqs.length);
    for (let i = 0; i < start; i++) drawing.pass(places[i] as number, closes[i] as number);
    const nodes = this.#named(() =>
      rows.treeNodes(Array.from(seqs.subarray(start, start + count)), PAGE_CHARS),
    );
    const lines = nodes.map((node, n) => {
      const i = start + n;
      const line = drawing.line(places[i] as number, node, leafId);
      drawing.pass(places[i] as number, closes[i] as number);
      return line;
    });
    return { total: seqs.length, lines, bound };
  }

  labels(): Record<string, string> {
    this.#parts.row.live();
    return this.#parts.rows.labels();
  }

  /**
   * Entries matching a search among those indexed, with whether each is on the current branch;
   * `indexing` when some still wait to be indexed (see `SessionWrites.indexForSearch`).
   */
  search(options: SessionSearchOptions): SessionSearchPage {
    this.#whole();
    const { leafId } = this.#parts.row.live();
    const page = this.#parts.search.search(options, leafId);
    return this.#parts.search.backfillPending ? { ...page, indexing: true } : page;
  }

  /**
   * Indexes for search one bounded step of what waits to be (its own transaction); true when more
   * remain. The step that indexes the last of it raises the session's version: the text its
   * directory searches is complete only now (a fork's, an import's, a large write's), and a report
   * of that text at the version reported before it would be ignored.
   */
  indexStep(): boolean {
    const { storage, search, row } = this.#parts;
    if (!search.backfillPending) return false;
    return storage.transactionSync(() => {
      const more = search.backfillStep();
      if (!more) row.raiseVersion();
      return more;
    });
  }

  /** What the tenant's directory searches of this session. */
  searchDigest(): SearchDigest {
    this.#parts.row.live();
    return this.#parts.search.digest();
  }

  /** A fork of the path to `targetId`, as it starts: its figures, labels and first page (see fork-source.ts). */
  forkStart(targetId: string, position: LeafOptions["position"], pageBytes: number): ForkStart {
    this.#whole();
    const { header } = this.#parts.row.live();
    const { rows, paths, storage, sql } = this.#parts;
    const start = forkStart(rows, paths, storage.sql, sql, targetId, position, pageBytes);
    return { ...start, header, name: this.#parts.row.info().name };
  }

  /** A page of a fork's path, from the row `from` up (see fork-source.ts). */
  forkPage(from: number, pageBytes: number): CopiedRows {
    this.#parts.row.live();
    return readPathPage(this.#parts.rows, this.#parts.storage.sql, this.#parts.sql, from, pageBytes);
  }

  /** Which of `ids` are entries of the path root → the row `from`: what a fork still copying it asks. */
  refsOnPath(from: number, ids: readonly string[]): Record<string, EntryRef> {
    this.#whole();
    this.#parts.row.live();
    return refsOnPath(this.#parts.rows, this.#parts.paths, this.#parts.sql, from, ids);
  }
}

/*
 * What a compaction reads of a session, in bounded memory however long its history. A context
 * path that fits (WHOLE_ENTRIES, WHOLE_BYTES) is read whole, as before. A longer one is read as
 * its start (the goal, what the previous compaction carried), its end (at least the tokens the
 * compaction keeps, back to the start of a turn), and, from the middle, only the entries that
 * change how others read (context edits, system messages); the rest of the middle is counted a
 * page at a time (messages, tokens, files touched), never held, and the summarizer is told it
 * was left out (core's `OmittedHistory`).
 */

/** A context path up to this many entries and stored bytes is read whole. */
const WHOLE_ENTRIES = 20_000;
const WHOLE_BYTES = 8 * 1024 * 1024;
/** Stored bytes of the start of a long path read whole (at least its first entry). */
const HEAD_BYTES = 256 * 1024;
/** Entries read at a time while walking back from the end. */
const TAIL_READ = 64;
/** Past the tokens kept, stored bytes read further back to find where the turn began. */
const TURN_BYTES = 4 * 1024 * 1024;
/** Characters of payload one counting step reads. */
const COUNT_PAGE_CHARS = 2 * 1024 * 1024;

/** Seqs once each, in the order they were written. */
const sorted = (seqs: Iterable<number>) => [...new Set(seqs)].sort((a, b) => a - b);

/** How a path's entries project: under its latest compaction, from its messages checkpoint. */
interface Projecting {
  compactionId: string | undefined;
  checkpointId: string | null;
}

export class CompactionReads {
  readonly #rows: EntryRows;
  readonly #paths: PathReads;
  readonly #sql: Sql;

  constructor(rows: EntryRows, paths: PathReads, sql: Sql) {
    this.#rows = rows;
    this.#paths = paths;
    this.#sql = sql;
  }

  /**
   * What to read whole and what to count of the context path at `leafId` (see the file's comment);
   * `nothing_to_compact` for a long path that holds less than `keepRecentTokens`: it keeps everything.
   */
  plan(leafId: string, keepRecentTokens: number): CompactionPlan {
    const context = this.#paths.contextPlan(leafId);
    // What getContextPath gives besides the entries the context projects.
    const plan = this.#bounded(context.seqs, contextOutside(context), keepRecentTokens, {
      compactionId: context.compaction?.id,
      checkpointId: context.checkpointId,
    });
    if (!plan) {
      throw new SessionError(
        "nothing_to_compact",
        "nothing would be dropped: the branch fits in keepRecentTokens",
      );
    }
    return plan;
  }

  /**
   * The size of the context at `leafId` as core's `estimatePathTokens` measures it, from what is
   * stored: a text blob counts by its stored size, never read back. When the last reply that
   * reported usage came after every edit and compaction, that usage plus estimates of what
   * follows it, read back from the end only that far; else every message of what a compaction
   * reads (`plan`). `nothing_to_compact` as `plan`.
   */
  contextTokens(leafId: string, keepRecentTokens: number): number {
    const context = this.#paths.contextPlan(leafId);
    const fromReply = this.#tokensFromReply(context);
    if (fromReply !== undefined) return fromReply;
    const plan = this.plan(leafId, keepRecentTokens);
    const omitted =
      plan.omitted.length > 0
        ? this.count(plan.omitted, plan.compactionId, Number.POSITIVE_INFINITY)
        : undefined;
    const messages = projectContext(this.#rows.entries(plan.seqs) as TreeEntry[]).flatMap((p) => p.messages);
    return estimateEachMessage(messages, omitted?.counted.tokens) + this.#messageBlobTokens(messages);
  }

  /**
   * The last trustworthy reply's usage plus estimates of the context's messages after it, read
   * back from the end a page at a time; none when no reply before an edit or a compaction reported
   * usage (it counted a context no longer sent).
   */
  #tokensFromReply(context: ContextPlan): number | undefined {
    const compactionId = context.compaction?.id;
    const compactionSeq = context.compaction?.seq ?? 0;
    const projecting = { edits: context.edits, checkpointId: context.checkpointId };
    let tokens = 0;
    for (let end = context.seqs.length; end > 0; end -= TAIL_READ) {
      const entries = this.#rows.entries(context.seqs.slice(Math.max(0, end - TAIL_READ), end));
      const after: AgentMessage[] = [];
      for (const entry of entries.toReversed()) {
        if (entry.type === "context_edit" || entry.type === "compaction" || entry.seq < compactionSeq) return;
        const messages = projectEntries([entry as TreeEntry], compactionId, projecting);
        const at = messages.findLastIndex((message) => assistantUsage(message) !== undefined);
        after.push(...messages.slice(at + 1));
        const usage = at >= 0 ? assistantUsage(messages[at] as AgentMessage) : undefined;
        if (usage) return usageTokens(usage) + tokens + this.#messageTokens(after);
      }
      tokens += this.#messageTokens(after);
    }
    return undefined;
  }

  /** What `messages` hold, their text blobs by their stored sizes. */
  #messageTokens(messages: readonly AgentMessage[]): number {
    return (
      messages.reduce((sum, message) => sum + estimateTokens(message), 0) + this.#messageBlobTokens(messages)
    );
  }

  /** What the text blobs of `messages` add once their values are read back (see `#blobTokens`). */
  #messageBlobTokens(messages: readonly AgentMessage[]): number {
    return this.#blobTokens(messages.map((message) => ({ type: "message", message })));
  }

  /** What to read whole and what to count of an abandoned branch (`seqs`, in path order). */
  abandoned(seqs: readonly number[], keepRecentTokens: number): CompactionPlan {
    const plan = this.#bounded(seqs, [], keepRecentTokens, { compactionId: undefined, checkpointId: null });
    // A branch summary sums up the whole branch, however little of it there is.
    return plan ?? { seqs: sorted(seqs), omitted: [] };
  }

  /**
   * Of `kept` (a path's seqs, in order), what to read whole and what to count; `outside` is read
   * too. None for a path too long to read whole that never holds `keepRecentTokens`.
   */
  #bounded(
    kept: readonly number[],
    outside: readonly number[],
    keepRecentTokens: number,
    projecting: Projecting,
  ): CompactionPlan | undefined {
    if (kept.length <= WHOLE_ENTRIES && this.#rows.storedBytes(kept) <= WHOLE_BYTES) {
      return { seqs: sorted([...outside, ...kept]), omitted: [] };
    }
    const reached = this.#tailStart(kept, keepRecentTokens, projecting);
    if (reached === undefined) return undefined;
    const headEnd = this.#headEnd(kept);
    const tailStart = Math.max(headEnd, reached);
    if (tailStart <= headEnd) return { seqs: sorted([...outside, ...kept]), omitted: [] };
    const middle = kept.slice(headEnd, tailStart);
    const shaping = this.#shaping(middle);
    const seqs = sorted([...outside, ...kept.slice(0, headEnd), ...shaping, ...kept.slice(tailStart)]);
    const skipped = new Set(shaping);
    const last = this.#rows.nodeAt(kept[headEnd - 1] as number);
    return {
      seqs,
      omitted: middle.filter((seq) => !skipped.has(seq)),
      ...(last ? { after: last.id } : {}),
      ...(projecting.compactionId ? { compactionId: projecting.compactionId } : {}),
    };
  }

  /** Where the start of a long path ends: HEAD_BYTES of it, at least its first entry. */
  #headEnd(kept: readonly number[]): number {
    let bytes = 0;
    for (let i = 0; i < kept.length; i++) {
      bytes += this.#rows.storedBytes([kept[i] as number]);
      if (bytes > HEAD_BYTES) return Math.max(1, i);
    }
    return kept.length;
  }

  /**
   * Where the end of a long path starts: walking back until the messages hold `keep` tokens, then
   * on to the start of that turn (a user's message), no more than TURN_BYTES further. None when the
   * whole path holds less than `keep`; its start when it holds `keep` but no turn starts before.
   */
  #tailStart(
    kept: readonly number[],
    keep: number,
    { compactionId, checkpointId }: Projecting,
  ): number | undefined {
    let tokens = 0;
    let extra = 0;
    for (let end = kept.length; end > 0; end -= TAIL_READ) {
      const start = Math.max(0, end - TAIL_READ);
      const entries = this.#rows.entries(kept.slice(start, end)) as TreeEntry[];
      for (let i = entries.length - 1; i >= 0; i--) {
        const messages = projectEntries([entries[i] as TreeEntry], compactionId, { checkpointId });
        if (tokens >= keep) {
          if (messages.some((m) => m.role === "user")) return start + i;
          extra += this.#rows.storedBytes([kept[start + i] as number]);
          if (extra > TURN_BYTES) return start + i;
        }
        for (const message of messages) tokens += estimateTokens(message);
        tokens += this.#blobTokens([entries[i] as TreeEntry]);
      }
    }
    return tokens >= keep ? 0 : undefined;
  }

  /**
   * Tokens the text blobs of `entries` add once their values are read back (as stored, a
   * reference counts as its few characters): about a token for four bytes of each value.
   */
  #blobTokens(entries: readonly unknown[]): number {
    const refs: string[] = [];
    for (const entry of entries) {
      for (const slot of blobSlots(entry))
        if (parseBlobRef(slot.value)?.kind === "txt") refs.push(slot.value);
    }
    if (refs.length === 0) return 0;
    const sizes = new Map(
      this.#sql<{ ref: string; json_bytes: number }>`
        SELECT ref, json_bytes FROM session_blobs WHERE ref IN (SELECT value FROM json_each(${JSON.stringify([...new Set(refs)])}))`
        .toArray()
        .map((row) => [row.ref, row.json_bytes]),
    );
    let tokens = 0;
    for (const ref of refs) tokens += Math.ceil(Math.max(0, (sizes.get(ref) ?? 0) - ref.length) / 4);
    return tokens;
  }

  /** The entries of `seqs` that change how the others are read: context edits, system messages. */
  #shaping(seqs: readonly number[]): number[] {
    return jsonLists(seqs).flatMap((list) =>
      this.#sql<{ seq: number }>`
        SELECT seq FROM entries
        WHERE seq IN (SELECT value FROM json_each(${list}))
          AND (type = 'context_edit' OR role = 'system')
        ORDER BY seq`
        .toArray()
        .map((row) => row.seq),
    );
  }

  /**
   * Counts the omitted entries of `seqs` from the first, a page at a time, until `budgetMs` has
   * passed (at least one page): how many it counted, and their count.
   */
  count(seqs: readonly number[], compactionId: string | undefined, budgetMs: number): OmittedCount {
    const started = Date.now();
    let done = 0;
    let counted: Omit<OmittedHistory, "after"> = { messages: 0, tokens: 0, readFiles: [], modifiedFiles: [] };
    while (done < seqs.length && (done === 0 || Date.now() - started < budgetMs)) {
      const entries = this.#rows.entries(seqs.slice(done, done + 1024), COUNT_PAGE_CHARS) as TreeEntry[];
      const part = countOmitted(entries, compactionId);
      counted = addOmitted(counted, { ...part, tokens: part.tokens + this.#blobTokens(entries) });
      done += entries.length;
    }
    return { done, counted };
  }
}
