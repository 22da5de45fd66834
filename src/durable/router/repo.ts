import type {
  AppendEntryInput,
  AppendOptions,
  AppendResult,
  CreateSessionOptions,
  EntryQuery,
  ExistingSessions,
  ForkOptions,
  HeaderPatch,
  ImportedSession,
  ImportOptions,
  LeafEntry,
  LeafOptions,
  ListOptions,
  NumberedLine,
  Result,
  SessionEntry,
  SessionHeader,
  SessionInfo,
  SessionPage,
  SessionRepo,
  SessionSearchOptions,
  SessionSearchPage,
  SessionStorage,
  StoredEntry,
  SyncResult,
  TenantImportReport,
  TenantSearchOptions,
  TenantSearchPage,
  TenantSearchResult,
  TreeEntry,
  TreeNode,
} from "../../core";
import {
  buildTree,
  checkSessionId,
  DEFAULT_SEARCH_HITS,
  exportTenant,
  forkExtras,
  importTenant,
  newSessionHeader,
  openIfExists,
  Session,
  syncImport,
  unwrap,
  utf8Length,
  writeImport,
} from "../../core";
import type { DurableEnv } from "../env";
import { directoryShard, directoryShards, sessionObjectName, shardCount, shardOf } from "../names";
import type { Quotas } from "../quotas";
import { quotasFor } from "../quotas";
import { recoveryWindowMs } from "../session/lifecycle";
import type { SessionObject } from "../session/session-object";
import type { ContextAnswer, EntryPage, ForkSource, Retention } from "../types";
import { mergeEventStreams, mergePages, mergeSearchResults } from "./directory-shards";
import type { TenantUsage } from "./tenant-usage";
import { tenantUsage } from "./tenant-usage";

/** Bytes entries take once stored (their JSON, as every backend writes it). */
function storedBytes(entries: readonly SessionEntry[]): number {
  let bytes = 0;
  for (const entry of entries) bytes += utf8Length(JSON.stringify(entry));
  return bytes;
}

/** Unwraps an RPC answer; structured clone turns `Result<T>` into a type RPC stubs describe loosely. */
async function call<T>(answer: Promise<unknown>): Promise<T> {
  return unwrap((await answer) as Result<T>);
}

/**
 * The object-backed `SessionStorage`: each call is one RPC to the session's Durable Object, where
 * the SQLite store applies it in a transaction.
 */
export class SessionObjectStorage implements SessionStorage {
  readonly id: string;
  readonly #repo: DurableRepo;
  readonly #stub: DurableObjectStub<SessionObject>;

  constructor(repo: DurableRepo, id: string, stub: DurableObjectStub<SessionObject>) {
    this.#repo = repo;
    this.id = id;
    this.#stub = stub;
  }

