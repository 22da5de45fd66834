import type { SessionEntry } from "../core/entries";
import { isTreeEntry } from "../core/entries";
import { SessionError } from "../core/errors";
import type { TenantEvent } from "../core/events";
import { checkCreateOptions } from "../core/given-input";
import { newId, nowIso } from "../core/ids";
import { parseImport } from "../core/import-formats";
import type { ImportedSession, ImportFormat, ImportWarning } from "../core/interchange";
import { checkFormat, leafAfter } from "../core/interchange";
import type { SessionRepo } from "../core/repo";
import type { TenantSearchOptions, TenantSearchPage } from "../core/search";
import type {
  CreateSessionOptions,
  ForkOptions,
  ListOptions,
  SessionInfo,
  SessionPage,
} from "../core/session-schemas";
import type { SyncResult, SyncSummary } from "../core/sync-import";
import { nameAsFile } from "../core/sync-import";
import type { ExistingSessions, TenantImportReport } from "../core/tenant-stream";
import { RemoteSession } from "./remote-session";
import { RemoteStorage, sessionPath } from "./remote-storage";
import { responseLines } from "./response-lines";
import type { ClientOptions } from "./transport";
import { Transport } from "./transport";
import type { WatchOptions } from "./watch";
import { watchStream } from "./watch";

/*
 * A tenant's sessions on the service: creating, opening, listing and deleting them, the tenant's
 * events, search, retention and backups, and import files turned into sessions by the service.
 */

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
    const info = await this.#http.json<SessionInfo>("POST", "v1/sessions", {
      body: checkCreateOptions(options),
    });
    return new RemoteSession(this.storage(info.id));
  }

  async open(id: string): Promise<RemoteSession> {
    const storage = this.storage(id);
    await storage.getInfo();
    return new RemoteSession(storage);
  }

  list(options: ListOptions = {}): Promise<SessionPage> {
    const { limit, cursor, order, prefix, project } = options;
    return this.#http.json("GET", "v1/sessions", {
      query: { limit, cursor: cursor ?? undefined, order, prefix, project },
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
    return this.#http.json("GET", "v1/search", {
      query: { q, limit: options.limit, prefix: options.prefix, cursor: options.cursor },
    });
  }

  /**
   * Every session of the tenant as NDJSON lines (`GET /v1/export`), from `cursor` when resuming.
   * Stopping early (a `break`, or `signal`) closes the connection.
   */
  async *exportTenant(cursor?: string, options: { signal?: AbortSignal } = {}): AsyncGenerator<string> {
    const { signal } = options;
    yield* responseLines(await this.#http.send("GET", "v1/export", { query: { cursor }, signal }), signal);
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

  /**
   * The file's entries as one request writes them: a head the entries do not end at travels as a
   * `leaf` record after them, as moving it once written would write.
   */
  #withHead(file: ImportedSession): SessionEntry[] {
    if (leafAfter(file.entries) === file.leafId) return file.entries;
    return [
      ...file.entries,
      { type: "leaf", id: newId(), parentId: null, timestamp: nowIso(), targetId: file.leafId },
    ];
  }

  /** Imports a parsed file in one request, so it is written whole or not at all, its head with it. */
  async importSession(file: ImportedSession, options: { id?: string } = {}): Promise<RemoteSession> {
    const text = this.#nativeText({ ...file, entries: this.#withHead(file) });
    const { session } = await this.#importText(text, { id: options.id });
    return session;
  }

  /**
   * Syncs a parsed file in one request, its head with it: what the file gained and where its head
   * is are written together, so a sync cut short leaves nothing for the next to miss.
   */
  async syncSession(file: ImportedSession, options: { id?: string } = {}): Promise<SyncResult> {
    const text = this.#nativeText({ ...file, entries: this.#withHead(file) });
    const { session, status, appended } = await this.syncFile(text, { id: options.id });
    // What was appended is the file's last tree entries; the native text does not say which line
    // named the session, so a rename among them is written from here, and the head put back.
    const tree = file.entries.filter((entry) => isTreeEntry(entry));
    if (
      status === "appended" &&
      (await nameAsFile(session.storage, file, tree.slice(tree.length - appended)))
    )
      await session.setLeafId(file.leafId);
    return { session, status, appended };
  }

  async cleanup(): Promise<void> {}
}
