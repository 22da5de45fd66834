import type {
  AppendEntryInput,
  AppendOptions,
  AppendResult,
  CompactionEntry,
  CompactOptions,
  ContextAnswer,
  ContextFormat,
  ContextInOptions,
  ContextOptions,
  ContextRequests,
  CreateSessionOptions,
  EntryQuery,
  ExistingSessions,
  ExportFormat,
  ForkOptions,
  HeaderPatch,
  ImportedSession,
  ImportFormat,
  ImportWarning,
  LeafAt,
  LeafEntry,
  LeafOptions,
  ListOptions,
  NavigateOptions,
  NavigateResult,
  SessionContext,
  SessionEntry,
  SessionEvent,
  SessionHeader,
  SessionInfo,
  SessionPage,
  SessionRepo,
  SessionSearchOptions,
  SessionSearchPage,
  SessionStorage,
  StoredEntry,
  SyncResult,
  SyncSummary,
  TenantEvent,
  TenantImportReport,
  TenantSearchOptions,
  TenantSearchPage,
  TreeEntry,
  TreeNode,
} from "../core/internal";
import {
  checkFormat,
  checkSessionId,
  contextForModel,
  entryPage,
  isValidId,
  leafAfter,
  leafTag,
  modelRefString,
  newId,
  parseImport,
  Session,
  SessionError,
  walkTree,
} from "../core/internal";
import type { ClientOptions } from "./transport";
import { Transport } from "./transport";
import type { WatchOptions } from "./watch";
import { watchStream } from "./watch";

/** A session the service created from a file, and what it repaired in the file to do so. */
export interface FileImport {
  session: RemoteSession;
  info: SessionInfo;
  warnings: ImportWarning[];
}

/** A file synced into its session on the service: what was done, and the session as it now is. */
export interface FileSync extends FileImport, SyncSummary {}

export interface FileImportOptions {
  /** The file's format (default native). */
  format?: ImportFormat | undefined;
  /** The session's id; by default the one the file gives. */
  id?: string | undefined;
}

function ifMatch(expected: string | null | undefined): Record<string, string> {
  return expected === undefined ? {} : { "If-Match": leafTag(expected) };
}

function sessionPath(id: string, rest = ""): string {
  return `v1/sessions/${checkSessionId(id)}${rest}`;
}

/** Entries get their ids here, before the first try: a retry of the same request is then a replay. */
function withIds(entries: readonly AppendEntryInput[]): AppendEntryInput[] {
  return entries.map((entry) => (entry.id === undefined ? { ...entry, id: newId() } : entry));
}

/** Contexts a session keeps to ask for deltas. */
const KEPT_CONTEXTS = 4;

type ServiceCompactOptions = Omit<CompactOptions, "summarizer" | "signal">;
type ServiceNavigateOptions = Omit<NavigateOptions, "summarizer" | "signal">;

/** The lines of an NDJSON answer as it arrives, each ending in a newline. */
async function* responseLines(response: Response): AsyncGenerator<string> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let rest = "";
  for (;;) {
    const { done, value } = await reader.read();
    rest += decoder.decode(value, { stream: !done });
    const lines = rest.split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) if (line) yield `${line}\n`;
    if (done) break;
  }
  if (rest) yield `${rest}\n`;
}

/** A session kept by the service: the `SessionStorage` interface over its HTTP API. */
export class RemoteStorage implements SessionStorage {
  readonly id: string;
  readonly #http: Transport;

  constructor(http: Transport, id: string) {
    this.#http = http;
    this.id = id;
  }

