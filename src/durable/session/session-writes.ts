import type { AppendPlan, AppendView, EntryRef, PlannedWrite, PlanOptions } from "../../core/append";
import { idsNamedBy, planAppend, planImport, planLeafMove } from "../../core/append";
import type { LeafEntry, StoredEntry } from "../../core/entries";
import { patchHeader } from "../../core/header";
import { nowIso } from "../../core/ids";
import { applyEntryToStats, countHeader, headerBytes } from "../../core/info";
import type { AutoCompactStatus, HeaderPatch, SessionHeader } from "../../core/session-schemas";
import type { AppendResult, ImportOptions, LeafOptions } from "../../core/storage";
import { quotaExceeded } from "../quotas";
import type { Reloadable } from "../transaction";
import { afterCommit, transaction } from "../transaction";
import { storageWork } from "../transient";
import type { CopiedRows, ForkStart } from "../types";
import type { ContextReads } from "./context-reads";
import type { StoredWrite } from "./entry-rows";
import { CopyNeeded } from "./entry-rows";
import { insertCopiedRows } from "./fork-source";
import type { SessionReads } from "./session-reads";
import type { StoreParts } from "./session-state";

/*
 * A session's writes: appends and imports (planned by core's rules against a view of the
 * session), leaf moves, a fork's copied rows, the header, and indexing for search what a large
 * write left pending. Each write is one transaction with the session row; should it fail, the
 * session held in memory reads itself again (`held`). Listeners hear of a write once committed.
 * Below: the blobs a write was prepared with, and the room a write has.
 */

/** What a committed write wrote, and the head it left. */
export type WriteListener = (entries: StoredEntry[], leafId: string | null) => void;

/**
 * Milliseconds indexing for search runs at once: the alarm's after a large write, before it lets
 * the object rest and comes back, and a search's before it looks. However large the write, each
 * answers in time, and the write is searchable soon after.
 */
export const SEARCH_INDEX_BUDGET_MS = 500;

export class SessionWrites {
  readonly #parts: StoreParts;
  readonly #reads: SessionReads;
  readonly #contexts: ContextReads;
  /** What reads itself again when a write's transaction fails: the whole session in memory. */
  readonly #held: Reloadable;
  /** Told of every committed write (the object's watchers). */
  onWritten: WriteListener | undefined;

  constructor(parts: StoreParts, reads: SessionReads, contexts: ContextReads, held: Reloadable) {
    this.#parts = parts;
    this.#reads = reads;
    this.#contexts = contexts;
    this.#held = held;
  }

  /** Records where automatic compaction stands (shown in the session's info). */
  setAutoCompaction(status: AutoCompactStatus): void {
    const { row, sql } = this.#parts;
    const state = row.live();
    state.autoCompaction = status;
    state.version++;
    sql`UPDATE session SET auto_compaction = ${JSON.stringify(status)}, version = ${state.version}`;
  }

