import type {
  AppendOptions,
  AppendResult,
  CompactionEntry,
  CompactOptions,
  CreateSessionOptions,
  EntryInput,
  EntryQuery,
  ForkOptions,
  HeaderPatch,
  ImportedSession,
  ImportFormat,
  ImportWarning,
  LeafEntry,
  LeafOptions,
  ListOptions,
  NavigateOptions,
  NavigateResult,
  SessionContext,
  SessionEntry,
  SessionHeader,
  SessionInfo,
  SessionPage,
  SessionRepo,
  SessionStorage,
  StoredEntry,
  TreeEntry,
  TreeNode,
} from "../core";
import { entryPage, isValidId, leafAfter, newId, Session, SessionError, walkTree } from "../core";
import type { ClientOptions } from "./transport";
import { Transport } from "./transport";

/** A session the service created from a file, and what it repaired in the file to do so. */
export interface FileImport {
  session: Session;
  info: SessionInfo;
  warnings: ImportWarning[];
}

function etag(leafId: string | null): string {
  return `"${leafId ?? ""}"`;
}

function ifMatch(expected: string | null | undefined): Record<string, string> {
  return expected === undefined ? {} : { "If-Match": etag(expected) };
}

function sessionPath(id: string, rest = ""): string {
  if (!isValidId(id)) {
    throw new SessionError("invalid_request", "session id must be 1-128 characters of A-Z a-z 0-9 . _ : -", {
      id,
    });
  }
  return `v1/sessions/${id}${rest}`;
}

/** Entries get their ids here, before the first try: a retry of the same request is then a replay. */
function withIds(entries: readonly EntryInput[]): EntryInput[] {
  return entries.map((entry) => (entry.id === undefined ? { ...entry, id: newId() } : entry));
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

  async buildContext(leafId?: string | null, systemPrompt?: string): Promise<SessionContext> {
    let context: SessionContext;
    if (leafId === null) {
      const info = await this.getInfo();
      context = {
        systemPrompt: info.systemPrompt ?? "",
        messages: [],
        thinkingLevel: "off",
        model: null,
        activeToolNames: null,
      };
    } else {
      context = await this.#http.json<SessionContext>("GET", this.#path("/context"), { query: { leafId } });
    }
    return systemPrompt === undefined ? context : { ...context, systemPrompt };
  }

  async getTree(): Promise<TreeNode[]> {
    return (await this.#http.json<{ roots: TreeNode[] }>("GET", this.#path("/tree"))).roots;
  }

  async getLabel(id: string): Promise<string | undefined> {
    return (await this.getLabels())[id];
  }

  async getLabels(): Promise<Record<string, string>> {
    const labels: Record<string, string> = {};
    for (const node of walkTree(await this.getTree()))
      if (node.label !== undefined) labels[node.id] = node.label;
    return labels;
  }

  async getName(): Promise<string | undefined> {
    return (await this.getInfo()).name;
  }

  async appendEntry(entry: EntryInput, options?: AppendOptions): Promise<StoredEntry> {
    return (await this.appendEntries([entry], options)).entries[0] as StoredEntry;
  }

  async appendEntries(entries: readonly EntryInput[], options: AppendOptions = {}): Promise<AppendResult> {
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

  async fork(targetId: string, options: ForkOptions = {}): Promise<SessionStorage> {
    const info = await this.#http.json<SessionInfo>("POST", this.#path("/fork"), {
      body: { entryId: targetId, ...options },
    });
    return new RemoteStorage(this.#http, info.id);
  }

  compact(
    options: Omit<CompactOptions, "summarizer" | "signal"> = {},
  ): Promise<StoredEntry<CompactionEntry>> {
    return this.#http
      .json<{ entry: StoredEntry<CompactionEntry> }>("POST", this.#path("/compact"), { body: options })
      .then((r) => r.entry);
  }

  navigate(
    targetId: string | null,
    options: Omit<NavigateOptions, "summarizer" | "signal"> = {},
  ): Promise<NavigateResult> {
    const { expectedLeafId, summary: _summary, ...body } = options;
    return this.#http.json("PUT", this.#path("/leaf"), {
      body: { targetId, ...body },
      headers: ifMatch(expectedLeafId),
    });
  }

  /** The session as NDJSON lines (native or pi), streamed. */
  async *exportLines(format: ImportFormat = "native"): AsyncGenerator<string> {
    const response = await this.#http.send("GET", this.#path("/export"), { query: { format } });
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

  async delete(): Promise<void> {
    await this.#http.json("DELETE", this.#path());
  }

  async cleanup(): Promise<void> {}
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

  async create(options: CreateSessionOptions = {}): Promise<Session> {
    const info = await this.#http.json<SessionInfo>("POST", "v1/sessions", { body: options });
    return new Session(this.storage(info.id));
  }

  async open(id: string): Promise<Session> {
    const storage = this.storage(id);
    await storage.getInfo();
    return new Session(storage);
  }

  list(options: ListOptions = {}): Promise<SessionPage> {
    return this.#http.json("GET", "v1/sessions", {
      query: { limit: options.limit, cursor: options.cursor ?? undefined, order: options.order },
    });
  }

  async delete(id: string): Promise<void> {
    await this.storage(id).delete();
  }

  async fork(id: string, targetId: string, options?: ForkOptions): Promise<Session> {
    return new Session(await this.storage(id).fork(targetId, options));
  }

  /**
   * Creates a session from an import file's text (native or pi), checked by the service, which
   * reports what it repaired on the way in (`warnings`, by line).
   */
  async importFile(text: string, options: { format?: ImportFormat; id?: string } = {}): Promise<FileImport> {
    const { warnings, ...info } = await this.#http.json<SessionInfo & { warnings: ImportWarning[] }>(
      "POST",
      "v1/sessions/import",
      {
        query: { format: options.format, id: options.id },
        raw: { body: text, contentType: "application/x-ndjson" },
      },
    );
    return { session: new Session(this.storage(info.id)), info, warnings };
  }

  async importSession(file: ImportedSession, options: { id?: string } = {}): Promise<Session> {
    const { header, entries } = file;
    const lines = [
      JSON.stringify({ type: "session", format: "cf-session", version: 1, ...header }),
      ...entries.map((entry) => JSON.stringify(entry)),
    ];
    const { session } = await this.importFile(`${lines.join("\n")}\n`, { id: options.id });
    if (leafAfter(entries) !== file.leafId) await session.setLeafId(file.leafId);
    return session;
  }

  async cleanup(): Promise<void> {}
}
