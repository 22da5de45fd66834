import type { AppendPlan, AppendView, EntryRef } from "./append";
import { planAppend, planImport, planLeafMove } from "./append";
import { branchRows, onBranch } from "./branch";
import type { LeafEntry, SessionEntry, StoredEntry, TreeEntry } from "./entries";
import { SessionError } from "./errors";
import type { ForkTargetHeader } from "./fork";
import { forkStorage } from "./fork";
import { checkCreateOptions } from "./given-input";
import { newSessionHeader, patchHeader } from "./header";
import { checkSessionId, nowIso } from "./ids";
import type { SessionStats } from "./info";
import {
  applyEntryToLabels,
  applyEntryToStats,
  countHeader,
  emptyStats,
  pageSessions,
  sessionInfo,
} from "./info";
import type { ImportedSession, ImportHeader } from "./interchange";
import { writeImport } from "./interchange";
import { entryPage, sessionsPageLimit } from "./paging";
import type { AppendEntryInput } from "./providers/entry-input";
import { conversationOf, NO_CONVERSATION } from "./providers/provider-entries";
import type { SessionRepo } from "./repo";
import { Session } from "./session";
import type {
  CreateSessionOptions,
  EntryQuery,
  ForkOptions,
  HeaderPatch,
  ListOptions,
  SessionHeader,
  SessionInfo,
  SessionPage,
} from "./session-schemas";
import { inProject } from "./session-schemas";
import type { AppendOptions, AppendResult, ImportOptions, LeafOptions, SessionStorage } from "./storage";
import type { SyncResult } from "./sync-import";
import { syncImport } from "./sync-import";
import type { TreeNode } from "./tree";
import { buildTree, treeRow } from "./tree";

interface Row extends EntryRef {
  seq: number;
  json: string;
}

/**
 * A session held in memory: for tests and short-lived agents. Entries are kept serialized, so what
 * a caller reads or appends is never shared with what is stored.
 */
export class MemoryStorage implements SessionStorage {
  #header: SessionHeader;
  #rows: Row[] = [];
  #byId = new Map<string, Row>();
  #leafId: string | null = null;
  #labels = new Map<string, string>();
  #stats: SessionStats;
  #deleted = false;
  readonly #repo: MemoryRepo | undefined;

  constructor(header: SessionHeader, repo?: MemoryRepo) {
    this.#header = structuredClone(header);
    this.#stats = emptyStats(this.#header);
    this.#repo = repo;
  }

  static create(options: CreateSessionOptions = {}): MemoryStorage {
    return new MemoryStorage(newSessionHeader(options));
  }

  get id(): string {
    return this.#header.id;
  }

  #live(): void {
    if (this.#deleted)
      throw new SessionError("not_found", `session ${this.id} does not exist`, { id: this.id });
  }

