import type {
  AgentMessage,
  AppendOptions,
  AppendPlan,
  AppendResult,
  AppendView,
  AutoCompactStatus,
  ContextVersion,
  Conversation,
  EntryQuery,
  EntryRef,
  HeaderPatch,
  ImportOptions,
  LeafEntry,
  LeafOptions,
  OmittedHistory,
  SessionEntry,
  SessionHeader,
  SessionInfo,
  SessionSearchOptions,
  SessionSearchPage,
  SessionStats,
  StoredEntry,
  TreeEntry,
  TreeRow,
} from "../../core/internal";
import {
  applyEntryToStats,
  contextHead,
  emptyStats,
  fingerprint,
  formatContextVersion,
  idsNamedBy,
  NO_CONVERSATION,
  nowIso,
  parseContextVersion,
  patchHeader,
  planAppend,
  planImport,
  planLeafMove,
  SessionError,
  sessionInfo,
  startsTurn,
} from "../../core/internal";
import { quotaExceeded } from "../quotas";
import type { Sql } from "../sql";
import { sqlOf } from "../sql";
import type { CompactionPlan, CopiedRows, EntryPage, ForkSource, OmittedCount, SearchDigest } from "../types";
import { CompactionReads } from "./compaction-reads";
import type { Node, StoredWrite } from "./entry-rows";
import { EntryRows } from "./entry-rows";
import { forkSource } from "./fork-copy";
import type { KeptContext } from "./head-context";
import { HeadContext } from "./head-context";
import { LeafHistory } from "./leaf-history";
import { PathReads } from "./path-reads";
import type { PreparedBlobs } from "./prepared-blobs";
import type { ByteLimit } from "./room";
import { ClaimExceeded } from "./room";
import { hasSchema, updateSchema } from "./schema";
import { SearchIndex } from "./search-index";
import { transaction } from "./transaction";

/*
 * One session in a Durable Object's SQLite: its state (header, leaf, counts) kept in memory and in
 * the `session` row, every write applied in one transaction (the in-memory state rolls back with
 * it), and the reads the object answers. Runs inside the object only: every method is synchronous.
 */

interface SessionState {
  tenant: string;
  incarnation: string;
  header: SessionHeader;
  leafId: string | null;
  stats: SessionStats;
  version: number;
  nextSeq: number;
  autoCompaction?: AutoCompactStatus;
}

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

/** What a committed write wrote, and the head it left. */
export type WriteListener = (entries: StoredEntry[], leafId: string | null) => void;

export class SessionStore {
  readonly #storage: DurableObjectStorage;
  readonly #sql: Sql;
  readonly #rows: EntryRows;
  readonly #paths: PathReads;
  readonly #head = new HeadContext();
  readonly #search: SearchIndex;
  readonly #compaction: CompactionReads;
  readonly #history: LeafHistory;
  #state: SessionState | undefined;
  /** A transaction failed since the state was read: storage rolled back, so it is read again. */
  #stale = false;
  /** Told of every committed write (the object's watchers). */
  onWritten: WriteListener | undefined;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.#sql = sqlOf(storage.sql);
    this.#rows = new EntryRows(storage.sql, this.#sql);
    this.#paths = new PathReads(this.#rows, this.#sql);
    this.#search = new SearchIndex(storage.sql, this.#sql, this.#rows, this.#paths);
    this.#compaction = new CompactionReads(this.#rows, this.#paths, this.#sql);
    this.#history = new LeafHistory(this.#sql);
    if (hasSchema(this.#sql)) {
      updateSchema(storage.sql);
      this.#state = this.#load();
    }
  }

