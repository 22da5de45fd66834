import { DurableObject } from "cloudflare:workers";
import type {
  AppendOptions,
  AppendResult,
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
  estimateContextTokens,
  newId,
  nowIso,
  Session,
  SessionError,
  summarizerFromConfig,
} from "../core";
import type { DurableEnv } from "./env";
import { DurableRepo } from "./repo";
import type { ContextAnswer, EntryPage, ForkSource } from "./session-store";
import { SessionStore } from "./session-store";

/** How long after a write the directory hears of it: writes in between are reported together. */
const DEFAULT_SYNC_MS = 1000;
const MAX_RETRY_MS = 60_000;

/**
 * A session as a Durable Object. Every method answers a `Result` (RPC drops error classes); the
 * worker-side `DurableSessionStorage` turns failures back into `SessionError`s.
 */
export class SessionObject extends DurableObject<DurableEnv> {
  readonly #store: SessionStore;
  #syncScheduled = false;
  #syncFailures = 0;
  #compacting = false;

  constructor(ctx: DurableObjectState, env: DurableEnv) {
    super(ctx, env);
    this.#store = ctx.storage.transactionSync(() => new SessionStore(ctx.storage));
  }

  #run<T>(read: (store: SessionStore) => T): Promise<Result<T>> {
    return capture(() => read(this.#store));
  }

  /** Runs a write, then makes sure the directory will hear of it. */
  #write<T>(write: (store: SessionStore) => T): Promise<Result<T>> {
    return capture(() => {
      const result = write(this.#store);
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
    const { tenant, incarnation, version } = this.#store.state;
    await this.env.DIRECTORY.getByName(tenant).put({ info: this.#store.info(), incarnation, version });
  }

  /**
   * Runs after writes: compacts if automatic compaction is on and the context outgrew its budget,
   * then reports to the directory; a failed report is retried with backoff until it gets through.
   */
  override async alarm(): Promise<void> {
    if (!this.#store.exists) return;
    this.#syncScheduled = false;
    await this.#autoCompact();
    if (!this.#store.exists) return;
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
   * Compacts through the object's own RPC interface, like any client would, so the write goes
   * through the same checks (the branch may move while the summary is written).
   */
  async #autoCompact(): Promise<void> {
    const { header, leafId, tenant, autoCompaction } = this.#store.state;
    const settings = header.autoCompact;
    if (!settings || leafId === null || this.#compacting) return;
    const path = this.#store.contextEntries(leafId);
    if (
      estimateContextTokens(buildSessionContext(path).messages) <=
      settings.contextWindow - settings.reserveTokens
    )
      return;
    this.#compacting = true;
    const last = { ...autoCompaction };
    this.#store.setAutoCompaction({ ...last, state: "running" });
    const lastRunAt = nowIso();
    try {
      const session = new Session(new DurableRepo(this.env, tenant).storage(header.id));
      const entry = await session.compact({
        keepRecentTokens: settings.keepRecentTokens,
        summarizer: summarizerFromConfig(this.env),
      });
      this.#store.setAutoCompaction({ state: "idle", lastRunAt, lastEntryId: entry.id });
    } catch (error) {
      if (!this.#store.exists) return;
      if (error instanceof SessionError && error.code === "nothing_to_compact") {
        this.#store.setAutoCompaction({ state: "idle", lastRunAt });
      } else {
        const message = error instanceof Error ? error.message : String(error);
        console.error("session: automatic compaction failed", message);
        this.#store.setAutoCompaction({ state: "failed", lastRunAt, lastError: message });
      }
    } finally {
      this.#compacting = false;
    }
  }

  /** Creates the session; `publish` lists it at once (a fork publishes only once it is complete). */
  async init(tenant: string, header: SessionHeader, publish: boolean): Promise<Result<SessionInfo>> {
    return capture(async () => {
      const info = this.ctx.storage.transactionSync(() => this.#store.init(tenant, newId(), header));
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
      const { tenant, incarnation, header } = this.#store.state;
      await this.env.DIRECTORY.getByName(tenant).remove(header.id, incarnation);
      await this.ctx.storage.deleteAlarm();
      await this.ctx.storage.deleteAll();
      this.#store.reset();
      this.#syncScheduled = false;
    });
  }

  info(): Promise<Result<SessionInfo>> {
    return this.#run((store) => store.info());
  }

  header(): Promise<Result<SessionHeader>> {
    return this.#run((store) => store.state.header);
  }

  updateHeader(patch: HeaderPatch): Promise<Result<SessionHeader>> {
    return this.#write((store) => store.updateHeader(patch));
  }

  leaf(): Promise<Result<string | null>> {
    return this.#run((store) => store.state.leafId);
  }

  setLeaf(targetId: string | null, options: LeafOptions): Promise<Result<StoredEntry<LeafEntry>>> {
    return this.#write((store) => store.setLeafId(targetId, options));
  }

  entry(id: string): Promise<Result<StoredEntry | undefined>> {
    return this.#run((store) => store.getEntry(id));
  }

  /*
   * Reads answer a first page of entries and the seqs left (`readEntries` fetches those), so no
   * answer passes the 32 MiB RPC limit however long the path or large the entries.
   */

  entries(query: EntryQuery): Promise<Result<EntryPage>> {
    return this.#run((store) => store.page(store.entrySeqs(query)));
  }

  branch(leafId: string | null | undefined): Promise<Result<EntryPage>> {
    return this.#run((store) => store.page(store.pathSeqs(leafId)));
  }

  /** The (pruned) path buildContext needs, and the session's system prompt. */
  contextPath(leafId: string | null | undefined): Promise<Result<EntryPage & { systemPrompt?: string }>> {
    return this.#run((store) => {
      const { systemPrompt } = store.state.header;
      const page = store.page(store.contextSeqs(leafId));
      return systemPrompt === undefined ? page : { ...page, systemPrompt };
    });
  }

  context(leafId: string | null | undefined): Promise<Result<ContextAnswer>> {
    return this.#run((store) => store.context(leafId));
  }

  readEntries(seqs: number[]): Promise<Result<EntryPage>> {
    return this.#run((store) => store.page(seqs));
  }

  treeRows(): Promise<Result<{ rows: TreeRow[]; labels: Record<string, string> }>> {
    return this.#run((store) => store.treeRows());
  }

  label(id: string): Promise<Result<string | undefined>> {
    return this.#run((store) => store.getLabel(id));
  }

  labels(): Promise<Result<Record<string, string>>> {
    return this.#run((store) => store.getLabels());
  }

  sessionName(): Promise<Result<string | undefined>> {
    return this.#run((store) => store.getName());
  }

  append(
    entries: readonly unknown[],
    options: AppendOptions & { validated?: boolean },
  ): Promise<Result<AppendResult>> {
    return this.#write((store) => store.appendEntries(entries, options));
  }

  importEntries(entries: readonly SessionEntry[], options: ImportOptions): Promise<Result<void>> {
    return this.#write((store) => store.importEntries(entries, options));
  }

  /** Entries as stored, for a copy (a fork) to another object. */
  readJson(seqs: number[]): Promise<Result<{ json: string[]; rest: number[] }>> {
    return this.#run((store) => store.pageJson(seqs));
  }

  importJson(json: string[]): Promise<Result<void>> {
    return this.#write((store) => store.importJson(json));
  }

  forkSource(targetId: string, position: LeafOptions["position"]): Promise<Result<ForkSource>> {
    return this.#run((store) => store.forkSource(targetId, position));
  }
}
