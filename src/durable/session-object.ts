import { DurableObject } from "cloudflare:workers";
import type {
  AppendOptions,
  AppendResult,
  CompactionStorage,
  EntryQuery,
  HeaderPatch,
  ImportOptions,
  LeafEntry,
  LeafOptions,
  Result,
  SessionEntry,
  SessionHeader,
  SessionInfo,
  StoredEntry,
  TreeRow,
} from "../core";
import {
  buildSessionContext,
  capture,
  compactSession,
  estimateContextTokens,
  newId,
  nowIso,
  SessionError,
  summarizerFromConfig,
  unwrap,
} from "../core";
import type { EntryPage } from "./entry-rows";
import type { DurableEnv } from "./env";
import type { ForkSource } from "./fork-copy";
import { SqliteSession } from "./sqlite-session";

/** How long after a write the directory hears of it: writes in between are reported together. */
const DEFAULT_SYNC_MS = 1000;
const MAX_RETRY_MS = 60_000;

/**
 * A session as a Durable Object. Every method answers a `Result` (RPC drops error classes); the
 * worker-side `SessionObjectStorage` turns failures back into `SessionError`s.
 */
export class SessionObject extends DurableObject<DurableEnv> {
  readonly #session: SqliteSession;
  #syncScheduled = false;
  #syncFailures = 0;
  #compacting = false;

  constructor(ctx: DurableObjectState, env: DurableEnv) {
    super(ctx, env);
    this.#session = ctx.storage.transactionSync(() => new SqliteSession(ctx.storage));
  }

