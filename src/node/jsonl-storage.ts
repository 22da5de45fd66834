import { mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { AppendView, PlannedWrite } from "../core/append";
import { idsNamedBy, planAppend, planImport, planLeafMove } from "../core/append";
import { branchRows } from "../core/branch";
import type { LeafEntry, SessionEntry, StoredEntry, TreeEntry } from "../core/entries";
import { SessionError } from "../core/errors";
import type { ForkTargetHeader } from "../core/fork";
import { forkStorage } from "../core/fork";
import { patchHeader } from "../core/header";
import { nowIso } from "../core/ids";
import { countHeader, sessionInfo } from "../core/info";
import { canonicalJson } from "../core/json";
import { entryPage } from "../core/paging";
import type { AppendEntryInput } from "../core/providers/entry-input";
import type {
  EntryQuery,
  ForkOptions,
  HeaderPatch,
  SessionHeader,
  SessionInfo,
} from "../core/session-schemas";
import type {
  AppendOptions,
  AppendResult,
  ImportOptions,
  LeafOptions,
  SessionStorage,
} from "../core/storage";
import type { TreeNode, TreeRow } from "../core/tree";
import { buildTree, treeRow } from "../core/tree";
import { appendView, readRows } from "./append-view";
import type { IndexedEntry } from "./entry-index";
import { EntryIndex } from "./entry-index";
import type { LineSpan } from "./entry-log";
import { corruptLine, EntryLog } from "./entry-log";
import { errnoCode, ioError, unlessMissing } from "./errno";
import { ENTRIES_FILE, LAST_BATCH_FILE, scratchFolder, sessionFolder, sessionsFolder } from "./layout";
import { SessionLock } from "./lock";
import type { SessionMetadata } from "./metadata";
import { metadataFile, readMetadata, removeMetadataLeftovers, writeMetadata } from "./metadata";
import { SerialQueue } from "./serial-queue";
import { syncFolder } from "./sync-folder";

/**
 * Entries read per file pass (when building a tree, or a page taken a part at a time): at most this
 * many, and no more lines than `READ_BYTES` together unless one line alone is longer, so that a
 * session of large entries is never read whole at once.
 */
const READ_BATCH = 4096;
const READ_BYTES = 8 * 1024 * 1024;

/** Rows in order, cut into the batches one file pass reads. */
function readBatches(rows: readonly IndexedEntry[]): IndexedEntry[][] {
  const batches: IndexedEntry[][] = [];
  let batch: IndexedEntry[] = [];
  let bytes = 0;
  for (const row of rows) {
    if (batch.length > 0 && (batch.length === READ_BATCH || bytes + row.length > READ_BYTES)) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(row);
    bytes += row.length;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/** How a session is created: `pending` while a fork or an import writes it (see `SessionMetadata`). */
export interface CreateStorageOptions {
  pending?: boolean;
}

/** What a storage needs from the repo that opened it. */
export interface StorageOwner {
  /** Creates and registers a new session (a fork's target). */
  createStorage(header: ForkTargetHeader, options?: CreateStorageOptions): Promise<JSONLStorage>;
  /** Called once the storage is closed or deleted, so the repo opens the id afresh next time. */
  forget(storage: JSONLStorage): void;
}

function notFound(id: string): SessionError {
  return new SessionError("not_found", `session ${id} does not exist`, { id });
}

/**
 * One session in a folder: `entries.jsonl`, the append-only log of its entries, and
 * `metadata.json` (see `metadata.ts`). It holds the session's lock from open to `cleanup()`, so it
 * is the only writer. Operations run one at a time in call order (appends are never interleaved,
 * and a read sees every write called before it); each write is flushed to disk before its promise
 * resolves, and changes nothing in memory unless it reached the disk.
 */
export class JSONLStorage implements SessionStorage {
  readonly id: string;
  readonly folder: string;
  readonly #root: string;
  readonly #owner: StorageOwner;
  readonly #log: EntryLog;
  readonly #lock: SessionLock;
  readonly #index: EntryIndex;
  readonly #queue = new SerialQueue();
  #header: SessionHeader;
  #leafId: string | null;
  /** Set until `publish()`: a fork or an import is still writing the session. */
  #pending: boolean;
  #state: "open" | "closed" | "deleted" = "open";
  /**
   * Set once `cleanup()` or `delete()` is called (settled when it is done), so the repo waits for
   * it instead of handing this storage out; unset again if a delete fails and the storage stays open.
   */
  #closing: Promise<void> | undefined;
  /** Set when the last metadata rewrite failed after its entries were committed; retried on the next write. */
  #metadataError: unknown;

  private constructor(
    root: string,
    header: SessionHeader,
    parts: {
      log: EntryLog;
      lock: SessionLock;
      index: EntryIndex;
      leafId: string | null;
      owner: StorageOwner;
      pending: boolean;
    },
  ) {
    this.#root = root;
    this.id = header.id;
    this.folder = sessionFolder(root, header.id);
    this.#header = header;
    this.#log = parts.log;
    this.#lock = parts.lock;
    this.#index = parts.index;
    this.#leafId = parts.leafId;
    this.#owner = parts.owner;
    this.#pending = parts.pending;
  }

  /**
   * @internal Creates the session's files in a scratch folder and renames it into place, so a
   * session appears whole or not at all, and locked from the start. `sessions/` is flushed after
   * the rename (and the root after `sessions/` is made), so the session outlives a crash. The id of
   * a pending session that a crash left unfinished is free.
   */
  static async create(
    root: string,
    header: SessionHeader,
    owner: StorageOwner,
    { pending = false }: CreateStorageOptions = {},
  ): Promise<JSONLStorage> {
    const folder = sessionFolder(root, header.id);
    const alreadyExists = () =>
      new SessionError("already_exists", `session ${header.id} already exists`, { id: header.id });
    if ((await unlessMissing(stat(folder))) && !(await removedIfAbandoned(root, header.id, owner))) {
      throw alreadyExists();
    }
    if ((await mkdir(sessionsFolder(root), { recursive: true })) !== undefined) await syncFolder(root);
    const staging = await scratchFolder(root, "create");
    const index = new EntryIndex(header);
    let lock: SessionLock;
    try {
      lock = await SessionLock.acquire(staging, header.id);
      await writeFile(join(staging, ENTRIES_FILE), "", { flag: "wx", flush: true });
      await writeMetadata(staging, {
        version: 1,
        header,
        stats: index.stats,
        leafId: null,
        lines: 0,
        ...(pending ? { pending } : {}),
      });
      // Fails when the folder exists and is not empty: a session created meanwhile.
      await rename(staging, folder);
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      const code = errnoCode(error);
      if (code === "ENOTEMPTY" || code === "EEXIST") throw alreadyExists();
      throw ioError("creating", folder, error);
    }
    const held = lock.movedTo(folder);
    try {
      await syncFolder(sessionsFolder(root));
      const log = await EntryLog.open(join(folder, ENTRIES_FILE), () => undefined, {
        create: false,
        markFile: join(folder, LAST_BATCH_FILE),
        confirmedLines: 0,
      });
      return new JSONLStorage(root, header, { log, lock: held, index, leafId: null, owner, pending });
    } catch (error) {
      await held.release().catch(() => undefined);
      throw ioError("opening", folder, error);
    }
  }

  /**
   * @internal Opens an existing session: takes its lock, reads its metadata and indexes its log. A
   * pending session is one whose fork or import a crash stopped (its writer held the lock): it is
   * removed, and not found.
   */
  static async open(root: string, id: string, owner: StorageOwner): Promise<JSONLStorage> {
    const folder = sessionFolder(root, id);
    let lock: SessionLock;
    try {
      lock = await SessionLock.acquire(folder, id);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") throw notFound(id);
      throw ioError("locking", folder, error);
    }
    let log: EntryLog | undefined;
    try {
      const metadata = await unlessMissing(readMetadata(folder));
      // On a case-insensitive file system another id's folder can answer to this one.
      if (metadata?.header.id !== id) throw notFound(id);
      if (metadata.pending) {
        await removeMoved(root, await moveAway(root, folder));
        throw notFound(id);
      }
      await removeMetadataLeftovers(folder);

      const index = new EntryIndex(metadata.header);
      const file = join(folder, ENTRIES_FILE);
      log = await EntryLog.open(
        file,
        (value, line) => {
          const problem = index.problem(value);
          if (problem !== undefined) throw corruptLine(file, line.number, problem);
          index.add(value as SessionEntry, line);
        },
        {
          create: metadata.lines === 0,
          markFile: join(folder, LAST_BATCH_FILE),
          confirmedLines: metadata.lines,
        },
      );
      const leafId = await reconcile(folder, metadata, index, file);
      return new JSONLStorage(root, metadata.header, { log, lock, index, leafId, owner, pending: false });
    } catch (error) {
      await log?.close().catch(() => undefined);
      await lock.release().catch(() => undefined);
      throw ioError("opening", folder, error);
    }
  }

  /** @internal True while a fork or an import writes the session, until `publish()`. */
  get pending(): boolean {
    return this.#pending;
  }

  /** @internal Pending while the storage is being closed or deleted; undefined otherwise. */
  get closing(): Promise<void> | undefined {
    return this.#closing;
  }

  /** Runs `task` after every operation called before it, on a storage that is still open. */
  #run<T>(task: () => Promise<T> | T): Promise<T> {
    return this.#queue.run(async () => {
      this.#usable();
      return task();
    });
  }

  #usable(): void {
    if (this.#state === "deleted") throw notFound(this.id);
    if (this.#state === "closed") {
      const message = `session ${this.id} was closed by cleanup(); open it again`;
      throw new SessionError("invalid_request", message, { id: this.id });
    }
  }

  #view(ids: readonly (string | null)[]): Promise<AppendView> {
    return appendView(this.#log, this.#index, this.#leafId, ids);
  }

  #load(rows: readonly IndexedEntry[]): Promise<StoredEntry[]> {
    return readRows(this.#log, rows);
  }

  /** Writes planned entries to the log, then (only then) to the index and the metadata. */
  async #commit(writes: readonly PlannedWrite[], leafId: string | null): Promise<void> {
    const spans = await this.#log.append(writes.map((write) => write.json));
    writes.forEach((write, i) => {
      this.#index.add(write.entry, spans[i] as LineSpan);
    });
    this.#leafId = leafId;
    this.#index.stats.updatedAt = nowIso();
    await this.#saveMetadata();
  }

  #metadata(header = this.#header, stats = this.#index.stats, pending = this.#pending): SessionMetadata {
    const metadata: SessionMetadata = {
      version: 1,
      header,
      stats,
      leafId: this.#leafId,
      lines: this.#index.rows.length,
    };
    if (pending) metadata.pending = true;
    return metadata;
  }

  /**
   * Rewrites the metadata after committed entries. The entries are durable in the log by now, so
   * failing here must not report the write as failed; the rewrite is retried by the next write and
   * by `cleanup()` (which reports it), and opening the session repairs the file from the log.
   */
  async #saveMetadata(): Promise<void> {
    try {
      await writeMetadata(this.folder, this.#metadata());
      this.#metadataError = undefined;
    } catch (error) {
      this.#metadataError = error;
    }
  }

  getHeader(): Promise<SessionHeader> {
    return this.#run(() => structuredClone(this.#header));
  }

  updateHeader(patch: HeaderPatch): Promise<SessionHeader> {
    return this.#run(async () => {
      const header = patchHeader(this.#header, structuredClone(patch));
      const stats = { ...this.#index.stats, updatedAt: nowIso() };
      countHeader(stats, header);
      try {
        await writeMetadata(this.folder, this.#metadata(header, stats));
      } catch (error) {
        throw ioError("writing", metadataFile(this.folder), error);
      }
      this.#header = header;
      Object.assign(this.#index.stats, stats);
      this.#metadataError = undefined;
      return structuredClone(header);
    });
  }

  getInfo(): Promise<SessionInfo> {
    return this.#run(() => structuredClone(sessionInfo(this.#header, this.#index.stats, this.#leafId)));
  }

  getLeafId(): Promise<string | null> {
    return this.#run(() => this.#leafId);
  }

  setLeafId(targetId: string | null, options: LeafOptions = {}): Promise<StoredEntry<LeafEntry>> {
    return this.#run(async () => {
      const { write, leafId } = planLeafMove(targetId, await this.#view([targetId]), options);
      await this.#commit([write], leafId);
      return write.entry;
    });
  }

  getEntry(id: string): Promise<StoredEntry | undefined> {
    return this.#run(async () => {
      const row = this.#index.get(id);
      return row && (await this.#load([row]))[0];
    });
  }

  getEntries(query: EntryQuery = {}): Promise<StoredEntry[]> {
    return this.#run(() => this.#load(this.#pageRows(query)));
  }

  /**
   * The entries of `getEntries`, read a batch at a time as they are taken (see `READ_BYTES`); the
   * first batch is read before this resolves, so a missing session fails here.
   */
  entryPages(query: EntryQuery = {}): Promise<AsyncIterable<StoredEntry[]>> {
    return this.#run(async () => {
      const [first = [], ...rest] = readBatches(this.#pageRows(query));
      const firstEntries = await this.#load(first);
      const load = (rows: IndexedEntry[]) => this.#run(() => this.#load(rows));
      return (async function* () {
        yield firstEntries;
        for (const rows of rest) yield await load(rows);
      })();
    });
  }

  /** The rows of a page of entries: seq n lives at index n - 1. */
  #pageRows(query: EntryQuery): IndexedEntry[] {
    const { after, limit, types } = entryPage(query);
    const rows = this.#index.rows;
    const page: IndexedEntry[] = [];
    for (let i = after; i < rows.length && page.length < limit; i++) {
      const row = rows[i] as IndexedEntry;
      if (!types || types.has(row.type)) page.push(row);
    }
    return page;
  }

  getBranch(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return this.#run(async () => {
      const start = leafId === undefined ? this.#leafId : leafId;
      if (start === null) return [];
      // A parent is always appended before its children, so root → leaf is also file order.
      const path = branchRows(start, (id) => this.#index.get(id));
      return (await this.#load(path)) as StoredEntry<TreeEntry>[];
    });
  }

  getContextPath(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return this.getBranch(leafId);
  }

  getTree(): Promise<TreeNode[]> {
    return this.#run(async () => {
      const treeRows: TreeRow[] = [];
      for (const rows of readBatches(this.#index.rows.filter((row) => row.type !== "leaf"))) {
        for (const entry of await this.#load(rows)) treeRows.push(treeRow(entry as TreeEntry));
      }
      return buildTree(treeRows, Object.fromEntries(this.#index.labels));
    });
  }

  getLabels(): Promise<Record<string, string>> {
    return this.#run(() => Object.fromEntries(this.#index.labels));
  }

  appendEntries(entries: readonly AppendEntryInput[], options: AppendOptions = {}): Promise<AppendResult> {
    return this.#run(async () => {
      const view = await this.#view(idsNamedBy(entries));
      const plan = planAppend(entries, view, options);
      if (plan.writes.length > 0) await this.#commit(plan.writes, plan.leafId);
      return { entries: plan.entries, leafId: this.#leafId, created: plan.writes.length > 0 };
    });
  }

  importEntries(entries: readonly SessionEntry[], options: ImportOptions = {}): Promise<void> {
    return this.#run(async () => {
      if (entries.length === 0) return;
      // planImport reads only ids and parents, never a stored payload: no entries to fetch.
      const plan = planImport(entries, await this.#view([]), options);
      await this.#commit(plan.writes, plan.leafId);
    });
  }

  /**
   * Not queued: `forkStorage` reads this storage through its public methods, each queued on its own.
   * The fork is pending until its copy is complete.
   */
  async fork(targetId: string, options: ForkOptions = {}): Promise<SessionStorage> {
    const fork = await forkStorage(this, targetId, options, (header) =>
      this.#owner.createStorage(header, { pending: true }),
    );
    await fork.publish();
    return fork;
  }

  /**
   * @internal Ends the pending state of a session that a fork or an import has finished writing,
   * so that it is listed and opened. If that fails, the session is deleted: it is never left half
   * written.
   */
  async publish(): Promise<void> {
    try {
      await this.#run(async () => {
        await writeMetadata(this.folder, this.#metadata(this.#header, this.#index.stats, false));
        this.#pending = false;
        this.#metadataError = undefined;
      });
    } catch (error) {
      await this.delete().catch(() => undefined);
      throw ioError("writing", metadataFile(this.folder), error);
    }
  }

  /** Renames the folder away before removing it (see `moveAway`). */
  delete(): Promise<void> {
    return this.#close(async () => {
      this.#usable();
      let trash: string;
      try {
        trash = await moveAway(this.#root, this.folder);
      } catch (error) {
        throw ioError("deleting", this.folder, error);
      }
      this.#state = "deleted";
      await this.#log.close().catch(() => undefined);
      await removeMoved(this.#root, trash);
    });
  }

  /** Writes pending metadata, closes the log and releases the lock; the storage is unusable after. */
  cleanup(): Promise<void> {
    return this.#close(async () => {
      if (this.#state !== "open") return;
      this.#state = "closed";
      const failures: unknown[] = [];
      if (this.#metadataError !== undefined) {
        await writeMetadata(this.folder, this.#metadata()).catch((error: unknown) => failures.push(error));
      }
      await this.#log.close().catch((error: unknown) => failures.push(error));
      await this.#lock.release().catch((error: unknown) => failures.push(error));
      if (failures.length > 0) throw ioError("closing", this.folder, failures[0]);
    });
  }

  /** Queues a closing task; once the storage is no longer open, its repo forgets it. */
  #close(task: () => Promise<void>): Promise<void> {
    const result = this.#queue.run(task).finally(() => {
      if (this.#state !== "open") this.#owner.forget(this);
      else if (this.#closing === settled) this.#closing = undefined;
    });
    const settled = result.catch(() => undefined);
    this.#closing = settled;
    return result;
  }
}

