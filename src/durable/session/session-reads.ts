import type {
  EntryQuery,
  LeafOptions,
  OmittedHistory,
  SessionSearchOptions,
  SessionSearchPage,
  StoredEntry,
  TreeEntry,
  TreeRow,
} from "../../core/internal";
import type { CompactionPlan, CopiedRows, EntryPage, ForkSource, OmittedCount, SearchDigest } from "../types";
import { CompactionReads } from "./compaction-reads";
import { readPathRows } from "./copied-rows";
import { forkSource } from "./fork-copy";
import type { StoreParts } from "./store-parts";

/*
 * The reads the object answers of a session's entries: entries and pages of them by seq, paths
 * and the context's path, the tree and its labels, where the leaf stood, what a watcher replays,
 * what a compaction or a fork reads, and search. Each is `not_found` when there is no session.
 */

export class SessionReads {
  readonly #parts: StoreParts;
  readonly #compaction: CompactionReads;

  constructor(parts: StoreParts) {
    this.#parts = parts;
    this.#compaction = new CompactionReads(parts.rows, parts.paths, parts.sql);
  }

  getEntry(id: string): StoredEntry | undefined {
    this.#parts.row.live();
    const node = this.#parts.rows.node(id);
    return node && this.#parts.rows.entries([node.seq])[0];
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

  /** Rows of a fork's path, a page of them, as the new session writes them (see `SessionWrites.copyRows`). */
  pathRows(seqs: readonly number[]): CopiedRows {
    this.#parts.row.live();
    return readPathRows(this.#parts.rows, this.#parts.storage.sql, this.#parts.sql, seqs);
  }

  entrySeqs(query: EntryQuery = {}): number[] {
    this.#parts.row.live();
    return this.#parts.rows.seqs(query);
  }

  pathSeqs(leafId?: string | null): number[] {
    return this.#parts.paths.pathSeqs(this.#parts.row.start(leafId));
  }

  /** The path `buildSessionContext` needs: what the latest compaction dropped is left out. */
  contextSeqs(leafId?: string | null): number[] {
    return this.#parts.paths.contextSeqs(this.#parts.row.start(leafId));
  }

  /** What a compaction at `leafId` reads whole and what it counts (see compaction-reads.ts). */
  compactionPlan(leafId: string, keepRecentTokens: number): CompactionPlan {
    this.#parts.row.live();
    return this.#compaction.plan(leafId, keepRecentTokens);
  }

  /** Counts omitted entries from the first of `seqs` for up to `budgetMs` (see compaction-reads.ts). */
  countOmitted(seqs: readonly number[], compactionId: string | undefined, budgetMs: number): OmittedCount {
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
    this.#parts.row.live();
    return this.#parts.rows.after(after, bound, limit);
  }

  treeRows(): { rows: TreeRow[]; labels: Record<string, string> } {
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

  /** What a fork of the path to `targetId` copies (see fork-copy.ts). */
  forkSource(targetId: string, position: LeafOptions["position"]): ForkSource {
    const { header } = this.#parts.row.live();
    const source = forkSource(this.#parts.rows, this.#parts.paths, this.#parts.sql, targetId, position);
    return { ...source, header, name: this.#parts.row.info().name };
  }
}
