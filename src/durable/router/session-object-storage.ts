import type { OmittedHistory } from "../../core/compaction";
import { addOmitted } from "../../core/compaction";
import type { LeafEntry, SessionEntry, StoredEntry, TreeEntry } from "../../core/entries";
import { SessionError } from "../../core/errors";
import { checkForkRequest } from "../../core/given-input";
import { newSessionHeader } from "../../core/header";
import { newId } from "../../core/ids";
import type { LocationHint } from "../../core/location";
import type { AppendEntryInput } from "../../core/providers/entry-input";
import type {
  EntryQuery,
  ForkOptions,
  HeaderPatch,
  SessionHeader,
  SessionInfo,
} from "../../core/session-schemas";
import type {
  AppendOptions,
  AppendResult,
  ImportOptions,
  LeafOptions,
  SessionStorage,
} from "../../core/storage";
import type { TreeNode, TreeStep } from "../../core/tree";
import { treeFromSteps } from "../../core/tree";
import { type TreeOrder, TreeShape } from "../../core/tree-order";
import { type ObjectCalls, objectCalls } from "../object-calls";
import type { BlobPolicy } from "../session/session-blobs";
import type { SessionObject } from "../session/session-object";
import type { AppendGuard, CompactionPlan, EntryPage, ForkBegin } from "../types";

/** What a session's storage needs of its repo: creating a session (a fork), and its recovery window. */
export interface SessionCreator {
  /** @internal */
  initialize(
    header: SessionHeader,
    publish: boolean,
    options?: { bytes?: number; location?: LocationHint },
  ): Promise<SessionObjectStorage>;
  /**
   * Creates a fork's object, listed as it begins; answers its info. A fork that fails to begin is
   * removed, and its source lets go of what it kept for it (see `DurableRepo.beginFork`). @internal
   */
  beginFork(
    header: SessionHeader,
    fork: ForkBegin,
    location?: LocationHint,
  ): Promise<{ storage: SessionObjectStorage; info: SessionInfo }>;
  /** @internal */
  readonly recoveryMs: number;
  /** What of a write is stored as blobs (none without a bucket). @internal */
  readonly blobPolicy: BlobPolicy | undefined;
}

/** Seqs sent in one call that counts what a compaction leaves out (each call counts what it can in its time). */
const COUNT_SLICE = 100_000;
/** Seqs named in one call that reads or copies pages of them (each call does what it can, and says what is left). */
const SEQ_WINDOW = 20_000;

/**
 * The object-backed `SessionStorage`: each call is one RPC to the session's Durable Object, where
 * the SQLite store applies it in a transaction.
 */
export class SessionObjectStorage implements SessionStorage {
  readonly id: string;
  readonly #repo: SessionCreator;
  readonly #object: ObjectCalls<SessionObject>;
  /**
   * The token of the fork or import building the session through this handle: only its calls
   * find the session until `publish`, after which it is a handle like any other.
   */
  #builder: string | undefined;

  constructor(repo: SessionCreator, id: string, stub: DurableObjectStub<SessionObject>, builder?: string) {
    this.#repo = repo;
    this.id = id;
    this.#object = objectCalls(stub);
    this.#builder = builder;
  }

  getHeader(): Promise<SessionHeader> {
    return this.#object.getHeader();
  }

  updateHeader(patch: HeaderPatch): Promise<SessionHeader> {
    return this.#object.updateHeader(patch);
  }

  getInfo(): Promise<SessionInfo> {
    return this.#object.getInfo();
  }

  getLeafId(): Promise<string | null> {
    return this.#object.getLeafId(this.#builder);
  }

  setLeafId(targetId: string | null, options: LeafOptions = {}): Promise<StoredEntry<LeafEntry>> {
    return this.#object.setLeafId(targetId, { ...options, builder: this.#builder });
  }

  getEntry(id: string): Promise<StoredEntry | undefined> {
    return this.#object.getEntry(id);
  }