/**
 * Renames a session's folder into `tmp/` and returns where it went: the id is free, and the
 * session gone for every reader, at once; a crash leaves an orphan in `tmp/`, never half a session.
 */
async function moveAway(root: string, folder: string): Promise<string> {
  const trash = await scratchFolder(root, "delete");
  await rename(folder, join(trash, "session"));
  return trash;
}

/**
 * Removes what `moveAway` moved. The session is gone for every reader by then: if `sessions/`
 * cannot be flushed, a crash may bring it back whole, as if it had not been removed; what is left
 * in tmp/ is unreachable and harmless if removing it fails.
 */
async function removeMoved(root: string, trash: string): Promise<void> {
  await syncFolder(sessionsFolder(root)).catch(() => undefined);
  await rm(trash, { recursive: true, force: true }).catch(() => undefined);
}

/**
 * Removes session `id` when it is pending and no process writes it any more (a crash stopped its
 * fork or import); true when it did. Opening it does the removal, under its lock.
 */
async function removedIfAbandoned(root: string, id: string, owner: StorageOwner): Promise<boolean> {
  const metadata = await unlessMissing(readMetadata(sessionFolder(root, id))).catch(() => undefined);
  if (!metadata?.pending) return false;
  try {
    await (await JSONLStorage.open(root, id, owner)).cleanup();
    return false;
  } catch (error) {
    return error instanceof SessionError && error.code === "not_found";
  }
}

