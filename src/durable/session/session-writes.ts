import type {
  AppendOptions,
  AppendPlan,
  AppendResult,
  AppendView,
  AutoCompactStatus,
  EntryRef,
  HeaderPatch,
  ImportOptions,
  LeafEntry,
  LeafOptions,
  SessionEntry,
  SessionHeader,
  StoredEntry,
} from "../../core/internal";
import {
  applyEntryToStats,
  idsNamedBy,
  nowIso,
  patchHeader,
  planAppend,
  planImport,
  planLeafMove,
  SessionError,
} from "../../core/internal";
import { quotaExceeded } from "../quotas";
import type { Reloadable } from "../transaction";
import { transaction } from "../transaction";
import type { CopiedRows } from "../types";
import type { ContextReads } from "./context-reads";
import { insertCopiedRows } from "./copied-rows";
import type { StoredWrite } from "./entry-rows";
import type { PreparedBlobs } from "./prepared-blobs";
import type { ByteLimit } from "./room";
import { ClaimExceeded } from "./room";
import type { SessionReads } from "./session-reads";
import type { StoreParts } from "./store-parts";

/*
 * A session's writes: appends and imports (planned by core's rules against a view of the
 * session), leaf moves, a fork's copied rows, the header, and indexing for search what a large
 * write left pending. Each write is one transaction with the session row; should it fail, the
 * session held in memory reads itself again (`held`). Listeners hear of a write once committed.
 */