  #path(rest = ""): string {
    return sessionPath(this.id, rest);
  }

  async getHeader(): Promise<SessionHeader> {
    const info = await this.getInfo();
    const header: SessionHeader = { id: info.id, createdAt: info.createdAt, metadata: info.metadata };
    if (info.name !== undefined) header.name = info.name;
    if (info.systemPrompt !== undefined) header.systemPrompt = info.systemPrompt;
    if (info.parentSession) header.parentSession = info.parentSession;
    if (info.expiresAt !== undefined) header.expiresAt = info.expiresAt;
    if (info.autoCompact) {
      const { status: _status, ...settings } = info.autoCompact;
      header.autoCompact = settings;
    }
    return header;
  }

  async updateHeader(patch: HeaderPatch): Promise<SessionHeader> {
    await this.#http.json("PATCH", this.#path(), { body: patch, idempotent: true });
    return this.getHeader();
  }

  getInfo(): Promise<SessionInfo> {
    return this.#http.json("GET", this.#path());
  }

  async getLeafId(): Promise<string | null> {
    return (await this.getInfo()).leafId;
  }

  async setLeafId(targetId: string | null, options: LeafOptions = {}): Promise<StoredEntry<LeafEntry>> {
    const result = await this.#http.json<NavigateResult>("PUT", this.#path("/leaf"), {
      body: { targetId, ...(options.position ? { position: options.position } : {}) },
      headers: ifMatch(options.expectedLeafId),
    });
    if (!result.record) throw new SessionError("internal", "the service did not return the leaf record");
    return result.record;
  }

  async getEntry(id: string): Promise<StoredEntry | undefined> {
    try {
      return await this.#http.json<StoredEntry>("GET", this.#path(`/entries/${encodeURIComponent(id)}`));
    } catch (error) {
      // The entry is missing (the session itself is there): not an error, as in every storage.
      const details =
        error instanceof SessionError ? (error.details as { entryId?: string } | undefined) : undefined;
      if (error instanceof SessionError && error.code === "not_found" && details?.entryId === id)
        return undefined;
      if (error instanceof SessionError && error.code === "invalid_request" && !isValidId(id))
        return undefined;
      throw error;
    }
  }

  async getEntries(query: EntryQuery = {}): Promise<StoredEntry[]> {
    const { after, limit, types } = entryPage(query);
    const page = await this.#http.json<{ entries: StoredEntry[] }>("GET", this.#path("/entries"), {
      query: { after, limit, type: types ? [...types].join(",") : undefined },
    });
    return page.entries;
  }

  async getBranch(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    if (leafId === null) {
      await this.getInfo();
      return [];
    }
    const { entries } = await this.#http.json<{ entries: StoredEntry<TreeEntry>[] }>(
      "GET",
      this.#path("/branch"),
      {
        query: { leafId },
      },
    );
    return entries;
  }

  /** The whole branch: the service builds pruned contexts itself (`RemoteSession.buildContext`). */
  getContextPath(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return this.getBranch(leafId);
  }

  async getTree(): Promise<TreeNode[]> {
    return (await this.#http.json<{ roots: TreeNode[] }>("GET", this.#path("/tree"))).roots;
  }

  async getLabels(): Promise<Record<string, string>> {
    // Entries, not assignments: an entry may be named `__proto__`.
    const labelled = [...walkTree(await this.getTree())].filter((node) => node.label !== undefined);
    return Object.fromEntries(labelled.map((node) => [node.id, node.label as string]));
  }

  async appendEntries(
    entries: readonly AppendEntryInput[],
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    const response = await this.#http.send("POST", this.#path("/entries"), {
      body: { entries: withIds(entries) },
      headers: ifMatch(options.expectedLeafId),
      idempotent: true,
    });
    const result = (await response.json()) as { entries: StoredEntry[]; leafId: string | null };
    return { ...result, created: response.status === 201 };
  }

  async importEntries(entries: readonly SessionEntry[]): Promise<void> {
    await this.#http.json("POST", this.#path("/import"), { body: { entries } });
  }

  async fork(targetId: string, options: ForkOptions = {}): Promise<RemoteStorage> {
    const info = await this.#http.json<SessionInfo>("POST", this.#path("/fork"), {
      body: { entryId: targetId, ...options },
    });
    return new RemoteStorage(this.#http, info.id);
  }

  /** Where the leaf stood at `asOf` (ISO 8601; the head when absent), and how far back that can go. */
  leafAt(asOf?: string): Promise<LeafAt> {
    return this.#http.json<LeafAt>("GET", this.#path("/leaf"), { query: { asOf } });
  }

  /** The context the service builds for a leaf (the head when undefined). */
  async context(leafId?: string | null, since?: string): Promise<ContextAnswer> {
    if (leafId !== null) {
      return this.#http.json<ContextAnswer>("GET", this.#path("/context"), { query: { leafId, since } });
    }
    const info = await this.getInfo();
    return {
      systemPrompt: info.systemPrompt ?? "",
      messages: [],
      thinkingLevel: "off",
      model: null,
      activeToolNames: null,
      version: "",
    };
  }

  /** The context of a leaf (the head when undefined) in a model API's request shape, built by the service. */
  async contextIn<F extends ContextFormat>(
    format: F,
    options: ContextInOptions = {},
  ): Promise<ContextRequests[F]> {
    const { leafId, model, imageInput } = options;
    if (leafId === null) {
      const { version: _version, ...empty } = (await this.context(null)) as SessionContext & {
        version: string;
      };
      return contextForModel(empty, format, { model, imageInput });
    }
    return this.#http.json("GET", this.#path("/context"), {
      query: {
        format,
        leafId,
        model: model && modelRefString(model),
        imageInput: imageInput === undefined ? undefined : String(imageInput),
      },
    });
  }

  /** The session's events as they happen (see `watchStream`). */
  watch(options: WatchOptions = {}): AsyncGenerator<SessionEvent> {
    return watchStream<SessionEvent>(
      this.#http,
      this.#path("/events"),
      options,
      (event) => event.event === "deleted",
    );
  }

  /** Compacts with the service's summarizer (or the summary given). */
  async compact(options: ServiceCompactOptions = {}): Promise<StoredEntry<CompactionEntry>> {
    const { entry } = await this.#http.json<{ entry: StoredEntry<CompactionEntry> }>(
      "POST",
      this.#path("/compact"),
      {
        body: options,
      },
    );
    return entry;
  }

  /** Moves the head on the service, which summarizes the branch left with its own summarizer. */
  navigate(targetId: string | null, options: ServiceNavigateOptions = {}): Promise<NavigateResult> {
    const { expectedLeafId, summary: _summary, ...body } = options;
    return this.#http.json("PUT", this.#path("/leaf"), {
      body: { targetId, ...body },
      headers: ifMatch(expectedLeafId),
    });
  }

  /** The session as NDJSON lines (native or pi), streamed. */
  async *exportLines(format: ExportFormat = "native"): AsyncGenerator<string> {
    yield* responseLines(await this.#http.send("GET", this.#path("/export"), { query: { format } }));
  }

  /** The session's entries matching a query (see `GET /v1/sessions/:sid/search`). */
  search(options: SessionSearchOptions): Promise<SessionSearchPage> {
    const { thinking, ...rest } = options;
    return this.#http.json("GET", this.#path("/search"), {
      query: { ...rest, ...(thinking === undefined ? {} : { thinking: String(thinking) }) },
    });
  }

  async delete(): Promise<void> {
    await this.#http.json("DELETE", this.#path());
  }

  async cleanup(): Promise<void> {}
}