  /**
   * Patches the header. Its JSON counts in the session's `bytes`: a larger one needs the room it
   * grows by (`checkRoom`), a smaller one frees what it shrinks by.
   */
  updateHeader(patch: HeaderPatch, room: ByteLimit | undefined): SessionHeader {
    const { row, sql } = this.#parts;
    const state = row.live();
    const header = patchHeader(state.header, patch);
    const grows = headerBytes(header) - (state.stats.headerBytes ?? 0);
    if (grows > 0) this.checkRoom(grows, room);
    this.#write(() => {
      state.header = header;
      countHeader(state.stats, header);
      state.stats.updatedAt = nowIso();
      sql`UPDATE session SET header = ${JSON.stringify(header)}`;
      // Its system prompt is searched: indexed again when it changes.
      if (patch.systemPrompt !== undefined) this.#parts.search.indexHeader(header, state.stats);
    });
    return header;
  }

  /** The session changed now without a write of its own (a restore): it is idle from now on. */
  touch(): void {
    const state = this.#parts.row.live();
    this.#write(() => {
      state.stats.updatedAt = nowIso();
    });
  }

  /**
   * Whether entries are waiting to be indexed for search (written before the index existed, or in
   * large writes). A fork indexes nothing until its path is copied: its entries come in out of
   * order, and the index is filled in order of seq.
   */
  get searchBackfillPending(): boolean {
    return (
      this.#parts.row.current !== undefined && !this.#parts.copy.copying && this.#parts.search.backfillPending
    );
  }

  /** Indexes one bounded step of them (see `SessionReads.indexStep`); true when more remain. */
  searchBackfillStep(): boolean {
    this.#parts.row.live();
    if (this.#parts.copy.copying) return false;
    return this.#reads.indexStep();
  }

  /**
   * Indexes what waits to be indexed for search, a step at a time (each its own transaction, other
   * requests let in between), for up to `SEARCH_INDEX_BUDGET_MS`; true when some still waits.
   */
  async indexForSearch(): Promise<boolean> {
    const started = Date.now();
    while (this.searchBackfillPending) {
      if (Date.now() - started >= SEARCH_INDEX_BUDGET_MS) return true;
      storageWork(() => this.searchBackfillStep());
      await scheduler.wait(0);
    }
    return false;
  }

  /**
   * What the append rules see of this session. The ids a batch names (`idsNamedBy`) are looked up
   * in one query up front, not one query each. In a fork still copying its path, an id without a
   * row here may name an entry of the path still to copy: what the source said of it is used
   * (`CopyNeeded` asks it first), and what needs such an entry whole waits for the copy.
   */
  #view(inputs: readonly unknown[] = [], loaded?: ReadonlyMap<string, StoredEntry>): AppendView {
    const state = this.#parts.row.live();
    const { copy } = this.#parts;
    const named = new Set(idsNamedBy(inputs));
    const known = this.#parts.rows.refs([...named]);
    if (copy.copying) {
      const unknown = [...named].filter((id) => !known.has(id) && copy.refOf(id) === undefined);
      if (unknown.length > 0) throw new CopyNeeded({ ids: unknown });
    }
    /** An entry without a row here: none, or in a fork copying its path, what the source said. */
    const elsewhere = (id: string): EntryRef | undefined => {
      if (!copy.copying) return undefined;
      const ref = copy.refOf(id);
      if (ref === undefined) throw new CopyNeeded({ ids: [id] });
      return ref ?? undefined;
    };
    return {
      leafId: state.leafId,
      nextSeq: state.nextSeq,
      ref: (id): EntryRef | undefined => {
        if (named.has(id)) return known.get(id) ?? elsewhere(id);
        const node = this.#parts.rows.node(id);
        return node ? { type: node.type, parentId: node.parent_id } : elsewhere(id);
      },
      load: (id) => {
        if (named.has(id) && !known.has(id)) {
          // An entry of the path still to copy is read once it is copied.
          if (elsewhere(id)) throw new CopyNeeded({ ids: [id] });
          return undefined;
        }
        return loaded?.get(id) ?? this.#reads.getEntry(id);
      },
      onPath: (ancestorId, fromId) => {
        const ancestor = this.#parts.rows.node(ancestorId);
        const from = this.#parts.rows.node(fromId);
        if (ancestor && from) return this.#parts.paths.isAncestor(ancestor, from);
        // An entry of the path still to copy: the two are compared once it is copied.
        if (!ancestor && elsewhere(ancestorId)) throw new CopyNeeded({ ids: [ancestorId] });
        if (!from && elsewhere(fromId)) throw new CopyNeeded({ ids: [fromId] });
        return false;
      },
      conversationAt: (id) => this.#contexts.conversationAt(id),
    };
  }

  #write<T>(run: () => T): T {
    const { row, storage, sql } = this.#parts;
    const state = row.live();
    return transaction(storage, [this.#held], () => {
      const result = run();
      state.version++;
      sql`UPDATE session SET leaf_id = ${state.leafId}, stats = ${JSON.stringify(state.stats)}, version = ${state.version}`;
      return result;
    });
  }

  /**
   * Refuses (`quota_exceeded`) when `added` more bytes would take the session past its own quota;
   * past its claim on the tenant's room, the write stops for the object to ask for more. Every
   * write that stores bytes takes the session's `room` (none: no quota) from the object.
   */
  checkRoom(added: number, room: ByteLimit | undefined): void {
    if (!room) return;
    const holds = this.#parts.row.live().stats.bytes;
    if (holds + added <= room.maxBytes) return;
    if (room.quota === "claim") throw new ClaimExceeded(holds, added);
    throw quotaExceeded(
      room.quota,
      room.limit,
      `the write would take this session past its quota of ${room.limit} bytes`,
    );
  }

  /**
   * The entries of planned writes, refused as `checkRoom` refuses when the session's room cannot
   * take them all: a write's blobs are planned with it, and a write past its quotas uploads none
   * (blobs uploaded stay until the session is purged).
   */
  entriesWithin(writes: readonly PlannedWrite[], room: ByteLimit | undefined): StoredEntry[] {
    this.checkRoom(
      writes.reduce((sum, write) => sum + write.bytes, 0),
      room,
    );
    return writes.map((write) => write.entry);
  }

  /**
   * Counts `delta` bytes more (or fewer) of the session's generations' chunks in its `bytes`, which
   * the quotas count: more within its `room`. Part of the transaction that stores or drops them.
   */
  holdGenerationBytes(delta: number, room: ByteLimit | undefined): void {
    if (delta === 0) return;
    if (delta > 0) this.checkRoom(delta, room);
    const state = this.#parts.row.live();
    this.#write(() => {
      state.stats.bytes = Math.max(0, state.stats.bytes + delta);
    });
  }

  #apply(
    plan: Pick<AppendPlan, "writes" | "leafId">,
    room: ByteLimit | undefined,
    blobs?: PreparedBlobs,
  ): void {
    const state = this.#parts.row.live();
    this.checkRoom(
      plan.writes.reduce((sum, write) => sum + write.bytes, 0),
      room,
    );
    const leafSeq = this.#leafSeq(plan);
    // Stored with references to the blobs prepared for them; counted as written.
    const stored: readonly StoredWrite[] = blobs ? blobs.externalize(plan.writes) : plan.writes;
    this.#write(() => {
      this.#parts.rows.insert(stored);
      this.#parts.search.index(stored);
      for (const { entry, bytes } of plan.writes) applyEntryToStats(state.stats, entry, bytes);
      const blobBytes = stored.reduce((sum, write) => sum + (write.blobBytes ?? 0), 0);
      if (blobBytes > 0) state.stats.blobBytes = (state.stats.blobBytes ?? 0) + blobBytes;
      const last = plan.writes[plan.writes.length - 1];
      if (last) this.#parts.history.record(last.entry.seq, leafSeq);
      state.leafId = plan.leafId;
      state.nextSeq += plan.writes.length;
      state.stats.updatedAt = nowIso();
    });
    // The kept context holds the blobs' references, as a context read from the rows does.
    this.#parts.head.follow(stored, plan.leafId);
    const written = plan.writes.map((write) => write.entry);
    afterCommit(this.#parts.storage, () => this.onWritten?.(written, plan.leafId));
  }

  #planAppend(
    entries: readonly unknown[],
    options: PlanOptions,
    loaded: ReadonlyMap<string, StoredEntry> | undefined,
  ): AppendPlan {
    return planAppend(entries, this.#view(entries, loaded), options);
  }

  /**
   * What an append would write, without writing it: which of its values become blobs is read from
   * it, and whether the session's room takes it.
   */
  plannedAppend(
    entries: readonly unknown[],
    options: PlanOptions,
    loaded: ReadonlyMap<string, StoredEntry>,
  ): PlannedWrite[] {
    return this.#planAppend(entries, options, loaded).writes;
  }

  /**
   * Appends entries as planned; `mayWrite` refuses (throws) an append that writes, once its
   * replays are known and before anything is written.
   */
  appendEntries(
    entries: readonly unknown[],
    options: PlanOptions,
    room: ByteLimit | undefined,
    blobs?: PreparedBlobs,
    mayWrite?: () => void,
  ): AppendResult {
    const plan = this.#planAppend(blobs?.inputs ?? entries, options, blobs?.loaded);
    if (plan.writes.length > 0) {
      mayWrite?.();
      this.#apply(plan, room, blobs);
    }
    return { entries: plan.entries, leafId: this.#parts.row.live().leafId, created: plan.writes.length > 0 };
  }

  /**
   * A new fork's first write, in its creation's transaction: the path's first page (its head and
   * the rows above it, as the source stored them), the head, the figures and the label index of the
   * whole path (the copy brings the rest of its rows later, changing none of them), and where the
   * copy goes on. Its entries are indexed for search once the copy is done.
   */
  beginFork(sourceId: string, start: ForkStart & { page: CopiedRows; leafId: string }): void {
    const state = this.#parts.row.live();
    const { figures } = start;
    this.#write(() => {
      insertCopiedRows(this.#parts.storage.sql, this.#parts.sql, start.page);
      const head = this.#parts.rows.node(start.leafId);
      if (!head) throw new Error("the fork's first page lacks its head");
      for (const [target, label] of Object.entries(start.labels)) this.#parts.rows.setLabel(target, label);
      const { next } = start.page;
      if (next !== null) {
        if (start.hold === undefined) throw new Error("a fork with a path still to copy has no hold on it");
        this.#parts.copy.begin({
          sourceId,
          hold: start.hold,
          forkSeq: head.seq,
          entries: figures.entries,
          next,
        });
        this.#parts.copy.learn(Object.keys(start.refs), start.refs);
      }
      this.#parts.search.markPending(1, head.seq);
      this.#parts.history.record(head.seq, head.seq);
      state.leafId = head.id;
      state.nextSeq = head.seq + 1;
      state.stats.entryCount = figures.entries;
      state.stats.messageCount = figures.messages;
      // The header counts beside the path's entries (the fork's own, counted when it was created).
      state.stats.bytes = figures.bytes + (state.stats.headerBytes ?? 0);
      if (figures.blobBytes > 0) state.stats.blobBytes = figures.blobBytes;
      if (figures.preview !== undefined) state.stats.preview = figures.preview;
      if (figures.entryName) state.stats.entryName = figures.entryName;
      state.stats.updatedAt = nowIso();
      // A name an entry of the path gives is the fork's, not the one its header was given.
      this.#parts.search.indexHeader(state.header, state.stats);
    });
  }

  /**
   * Writes a page of a fork's path (as the source stored it, seqs included), the one the copy
   * asked for at `from`, and where the copy goes on: one transaction. What the session holds and
   * shows does not change: its figures counted the whole path from the start.
   */
  copyPage(from: number, page: CopiedRows): void {
    const { copy, storage, sql } = this.#parts;
    if (copy.state?.next?.seq !== from) throw new Error(`the copy does not go on at ${from}`);
    transaction(storage, [this.#held], () => {
      insertCopiedRows(storage.sql, sql, page);
      copy.advance(page.next);
    });
  }

  /**
   * The seq of the leaf a plan leaves: one of its writes, or an entry written before. In a fork
   * still copying its path, an entry of the part still to copy has no seq here yet: it is copied
   * first (`CopyNeeded`), so that the leaf's history records where the head went.
   */
  #leafSeq(plan: Pick<AppendPlan, "writes" | "leafId">): number | null {
    const { leafId } = plan;
    if (leafId === null) return null;
    const seq =
      plan.writes.find((write) => write.entry.id === leafId)?.entry.seq ?? this.#parts.rows.node(leafId)?.seq;
    if (seq !== undefined) return seq;
    const { copy } = this.#parts;
    if (copy.copying && copy.refOf(leafId) !== null) throw new CopyNeeded({ ids: [leafId] });
    return null;
  }

  /** What an import would write, without writing it (see `plannedAppend`). */
  plannedImport(
    entries: readonly unknown[],
    options: ImportOptions,
    loaded: ReadonlyMap<string, StoredEntry>,
  ): PlannedWrite[] {
    return planImport(entries, this.#view(entries, loaded), options).writes;
  }

  importEntries(
    entries: readonly unknown[],
    options: ImportOptions,
    room: ByteLimit | undefined,
    blobs?: PreparedBlobs,
  ): void {
    const inputs = blobs?.inputs ?? entries;
    if (inputs.length === 0) return;
    this.#apply(planImport(inputs, this.#view(inputs, blobs?.loaded), options), room, blobs);
  }

  setLeafId(
    targetId: string | null,
    options: LeafOptions,
    room: ByteLimit | undefined,
  ): StoredEntry<LeafEntry> {
    const { write, leafId } = planLeafMove(
      targetId,
      this.#view(targetId === null ? [] : [{ id: targetId }]),
      options,
    );
    this.#apply({ writes: [write], leafId }, room);
    return write.entry;
  }
}