/** What a committed write wrote, and the head it left. */
export type WriteListener = (entries: StoredEntry[], leafId: string | null) => void;

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

  updateHeader(patch: HeaderPatch): SessionHeader {
    const { row, sql } = this.#parts;
    const state = row.live();
    const header = patchHeader(state.header, patch);
    this.#write(() => {
      state.header = header;
      state.stats.updatedAt = nowIso();
      sql`UPDATE session SET header = ${JSON.stringify(header)}`;
    });
    return header;
  }

  /** Whether entries written before the search index existed are still to be indexed. */
  get searchBackfillPending(): boolean {
    return this.#parts.row.current !== undefined && this.#parts.search.backfillPending;
  }

  /** Indexes one bounded step of them; true when more remain. */
  searchBackfillStep(): boolean {
    this.#parts.row.live();
    return this.#parts.storage.transactionSync(() => this.#parts.search.backfillStep());
  }

  /**
   * What the append rules see of this session. The ids a batch names (`idsNamedBy`) are looked up
   * in one query up front, not one query each.
   */
  #view(inputs: readonly unknown[] = [], loaded?: ReadonlyMap<string, StoredEntry>): AppendView {
    const state = this.#parts.row.live();
    const named = new Set(idsNamedBy(inputs));
    const known = this.#parts.rows.refs([...named]);
    return {
      leafId: state.leafId,
      nextSeq: state.nextSeq,
      ref: (id): EntryRef | undefined => {
        if (named.has(id)) return known.get(id);
        const node = this.#parts.rows.node(id);
        return node && { type: node.type, parentId: node.parent_id };
      },
      load: (id) =>
        named.has(id) && !known.has(id) ? undefined : (loaded?.get(id) ?? this.#reads.getEntry(id)),
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
    // Stored with references to the blobs prepared for them; counted as written.
    const stored: readonly StoredWrite[] = blobs ? blobs.externalize(plan.writes) : plan.writes;
    this.#write(() => {
      this.#parts.rows.insert(stored);
      this.#parts.search.index(stored);
      for (const { entry, bytes } of plan.writes) applyEntryToStats(state.stats, entry, bytes);
      const blobBytes = stored.reduce((sum, write) => sum + (write.blobBytes ?? 0), 0);
      if (blobBytes > 0) state.stats.blobBytes = (state.stats.blobBytes ?? 0) + blobBytes;
      const last = plan.writes[plan.writes.length - 1];
      if (last) this.#parts.history.record(last.entry.seq, this.#leafSeq(plan));
      state.leafId = plan.leafId;
      state.nextSeq += plan.writes.length;
      state.stats.updatedAt = nowIso();
    });
    this.#parts.head.follow(plan.writes, plan.leafId);
    this.onWritten?.(
      plan.writes.map((write) => write.entry),
      plan.leafId,
    );
  }

  #planAppend(
    entries: readonly unknown[],
    options: AppendOptions & { validated?: boolean },
    loaded: ReadonlyMap<string, StoredEntry> | undefined,
  ): AppendPlan {
    return planAppend(entries, this.#view(entries, loaded), options);
  }

  /** What an append would write, without writing it: which of its values become blobs is read from it. */
  plannedAppend(
    entries: readonly unknown[],
    options: AppendOptions & { validated?: boolean },
    loaded: ReadonlyMap<string, StoredEntry>,
  ): StoredEntry[] {
    return this.#planAppend(entries, options, loaded).writes.map((write) => write.entry);
  }

  appendEntries(
    entries: readonly unknown[],
    options: AppendOptions & { validated?: boolean },
    room: ByteLimit | undefined,
    blobs?: PreparedBlobs,
  ): AppendResult {
    const plan = this.#planAppend(blobs?.inputs ?? entries, options, blobs?.loaded);
    if (plan.writes.length > 0) this.#apply(plan, room, blobs);
    return { entries: plan.entries, leafId: this.#parts.row.live().leafId, created: plan.writes.length > 0 };
  }

  /**
   * Writes rows of a fork's path as its source stored them (`pathRows`), seqs included, after those
   * copied before: entries that were valid when written are moved, not read and written again.
   * Only what the session's figures need of a payload is read (the first user message, a name, a
   * label).
   */
  copyRows(page: CopiedRows, room: ByteLimit | undefined): void {
    const state = this.#parts.row.live();
    const { first, last } = page;
    if (first === undefined || last === undefined) return;
    // Seqs only grow: a copy keeps the source's (with the gaps its other branches leave).
    if (first < state.nextSeq) {
      throw new SessionError(
        "invalid_request",
        `a copy continues after seq ${state.nextSeq - 1}, not at ${first}`,
      );
    }
    // What the page adds to the session's size: payloads and their blobs' values.
    this.checkRoom(
      page.figures.reduce((sum, row) => sum + row.bytes + row.blob_bytes, 0),
      room,
    );
    this.#write(() => {
      insertCopiedRows(this.#parts.storage.sql, this.#parts.sql, page);
      for (const row of page.figures) {
        // What the figures read of an entry is in its payload only for labels, names and the
        // first user message.
        let entry = { type: row.type, message: { role: row.role } } as SessionEntry;
        if (row.body !== null) entry = JSON.parse(row.body) as SessionEntry;
        else if (row.role === "user" && state.stats.preview === undefined)
          entry = JSON.parse(this.#parts.rows.bodies([row.seq])[0] ?? "{}") as SessionEntry;
        if (entry.type === "label") this.#parts.rows.setLabel(entry.targetId, entry.label);
        applyEntryToStats(state.stats, entry, row.bytes + row.blob_bytes);
        if (row.blob_bytes > 0) state.stats.blobBytes = (state.stats.blobBytes ?? 0) + row.blob_bytes;
      }
      this.#parts.search.markPending(first, last.seq);
      this.#parts.history.record(last.seq, last.seq);
      state.leafId = last.id;
      state.nextSeq = last.seq + 1;
      state.stats.updatedAt = nowIso();
    });
    // The copy's head context is built when it is first read.
    this.#parts.head.drop();
  }

  /** The seq of the leaf a plan leaves: one of its writes, or an entry written before. */
  #leafSeq(plan: Pick<AppendPlan, "writes" | "leafId">): number | null {
    const { leafId } = plan;
    if (leafId === null) return null;
    return (
      plan.writes.find((write) => write.entry.id === leafId)?.entry.seq ??
      this.#parts.rows.node(leafId)?.seq ??
      null
    );
  }

  /** What an import would write, without writing it (see `plannedAppend`). */
  plannedImport(
    entries: readonly unknown[],
    options: ImportOptions,
    loaded: ReadonlyMap<string, StoredEntry>,
  ): StoredEntry[] {
    return planImport(entries, this.#view(entries, loaded), options).writes.map((write) => write.entry);
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