/**
 * A session on the service. Contexts, compactions and navigations run on the service (one request
 * each, with its summarizer) unless the caller brings its own projectors, transforms or
 * summarizer, which only run here.
 */
export class RemoteSession extends Session {
  declare readonly storage: RemoteStorage;
  /** The last context read per leaf ("" for the head), with its version. */
  readonly #known = new Map<string, { version: string; context: SessionContext }>();

  constructor(storage: RemoteStorage) {
    super(storage);
  }

  /**
   * The context, from the service. The last one read for each leaf is kept, and the next read
   * asks only for what was appended since (`?since=`), so an agent turn moves the new messages,
   * not the history.
   */
  override async buildContext(options: ContextOptions = {}): Promise<SessionContext> {
    if (options.entryProjectors || options.transforms) return super.buildContext(options);
    const key = options.leafId === undefined ? "" : String(options.leafId);
    const known = this.#known.get(key);
    const answer = await this.storage.context(options.leafId, known?.version);
    let context: SessionContext;
    if ("append" in answer) {
      const { version: _version, since, append, ...settings } = answer;
      if (!known || since !== known.version) return this.#reread(key, options);
      context = { ...settings, messages: [...known.context.messages, ...append] };
    } else {
      const { version: _version, reset: _reset, ...whole } = answer;
      context = whole;
    }
    this.#remember(key, answer.version, context);
    // The caller's own copy: changing it (adding cache hints, trimming) never reaches what the
    // next delta builds on.
    const copy = structuredClone(context);
    return options.systemPrompt === undefined ? copy : { ...copy, systemPrompt: options.systemPrompt };
  }