  /**
   * A first page, then the pages after it as they are read. Each call names a window of the seqs
   * left, not all of them, so a path of a million entries costs what its pages cost.
   */
  async *#pages(first: EntryPage): AsyncGenerator<StoredEntry[]> {
    yield first.entries;
    const { rest } = first;
    for (let next = 0; next < rest.length; ) {
      const window = rest.slice(next, next + SEQ_WINDOW);
      const page = await this.#object.readEntries(window);
      yield page.entries;
      next += window.length - page.rest.length;
    }
  }

  /** Every entry of an object's paged answer, its first page and the pages after it. */
  async #drain<T extends StoredEntry = StoredEntry>(answer: Promise<EntryPage>): Promise<T[]> {
    const entries: StoredEntry[] = [];
    for await (const page of this.#pages(await answer)) {
      for (const entry of page) entries.push(entry);
    }
    return entries as T[];
  }

  /** Entries page by page; the first is read before this resolves, so a missing session fails here. */
  async entryPages(query: EntryQuery = {}): Promise<AsyncGenerator<StoredEntry[]>> {
    return this.#pages(await this.#object.getEntries(query));
  }

  /** The path page by page (see `entryPages`). */
  async branchPages(leafId?: string | null): Promise<AsyncGenerator<StoredEntry[]>> {
    return this.#pages(await this.#object.getBranch(leafId));
  }

  async getEntries(query: EntryQuery = {}): Promise<StoredEntry[]> {
    return this.#drain(this.#object.getEntries(query));
  }

  async getBranch(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return this.#drain(this.#object.getBranch(leafId));
  }

  async getContextPath(leafId?: string | null): Promise<StoredEntry<TreeEntry>[]> {
    return this.#drain(this.#object.getContextPath(leafId));
  }

  /**
   * What a compaction reads, in bounded memory: the object plans it (the whole context path, or a
   * long one's start, end and the entries that shape it) and counts the rest in calls of bounded
   * work; only what it reads whole crosses, a page at a time.
   */
  async getCompactionPath(
    leafId: string,
    keepRecentTokens: number,
  ): Promise<{ path: StoredEntry<TreeEntry>[]; omitted?: OmittedHistory }> {
    return this.#plannedPath(await this.#object.compactionPlan(leafId, keepRecentTokens));
  }

  /** What a branch summary reads of the branch it leaves, in bounded memory as a compaction does. */
  async getAbandonedPath(
    fromLeafId: string,
    targetId: string | null,
  ): Promise<{ commonAncestorId: string | null; path: StoredEntry<TreeEntry>[]; omitted?: OmittedHistory }> {
    const plan = await this.#object.abandonedPlan(fromLeafId, targetId);
    return { commonAncestorId: plan.commonAncestorId, ...(await this.#plannedPath(plan)) };
  }

  /** A planned path: its entries read whole a page at a time, the rest counted in calls of bounded work. */
  async #plannedPath(
    plan: CompactionPlan,
  ): Promise<{ path: StoredEntry<TreeEntry>[]; omitted?: OmittedHistory }> {
    let counted: Omit<OmittedHistory, "after"> = { messages: 0, tokens: 0, readFiles: [], modifiedFiles: [] };
    for (let next = 0; next < plan.omitted.length; ) {
      const part = await this.#object.countOmitted(
        plan.omitted.slice(next, next + COUNT_SLICE),
        plan.compactionId,
      );
      counted = addOmitted(counted, part.counted);
      next += part.done;
    }
    const path = await this.#drain<StoredEntry<TreeEntry>>(this.#object.readEntries(plan.seqs));
    if (plan.omitted.length === 0 || plan.after === undefined) return { path };
    return { path, omitted: { ...counted, after: plan.after } };
  }

  /**
   * The tree in the order it is written, page by page: its shape (a node's seq and its parent's)
   * read whole before this resolves, so a missing session fails here; then its nodes, a window of
   * them a call, in that order. Only the shape is held whole, a few integers a node.
   */
  async treeSteps(): Promise<AsyncGenerator<TreeStep[]>> {
    const shape = new TreeShape();
    let page = await this.#object.getTreeShape(0);
    shape.add(page.seqs, page.parents);
    while (!page.done) {
      page = await this.#object.getTreeShape(page.seqs[page.seqs.length - 1] as number, page.bound);
      shape.add(page.seqs, page.parents);
    }
    return this.#steps(shape.order());
  }

  async *#steps({ seqs, closes }: TreeOrder): AsyncGenerator<TreeStep[]> {
    for (let next = 0; next < seqs.length; ) {
      const nodes = await this.#object.getTreeNodes(Array.from(seqs.subarray(next, next + SEQ_WINDOW)));
      yield nodes.map((node, i) => ({ node, closes: closes[next + i] as number }));
      next += nodes.length;
    }
  }

  async getTree(): Promise<TreeNode[]> {
    return treeFromSteps(await this.treeSteps());
  }

  getLabels(): Promise<Record<string, string>> {
    return this.#object.getLabels();
  }

  /** Appends entries; a provider's message among them is converted inside the object, as it writes. */
  appendEntries(
    entries: readonly AppendEntryInput[],
    options: AppendOptions & AppendGuard & { validated?: boolean } = {},
  ): Promise<AppendResult> {
    return this.#object.appendEntries(entries, {
      ...options,
      blobs: this.#repo.blobPolicy,
      builder: this.#builder,
    });
  }

  importEntries(entries: readonly SessionEntry[], options: ImportOptions = {}): Promise<void> {
    return this.#object.importEntries(entries, {
      ...options,
      blobs: this.#repo.blobPolicy,
      builder: this.#builder,
    });
  }

  /** Refuses (`quota_exceeded`) when `bytes` more would take the session past its byte quotas. */
  checkRoom(bytes: number): Promise<void> {
    return this.#object.checkRoom(bytes, this.#builder);
  }

  /**
   * A fork of the path root → target: a new session, answered as soon as it exists holding its
   * path's first page; the rest is copied in the background by its own object, which meanwhile
   * answers every read as if it were complete (fork-copy.ts). A fork that fails to begin is
   * removed, and this session keeps nothing for it (one found listed is whole, and the answer; one
   * neither removed nor listed answers that its outcome is unknown: see `DurableRepo.beginFork`).
   * The new session's object is created near `location`, when given.
   */
  async fork(
    targetId: string,
    options: ForkOptions & { location?: LocationHint } = {},
  ): Promise<SessionStorage> {
    return (await this.#fork(targetId, options)).storage;
  }

  /** `fork`, answering the new session's info in the same call. */
  async forkSession(
    targetId: string,
    options: ForkOptions & { location?: LocationHint } = {},
  ): Promise<SessionInfo> {
    return (await this.#fork(targetId, options)).info;
  }

  async #fork(
    targetId: string,
    options: ForkOptions & { location?: LocationHint },
  ): Promise<{ storage: SessionObjectStorage; info: SessionInfo }> {
    const { location: _location, ...given } = options;
    checkForkRequest(targetId, given);
    const id = options.id ?? newId();
    const start = await this.#object.forkStart(targetId, options.position, id);
    const name = options.name ?? start.name;
    const header = newSessionHeader({
      id,
      name,
      systemPrompt: start.header.systemPrompt,
      metadata: start.header.metadata,
      parentSession: { id: this.id, entryId: start.leafId ?? targetId },
    });
    return this.#repo.beginFork(header, { sourceId: this.id, start, name }, options.location);
  }

  /** The fork of `hold` is gone: the session no longer keeps anything for it. @internal */
  releaseFork(hold: string): Promise<void> {
    return this.#object.releaseFork(hold);
  }

  /**
   * Creates the session in its (empty) object (see `SessionObject.init`): listed at once, or built
   * through this handle when it has a builder's token.
   */
  async init(
    tenant: string,
    header: SessionHeader,
    options: { shard: number; bytes?: number; fork?: ForkBegin },
  ): Promise<SessionInfo> {
    const info = await this.#object.init(tenant, header, { ...options, builder: this.#builder });
    // A fork is listed by its object as soon as it begins.
    if (options.fork) this.#builder = undefined;
    return info;
  }

  /**
   * The info of the session this handle built, if it is listed already (a fork that failed after
   * it listed itself, or whose answer was lost), after which the handle is like any other.
   */
  async listedInfo(): Promise<SessionInfo | undefined> {
    if (this.#builder === undefined) return undefined;
    let info: SessionInfo;
    try {
      info = await this.#object.listedInfo(this.#builder);
    } catch (error) {
      // Only `not_found` says it is not listed; any other failure leaves that unknown.
      if (error instanceof SessionError && error.code === "not_found") return undefined;
      throw error;
    }
    this.#builder = undefined;
    return info;
  }

  /** Lists the session this handle built, complete, in the directory now. */
  async publish(): Promise<void> {
    if (this.#builder === undefined) throw new Error("only the handle that builds a session publishes it");
    await this.#object.publish(this.#builder);
    this.#builder = undefined;
  }

  /** Deletes the session, restorable for the recovery window (RECOVERY_WINDOW_SECONDS). */
  delete(): Promise<void> {
    return this.#object.delete(this.#repo.recoveryMs, this.#builder);
  }

  async cleanup(): Promise<void> {}
}