  #load(): SessionState | undefined {
    const row = this.#sql<{
      tenant: string;
      incarnation: string;
      header: string;
      leaf_id: string | null;
      stats: string;
      version: number;
      auto_compaction: string | null;
    }>`SELECT tenant, incarnation, header, leaf_id, stats, version, auto_compaction FROM session`.toArray()[0];
    if (!row) return undefined;
    const stats: SessionStats = JSON.parse(row.stats);
    // Sessions stored before their bytes were counted: counted once from the rows, kept from then on.
    stats.bytes ??= this.#rows.storedBytes();
    return {
      tenant: row.tenant,
      incarnation: row.incarnation,
      header: JSON.parse(row.header),
      leafId: row.leaf_id,
      stats,
      version: row.version,
      nextSeq: this.#rows.lastSeq() + 1,
      ...(row.auto_compaction ? { autoCompaction: JSON.parse(row.auto_compaction) } : {}),
    };
  }

  /** The state as stored, read again after a transaction that failed. */
  get #current(): SessionState | undefined {
    if (this.#stale) {
      this.#state = hasSchema(this.#sql) ? this.#load() : undefined;
      this.#stale = false;
    }
    return this.#state;
  }

  /**
   * Forgets what memory holds of the session, to read it again from storage: call it when a
   * transaction that wrote the session failed, as storage rolled back and memory did not.
   */
  reload(): void {
    this.#stale = true;
    this.#head.drop();
    this.#history.reset();
  }

  get exists(): boolean {
    return this.#current !== undefined;
  }

  /** The session's state; `not_found` when this object holds no session. */
  get state(): Readonly<SessionState> {
    return this.#live();
  }

  #live(): SessionState {
    const state = this.#current;
    if (!state) throw new SessionError("not_found", "session does not exist");
    return state;
  }

  /** The leaf a read starts from (the head when undefined); `not_found` when there is no session. */
  #start(leafId: string | null | undefined): string | null {
    const state = this.#live();
    return leafId === undefined ? state.leafId : leafId;
  }

  init(tenant: string, incarnation: string, header: SessionHeader): SessionInfo {
    if (this.#current) {
      throw new SessionError("already_exists", `session ${header.id} already exists`, { id: header.id });
    }
    const stats = emptyStats(header.createdAt);
    updateSchema(this.#storage.sql);
    this.#sql`INSERT INTO session (singleton, tenant, incarnation, header, leaf_id, stats, version)
      VALUES (1, ${tenant}, ${incarnation}, ${JSON.stringify(header)}, NULL, ${JSON.stringify(stats)}, 1)`;
    this.#state = { tenant, incarnation, header, leafId: null, stats, version: 1, nextSeq: 1 };
    this.#history.record(0, null);
    return this.info();
  }

  /** Forgets the in-memory state after the object's storage was deleted. */
  reset(): void {
    this.#state = undefined;
    this.#stale = false;
    this.#head.drop();
    this.#history.reset();
  }

  info(): SessionInfo {
    const state = this.state;
    const info = sessionInfo(state.header, state.stats, state.leafId);
    if (info.autoCompact) info.autoCompact.status = state.autoCompaction ?? { state: "idle" };
    return info;
  }

  /** Records where automatic compaction stands (shown in the session's info). */
  setAutoCompaction(status: AutoCompactStatus): void {
    const state = this.#live();
    state.autoCompaction = status;
    state.version++;
    this.#sql`UPDATE session SET auto_compaction = ${JSON.stringify(status)}, version = ${state.version}`;
  }

  updateHeader(patch: HeaderPatch): SessionHeader {
    const state = this.#live();
    const header = patchHeader(state.header, patch);
    this.#write(() => {
      state.header = header;
      state.stats.updatedAt = nowIso();
      this.#sql`UPDATE session SET header = ${JSON.stringify(header)}`;
    });
    return header;
  }

  // --- reading ---

  getEntry(id: string): StoredEntry | undefined {
    this.#live();
    const node = this.#rows.node(id);
    return node && this.#rows.entries([node.seq])[0];
  }

  /** The entries of these ids that hold blobs (their payloads hold references). */
  entriesHoldingBlobs(ids: readonly string[]): StoredEntry[] {
    this.#live();
    return this.#rows.entries(this.#rows.seqsHoldingBlobs(ids));
  }

  /** A page of the entries with these seqs, in order. */
  page(seqs: readonly number[]): EntryPage {
    this.#live();
    return this.#rows.page(seqs);
  }

  /** Rows of a fork's path, a page of them, as the new session writes them (see `copyRows`). */
  pathRows(seqs: readonly number[]): CopiedRows {
    this.#live();
    return this.#rows.pathRows(seqs);
  }

  entrySeqs(query: EntryQuery = {}): number[] {
    this.#live();
    return this.#rows.seqs(query);
  }

  pathSeqs(leafId?: string | null): number[] {
    return this.#paths.pathSeqs(this.#start(leafId));
  }

  /** The path `buildSessionContext` needs: what the latest compaction dropped is left out. */
  contextSeqs(leafId?: string | null): number[] {
    return this.#paths.contextSeqs(this.#start(leafId));
  }

  /** What a compaction at `leafId` reads whole and what it counts (see compaction-reads.ts). */
  compactionPlan(leafId: string, keepRecentTokens: number): CompactionPlan {
    this.#live();
    return this.#compaction.plan(leafId, keepRecentTokens);
  }

  /** Counts omitted entries from the first of `seqs` for up to `budgetMs` (see compaction-reads.ts). */
  countOmitted(seqs: readonly number[], compactionId: string | undefined, budgetMs: number): OmittedCount {
    this.#live();
    return this.#compaction.count(seqs, compactionId, budgetMs);
  }

  /** What a compaction at `leafId` reads, counted and read here at once: for work inside the object. */
  compactionPath(
    leafId: string,
    keepRecentTokens: number,
  ): { path: StoredEntry<TreeEntry>[]; omitted?: OmittedHistory } {
    const plan = this.compactionPlan(leafId, keepRecentTokens);
    const path = this.#rows.entries(plan.seqs) as StoredEntry<TreeEntry>[];
    if (plan.omitted.length === 0 || plan.after === undefined) return { path };
    const { counted } = this.countOmitted(plan.omitted, plan.compactionId, Number.POSITIVE_INFINITY);
    return { path, omitted: { ...counted, after: plan.after } };
  }

  /** The whole context path, read at once: for work inside the object. */
  contextEntries(leafId?: string | null): StoredEntry<TreeEntry>[] {
    return this.#rows.entries(this.contextSeqs(leafId)) as StoredEntry<TreeEntry>[];
  }

  /** The version of a leaf's context (the head's when undefined): what its ETag names. */
  contextVersion(leafId?: string | null): string {
    return formatContextVersion(this.#version(this.#start(leafId)).current);
  }

  #version(start: string | null): { current: ContextVersion; leaf: Node | undefined } {
    const { header, incarnation } = this.state;
    const leaf = start === null ? undefined : this.#paths.treeNode(start);
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
    const { header, leafId: head } = this.state;
    const systemPrompt = header.systemPrompt ?? "";
    const start = this.#start(leafId);
    const { current, leaf } = this.#version(start);
    const version = formatContextVersion(current);
    const previous = since === undefined ? undefined : parseContextVersion(since);
    if (previous && previous.life === current.life && previous.prompt === current.prompt) {
      const delta = this.#delta(previous, leaf);
      if (delta) {
        const { settings } = leaf ? this.#paths.settings(leaf) : this.#paths.contextPlan(null);
        return {
          kind: "delta",
          source: "delta",
          head: contextHead(systemPrompt, settings, { version, since }, "append"),
          // A delta holds no edit and no entry an edit names (see #delta): nothing to apply.
          pages: this.#paths.projectedPages(delta.seqs, delta.compactionId, new Map()),
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
    const plan = this.#paths.contextPlan(start);
    return {
      kind: "full",
      source: "built",
      head: contextHead(systemPrompt, plan.settings, extra, "messages"),
      pages: this.#paths.messagePages(plan),
    };
  }

  /**
   * What the context of `leaf` adds to the one `previous` names, when it only grew: the same
   * compaction, the old leaf on the new one's path, and no context edit reaching the part between
   * (an edit changes an earlier message). Costs the part between the two, and a look at the
   * session's edits.
   */
  #delta(
    previous: ContextVersion,
    leaf: Node | undefined,
  ): { seqs: number[]; compactionId: string | undefined } | undefined {
    if ((leaf?.last_compaction ?? 0) !== previous.compactionSeq) return undefined;
    const compactionId =
      leaf?.last_compaction == null ? undefined : this.#rows.nodeAt(leaf.last_compaction)?.id;
    if (previous.leafSeq === 0) {
      // From no leaf: everything the context holds now (no compaction, so the whole path).
      if (previous.compactionSeq !== 0) return undefined;
      const seqs = leaf ? this.#paths.pathSeqs(leaf.id) : [];
      return this.#paths.editsReach(seqs) ? undefined : { seqs, compactionId };
    }
    const from = this.#rows.nodeAt(previous.leafSeq);
    if (!from || !leaf || from.type === "leaf") return undefined;
    const seqs = this.#paths.pathAfter(from, leaf);
    // An edit changes an earlier message: the context did not only grow.
    if (!seqs || this.#paths.editsReach(seqs)) return undefined;
    return { seqs, compactionId };
  }

  lastSeq(): number {
    return this.state.nextSeq - 1;
  }

  /** The model the context at `entryId` names (its last model change or reply); `not_found` without it. */
  modelAt(entryId: string): { provider: string; modelId: string } | null {
    this.#live();
    return this.#paths.settings(this.#paths.treeNode(entryId)).settings.model;
  }

  /** The leaf as it stood at `asOf` (an ISO 8601 time; see leaf-history.ts). */
  leafAt(asOf: string): string | null {
    this.#live();
    const seq = this.#history.leafSeqAt(Date.parse(asOf), asOf);
    return seq === null ? null : (this.#rows.nodeAt(seq)?.id ?? null);
  }

  /** When the session's history starts (what `asOf` can go back to), as ISO 8601. */
  historyStartsAt(): string {
    this.#live();
    return new Date(this.#history.startsAt() ?? Date.parse(this.state.header.createdAt)).toISOString();
  }

  /** Entries with `after < seq <= bound`, a page of at most `limit`: what a watcher replays. */
  entriesAfter(after: number, bound: number, limit: number): StoredEntry[] {
    this.#live();
    return this.#rows.after(after, bound, limit);
  }

  /** The head's context from memory, built when missing; undefined when too large to keep. */
  #keptHead(head: string): KeptContext | undefined {
    return this.#head.get(head, () => {
      const plan = this.#paths.contextPlan(head);
      return {
        compactionId: plan.compaction?.id,
        settings: plan.settings,
        edits: plan.edits,
        pages: this.#paths.messagePages(plan),
      };
    });
  }

  /**
   * The conversation a provider's message appended under `entryId` continues: the context's last
   * turn (read from its end) and its model. No entry of that id: none.
   */
  #conversationAt(entryId: string): Conversation {
    const node = this.#rows.node(entryId);
    if (!node || node.type === "leaf") return NO_CONVERSATION;
    const kept = entryId === this.state.leafId ? this.#keptHead(entryId) : undefined;
    if (kept) {
      const messages: AgentMessage[] = [];
      for (let i = kept.pieces.length - 1; i >= 0; i--) {
        const message = JSON.parse(kept.pieces[i] as string) as AgentMessage;
        messages.push(message);
        if (startsTurn(message)) break;
      }
      return { messages: messages.reverse(), model: kept.settings.model };
    }
    const plan = this.#paths.contextPlan(entryId);
    return { messages: this.#paths.lastTurn(plan), model: plan.settings.model };
  }

  treeRows(): { rows: TreeRow[]; labels: Record<string, string> } {
    this.#live();
    return { rows: this.#rows.treeRows(), labels: this.#rows.labels() };
  }

  labels(): Record<string, string> {
    this.#live();
    return this.#rows.labels();
  }

  /**
   * Entries matching a search, with whether each is on the current branch. What is still to be
   * indexed is indexed first, so a search finds everything written before it.
   */
  search(options: SessionSearchOptions): SessionSearchPage {
    const { leafId } = this.state;
    while (this.#search.backfillPending) this.#storage.transactionSync(() => this.#search.backfillStep());
    return this.#search.search(options, leafId);
  }

  /** What the tenant's directory searches of this session. */
  searchDigest(): SearchDigest {
    this.#live();
    return this.#search.digest();
  }

  /** Whether entries written before the search index existed are still to be indexed. */
  get searchBackfillPending(): boolean {
    return this.exists && this.#search.backfillPending;
  }

  /** Indexes one bounded step of them; true when more remain. */
  searchBackfillStep(): boolean {
    this.#live();
    return this.#storage.transactionSync(() => this.#search.backfillStep());
  }

  forkSource(targetId: string, position: LeafOptions["position"]): ForkSource {
    const { header } = this.state;
    const source = forkSource(this.#rows, this.#paths, this.#sql, targetId, position);
    return { ...source, header, name: this.info().name };
  }

  // --- writing ---

  /**
   * What the append rules see of this session. The ids a batch names (`idsNamedBy`) are looked up
   * in one query up front, not one query each.
   */
  #view(inputs: readonly unknown[] = [], loaded?: ReadonlyMap<string, StoredEntry>): AppendView {
    const state = this.state;
    const named = new Set(idsNamedBy(inputs));
    const known = this.#rows.refs([...named]);
    return {
      leafId: state.leafId,
      nextSeq: state.nextSeq,
      ref: (id): EntryRef | undefined => {
        if (named.has(id)) return known.get(id);
        const node = this.#rows.node(id);
        return node && { type: node.type, parentId: node.parent_id };
      },
      load: (id) => (named.has(id) && !known.has(id) ? undefined : (loaded?.get(id) ?? this.getEntry(id))),
      conversationAt: (id) => this.#conversationAt(id),
    };
  }

  #write<T>(run: () => T): T {
    const state = this.#live();
    return transaction(this.#storage, [this], () => {
      const result = run();
      state.version++;
      this
        .#sql`UPDATE session SET leaf_id = ${state.leafId}, stats = ${JSON.stringify(state.stats)}, version = ${state.version}`;
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
    const holds = this.#live().stats.bytes;
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
    const state = this.#live();
    this.checkRoom(
      plan.writes.reduce((sum, write) => sum + write.bytes, 0),
      room,
    );
    // Stored with references to the blobs prepared for them; counted as written.
    const stored: readonly StoredWrite[] = blobs ? blobs.externalize(plan.writes) : plan.writes;
    this.#write(() => {
      this.#rows.insert(stored);
      this.#search.index(stored);
      for (const { entry, bytes } of plan.writes) applyEntryToStats(state.stats, entry, bytes);
      const blobBytes = stored.reduce((sum, write) => sum + (write.blobBytes ?? 0), 0);
      if (blobBytes > 0) state.stats.blobBytes = (state.stats.blobBytes ?? 0) + blobBytes;
      const last = plan.writes[plan.writes.length - 1];
      if (last) this.#history.record(last.entry.seq, this.#leafSeq(plan));
      state.leafId = plan.leafId;
      state.nextSeq += plan.writes.length;
      state.stats.updatedAt = nowIso();
    });
    this.#head.follow(plan.writes, plan.leafId);
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
    return { entries: plan.entries, leafId: this.state.leafId, created: plan.writes.length > 0 };
  }

  /**
   * Writes rows of a fork's path as its source stored them (`pathRows`), seqs included, after those
   * copied before: entries that were valid when written are moved, not read and written again.
   * Only what the session's figures need of a payload is read (the first user message, a name, a
   * label).
   */
  copyRows(page: CopiedRows, room: ByteLimit | undefined): void {
    const state = this.#live();
    const { first, last } = page;
    if (first === undefined || last === undefined) return;
    // Seqs only grow: a copy keeps the source's (with the gaps its other branches leave).
    if (first < state.nextSeq) {
      throw new SessionError(
        "invalid_request",
        `a copy continues after seq ${state.nextSeq - 1}, not at ${first}`,
      );
    }
    this.checkRoom(page.bytes, room);
    this.#write(() => {
      this.#rows.insertCopied(page);
      const chunked = new Map(page.chunked.map((row) => [row.seq, row.bytes]));
      for (const row of this.#rows.copiedFigures(first, last.seq)) {
        // What the figures read of an entry is in its payload only for labels, names and the
        // first user message.
        let entry = { type: row.type, message: { role: row.role } } as SessionEntry;
        if (row.body !== null) entry = JSON.parse(row.body) as SessionEntry;
        else if (row.role === "user" && state.stats.preview === undefined)
          entry = JSON.parse(this.#rows.bodies([row.seq])[0] ?? "{}") as SessionEntry;
        if (entry.type === "label") this.#rows.setLabel(entry.targetId, entry.label);
        applyEntryToStats(state.stats, entry, (chunked.get(row.seq) ?? row.bytes) + row.blob_bytes);
        if (row.blob_bytes > 0) state.stats.blobBytes = (state.stats.blobBytes ?? 0) + row.blob_bytes;
      }
      this.#search.markPending(first, last.seq);
      this.#history.record(last.seq, last.seq);
      state.leafId = last.id;
      state.nextSeq = last.seq + 1;
      state.stats.updatedAt = nowIso();
    });
    // The copy's head context is built when it is first read.
    this.#head.drop();
  }

  /** The seq of the leaf a plan leaves: one of its writes, or an entry written before. */
  #leafSeq(plan: Pick<AppendPlan, "writes" | "leafId">): number | null {
    const { leafId } = plan;
    if (leafId === null) return null;
    return (
      plan.writes.find((write) => write.entry.id === leafId)?.entry.seq ??
      this.#rows.node(leafId)?.seq ??
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