  #read(row: Row): StoredEntry {
    return { ...(JSON.parse(row.json) as SessionEntry), seq: row.seq };
  }

  #view(): AppendView {
    return {
      leafId: this.#leafId,
      nextSeq: this.#rows.length + 1,
      ref: (id) => this.#byId.get(id),
      load: (id) => {
        const row = this.#byId.get(id);
        return row && this.#read(row);
      },
      onPath: (ancestorId, fromId) => onBranch(ancestorId, fromId, (id) => this.#byId.get(id)),
      conversationAt: (id) => {
        const row = this.#byId.get(id);
        if (!row || row.type === "leaf") return NO_CONVERSATION;
        const path = branchRows(id, (at) => this.#byId.get(at)).map((step) => this.#read(step) as TreeEntry);
        return conversationOf(path);
      },
    };
  }

  #apply(plan: Pick<AppendPlan, "writes" | "leafId">): void {
    for (const { entry, json, bytes } of plan.writes) {
      const row: Row = { type: entry.type, parentId: entry.parentId, seq: entry.seq, json };
      this.#rows.push(row);
      this.#byId.set(entry.id, row);
      applyEntryToLabels(this.#labels, entry);
      applyEntryToStats(this.#stats, entry, bytes);
    }
    this.#leafId = plan.leafId;
    this.#touch();
  }

  #touch(): void {
    this.#stats.updatedAt = nowIso();
  }

  async getHeader(): Promise<SessionHeader> {
    this.#live();
    return structuredClone(this.#header);
  }

  async updateHeader(patch: HeaderPatch): Promise<SessionHeader> {
    this.#live();
    this.#header = patchHeader(this.#header, structuredClone(patch));
    countHeader(this.#stats, this.#header);
    this.#touch();
    return structuredClone(this.#header);
  }

  async getInfo(): Promise<SessionInfo> {
    this.#live();
    return structuredClone(sessionInfo(this.#header, this.#stats, this.#leafId));
  }

  async getLeafId(): Promise<string | null> {
    this.#live();
    return this.#leafId;
  }

  async setLeafId(targetId: string | null, options: LeafOptions = {}): Promise<StoredEntry<LeafEntry>> {
    this.#live();
    const { write, leafId } = planLeafMove(targetId, this.#view(), options);
    this.#apply({ writes: [write], leafId });
    return write.entry;
  }

  async getEntry(id: string): Promise<StoredEntry | undefined> {
    this.#live();
    const row = this.#byId.get(id);
    return row && this.#read(row);
  }

  async getEntries(query: EntryQuery = {}): Promise<StoredEntry[]> {
    this.#live();
    const { after, limit, types } = entryPage(query);
    // seq n lives at index n - 1.
    const out: StoredEntry[] = [];
    for (let i = after; i < this.#rows.length && out.length < limit; i++) {
      const row = this.#rows[i] as Row;
      if (!types || types.has(row.type)) out.push(this.#read(row));
    }
    return out;
  }

  async getBranch(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    this.#live();
    const start = leafId === undefined ? this.#leafId : leafId;
    if (start === null) return [];
    return branchRows(start, (id) => this.#byId.get(id)).map(
      (row) => this.#read(row) as StoredEntry<TreeEntry>,
    );
  }

  getContextPath(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return this.getBranch(leafId);
  }

  async getTree(): Promise<TreeNode[]> {
    this.#live();
    const rows = this.#rows
      .filter((row) => row.type !== "leaf")
      .map((row) => treeRow(this.#read(row) as TreeEntry));
    return buildTree(rows, Object.fromEntries(this.#labels));
  }

  async getLabels(): Promise<Record<string, string>> {
    this.#live();
    return Object.fromEntries(this.#labels);
  }

  async appendEntries(
    entries: readonly AppendEntryInput[],
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    this.#live();
    const plan = planAppend(entries, this.#view(), options);
    if (plan.writes.length > 0) this.#apply(plan);
    return { entries: plan.entries, leafId: this.#leafId, created: plan.writes.length > 0 };
  }

  async importEntries(entries: readonly SessionEntry[], options: ImportOptions = {}): Promise<void> {
    this.#live();
    if (entries.length === 0) return;
    this.#apply(planImport(entries, this.#view(), options));
  }

  async fork(targetId: string, options: ForkOptions = {}): Promise<SessionStorage> {
    this.#live();
    return forkStorage(this, targetId, options, async (header) =>
      this.#repo ? this.#repo.createStorage(header) : new MemoryStorage(newSessionHeader(header)),
    );
  }

  async delete(): Promise<void> {
    this.#live();
    this.#deleted = true;
    this.#repo?.forget(this.id);
  }

  async cleanup(): Promise<void> {}
}

/** Sessions in memory, gone when the process ends. */
export class MemoryRepo implements SessionRepo {
  readonly #sessions = new Map<string, MemoryStorage>();

  /** @internal creates and registers a storage; used by `create` and by forks. */
  createStorage(options: CreateSessionOptions | ForkTargetHeader | ImportHeader): MemoryStorage {
    const header = newSessionHeader(options);
    if (this.#sessions.has(header.id)) {
      throw new SessionError("already_exists", `session ${header.id} already exists`, { id: header.id });
    }
    const storage = new MemoryStorage(header, this);
    this.#sessions.set(header.id, storage);
    return storage;
  }

  /** @internal */
  forget(id: string): void {
    this.#sessions.delete(id);
  }

  async create(options: CreateSessionOptions = {}): Promise<Session> {
    return new Session(this.createStorage(checkCreateOptions(options)));
  }

  async open(id: string): Promise<Session> {
    checkSessionId(id);
    const storage = this.#sessions.get(id);
    if (!storage) throw new SessionError("not_found", `session ${id} does not exist`, { id });
    return new Session(storage);
  }

  async list(options: ListOptions = {}): Promise<SessionPage> {
    const limit = sessionsPageLimit(options);
    const { prefix = "", project } = options;
    const infos = await Promise.all(
      [...this.#sessions.entries()]
        .filter(([id]) => id.startsWith(prefix))
        .map(([, storage]) => storage.getInfo()),
    );
    const listed =
      project === undefined ? infos : infos.filter((info) => inProject(info.metadata.project, project));
    return pageSessions(listed, { ...options, limit });
  }

  async delete(id: string): Promise<void> {
    await (await this.open(id)).delete();
  }

  async fork(id: string, targetId: string, options?: ForkOptions): Promise<Session> {
    return (await this.open(id)).fork(targetId, options);
  }

  async importSession(file: ImportedSession, options: { id?: string } = {}): Promise<Session> {
    return new Session(await writeImport(file, options, async (header) => this.createStorage(header)));
  }

  syncSession(file: ImportedSession, options: { id?: string } = {}): Promise<SyncResult> {
    return syncImport(file, options, {
      open: async (id) => this.#sessions.get(id),
      create: async (header) => this.createStorage(header),
    });
  }

  async cleanup(): Promise<void> {}
}