  #run<T>(read: (store: SqliteSession) => T): Promise<Result<T>> {
    return capture(() => read(this.#session));
  }

  /** Runs a write, then makes sure the directory will hear of it. */
  #write<T>(write: (store: SqliteSession) => T): Promise<Result<T>> {
    return capture(() => {
      const result = write(this.#session);
      this.#scheduleSync();
      return result;
    });
  }

  #scheduleSync(): void {
    if (this.#syncScheduled) return;
    this.#syncScheduled = true;
    const delay = Number(this.env.DIRECTORY_SYNC_MS ?? DEFAULT_SYNC_MS);
    this.ctx.storage
      .setAlarm(Date.now() + (Number.isFinite(delay) ? delay : DEFAULT_SYNC_MS))
      .catch((error) => {
        this.#syncScheduled = false;
        console.error("session: could not schedule the directory report", String(error));
      });
  }

  async #report(): Promise<void> {
    const { tenant, incarnation, version } = this.#session.state;
    await this.env.DIRECTORY.getByName(tenant).put({ info: this.#session.info(), incarnation, version });
  }

  /**
   * Runs after writes: compacts if automatic compaction is on and the context outgrew its budget,
   * then reports to the directory; a failed report is retried with backoff until it gets through.
   */
  override async alarm(): Promise<void> {
    if (!this.#session.exists) return;
    this.#syncScheduled = false;
    await this.#autoCompact();
    if (!this.#session.exists) return;
    try {
      await this.#report();
      this.#syncFailures = 0;
    } catch (error) {
      this.#syncFailures++;
      const wait = Math.min(MAX_RETRY_MS, 1000 * 2 ** this.#syncFailures);
      console.error("session: directory report failed, retrying", { waitMs: wait, error: String(error) });
      this.#syncScheduled = true;
      await this.ctx.storage.setAlarm(Date.now() + wait);
    }
  }

  /**
   * The session as core's compaction sees it: reads from this object's SQLite, and the compaction
   * appended through the same rules and checks as any write (the branch may move while the
   * summary is written).
   */
  #compactionStorage(): CompactionStorage {
    return {
      getLeafId: async () => this.#session.state.leafId,
      getContextPath: async (leafId) => this.#session.contextEntries(leafId),
      appendEntries: async (entries, options) =>
        unwrap(await this.#write((session) => session.appendEntries(entries, options))),
    };
  }

  async #autoCompact(): Promise<void> {
    const { header, leafId, autoCompaction } = this.#session.state;
    const settings = header.autoCompact;
    if (!settings || leafId === null || this.#compacting) return;
    const path = this.#session.contextEntries(leafId);
    if (
      estimateContextTokens(buildSessionContext(path).messages) <=
      settings.contextWindow - settings.reserveTokens
    )
      return;
    this.#compacting = true;
    const last = { ...autoCompaction };
    this.#session.setAutoCompaction({ ...last, state: "running" });
    const lastRunAt = nowIso();
    try {
      const entry = await compactSession(this.#compactionStorage(), {
        keepRecentTokens: settings.keepRecentTokens,
        summarizer: summarizerFromConfig(this.env),
      });
      this.#session.setAutoCompaction({ state: "idle", lastRunAt, lastEntryId: entry.id });
    } catch (error) {
      if (!this.#session.exists) return;
      if (error instanceof SessionError && error.code === "nothing_to_compact") {
        this.#session.setAutoCompaction({ state: "idle", lastRunAt });
      } else {
        const message = error instanceof Error ? error.message : String(error);
        console.error("session: automatic compaction failed", message);
        this.#session.setAutoCompaction({ state: "failed", lastRunAt, lastError: message });
      }
    } finally {
      this.#compacting = false;
    }
  }

  /** Creates the session; `publish` lists it at once (a fork publishes only once it is complete). */
  async init(tenant: string, header: SessionHeader, publish: boolean): Promise<Result<SessionInfo>> {
    return capture(async () => {
      const info = this.ctx.storage.transactionSync(() => this.#session.init(tenant, newId(), header));
      if (publish) await this.publish();
      return info;
    });
  }

  /**
   * Reports to the directory now. The session exists whether or not the directory answers; if it
   * does not, the alarm keeps reporting until it does.
   */
  async publish(): Promise<void> {
    try {
      await this.#report();
    } catch (error) {
      console.error("session: directory report failed, will retry", String(error));
      this.#scheduleSync();
    }
  }

  /** Deletes the session: first from the listing (so it never shows again), then its storage. */
  async destroy(): Promise<Result<void>> {
    return capture(async () => {
      const { tenant, incarnation, header } = this.#session.state;
      await this.env.DIRECTORY.getByName(tenant).remove(header.id, incarnation);
      await this.ctx.storage.deleteAlarm();
      await this.ctx.storage.deleteAll();
      this.#session.reset();
      this.#syncScheduled = false;
    });
  }

  info(): Promise<Result<SessionInfo>> {
    return this.#run((session) => session.info());
  }

  header(): Promise<Result<SessionHeader>> {
    return this.#run((session) => session.state.header);
  }

  updateHeader(patch: HeaderPatch): Promise<Result<SessionHeader>> {
    return this.#write((session) => session.updateHeader(patch));
  }

  leaf(): Promise<Result<string | null>> {
    return this.#run((session) => session.state.leafId);
  }

  setLeaf(targetId: string | null, options: LeafOptions): Promise<Result<StoredEntry<LeafEntry>>> {
    return this.#write((session) => session.setLeafId(targetId, options));
  }

  entry(id: string): Promise<Result<StoredEntry | undefined>> {
    return this.#run((session) => session.getEntry(id));
  }

  /*
   * Reads answer a first page of entries and the seqs left (`readEntries` fetches those), so no
   * answer passes the 32 MiB RPC limit however long the path or large the entries.
   */

  entries(query: EntryQuery): Promise<Result<EntryPage>> {
    return this.#run((session) => session.page(session.entrySeqs(query)));
  }

  branch(leafId: string | null | undefined): Promise<Result<EntryPage>> {
    return this.#run((session) => session.page(session.pathSeqs(leafId)));
  }

  /** The path buildSessionContext needs (what the latest compaction dropped left out). */
  contextPath(leafId: string | null | undefined): Promise<Result<EntryPage>> {
    return this.#run((session) => session.page(session.contextSeqs(leafId)));
  }

  /** The context of a leaf as JSON, streamed: projected here, read page by page as it is sent. */
  context(leafId: string | null | undefined): Promise<Result<ReadableStream<Uint8Array>>> {
    return this.#run((session) => {
      const { first, rest } = session.context(leafId);
      const encoder = new TextEncoder();
      let pending: string | undefined = first;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          const next = pending ?? rest.next().value;
          pending = undefined;
          if (next === undefined) controller.close();
          else controller.enqueue(encoder.encode(next));
        },
        cancel() {
          rest.return?.();
        },
      });
    });
  }

  readEntries(seqs: number[]): Promise<Result<EntryPage>> {
    return this.#run((session) => session.page(seqs));
  }

  treeRows(): Promise<Result<{ rows: TreeRow[]; labels: Record<string, string> }>> {
    return this.#run((session) => session.treeRows());
  }

  labels(): Promise<Result<Record<string, string>>> {
    return this.#run((session) => session.labels());
  }

  append(
    entries: readonly unknown[],
    options: AppendOptions & { validated?: boolean },
  ): Promise<Result<AppendResult>> {
    return this.#write((session) => session.appendEntries(entries, options));
  }

  importEntries(entries: readonly SessionEntry[], options: ImportOptions): Promise<Result<void>> {
    return this.#write((session) => session.importEntries(entries, options));
  }

  /** Entries as stored, for a copy (a fork) to another object. */
  readJson(seqs: number[]): Promise<Result<{ json: string[]; rest: number[] }>> {
    return this.#run((session) => session.pageJson(seqs));
  }

  importJson(json: string[]): Promise<Result<void>> {
    return this.#write((session) => session.importJson(json));
  }

  forkSource(targetId: string, position: LeafOptions["position"]): Promise<Result<ForkSource>> {
    return this.#run((session) => session.forkSource(targetId, position));
  }
}
