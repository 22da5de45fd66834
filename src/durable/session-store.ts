import type {
  AppendOptions,
  AppendPlan,
  AppendResult,
  AppendView,
  AutoCompactStatus,
  CompactionEntry,
  EntryQuery,
  EntryRef,
  EntryType,
  ForkPathEntry,
  HeaderPatch,
  ImportOptions,
  LeafEntry,
  LeafOptions,
  PlannedWrite,
  SessionContext,
  SessionEntry,
  SessionHeader,
  SessionInfo,
  SessionStats,
  StoredEntry,
  TreeEntry,
  TreeRow,
} from "../core";
import {
  applyEntryToStats,
  deriveState,
  entryPage,
  headFor,
  nonBlank,
  nowIso,
  patchHeader,
  planAppend,
  planImport,
  planLeafMove,
  projectEntries,
  SessionError,
  sessionInfo,
  sessionName,
} from "../core";
import type { Sql } from "./sql";
import { migrate, sqlOf } from "./sql";

/*
 * One session in a Durable Object's SQLite. Entries are rows keyed by `seq`; a row keeps, beside
 * the entry's JSON, what walking the tree needs without payloads: its parent's seq, its depth, and
 * the seq of the latest compaction, thinking-level, model and active-tools entry on its path. With
 * those, buildContext on a compacted session reads only the kept part of the path plus three
 * entries, however long the history.
 */

const MIGRATIONS = [
  `
  CREATE TABLE session (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    tenant TEXT NOT NULL,
    incarnation TEXT NOT NULL,
    header TEXT NOT NULL,
    leaf_id TEXT,
    stats TEXT NOT NULL,
    version INTEGER NOT NULL
  );
  CREATE TABLE entries (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    parent_id TEXT,
    parent_seq INTEGER,
    type TEXT NOT NULL,
    role TEXT,
    timestamp TEXT NOT NULL,
    depth INTEGER,
    last_compaction INTEGER,
    last_thinking INTEGER,
    last_model INTEGER,
    last_tools INTEGER,
    body TEXT,
    chunks INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX entries_by_type ON entries (type, seq);
  CREATE TABLE entry_chunks (
    seq INTEGER NOT NULL,
    n INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (seq, n)
  );
  CREATE TABLE labels (target_id TEXT PRIMARY KEY, label TEXT NOT NULL)
  `,
  `ALTER TABLE session ADD COLUMN auto_compaction TEXT`,
];

/** Payloads up to this many UTF-8 bytes sit in the row; larger ones in chunks (SQLite rows cap at 2 MB). */
const INLINE_BYTES = 512 * 1024;
const CHUNK_BYTES = 1024 * 1024;
/** Entries whose payloads one query reads. */
const READ_BATCH = 256;
/**
 * Characters of entry JSON one page carries: RPC values are capped at 32 MiB, so long paths and
 * large entries cross in several pages (a page always holds at least one entry).
 */
const PAGE_CHARS = 8 * 1024 * 1024;
/**
 * Characters of projected messages kept in memory for the context at the head. Agents build the
 * context at the head after every turn: kept, and grown entry by entry as appends arrive, it
 * costs nothing to rebuild. Larger contexts are read from storage each time.
 */
const CONTEXT_CACHE_CHARS = 6 * 1024 * 1024;

interface Node {
  seq: number;
  type: EntryType;
  parent_id: string | null;
  depth: number | null;
  last_compaction: number | null;
  last_thinking: number | null;
  last_model: number | null;
  last_tools: number | null;
  [key: string]: SqlStorageValue;
}

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

/** Entries read in order until the page is full; `rest` are the seqs still to read. */
export interface EntryPage {
  entries: StoredEntry[];
  rest: number[];
}

export interface ContextPlan {
  /** The latest compaction on the path: it projects first (its summary and retained tail). */
  compaction?: StoredEntry<CompactionEntry>;
  /** The entries projected after it, in order: the kept part, then what follows the compaction. */
  seqs: number[];
  state: Omit<SessionContext, "systemPrompt" | "messages">;
  systemPrompt?: string;
}