/**
 * Squares the metadata with the log after opening. They disagree when a crash came between a log
 * append and its metadata rewrite: the log wins, the head is the one it implies, and the update
 * time is the log's. Returns the head. The metadata is rewritten only after its lines are flushed,
 * so a log holding fewer lines than it counts lost confirmed entries, and is refused.
 */
async function reconcile(
  folder: string,
  metadata: SessionMetadata,
  index: EntryIndex,
  file: string,
): Promise<string | null> {
  if (metadata.lines > index.rows.length) {
    const message = `${file} holds ${index.rows.length} lines but its metadata counts ${metadata.lines}: confirmed entries are missing`;
    throw new SessionError("invalid_request", message, {
      file,
      lines: index.rows.length,
      expected: metadata.lines,
    });
  }
  const current = metadata.lines === index.rows.length;
  // A current metadata file's head is kept: a batch ending in a replay moves the head to an entry
  // written earlier, which the log's last line does not show.
  const stored = metadata.leafId === null ? undefined : index.get(metadata.leafId);
  const keep = current && (metadata.leafId === null || (stored !== undefined && stored.type !== "leaf"));
  const leafId = keep ? metadata.leafId : index.logLeafId;
  index.stats.updatedAt = metadata.stats.updatedAt;
  if (!current) {
    const modified = (await stat(file)).mtime.toISOString();
    if (modified > index.stats.updatedAt) index.stats.updatedAt = modified;
  }
  const repaired: SessionMetadata = { ...metadata, stats: index.stats, leafId, lines: index.rows.length };
  if (canonicalJson(repaired) !== canonicalJson(metadata)) await writeMetadata(folder, repaired);
  return leafId;
}
