import type { EntryRef } from "../../core/append";
import type { OmittedHistory } from "../../core/compaction";
import type { StoredEntry, TreeEntry } from "../../core/entries";
import { entryPage } from "../../core/paging";
import type { SessionSearchOptions, SessionSearchPage } from "../../core/search";
import type { EntryQuery } from "../../core/session-schemas";
import type { LeafOptions } from "../../core/storage";
import type { TreeRow } from "../../core/tree";
import type { CompactionPlan, CopiedRows, EntryPage, ForkStart, OmittedCount, SearchDigest } from "../types";
import { CompactionReads } from "./compaction-reads";
import { readPathPage } from "./copied-rows";
import { CopyNeeded, readsAfterCopy } from "./copy-state";
import { forkStart, refsOnPath } from "./fork-source";
import type { StoreParts } from "./store-parts";

/*
 * The reads the object answers of a session's entries: entries and pages of them by seq, paths
 * and the context's path, the tree and its labels, where the leaf stood, what a watcher replays,
 * what a compaction or a fork reads, and search. Each is `not_found` when there is no session.
 * In a fork still copying its path, a read that reaches the part still to copy needs it whole
 * first (`CopyNeeded`): the object copies it, and reads again.
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

  /** A page of the entries with these seqs, in order. */
  page(seqs: readonly number[]): EntryPage {
    this.#parts.row.live();
    return this.#parts.rows.page(seqs);
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
    const start = this.#parts.row.start(leafId);
    const { copy, rows, paths } = this.#parts;
    const next = copy.state?.next;
    if (next && start !== null) {
      const leaf = rows.node(start);
      if (!leaf && copy.refOf(start) !== null) throw new CopyNeeded({ ids: [start] });
      if (leaf) readsAfterCopy(paths.readsAfter(leaf, next, true));
    }
    return paths.contextSeqs(start);
  }

  /** What a compaction at `leafId` reads whole and what it counts (see compaction-reads.ts). */
  compactionPlan(leafId: string, keepRecentTokens: number): CompactionPlan {
    this.#whole();
    this.#parts.row.live();
    return this.#compaction.plan(leafId, keepRecentTokens);
  }

  /** Counts omitted entries from the first of `seqs` for up to `budgetMs` (see compaction-reads.ts). */
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

  /** The leaf as it stood at `asOf` (an ISO 8601 time; see leaf-history.ts). */
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

  treeRows(): { rows: TreeRow[]; labels: Record<string, string> } {
    this.#whole();
    this.#parts.row.live();
    return { rows: this.#parts.rows.treeRows(), labels: this.#parts.rows.labels() };
  }

  labels(): Record<string, string> {
    this.#parts.row.live();
    return this.#parts.rows.labels();
  }

  /**
   * Entries matching a search, with whether each is on the current branch. What is still to be
   * indexed is indexed first, so a search finds everything written before it.
   */
  search(options: SessionSearchOptions): SessionSearchPage {
    this.#whole();
    const { leafId } = this.#parts.row.live();
    while (this.#parts.search.backfillPending)
      this.#parts.storage.transactionSync(() => this.#parts.search.backfillStep());
    return this.#parts.search.search(options, leafId);
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

  /** A page of a fork's path, from the row `from` up (see copied-rows.ts). */
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