type DerivedState = Omit<SessionContext, "systemPrompt" | "messages">;

/**
 * buildContext's answer from the object: the settings, and the messages either whole (the JSON of
 * each, comma-separated: the inside of the array) or, when they are too many for one answer, as
 * a plan to read and project in pages.
 */
export interface ContextAnswer {
  systemPrompt?: string;
  state: DerivedState;
  messages?: string;
  plan?: Pick<ContextPlan, "compaction" | "seqs">;
}

/** The context at the head, kept while the head only grows (see CONTEXT_CACHE_CHARS). */
interface HeadContext {
  leafId: string;
  compactionId: string | undefined;
  pieces: string[];
  chars: number;
  state: DerivedState;
  joined: string | undefined;
}

export interface ForkSource {
  /** The head of the fork (the target, or its parent for `before`). */
  leafId: string | null;
  /** Seqs of the path root → leaf, to copy in chunks. */
  seqs: number[];
  /** Light path entries, for `forkExtras`. */
  path: ForkPathEntry[];
  labels: Record<string, string>;
  header: SessionHeader;
  name: string | undefined;
}

const ENTRY_COLUMN_LIST = [
  "seq",
  "id",
  "parent_id",
  "parent_seq",
  "type",
  "role",
  "timestamp",
  "depth",
  "last_compaction",
  "last_thinking",
  "last_model",
  "last_tools",
  "body",
  "chunks",
] as const;
const ENTRY_COLUMNS = ENTRY_COLUMN_LIST.join(", ");

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class SessionStore {
  readonly #storage: DurableObjectStorage;
  readonly #sql: Sql;
  #state: SessionState | undefined;
  #head: HeadContext | undefined;
  /** A head whose context was found too large to keep (so it is not read twice each time). */
  #headTooLarge: string | undefined;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.#sql = sqlOf(storage.sql);
    // An object that never held a session gets no tables: probing unknown ids stores nothing.
    const initialized = this
      .#sql`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`.toArray();
    if (initialized.length > 0) {
      migrate(storage.sql, MIGRATIONS);
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
    const last = this.#sql<{ seq: number | null }>`SELECT max(seq) AS seq FROM entries`.one().seq ?? 0;
    return {
      tenant: row.tenant,
      incarnation: row.incarnation,
      header: JSON.parse(row.header),
      leafId: row.leaf_id,
      stats: JSON.parse(row.stats),
      version: row.version,
      nextSeq: last + 1,
      ...(row.auto_compaction ? { autoCompaction: JSON.parse(row.auto_compaction) } : {}),
    };
  }

  #require(): void {
    this.#live();
  }

  get exists(): boolean {
    return this.#state !== undefined;
  }

  /** The session's state; `not_found` when this object holds no session. */
  get state(): Readonly<SessionState> {
    return this.#live();
  }

  #live(): SessionState {
    if (!this.#state) throw new SessionError("not_found", "session does not exist");
    return this.#state;
  }

  init(tenant: string, incarnation: string, header: SessionHeader): SessionInfo {
    if (this.#state) {
      throw new SessionError("already_exists", `session ${header.id} already exists`, { id: header.id });
    }
    const stats: SessionStats = { entryCount: 0, messageCount: 0, updatedAt: header.createdAt };
    migrate(this.#storage.sql, MIGRATIONS);
    this.#sql`INSERT INTO session (singleton, tenant, incarnation, header, leaf_id, stats, version)
      VALUES (1, ${tenant}, ${incarnation}, ${JSON.stringify(header)}, NULL, ${JSON.stringify(stats)}, 1)`;
    this.#state = { tenant, incarnation, header, leafId: null, stats, version: 1, nextSeq: 1 };
    return this.info();
  }

  /** Forgets the in-memory state after the object's storage was deleted. */
  reset(): void {
    this.#state = undefined;
    this.#dropHead();
  }

  /** Forgets the kept head context (and what was known of its size). */
  #dropHead(): void {
    this.#head = undefined;
    this.#headTooLarge = undefined;
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

  #node(id: string): Node | undefined {
    return this
      .#sql<Node>`SELECT seq, type, parent_id, depth, last_compaction, last_thinking, last_model, last_tools
      FROM entries WHERE id = ${id}`.toArray()[0];
  }

  #treeNode(id: string): Node {
    // A session never created (or deleted) has no entries table to look in.
    this.#live();
    const node = this.#node(id);
    if (!node || node.type === "leaf")
      throw new SessionError("not_found", `entry ${id} does not exist`, { id });
    return node;
  }

  /** Payload JSON of each seq, in the order asked, read in bounded batches until `budget` characters. */
  #bodies(seqs: readonly number[], budget = Number.POSITIVE_INFINITY): string[] {
    const out: string[] = [];
    let size = 0;
    for (let i = 0; i < seqs.length && size < budget; i += READ_BATCH) {
      const batch = seqs.slice(i, i + READ_BATCH);
      const rows = new Map<number, { body: string | null; chunks: number }>();
      for (const row of this.#sql<{ seq: number; body: string | null; chunks: number }>`
        SELECT seq, body, chunks FROM entries WHERE seq IN (SELECT value FROM json_each(${JSON.stringify(batch)}))`) {
        rows.set(row.seq, row);
      }
      for (const seq of batch) {
        const row = rows.get(seq);
        if (!row) throw new Error(`entry row ${seq} is missing`);
        if (size >= budget) break;
        const body = row.body ?? this.#chunked(seq);
        size += body.length;
        out.push(body);
      }
    }
    return out;
  }

  #chunked(seq: number): string {
    const parts = this.#sql<{
      data: ArrayBuffer;
    }>`SELECT data FROM entry_chunks WHERE seq = ${seq} ORDER BY n`.toArray();
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.data.byteLength, 0));
    let offset = 0;
    for (const part of parts) {
      bytes.set(new Uint8Array(part.data), offset);
      offset += part.data.byteLength;
    }
    return decoder.decode(bytes);
  }

  #entries(seqs: readonly number[], budget?: number): StoredEntry[] {
    const bodies = this.#bodies(seqs, budget);
    return bodies.map((body, i) => {
      const entry = JSON.parse(body) as StoredEntry;
      entry.seq = seqs[i] as number;
      return entry;
    });
  }

  getEntry(id: string): StoredEntry | undefined {
    this.#require();
    const node = this.#node(id);
    return node && this.#entries([node.seq])[0];
  }

  /** A page of the entries with these seqs, in order. */
  page(seqs: readonly number[]): EntryPage {
    this.#require();
    const entries = this.#entries(seqs, PAGE_CHARS);
    return { entries, rest: seqs.slice(entries.length) };
  }

  entrySeqs(query: EntryQuery = {}): number[] {
    this.#require();
    const { after, limit, types } = entryPage(query);
    const rows = types
      ? this.#sql<{ seq: number }>`SELECT seq FROM entries
          WHERE seq > ${after} AND type IN (SELECT value FROM json_each(${JSON.stringify([...types])}))
          ORDER BY seq LIMIT ${limit}`
      : this.#sql<{ seq: number }>`SELECT seq FROM entries WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`;
    return rows.toArray().map((r) => r.seq);
  }

  /** Seqs (with depths) from `seq` up towards the root, stopping below `minDepth`: ids only, no payloads. */
  #walk(seq: number, minDepth = 0): Array<{ seq: number; depth: number }> {
    return this.#sql<{ seq: number; depth: number }>`
      WITH RECURSIVE path(seq, parent_seq, depth) AS (
        SELECT seq, parent_seq, depth FROM entries WHERE seq = ${seq}
        UNION ALL
        SELECT e.seq, e.parent_seq, e.depth FROM path JOIN entries e ON e.seq = path.parent_seq
        WHERE e.depth >= ${minDepth}
      )
      SELECT seq, depth FROM path`.toArray();
  }

  #start(leafId: string | null | undefined): string | null {
    return leafId === undefined ? this.state.leafId : leafId;
  }

  /** Seqs of the path root → leaf (on a path, seq grows from parent to child). */
  pathSeqs(leafId?: string | null): number[] {
    const start = this.#start(leafId);
    if (start === null) return [];
    return this.#walk(this.#treeNode(start).seq)
      .map((s) => s.seq)
      .reverse();
  }

  /**
   * The path buildContext needs: with a compaction, only its kept part (from `firstKeptEntryId`
   * when that is on the path, else from the compaction) and the latest thinking, model and tools
   * entries before it; without one, the whole path.
   */
  contextSeqs(leafId?: string | null): number[] {
    const start = this.#start(leafId);
    if (start === null) return [];
    const leaf = this.#treeNode(start);
    const region = this.#compactedRegion(leaf);
    if (!region) return this.pathSeqs(start);
    const seqs = new Set(region.path.map((s) => s.seq));
    for (const seq of [leaf.last_thinking, leaf.last_model, leaf.last_tools]) if (seq !== null) seqs.add(seq);
    return [...seqs].sort((a, b) => a - b);
  }

  /**
   * What buildContext keeps of a path with a compaction: the latest compaction, and the path from
   * its first kept entry (when that is on the path; else from the compaction) to the leaf, root
   * first, with depths. Ids only; costs what the kept part costs.
   */
  #compactedRegion(
    leaf: Node,
  ):
    | { compaction: StoredEntry<CompactionEntry>; depth: number; path: Array<{ seq: number; depth: number }> }
    | undefined {
    if (leaf.last_compaction === null) return undefined;
    const [compaction] = this.#entries([leaf.last_compaction]) as [StoredEntry<CompactionEntry>];
    const depth = this.#sql<{ depth: number }>`SELECT depth FROM entries WHERE seq = ${compaction.seq}`.one()
      .depth;
    let walked = this.#walk(leaf.seq, depth);
    const firstKept =
      compaction.retainedTail || compaction.firstKeptEntryId === undefined
        ? undefined
        : this.#node(compaction.firstKeptEntryId);
    if (firstKept && firstKept.depth !== null && firstKept.depth < depth) {
      const wider = this.#walk(leaf.seq, firstKept.depth);
      if (wider[wider.length - 1]?.seq === firstKept.seq) walked = wider;
    }
    return { compaction, depth, path: walked.reverse() };
  }

  /**
   * buildContext in projection order, without payloads but the compaction's: which entries to
   * project after the latest compaction (or the whole path without one), and the settings derived
   * from the latest thinking, model and tools entries on the path. Costs what the kept part costs.
   */
  contextPlan(leafId?: string | null): ContextPlan {
    const { header } = this.state;
    const systemPrompt = header.systemPrompt === undefined ? {} : { systemPrompt: header.systemPrompt };
    const start = this.#start(leafId);
    if (start === null) return { seqs: [], state: deriveState([]), ...systemPrompt };
    const leaf = this.#treeNode(start);
    const settings = [leaf.last_thinking, leaf.last_model, leaf.last_tools].filter(
      (seq): seq is number => seq !== null,
    );
    const state = deriveState(this.#entries(settings.sort((a, b) => a - b)) as TreeEntry[]);
    const region = this.#compactedRegion(leaf);
    if (!region) return { seqs: this.pathSeqs(start), state, ...systemPrompt };
    // The compaction projects first; then the kept part before it and everything after it.
    const seqs = region.path.filter((s) => s.depth !== region.depth).map((s) => s.seq);
    return { compaction: region.compaction, seqs, state, ...systemPrompt };
  }

  /** buildContext for a leaf (the head when undefined): whole when it fits, else as a plan. */
  context(leafId?: string | null): ContextAnswer {
    const { header, leafId: head } = this.state;
    const systemPrompt = header.systemPrompt === undefined ? {} : { systemPrompt: header.systemPrompt };
    if (head !== null && (leafId === undefined || leafId === head)) {
      const cached = this.#headContext(head);
      if (cached) {
        cached.joined ??= cached.pieces.join(",");
        return { ...systemPrompt, state: cached.state, messages: cached.joined };
      }
    }
    const { compaction, seqs, state } = this.contextPlan(leafId);
    return { ...systemPrompt, state, plan: compaction ? { compaction, seqs } : { seqs } };
  }

  /** The kept context at the head, built from storage when missing (if it is small enough to keep). */
  #headContext(leafId: string): HeadContext | undefined {
    if (this.#head?.leafId === leafId) return this.#head;
    if (this.#headTooLarge === leafId) return undefined;
    const { compaction, seqs, state } = this.contextPlan(leafId);
    const compactionId = compaction?.id;
    const pieces = compaction ? projectEntries([compaction], compactionId).map((m) => JSON.stringify(m)) : [];
    let chars = pieces.reduce((n, p) => n + p.length, 0);
    for (let rest = seqs; rest.length > 0 && chars <= CONTEXT_CACHE_CHARS; ) {
      const page = this.#entries(rest, PAGE_CHARS) as TreeEntry[];
      for (const message of projectEntries(page, compactionId)) {
        const piece = JSON.stringify(message);
        pieces.push(piece);
        chars += piece.length;
      }
      rest = rest.slice(page.length);
    }
    if (chars > CONTEXT_CACHE_CHARS) {
      this.#headTooLarge = leafId;
      return undefined;
    }
    this.#head = { leafId, compactionId, pieces, chars, state, joined: undefined };
    return this.#head;
  }

  /**
   * Keeps the head context current after a write: entries appended under the head extend it;
   * anything else (a compaction, a branch, a move) drops it, to be rebuilt when next asked.
   */
  #followHead(writes: readonly PlannedWrite[], leafId: string | null): void {
    const head = this.#head;
    if (!head) return;
    for (const { entry } of writes) {
      if (entry.type === "leaf") {
        if (entry.targetId === head.leafId) continue;
      } else if (entry.parentId === head.leafId && entry.type !== "compaction") {
        for (const message of projectEntries([entry], head.compactionId)) {
          const piece = JSON.stringify(message);
          head.pieces.push(piece);
          head.chars += piece.length;
        }
        head.state = deriveState([entry], head.state);
        head.leafId = entry.id;
        head.joined = undefined;
        continue;
      }
      this.#head = undefined;
      return;
    }
    if (head.leafId !== leafId || head.chars > CONTEXT_CACHE_CHARS) this.#head = undefined;
  }

  /** The whole (pruned) context path, read at once: for checks inside the object. */
  contextEntries(leafId?: string | null): StoredEntry<TreeEntry>[] {
    return this.#entries(this.contextSeqs(leafId)) as StoredEntry<TreeEntry>[];
  }

  treeRows(): { rows: TreeRow[]; labels: Record<string, string> } {
    this.#require();
    const rows: TreeRow[] = [];
    for (const row of this.#sql<{
      id: string;
      parent_id: string | null;
      type: string;
      timestamp: string;
      role: string | null;
    }>`
      SELECT id, parent_id, type, timestamp, role FROM entries WHERE type != 'leaf' ORDER BY seq`) {
      const node: TreeRow = {
        id: row.id,
        parentId: row.parent_id,
        type: row.type as TreeRow["type"],
        timestamp: row.timestamp,
      };
      if (row.role !== null) node.role = row.role;
      rows.push(node);
    }
    return { rows, labels: this.getLabels() };
  }

  getLabel(id: string): string | undefined {
    this.#require();
    return this.#sql<{ label: string }>`SELECT label FROM labels WHERE target_id = ${id}`.toArray()[0]?.label;
  }

  getLabels(): Record<string, string> {
    this.#require();
    const labels: Record<string, string> = {};
    for (const row of this.#sql<{ target_id: string; label: string }>`SELECT target_id, label FROM labels`) {
      labels[row.target_id] = row.label;
    }
    return labels;
  }

  getName(): string | undefined {
    const state = this.state;
    return sessionName(state.header, state.stats);
  }

  forkSource(targetId: string, position: LeafOptions["position"]): ForkSource {
    const state = this.state;
    const leafId = headFor(targetId, this.getEntry(targetId), position);
    const seqs = this.pathSeqs(leafId);
    const path: ForkPathEntry[] = [];
    const rows = this.#sql<{ seq: number; id: string; type: string }>`
      SELECT seq, id, type FROM entries WHERE seq IN (SELECT value FROM json_each(${JSON.stringify(seqs)})) ORDER BY seq`.toArray();
    const named = rows.filter((r) => r.type === "label" || r.type === "session_info").map((r) => r.seq);
    const payloads = new Map(this.#entries(named).map((e) => [e.seq, e]));
    for (const row of rows) {
      const entry = payloads.get(row.seq);
      if (entry?.type === "label")
        path.push({ id: row.id, type: row.type, targetId: entry.targetId, label: entry.label });
      else if (entry?.type === "session_info") path.push({ id: row.id, type: row.type, name: entry.name });
      else path.push({ id: row.id, type: row.type });
    }
    return { leafId, seqs, path, labels: this.getLabels(), header: state.header, name: this.getName() };
  }

  // --- writing ---

  /**
   * What the append rules see of this session. The ids a batch names (its own, its parents, label
   * targets, kept entries) are looked up in one query up front, not one query each.
   */
  #view(inputs: readonly unknown[] = []): AppendView {
    const state = this.state;
    const known = new Map<string, EntryRef | null>();
    const named = new Set<string>();
    for (const input of inputs) {
      if (!input || typeof input !== "object") continue;
      for (const key of ["id", "parentId", "targetId", "firstKeptEntryId"]) {
        const value = (input as Record<string, unknown>)[key];
        if (typeof value === "string") named.add(value);
      }
    }
    if (named.size > 0) {
      for (const id of named) known.set(id, null);
      for (const row of this.#sql<{ id: string; type: EntryType; parent_id: string | null }>`
        SELECT id, type, parent_id FROM entries WHERE id IN (SELECT value FROM json_each(${JSON.stringify([...named])}))`) {
        known.set(row.id, { type: row.type, parentId: row.parent_id });
      }
    }
    return {
      leafId: state.leafId,
      nextSeq: state.nextSeq,
      ref: (id): EntryRef | undefined => {
        const cached = known.get(id);
        if (cached !== undefined) return cached ?? undefined;
        const node = this.#node(id);
        return node && { type: node.type, parentId: node.parent_id };
      },
      load: (id) => (known.get(id) === null ? undefined : this.getEntry(id)),
    };
  }

  #write<T>(run: () => T): T {
    const state = this.#live();
    const before: SessionState = { ...state, stats: { ...state.stats } };
    try {
      return this.#storage.transactionSync(() => {
        const result = run();
        state.version++;
        this
          .#sql`UPDATE session SET leaf_id = ${state.leafId}, stats = ${JSON.stringify(state.stats)}, version = ${state.version}`;
        return result;
      });
    } catch (error) {
      // The transaction rolled back; so does the cached state.
      this.#state = before;
      this.#dropHead();
      throw error;
    }
  }

  #apply(plan: Pick<AppendPlan, "writes" | "leafId">): void {
    const state = this.#live();
    this.#write(() => {
      const pending = new Map<string, Node>();
      const rows: SqlStorageValue[][] = [];
      for (const write of plan.writes) pending.set(write.entry.id, this.#insert(write, pending, rows));
      this.#insertRows(rows);
      state.leafId = plan.leafId;
      state.nextSeq += plan.writes.length;
      state.stats.updatedAt = nowIso();
    });
    this.#followHead(plan.writes, plan.leafId);
  }

  /**
   * Writes entry rows: one statement a row for a few, else one statement for up to 500 rows, the
   * rows passed as one JSON parameter (statements take at most 100 bound parameters, and the
   * per-statement cost dominates a batch of small entries).
   */
  #insertRows(rows: readonly SqlStorageValue[][]): void {
    if (rows.length < 8) {
      for (const row of rows) {
        this.#storage.sql.exec(
          `INSERT INTO entries (${ENTRY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
          ...row,
        );
      }
      return;
    }
    for (let i = 0; i < rows.length; i += 500) {
      this.#storage.sql.exec(
        `INSERT INTO entries (${ENTRY_COLUMNS}) SELECT ${ENTRY_COLUMN_LIST.map((_, n) => `value->>${n}`).join(", ")} FROM json_each(?)`,
        JSON.stringify(rows.slice(i, i + 500)),
      );
    }
  }

  #insert(
    { entry, json, bytes }: PlannedWrite,
    pending: ReadonlyMap<string, Node>,
    rows: SqlStorageValue[][],
  ): Node {
    const state = this.#live();
    const seq = entry.seq;
    const parent =
      entry.parentId === null ? undefined : (pending.get(entry.parentId) ?? this.#node(entry.parentId));
    let node: Node;
    if (entry.type === "leaf") {
      node = {
        seq,
        type: "leaf",
        parent_id: null,
        depth: null,
        last_compaction: null,
        last_thinking: null,
        last_model: null,
        last_tools: null,
      };
    } else {
      const isModel =
        entry.type === "model_change" || (entry.type === "message" && entry.message.role === "assistant");
      node = {
        seq,
        type: entry.type,
        parent_id: entry.parentId,
        depth: parent ? (parent.depth ?? 0) + 1 : 0,
        last_compaction: entry.type === "compaction" ? seq : (parent?.last_compaction ?? null),
        last_thinking: entry.type === "thinking_level_change" ? seq : (parent?.last_thinking ?? null),
        last_model: isModel ? seq : (parent?.last_model ?? null),
        last_tools: entry.type === "active_tools_change" ? seq : (parent?.last_tools ?? null),
      };
    }
    const parentSeq = parent?.seq ?? null;
    const role = entry.type === "message" ? entry.message.role : null;
    const inline = bytes <= INLINE_BYTES;
    const chunks = inline ? 0 : Math.ceil(bytes / CHUNK_BYTES);
    rows.push([
      seq,
      entry.id,
      node.parent_id,
      parentSeq,
      entry.type,
      role,
      entry.timestamp,
      node.depth,
      node.last_compaction,
      node.last_thinking,
      node.last_model,
      node.last_tools,
      inline ? json : null,
      chunks,
    ]);
    if (!inline) {
      const data = encoder.encode(json);
      for (let n = 0; n < chunks; n++) {
        const part = data.slice(n * CHUNK_BYTES, (n + 1) * CHUNK_BYTES);
        this.#sql`INSERT INTO entry_chunks (seq, n, data) VALUES (${seq}, ${n}, ${part.buffer})`;
      }
    }
    if (entry.type === "label") {
      const label = nonBlank(entry.label);
      if (label === undefined) this.#sql`DELETE FROM labels WHERE target_id = ${entry.targetId}`;
      else this.#sql`INSERT OR REPLACE INTO labels (target_id, label) VALUES (${entry.targetId}, ${label})`;
    }
    applyEntryToStats(state.stats, entry);
    return node;
  }

  appendEntries(
    entries: readonly unknown[],
    options: AppendOptions & { validated?: boolean } = {},
  ): AppendResult {
    const plan = planAppend(entries, this.#view(entries), options);
    if (plan.writes.length > 0) this.#apply(plan);
    return { entries: plan.entries, leafId: this.state.leafId, created: plan.writes.length > 0 };
  }

  /** Entries as stored (their JSON, no seq), read in a page: what a copy to another store needs. */
  pageJson(seqs: readonly number[]): { json: string[]; rest: number[] } {
    this.#require();
    const json = this.#bodies(seqs, PAGE_CHARS);
    return { json, rest: seqs.slice(json.length) };
  }

  /** Writes entries copied from another store as they were stored there (see `importEntries`). */
  importJson(json: readonly string[]): void {
    if (json.length === 0) return;
    const entries = json.map((text) => JSON.parse(text) as SessionEntry);
    this.#apply(planImport(entries, this.#view(entries), { validated: true, serialized: json }));
  }

  importEntries(entries: readonly SessionEntry[], options: ImportOptions = {}): void {
    if (entries.length === 0) return;
    this.#apply(planImport(entries, this.#view(entries), options));
  }

  setLeafId(targetId: string | null, options: LeafOptions = {}): StoredEntry<LeafEntry> {
    const { write, leafId } = planLeafMove(
      targetId,
      this.#view(targetId === null ? [] : [{ id: targetId }]),
      options,
    );
    this.#apply({ writes: [write], leafId });
    return write.entry;
  }
}
