import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { SessionError } from "../core/errors";
import type { ForkTargetHeader } from "../core/fork";
import { checkCreateOptions } from "../core/given-input";
import { newSessionHeader } from "../core/header";
import { isValidId } from "../core/ids";
import { pageSessions } from "../core/info";
import type { ImportedSession, ImportHeader } from "../core/interchange";
import { writeImport } from "../core/interchange";
import { sessionsPageLimit } from "../core/paging";
import type { SessionRepo } from "../core/repo";
import { Session } from "../core/session";
import type {
  CreateSessionOptions,
  ForkOptions,
  ListOptions,
  SessionInfo,
  SessionPage,
} from "../core/session-schemas";
import { inProject } from "../core/session-schemas";
import type { SyncResult } from "../core/sync-import";
import { openIfExists, syncImport } from "../core/sync-import";
import { ioError, unlessMissing } from "./errno";
import type { CreateStorageOptions } from "./jsonl-storage";
import { JSONLStorage } from "./jsonl-storage";
import { sessionFolder, sessionsFolder } from "./layout";
import { metadataFile, metadataInfo, readMetadata } from "./metadata";

/** metadata.json files read at once by `list`: enough to overlap I/O, few enough for the fd limit. */
const LIST_CONCURRENCY = 64;

interface OpenSession {
  ready: Promise<JSONLStorage>;
  storage?: JSONLStorage;
}

/**
 * Sessions as folders of files under `root` (see `layout.ts`). A session is open in at most one
 * repo at a time (its lock); within a repo, every `open` of an id returns the same storage, so a
 * repo never locks itself out. `cleanup()` closes them all and releases their locks.
 */
export class JSONLRepo implements SessionRepo {
  readonly root: string;
  readonly #open = new Map<string, OpenSession>();

  constructor(root: string) {
    this.root = root;
  }

  /** @internal creates and registers a storage; used by `create`, forks and imports. */
  async createStorage(
    options: CreateSessionOptions | ForkTargetHeader | ImportHeader,
    storageOptions?: CreateStorageOptions,
  ): Promise<JSONLStorage> {
    const storage = await JSONLStorage.create(this.root, newSessionHeader(options), this, storageOptions);
    this.#open.set(storage.id, { ready: Promise.resolve(storage), storage });
    return storage;
  }

  /** @internal */
  forget(storage: JSONLStorage): void {
    if (this.#open.get(storage.id)?.storage === storage) this.#open.delete(storage.id);
  }

  /**
   * The open storage of session `id`, opening (and locking) it on first use. A session that a fork
   * or an import is still writing is not found, as it is not listed.
   */
  async openStorage(id: string): Promise<JSONLStorage> {
    sessionFolder(this.root, id);
    for (let known = this.#open.get(id); known; known = this.#open.get(id)) {
      const storage = await known.ready;
      const closing = storage.closing;
      if (storage.pending) throw new SessionError("not_found", `session ${id} does not exist`, { id });
      if (!closing) return storage;
      // Being closed or deleted: once that is done the storage has been forgotten (or, if a delete
      // failed, is open again), so look again.
      await closing;
    }
    const entry: OpenSession = { ready: JSONLStorage.open(this.root, id, this) };
    this.#open.set(id, entry);
    entry.ready.then(
      (storage) => {
        entry.storage = storage;
      },
      () => {
        if (this.#open.get(id) === entry) this.#open.delete(id);
      },
    );
    return entry.ready;
  }

  async create(options: CreateSessionOptions = {}): Promise<Session> {
    return new Session(await this.createStorage(checkCreateOptions(options)));
  }

  async open(id: string): Promise<Session> {
    return new Session(await this.openStorage(id));
  }

  /** Reads each session's metadata.json and nothing else: no log is opened and no lock taken. */
  async list(options: ListOptions = {}): Promise<SessionPage> {
    const limit = sessionsPageLimit(options);
    const folder = sessionsFolder(this.root);
    const found = await unlessMissing(readdir(folder, { withFileTypes: true })).catch((error: unknown) => {
      throw ioError("listing", folder, error);
    });
    const { prefix = "" } = options;
    const names = (found ?? [])
      .filter((d) => d.isDirectory() && isValidId(d.name) && d.name.startsWith(prefix))
      .map((d) => d.name);
    // A pool of readers rather than batches in lockstep, so one slow file does not hold up the rest.
    const listed: Array<SessionInfo | undefined> = [];
    let next = 0;
    const reader = async () => {
      while (next < names.length) {
        const i = next++;
        listed[i] = await this.#listed(names[i] as string);
      }
    };
    await Promise.all(Array.from({ length: Math.min(LIST_CONCURRENCY, names.length) }, reader));
    const { project } = options;
    const infos = listed.filter(
      (info): info is SessionInfo =>
        info !== undefined && (project === undefined || inProject(info.metadata.project, project)),
    );
    return pageSessions(infos, { ...options, limit });
  }

  /**
   * A folder's info; undefined when it holds no session by that id (being created or deleted), a
   * pending one (being written by a fork or an import, or left unfinished by a crash), or one whose
   * metadata this version cannot read (damaged, or written by a newer version): one such folder
   * must not hide every other session. Opening it reports what is wrong.
   */
  async #listed(name: string): Promise<SessionInfo | undefined> {
    const folder = join(sessionsFolder(this.root), name);
    try {
      const metadata = await unlessMissing(readMetadata(folder));
      return metadata?.header.id === name && !metadata.pending ? metadataInfo(metadata) : undefined;
    } catch (error) {
      if (error instanceof SessionError) return undefined;
      throw ioError("reading", metadataFile(folder), error);
    }
  }

  async delete(id: string): Promise<void> {
    await (await this.openStorage(id)).delete();
  }

  async fork(id: string, targetId: string, options?: ForkOptions): Promise<Session> {
    return (await this.open(id)).fork(targetId, options);
  }

  /**
   * Writes a parsed native or pi file as a new session (see `writeImport`): all or nothing, even
   * across a crash, since the session is pending until it is complete.
   */
  async importSession(file: ImportedSession, options: { id?: string } = {}): Promise<Session> {
    const storage = await writeImport(file, options, (header) =>
      this.createStorage(header, { pending: true }),
    );
    await storage.publish();
    return new Session(storage);
  }

  /** Syncs a parsed file into its session (see `syncImport`); a new session is pending until complete. */
  async syncSession(file: ImportedSession, options: { id?: string } = {}): Promise<SyncResult> {
    const result = await syncImport(file, options, {
      open: (id) => openIfExists(() => this.openStorage(id)),
      create: (header) => this.createStorage(header, { pending: true }),
    });
    if (result.status === "created") await (result.session.storage as JSONLStorage).publish();
    return result;
  }

  async cleanup(): Promise<void> {
    // A storage that never opened has nothing to close.
    const opened = [...this.#open.values()].map((entry) => entry.ready.catch(() => undefined));
    const results = await Promise.allSettled(opened.map(async (ready) => (await ready)?.cleanup()));
    const failed = results.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
  }
}