/** What a write needs of the blobs prepared for it. */
export interface PreparedBlobs {
  /** The write's inputs, references read back into values. */
  readonly inputs: readonly unknown[];
  /** Entries the inputs name that hold blobs, with their values: what a replay is compared with. */
  readonly loaded: ReadonlyMap<string, StoredEntry>;
  /** The planned writes as stored: values prepared as blobs replaced by references. */
  externalize(writes: readonly PlannedWrite[]): StoredWrite[];
  /** The references of the blobs prepared for it: once it ends, see `SessionBlobs.ended`. */
  readonly refs: readonly string[];
}

/*
 * The room a write has: what the session may hold after it, and the signal that a write needs more
 * of the tenant's room than the session was granted (`QuotaChecks` in object-state.ts asks for it,
 * then the write runs again).
 */

/**
 * The most bytes a session may hold after a write, and what sets it: its own quota, or its claim
 * on the tenant's room (`claim`: a write past it asks the ledger for more before it is refused).
 */
export interface ByteLimit {
  maxBytes: number;
  quota: "maxSessionBytes" | "claim";
  limit: number;
}

/** A write needs more of the tenant's room than the session was granted: ask, then write again. */
export class ClaimExceeded extends Error {
  constructor(
    readonly holds: number,
    readonly wants: number,
  ) {
    super("the write needs a larger claim on the tenant's quota");
  }
}