  /** A delta that does not fit what is kept: forget it and read the whole context. */
  #reread(key: string, options: ContextOptions): Promise<SessionContext> {
    this.#known.delete(key);
    return this.buildContext(options);
  }

  #remember(key: string, version: string, context: SessionContext): void {
    if (!version) return;
    this.#known.delete(key);
    this.#known.set(key, { version, context });
    // A few leaves at most: an agent reads the head, a viewer the entries it shows.
    if (this.#known.size > KEPT_CONTEXTS) this.#known.delete(this.#known.keys().next().value as string);
  }

  /** The session's events as they happen: replay after `after`, then live, reconnecting as needed. */
  watch(options: WatchOptions = {}): AsyncGenerator<SessionEvent> {
    return this.storage.watch(options);
  }

  /** The context in a model API's request shape, built by the service. */
  override contextIn<F extends ContextFormat>(
    format: F,
    options: ContextInOptions = {},
  ): Promise<ContextRequests[F]> {
    return this.storage.contextIn(format, options);
  }

  override compact(options: CompactOptions = {}): Promise<StoredEntry<CompactionEntry>> {
    const { summarizer, signal: _signal, ...rest } = options;
    return summarizer ? super.compact(options) : this.storage.compact(rest);
  }

  override navigate(targetId: string | null, options: NavigateOptions = {}): Promise<NavigateResult> {
    const { summarizer, signal: _signal, ...rest } = options;
    return summarizer ? super.navigate(targetId, options) : this.storage.navigate(targetId, rest);
  }

  /** The session as NDJSON lines (native or pi), streamed. */
  exportLines(format: ExportFormat = "native"): AsyncGenerator<string> {
    return this.storage.exportLines(format);
  }

  /** The entries matching a query: `q` in the search syntax, newest first or by rank, paged. */
  search(q: string, options: Omit<SessionSearchOptions, "q"> = {}): Promise<SessionSearchPage> {
    return this.storage.search({ q, ...options });
  }

  protected override sibling(storage: SessionStorage): Session {
    return new RemoteSession(storage as RemoteStorage);
  }
}

/** A tenant's sessions on the service: the `SessionRepo` interface over its HTTP API. */
export class RemoteRepo implements SessionRepo {
  readonly #http: Transport;

  constructor(options: ClientOptions) {
    this.#http = new Transport(options);
  }