  getHeader(): Promise<SessionHeader> {
    return call(this.#stub.getHeader());
  }

  updateHeader(patch: HeaderPatch): Promise<SessionHeader> {
    return call(this.#stub.updateHeader(patch));
  }

  getInfo(): Promise<SessionInfo> {
    return call(this.#stub.getInfo());
  }

  getLeafId(): Promise<string | null> {
    return call(this.#stub.getLeafId());
  }

  setLeafId(targetId: string | null, options: LeafOptions = {}): Promise<StoredEntry<LeafEntry>> {
    return call(this.#stub.setLeafId(targetId, options));
  }

  getEntry(id: string): Promise<StoredEntry | undefined> {
    return call(this.#stub.getEntry(id));
  }

  /** A first page, then the pages after it as they are read. */
  async *#pages(first: EntryPage): AsyncGenerator<StoredEntry[]> {
    yield first.entries;
    let rest = first.rest;
    while (rest.length > 0) {
      const page = await call<EntryPage>(this.#stub.readEntries(rest));
      yield page.entries;
      rest = page.rest;
    }
  }

  async #drain(first: EntryPage): Promise<StoredEntry[]> {
    const entries: StoredEntry[] = [];
    for await (const page of this.#pages(first)) for (const entry of page) entries.push(entry);
    return entries;
  }

  /** Entries page by page; the first is read before this resolves, so a missing session fails here. */
  async entryPages(query: EntryQuery = {}): Promise<AsyncGenerator<StoredEntry[]>> {
    return this.#pages(await call<EntryPage>(this.#stub.getEntries(query)));
  }

  /** The path page by page (see `entryPages`). */
  async branchPages(leafId?: string | null): Promise<AsyncGenerator<StoredEntry[]>> {
    return this.#pages(await call<EntryPage>(this.#stub.getBranch(leafId)));
  }

  async getEntries(query: EntryQuery = {}): Promise<StoredEntry[]> {
    return this.#drain(await call<EntryPage>(this.#stub.getEntries(query)));
  }

  async getBranch(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return (await this.#drain(
      await call<EntryPage>(this.#stub.getBranch(leafId)),
    )) as StoredEntry<TreeEntry>[];
  }

  /**
   * The context of a leaf (the head when undefined) as JSON, streamed from the object (or whole,
   * when the object kept it), with its version; only what was appended when it grew from `since`;
   * only the version when it is one of `ifNoneMatch`.
   */
  getContext(
    leafId?: string | null,
    options: { since?: string; ifNoneMatch?: readonly string[] } = {},
  ): Promise<ContextAnswer> {
    return call(this.#stub.getContext(leafId, options));
  }

  /**
   * The session's events as Server-Sent Events: after `after` replayed from storage, then live
   * (without `after`, live from now).
   */
  events(after: number | undefined, payload: boolean): Promise<ReadableStream<Uint8Array>> {
    return call(this.#stub.events(after, payload));
  }

  /** Hands a WebSocket upgrade (already authenticated) to the session's object. */
  openSocket(request: Request): Promise<Response> {
    return this.#stub.fetch(request);
  }

  mintTicket(): Promise<{ ticket: string; expiresAt: string }> {
    return call(this.#stub.mintTicket());
  }

  redeemTicket(ticket: string): Promise<boolean> {
    return this.#stub.redeemTicket(ticket);
  }

  async getContextPath(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return (await this.#drain(
      await call<EntryPage>(this.#stub.getContextPath(leafId)),
    )) as StoredEntry<TreeEntry>[];
  }

  async getTree(): Promise<TreeNode[]> {
    const { rows, labels } = await call<{
      rows: Parameters<typeof buildTree>[0];
      labels: Record<string, string>;
    }>(this.#stub.getTreeRows());
    return buildTree(rows, labels);
  }

  getLabels(): Promise<Record<string, string>> {
    return call(this.#stub.getLabels());
  }

  /** Appends entries; a provider's message among them is converted inside the object, as it writes. */
  appendEntries(
    entries: readonly AppendEntryInput[],
    options: AppendOptions & { validated?: boolean } = {},
  ): Promise<AppendResult> {
    return call(this.#stub.appendEntries(entries, options));
  }

  importEntries(entries: readonly SessionEntry[], options: ImportOptions = {}): Promise<void> {
    return call(this.#stub.importEntries(entries, options));
  }

  /** Refuses (`quota_exceeded`) when `bytes` more would take the session past its byte quotas. */
  checkRoom(bytes: number): Promise<void> {
    return call(this.#stub.checkRoom(bytes));
  }

  /**
   * Copies the path root → target into a new object in bounded chunks (each call does a bounded
   * amount of work, whatever the path's length), then lists it. A failed fork leaves nothing.
   */
  async fork(targetId: string, options: ForkOptions = {}): Promise<SessionStorage> {
    const source = await call<ForkSource>(this.#stub.forkSource(targetId, options.position));
    const name = options.name ?? source.name;
    const header = newSessionHeader({
      id: options.id,
      name,
      systemPrompt: source.header.systemPrompt,
      metadata: source.header.metadata,
      parentSession: { id: this.id, entryId: source.leafId ?? targetId },
    });
    const fork = await this.#repo.initialize(header, false, { bytes: source.bytes });
    try {
      // The new session's object reads the rows from this one's itself, a bounded part a call.
      let rest = source.seqs;
      while (rest.length > 0) rest = await fork.copyFrom(this.id, rest);
      const extras = forkExtras(source.path, source.labels, name);
      if (extras.length > 0 && source.leafId !== null) {
        await fork.appendEntries(extras);
        await fork.setLeafId(source.leafId);
      }
      await fork.publish();
      return fork;
    } catch (error) {
      await fork.delete().catch(() => undefined);
      throw error;
    }
  }

  /** Copies a fork's path from the session `sourceId`'s object (see `SessionObject.copyFrom`). */
  copyFrom(sourceId: string, seqs: number[]): Promise<number[]> {
    return call(this.#stub.copyFrom(sourceId, seqs));
  }

  /** Creates the session in its (empty) object (see `SessionObject.init`). */
  async init(
    tenant: string,
    header: SessionHeader,
    publish: boolean,
    options: { shard: number; replacePending?: boolean; bytes?: number },
  ): Promise<SessionInfo> {
    return call(this.#stub.init(tenant, header, publish, options));
  }

  /** Lists the session in the directory now. */
  publish(): Promise<void> {
    return this.#stub.publish();
  }

  /** Deletes the session, restorable for the recovery window (RECOVERY_WINDOW_SECONDS). */
  delete(): Promise<void> {
    return call(this.#stub.delete(this.#repo.recoveryMs));
  }

  /** Deletes the session for good, now (a deleted one too). */
  purge(): Promise<void> {
    return call(this.#stub.purge());
  }

  /** Brings a deleted session back within its recovery window. */
  restore(): Promise<SessionInfo> {
    return call(this.#stub.restore());
  }

  search(options: SessionSearchOptions): Promise<SessionSearchPage> {
    return call(this.#stub.search(options));
  }

  async cleanup(): Promise<void> {}
}

/** A tenant's sessions, each in its own Durable Object, listed by the tenant's directory. */
export class DurableRepo implements SessionRepo {
  readonly #env: DurableEnv;
  readonly tenant: string;

  constructor(env: DurableEnv, tenant: string) {
    this.#env = env;
    this.tenant = tenant;
  }

  /** A handle on a session without checking that it exists (every call on it does). */
  storage(id: string): SessionObjectStorage {
    checkSessionId(id);
    return new SessionObjectStorage(
      this,
      id,
      this.#env.SESSIONS.getByName(sessionObjectName(this.tenant, id)),
    );
  }

  /** How long a deleted session stays restorable. */
  get recoveryMs(): number {
    return recoveryWindowMs(this.#env);
  }

  /** The directory shard a new session reports to, for its whole life. */
  #shardFor(id: string): number {
    return shardOf(id, shardCount(this.#env));
  }

  /** @internal creates the object of a new session (about to receive `bytes` of entries). */
  async initialize(
    header: SessionHeader,
    publish: boolean,
    options: { replacePending?: boolean; bytes?: number } = {},
  ): Promise<SessionObjectStorage> {
    const storage = this.storage(header.id);
    await storage.init(this.tenant, header, publish, { ...options, shard: this.#shardFor(header.id) });
    return storage;
  }

  /** The tenant's quotas (see quotas.ts). */
  quotas(): Quotas {
    return quotasFor(this.#env.QUOTAS, this.tenant);
  }

  /** Sessions, entries and bytes the tenant stores, as its sessions last reported them. */
  usage(): Promise<TenantUsage> {
    return tenantUsage(this.#env, this.tenant);
  }

  async create(options: CreateSessionOptions = {}): Promise<Session> {
    return new Session(await this.initialize(newSessionHeader(options), true));
  }

  /** Creates a session and answers its info in one call to its object. */
  async createSession(options: CreateSessionOptions = {}): Promise<SessionInfo> {
    const header = newSessionHeader(options);
    return this.storage(header.id).init(this.tenant, header, true, { shard: this.#shardFor(header.id) });
  }

  async open(id: string): Promise<Session> {
    const storage = this.storage(id);
    await storage.getLeafId();
    return new Session(storage);
  }

  /** A page of the tenant's sessions: every directory shard asked at once, their pages merged. */
  async list(options: ListOptions = {}): Promise<SessionPage> {
    const pages = await Promise.all(
      directoryShards(this.#env, this.tenant).map((shard) => call<SessionPage>(shard.list(options))),
    );
    return mergePages(pages, options);
  }

  /** The tenant's sessions best matching a query, from the directory shards (no session is opened). */
  /** The tenant's sessions created, updated and deleted from now, as Server-Sent Events. */
  async events(): Promise<ReadableStream<Uint8Array>> {
    const shards = directoryShards(this.#env, this.tenant);
    const streams = await Promise.allSettled(
      shards.map((shard) => call<ReadableStream<Uint8Array>>(shard.events())),
    );
    const refused = streams.find((stream) => stream.status === "rejected");
    if (refused) {
      // A shard said no: the streams the others opened are let go.
      for (const stream of streams) if (stream.status === "fulfilled") await stream.value.cancel();
      throw refused.reason;
    }
    return mergeEventStreams(
      streams.map((stream) => (stream as PromiseFulfilledResult<ReadableStream<Uint8Array>>).value),
    );
  }

  async search(options: TenantSearchOptions): Promise<TenantSearchPage> {
    const answers = await Promise.all(
      directoryShards(this.#env, this.tenant).map((shard) =>
        call<TenantSearchResult[]>(shard.search(options)),
      ),
    );
    return { results: mergeSearchResults(answers, options.limit ?? DEFAULT_SEARCH_HITS) };
  }

  restore(id: string): Promise<SessionInfo> {
    return this.storage(id).restore();
  }

  purge(id: string): Promise<void> {
    return this.storage(id).purge();
  }

  /** The tenant's retention, as its first directory shard holds it. */
  retention(): Promise<Retention> {
    return directoryShard(this.#env, this.tenant, 0).retention();
  }

  /** Sets the tenant's retention on every directory shard (each sweeps its own sessions). */
  async setRetention(retention: Retention): Promise<Retention> {
    await Promise.all(
      directoryShards(this.#env, this.tenant).map((shard, index) =>
        shard.setRetention(retention, this.tenant, index),
      ),
    );
    return retention;
  }

  /** Every session of the tenant as one stream of lines (see core's tenant-stream.ts). */
  exportTenant(cursor: string | null = null): AsyncGenerator<string> {
    return exportTenant(
      { list: (options) => this.list(options), open: async (id) => new Session(this.storage(id)) },
      cursor,
    );
  }

  /**
   * Writes the sessions of a tenant stream. Each is listed once all its entries are written; one a
   * previous import left incomplete (its id taken, not listed) is written again from the start.
   */
  importTenant(lines: AsyncIterable<NumberedLine>, existing: ExistingSessions): Promise<TenantImportReport> {
    return importTenant(
      lines,
      {
        begin: (header) => this.initialize(newSessionHeader(header), false, { replacePending: true }),
        finish: (storage) => (storage as SessionObjectStorage).publish(),
      },
      { existing },
    );
  }

  async delete(id: string): Promise<void> {
    await this.storage(id).delete();
  }

  async fork(id: string, targetId: string, options?: ForkOptions): Promise<Session> {
    return new Session(await this.storage(id).fork(targetId, options));
  }

  /**
   * Writes an imported session in bounded batches and lists it once it is complete. Under a byte
   * quota, the file's size as it will be stored is counted first, so a file too large for the
   * quotas is refused before anything is written.
   */
  async importSession(file: ImportedSession, options: { id?: string } = {}): Promise<Session> {
    const quotas = this.quotas();
    const limited = quotas.maxSessionBytes !== undefined || quotas.maxTenantBytes !== undefined;
    const bytes = limited ? storedBytes(file.entries) : 0;
    const storage = (await writeImport(file, options, (header) =>
      this.initialize(newSessionHeader(header), false, { bytes }),
    )) as SessionObjectStorage;
    await storage.publish();
    return new Session(storage);
  }

  /**
   * Syncs a parsed file into its session (see `syncImport`); a new session is listed once complete.
   * Under a byte quota, what the sync adds is counted first, so a file too large for the quotas is
   * refused before anything is written.
   */
  async syncSession(file: ImportedSession, options: { id?: string } = {}): Promise<SyncResult> {
    const quotas = this.quotas();
    const limited = quotas.maxSessionBytes !== undefined || quotas.maxTenantBytes !== undefined;
    const result = await syncImport(file, options, {
      open: (id) =>
        openIfExists(async () => {
          const storage = this.storage(id);
          await storage.getLeafId();
          return storage;
        }),
      create: (header) =>
        this.initialize(newSessionHeader(header), false, { bytes: limited ? storedBytes(file.entries) : 0 }),
      admit: async (storage, entries) => {
        if (limited) await (storage as SessionObjectStorage).checkRoom(storedBytes(entries));
      },
    });
    if (result.status === "created") await (result.session.storage as SessionObjectStorage).publish();
    return result;
  }

  async cleanup(): Promise<void> {}
}