  storage(id: string): RemoteStorage {
    sessionPath(id);
    return new RemoteStorage(this.#http, id);
  }

  async create(options: CreateSessionOptions = {}): Promise<RemoteSession> {
    const info = await this.#http.json<SessionInfo>("POST", "v1/sessions", { body: options });
    return new RemoteSession(this.storage(info.id));
  }

  async open(id: string): Promise<RemoteSession> {
    const storage = this.storage(id);
    await storage.getInfo();
    return new RemoteSession(storage);
  }

  list(options: ListOptions = {}): Promise<SessionPage> {
    return this.#http.json("GET", "v1/sessions", {
      query: { limit: options.limit, cursor: options.cursor ?? undefined, order: options.order },
    });
  }

  /** Deletes a session: restorable with `restore` for the service's recovery window. */
  async delete(id: string): Promise<void> {
    await this.storage(id).delete();
  }

  /** Deletes a session for good, now (a deleted one too). */
  async purge(id: string): Promise<void> {
    await this.#http.json("DELETE", sessionPath(id), { query: { purge: "true" } });
  }

  /** Brings a deleted session back, within the recovery window. */
  restore(id: string): Promise<SessionInfo> {
    return this.#http.json("POST", sessionPath(id, "/restore"), { body: {} });
  }

  /**
   * The tenant's sessions created, updated and deleted, as they happen (reconnecting as needed):
   * what keeps a list of sessions current without polling.
   */
  watch(
    options: Pick<WatchOptions, "signal" | "retryDelayMs" | "onStatus"> = {},
  ): AsyncGenerator<TenantEvent> {
    return watchStream<TenantEvent>(this.#http, "v1/events", options);
  }

  /** The tenant's sessions best matching a query, with the snippets that matched. */
  search(q: string, options: Omit<TenantSearchOptions, "q"> = {}): Promise<TenantSearchPage> {
    return this.#http.json("GET", "v1/search", { query: { q, limit: options.limit } });
  }

  /** Every session of the tenant as NDJSON lines (`GET /v1/export`), from `cursor` when resuming. */
  async *exportTenant(cursor?: string): AsyncGenerator<string> {
    yield* responseLines(await this.#http.send("GET", "v1/export", { query: { cursor } }));
  }

  /** Writes the sessions of a tenant stream (or native exports one after another). */
  importTenant(text: string, options: { existing?: ExistingSessions } = {}): Promise<TenantImportReport> {
    return this.#http.json("POST", "v1/import", {
      query: { existing: options.existing },
      raw: { body: text, contentType: "application/x-ndjson" },
    });
  }

  /** The tenant's retention: sessions with no write for `idleDays` are deleted (null: kept). */
  retention(): Promise<{ idleDays: number | null }> {
    return this.#http.json("GET", "v1/retention");
  }

  setRetention(idleDays: number | null): Promise<{ idleDays: number | null }> {
    return this.#http.json("PUT", "v1/retention", { body: { idleDays }, idempotent: true });
  }

  async fork(id: string, targetId: string, options?: ForkOptions): Promise<RemoteSession> {
    return new RemoteSession(await this.storage(id).fork(targetId, options));
  }

  /**
   * Creates a session from an import file's text (native, pi, Claude Code or Codex), checked by the
   * service, which reports what it repaired on the way in (`warnings`, by line). The session takes
   * the file's id unless `id` is given; when that id is taken the import fails with
   * `already_exists` and writes nothing (`syncFile` appends what a file gained since).
   */
  importFile(text: string, options: FileImportOptions = {}): Promise<FileImport> {
    const format = checkFormat(options.format);
    return this.#importText(text, { format, id: options.id ?? parseImport(format, text).header.id });
  }

  /**
   * Syncs an import file's text into the session of its id (or `id`): creates it, appends what the
   * file gained since the last sync, or writes nothing when it gained nothing; a session that
   * differs from the file is `already_exists`, and nothing is written.
   */
  async syncFile(text: string, options: FileImportOptions = {}): Promise<FileSync> {
    const { sync, ...imported } = await this.#importText(text, { ...options, mode: "sync" });
    if (!sync) throw new SessionError("internal", "the service did not say what the sync did");
    return { ...imported, ...sync };
  }

  async #importText(
    text: string,
    query: FileImportOptions & { mode?: "sync" },
  ): Promise<FileImport & { sync?: SyncSummary }> {
    const { warnings, sync, ...info } = await this.#http.json<
      SessionInfo & { warnings: ImportWarning[]; sync?: SyncSummary }
    >("POST", "v1/sessions/import", {
      query: { format: query.format, id: query.id, mode: query.mode },
      raw: { body: text, contentType: "application/x-ndjson" },
    });
    return { session: new RemoteSession(this.storage(info.id)), info, warnings, ...(sync ? { sync } : {}) };
  }

  /** The file as native NDJSON: how a parsed file travels to the service. */
  #nativeText(file: ImportedSession): string {
    const lines = [
      JSON.stringify({ type: "session", format: "cf-session", version: 1, ...file.header }),
      ...file.entries.map((entry) => JSON.stringify(entry)),
    ];
    return `${lines.join("\n")}\n`;
  }

  async importSession(file: ImportedSession, options: { id?: string } = {}): Promise<RemoteSession> {
    const { session } = await this.#importText(this.#nativeText(file), { id: options.id });
    if (leafAfter(file.entries) !== file.leafId) await session.setLeafId(file.leafId);
    return session;
  }

  async syncSession(file: ImportedSession, options: { id?: string } = {}): Promise<SyncResult> {
    const { session, status, appended } = await this.syncFile(this.#nativeText(file), { id: options.id });
    if (status !== "unchanged" && leafAfter(file.entries) !== file.leafId)
      await session.setLeafId(file.leafId);
    return { session, status, appended };
  }

  async cleanup(): Promise<void> {}
}
