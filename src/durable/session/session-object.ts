import { DurableObject } from "cloudflare:workers";
import type {
  AppendOptions,
  AppendResult,
  EntryQuery,
  ErrorBody,
  GenerationInfo,
  HeaderPatch,
  ImportOptions,
  LeafAt,
  LeafEntry,
  LeafOptions,
  OpenGenerationBody,
  Result,
  SessionEntry,
  SessionHeader,
  SessionInfo,
  SessionSearchOptions,
  SessionSearchPage,
  StoredEntry,
  TreeRow,
} from "../../core/internal";
import {
  capture,
  DEFAULT_ABANDON_SECONDS,
  DEFAULT_RETAIN_SECONDS,
  ERROR_STATUS,
  jsonArray,
  SessionError,
  textStream,
  unwrap,
  utf8Length,
} from "../../core/internal";
import { slices } from "../blobs/blob-text";
import type { DurableEnv } from "../env";
import { logBackgroundFailure, tenantHash } from "../log-line";
import type { MetricPoint } from "../metrics";
import { writeMetric } from "../metrics";
import { sessionObjectName } from "../names";
import { objectEnv } from "../placement/placed-env";
import { sqlOf } from "../sql";
import { STREAM_REQUEST_ID_HEADER } from "../stream";
import { storageWork, transientError } from "../transient";
import type {
  Building,
  CompactionPlan,
  ContextAnswer,
  CopiedRows,
  EntryPage,
  ExpiryOutcome,
  ForkSource,
  NewSessionOptions,
  OmittedCount,
} from "../types";
import { AutoCompaction } from "./auto-compaction";
import { DirectoryReports } from "./directory-reports";
import { EventHub } from "./event-hub";
import type { GenerationEnd, GenerationOutcome } from "./generations";
import { GENERATION_ID_HEADER, Generations } from "./generations";
import { SessionLifecycle } from "./lifecycle";
import { QuotaChecks } from "./quota-checks";
import type { ByteLimit } from "./room";
import type { BlobAnswer, BlobPolicy } from "./session-blobs";
import { SessionBlobs } from "./session-blobs";
import { SessionLife } from "./session-life";
import { SessionStore } from "./session-store";
import { SocketTickets } from "./socket-tickets";
import { checkNotFull } from "./storage-ceiling";

/*
 * A session as a Durable Object: its RPC face. Each method answers a `Result` (RPC drops error
 * classes; the Worker's `SessionObjectStorage` turns failures back into `SessionError`s) and is
 * named as the `SessionStorage` call it serves. The work is done by the store (session-store.ts)
 * and the parts beside it: watchers (event-hub.ts), directory reports, quotas, tickets, lifecycle
 * and automatic compaction. The alarm runs what is due: purging, expiry, indexing for search,
 * automatic compaction and the directory report.
 */

/** A number of seconds from the environment, or its default when unset or not one. */
function seconds(value: string | undefined, fallback: number): number {
  const parsed = Number(value);
  return value !== undefined && Number.isInteger(parsed) && parsed >= 0 ? parsed : fallback;
}

/** Milliseconds one call of a fork's copy spends copying pages before it answers with the rest. */
const COPY_BUDGET_MS = 1000;
/** Milliseconds one call spends counting what a compaction leaves out of its summarizer's input. */
const COUNT_BUDGET_MS = 1000;
function errorAnswer(error: ErrorBody): Response {
  return Response.json({ error }, { status: ERROR_STATUS[error.code] });
}

/** The seq a watcher's `{after}` message resumes from, when it is one. */
function requestedAfter(message: string | ArrayBuffer): number | undefined {
  try {
    const request = JSON.parse(typeof message === "string" ? message : new TextDecoder().decode(message));
    return typeof request?.after === "number" ? request.after : undefined;
  } catch {
    return undefined;
  }
}

export class SessionObject extends DurableObject<DurableEnv> {
  readonly #session: SessionStore;
  readonly #events: EventHub;
  readonly #lifecycle: SessionLifecycle;
  readonly #reports: DirectoryReports;
  readonly #life: SessionLife;
  readonly #autoCompaction: AutoCompaction;
  readonly #quotas: QuotaChecks;
  readonly #tickets: SocketTickets;
  readonly #generations: Generations;
  /** The environment of the objects it reaches: those of its own jurisdiction. */
  readonly #placed: DurableEnv;
  readonly #blobs: SessionBlobs;
  /** True while a WebSocket's replay round runs: its entries come with their blobs read ahead. */
  #socketRound = false;

  constructor(ctx: DurableObjectState, env: DurableEnv) {
    super(ctx, env);
    const placed = objectEnv(env, ctx);
    this.#placed = placed;
    const session = ctx.storage.transactionSync(() => new SessionStore(ctx.storage));
    this.#session = session;
    this.#blobs = new SessionBlobs({
      env: placed,
      jurisdiction: ctx.id.jurisdiction,
      storage: ctx.storage,
      sql: sqlOf(ctx.storage.sql),
      session,
    });
    this.#quotas = new QuotaChecks(placed);
    this.#tickets = new SocketTickets(ctx.storage);
    this.#events = new EventHub(
      ctx,
      {
        lastSeq: () => session.lastSeq(),
        leafId: () => session.state.leafId,
        info: () => session.info(),
        entriesAfter: (after, bound, limit) => {
          const entries = session.entriesAfter(after, bound, limit);
          // A socket's round is sent at once, with values read ahead; a stream's passes `rehydrateStream`.
          return this.#socketRound ? this.#blobs.fromWarm(entries) : entries;
        },
        openGenerations: () => this.#generations.openOnes(),
      },
      (error) => void this.#logFailure("event_fan_out", error),
    );
    session.onWritten = (entries, leafId) => this.#events.written(entries, leafId);
    // Watchers' pings are answered without waking a hibernating session.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
    this.#lifecycle = new SessionLifecycle(sqlOf(ctx.storage.sql));
    this.#reports = new DirectoryReports({
      env: placed,
      storage: ctx.storage,
      session,
      lifecycle: this.#lifecycle,
      quotas: this.#quotas,
      storedMetric: (sessionId, entries, bytes) =>
        this.#metric({ kind: "storage", sessionId, entries, bytes }),
      logFailure: (task, error, fields) => this.#logFailure(task, error, fields),
    });
    this.#life = new SessionLife({
      env: placed,
      storage: ctx.storage,
      session,
      lifecycle: this.#lifecycle,
      quotas: this.#quotas,
      reports: this.#reports,
      events: this.#events,
      storedMetric: (sessionId, entries, bytes) =>
        this.#metric({ kind: "storage", sessionId, entries, bytes }),
      logFailure: (task, error) => this.#logFailure(task, error),
      releaseBlobs: () => this.#blobs.release(),
    });
    this.#autoCompaction = new AutoCompaction({
      session,
      summarizerConfig: () => this.env,
      filled: (entries) => this.#blobs.fill(entries),
      write: (write) => this.#limitedWrite(write),
      gone: () => !session.exists || this.#lifecycle.deleted,
      statusChanged: (status) => this.#events.compactionChanged(status),
      metric: (point) => this.#metric(point),
      logFailure: (task, error) => this.#logFailure(task, error),
    });
    this.#generations = new Generations({
      storage: ctx.storage,
      session,
      defaults: {
        abandonSeconds: seconds(env.GENERATION_ABANDON_SECONDS, DEFAULT_ABANDON_SECONDS),
        retainSeconds: seconds(env.GENERATION_RETAIN_SECONDS, DEFAULT_RETAIN_SECONDS),
      },
      write: (run) => this.#limitedWrite(run),
      changed: (info) => this.#events.generationChanged(info),
      checkListed: () => this.#checkListed(),
    });
    if (session.searchBackfillPending) this.#life.armSoon();
  }

  /** Whether the session is there for its routes: created, complete, and not deleted. */
  get #listed(): boolean {
    return this.#session.exists && !this.#lifecycle.deleted && !this.#lifecycle.pending;
  }

  /**
   * A deleted session is not found by any read or write (until it is restored), nor is one a fork
   * or an import is still writing, but by the calls of its builder (`builder`: the token it was
   * created with), which find no other session.
   */
  #checkListed(builder?: string): void {
    const { deleted, pending } = this.#lifecycle;
    const found = builder === undefined ? !pending : pending && this.#session.state.incarnation === builder;
    if (deleted || !found) throw new SessionError("not_found", "session does not exist");
  }

  #run<T>(read: (session: SessionStore) => T, builder?: string): Promise<Result<T>> {
    return capture(() => {
      this.#checkListed(builder);
      return storageWork(() => read(this.#session));
    });
  }

  /** A read of entries, answered with their blobs' values in place of references. */
  #runFilled(read: (session: SessionStore) => EntryPage): Promise<Result<EntryPage>> {
    return capture(async () => {
      this.#checkListed();
      const page = storageWork(() => read(this.#session));
      return { ...page, entries: await this.#blobs.fill(page.entries) };
    });
  }

  /** Runs a write, then makes sure the directory will hear of it (and search index it). */
  #write<T>(write: (session: SessionStore) => T, builder?: string): Promise<Result<T>> {
    return capture(() => {
      this.#checkListed(builder);
      const result = storageWork(() => write(this.#session));
      this.#reports.schedule();
      // A large batch is indexed for search just after (see SearchIndex.index).
      if (this.#session.searchBackfillPending) this.#life.armSoon();
      return result;
    });
  }

  /** A write that stores bytes: within the session's room (its quotas), growing it when it may. */
  #limitedWrite<T>(
    write: (session: SessionStore, room: ByteLimit | undefined) => T,
    builder?: string,
  ): Promise<Result<T>> {
    return this.#quotas.within(this.#session, (room) =>
      this.#write((session) => write(session, room), builder),
    );
  }

  /** Writes a data point for this session's tenant (nothing without the METRICS binding). */
  async #metric(point: MetricPoint): Promise<void> {
    if (!this.env.METRICS || !this.#session.exists) return;
    writeMetric(this.env.METRICS, await tenantHash(this.#session.state.tenant), point);
  }

  async #logFailure(task: string, error: unknown, fields?: Record<string, number | string>): Promise<void> {
    const state = this.#session.exists ? this.#session.state : undefined;
    await logBackgroundFailure(task, state?.tenant ?? "", state?.header.id, error, fields);
  }

  /**
   * Runs the lifecycle work that is due (purge, expiry, indexing for search), then after writes:
   * compacts if automatic compaction is on and the context outgrew its budget, then reports to the
   * directory.
   */
  override async alarm(): Promise<void> {
    try {
      if (await this.#life.due()) return;
    } catch (error) {
      // Logged, then thrown: the runtime retries a failed alarm with backoff.
      await this.#logFailure("lifecycle", error);
      throw error;
    }
    if (!this.#session.exists) return;
    await this.#autoCompaction.runIfDue();
    if (!this.#session.exists) return;
    await this.#reports.reportDue();
    await this.#generations.alarm();
    await this.#life.arm();
  }

  // --- a session's life: created, listed, deleted, restored, purged ---

  /**
   * Creates the session, listed at once; with `builder` (a fork or an import), found only by its
   * builder's calls until it publishes it, complete. A deleted session still in its recovery window
   * gives up its id: it is purged, as is one a fork or an import began and never completed. `bytes`
   * is what it is about to receive (a fork's or an import's entries), so that the quotas refuse it
   * before anything is written.
   */
  async init(
    tenant: string,
    header: SessionHeader,
    options: NewSessionOptions = {},
  ): Promise<Result<SessionInfo>> {
    return capture(() => this.#life.create(tenant, header, options));
  }

  /** Lists the session its builder completed (a fork or an import); again, it does nothing. */
  publish(builder: string): Promise<Result<void>> {
    return capture(() => {
      if (!this.#session.exists || this.#session.state.incarnation !== builder) {
        throw new SessionError("not_found", "session does not exist");
      }
      return this.#reports.publish();
    });
  }

  /** Deletes the session, restorable for `recoveryMs` (see `SessionLife.delete`); a builder's, at once. */
  delete(recoveryMs: number, builder?: string): Promise<Result<void>> {
    return capture(() => {
      this.#checkListed(builder);
      return this.#life.delete(recoveryMs);
    });
  }

  /** Deletes the session for good, now, whether it is listed or deleted already. */
  purge(): Promise<Result<void>> {
    return capture(() => {
      if (!this.#lifecycle.deleted) this.#checkListed();
      return this.#life.purge();
    });
  }

  /** Brings a deleted session back within its recovery window (see `SessionLife.restore`). */
  async restore(): Promise<Result<SessionInfo>> {
    const restored = await capture(() => {
      if (!this.#lifecycle.deleted) this.#checkListed();
      return this.#life.restore();
    });
    // Restoring cleared the alarm: its generations' due times are set again.
    if (restored.ok) await this.#generations.arm();
    return restored;
  }

  /** Deletes the session if idle since `idleBefore` (the retention sweep of its directory shard asks). */
  expireIdle(idleBefore: string): Promise<Result<ExpiryOutcome>> {
    return capture(() => this.#life.expireIdle(idleBefore));
  }

  // --- the session's header, head and entries (the SessionStorage calls) ---

  getInfo(): Promise<Result<SessionInfo>> {
    return this.#run((session) => session.info());
  }

  getHeader(): Promise<Result<SessionHeader>> {
    return this.#run((session) => session.state.header);
  }

  async updateHeader(patch: HeaderPatch): Promise<Result<SessionHeader>> {
    const result = await this.#write((session) => {
      const header = session.updateHeader(patch);
      this.#events.sessionChanged(session.info());
      return header;
    });
    if (result.ok && patch.expiresAt !== undefined) await this.#life.arm();
    return result;
  }

  getLeafId(builder?: string): Promise<Result<string | null>> {
    return this.#run((session) => session.state.leafId, builder);
  }

  setLeafId(
    targetId: string | null,
    options: LeafOptions & Building,
  ): Promise<Result<StoredEntry<LeafEntry>>> {
    const { builder, ...leaf } = options;
    return this.#limitedWrite((session, room) => session.setLeafId(targetId, leaf, room), builder);
  }

  /** Where the leaf stood at `asOf` (ISO 8601; the head when undefined), from the leaf's history. */
  leafAt(asOf: string | undefined): Promise<Result<LeafAt>> {
    return this.#run((session) => ({
      leafId: asOf === undefined ? session.state.leafId : session.leafAt(asOf),
      historyStartsAt: session.historyStartsAt(),
    }));
  }

  getEntry(id: string): Promise<Result<StoredEntry | undefined>> {
    return capture(async () => {
      this.#checkListed();
      const entry = this.#session.getEntry(id);
      return entry && (await this.#blobs.fill([entry]))[0];
    });
  }

  /*
   * Reads answer a first page of entries and the seqs left (`readEntries` fetches those), so no
   * answer passes the 32 MiB RPC limit however long the path or large the entries.
   */

  getEntries(query: EntryQuery): Promise<Result<EntryPage>> {
    return this.#runFilled((session) => session.page(session.entrySeqs(query)));
  }

  getBranch(leafId: string | null | undefined): Promise<Result<EntryPage>> {
    return this.#runFilled((session) => session.page(session.pathSeqs(leafId)));
  }

  /** The path buildSessionContext needs (what the latest compaction dropped left out). */
  getContextPath(leafId: string | null | undefined): Promise<Result<EntryPage>> {
    return this.#runFilled((session) => session.page(session.contextSeqs(leafId)));
  }

  /** What a compaction at `leafId` reads whole and what it only counts (see compaction-reads.ts). */
  compactionPlan(leafId: string, keepRecentTokens: number): Promise<Result<CompactionPlan>> {
    return this.#run((session) => session.compactionPlan(leafId, keepRecentTokens));
  }

  /** Counts omitted entries from the first of `seqs`, for up to COUNT_BUDGET_MS. */
  countOmitted(seqs: number[], compactionId: string | undefined): Promise<Result<OmittedCount>> {
    return this.#run((session) => session.countOmitted(seqs, compactionId, COUNT_BUDGET_MS));
  }

  readEntries(seqs: number[]): Promise<Result<EntryPage>> {
    return this.#runFilled((session) => session.page(seqs));
  }

  getTreeRows(): Promise<Result<{ rows: TreeRow[]; labels: Record<string, string> }>> {
    return this.#run((session) => session.treeRows());
  }

  getLabels(): Promise<Result<Record<string, string>>> {
    return this.#run((session) => session.labels());
  }

  /**
   * Appends entries. Under the router's blob `policy`, values large enough are stored as blobs
   * first (session-blobs.ts); references an entry holds are read back into values.
   */
  async appendEntries(
    entries: readonly unknown[],
    options: AppendOptions & { validated?: boolean; blobs?: BlobPolicy } & Building,
  ): Promise<Result<AppendResult>> {
    const { blobs: policy, builder, ...appendOptions } = options;
    // A full session still takes a compaction: it is what keeps its context usable.
    const compaction = entries.every((entry) => (entry as { type?: unknown } | null)?.type === "compaction");
    const prepared = await capture(() => {
      this.#checkListed(builder);
      // Refused before any of its blobs is uploaded.
      if (!compaction) checkNotFull(this.ctx.storage.sql, this.env);
      return this.#blobs.prepare(entries, policy, (inputs, loaded) =>
        this.#session.plannedAppend(inputs, appendOptions, loaded),
      );
    });
    if (!prepared.ok) return prepared;
    let written = { sessionId: "", entries: 0, bytes: 0 };
    const result = await this.#limitedWrite((session, room) => {
      const { nextSeq, stats, header } = session.state;
      const before = { seq: nextSeq, bytes: stats.bytes };
      const answer = session.appendEntries(entries, appendOptions, room, prepared.value);
      written = {
        sessionId: header.id,
        entries: session.state.nextSeq - before.seq,
        bytes: session.state.stats.bytes - before.bytes,
      };
      return answer;
    }, builder);
    if (written.entries > 0) await this.#metric({ kind: "append", ...written });
    if (!result.ok) return result;
    // A replay answers the entry as stored: with its blobs' values.
    return capture(async () => ({ ...result.value, entries: await this.#blobs.fill(result.value.entries) }));
  }

  /** Writes entries verbatim (an import), their large values stored as blobs under `policy`. */
  async importEntries(
    entries: readonly SessionEntry[],
    options: ImportOptions & { blobs?: BlobPolicy } & Building,
  ): Promise<Result<void>> {
    const { blobs: policy, builder, ...importOptions } = options;
    const prepared = await capture(() => {
      this.#checkListed(builder);
      checkNotFull(this.ctx.storage.sql, this.env);
      return this.#blobs.prepare(entries, policy, (inputs, loaded) =>
        this.#session.plannedImport(inputs, importOptions, loaded),
      );
    });
    if (!prepared.ok) return prepared;
    return this.#limitedWrite(
      (session, room) => session.importEntries(entries, importOptions, room, prepared.value),
      builder,
    );
  }

  /** Refuses (`quota_exceeded`) when `bytes` more would take the session past its byte quotas. */
  checkRoom(bytes: number, builder?: string): Promise<Result<void>> {
    return this.#limitedWrite((session, room) => session.checkRoom(bytes, room), builder);
  }

  search(options: SessionSearchOptions): Promise<Result<SessionSearchPage>> {
    return this.#run((session) => session.search(options));
  }

  /**
   * The context of a leaf as JSON, streamed: projected here, read page by page as it is sent; only
   * what was appended when `since` names a version the context grew from. A caller that already
   * holds the current version (`ifNoneMatch`) gets the version alone: no body is built. Blobs
   * come back as their values, or as signed URLs when `blobs` asks for them.
   */
  async getContext(
    leafId: string | null | undefined,
    options: { since?: string; ifNoneMatch?: readonly string[]; blobs?: BlobAnswer } = {},
  ): Promise<Result<ContextAnswer>> {
    const result = await this.#run((session): ContextAnswer => {
      const version = session.contextVersion(leafId);
      if (options.ifNoneMatch?.includes(version)) return { version, kind: "unchanged" };
      const started = Date.now();
      const answer = session.context(leafId, options.since);
      const sessionId = session.state.header.id;
      const sent = (bytes: number) =>
        this.#metric({
          kind: "context",
          sessionId,
          source: answer.source,
          bytes,
          durationMs: Date.now() - started,
        });
      if ("text" in answer) {
        // The kept head context is one string already: sent whole, it saves the stream's round trips.
        // Its size is measured only for a metric that will be written (it may be megabytes).
        if (this.env.METRICS) void sent(utf8Length(answer.text));
        return { version, kind: answer.kind, body: answer.text };
      }
      return {
        version,
        kind: answer.kind,
        body: textStream(jsonArray(answer.head, answer.pages, "}"), sent),
      };
    });
    if (!result.ok || result.value.kind === "unchanged") return result;
    const { body, ...answer } = result.value;
    const blobs = options.blobs ?? { urls: false };
    if (typeof body === "string" && !this.#blobs.hasBlobs) return result;
    // A kept context holding references may be far larger once they are answered: it is streamed.
    const stream = typeof body === "string" ? textStream(slices(body)) : body;
    return capture(async () => ({ ...answer, body: await this.#blobs.rehydrateStream(stream, blobs) }));
  }

  // --- generations: answers being written (generations.ts) ---

  /** Opens a generation; a full session opens none (its answer would have nowhere to go). */
  openGeneration(input: OpenGenerationBody): Promise<Result<GenerationInfo>> {
    return capture(async () => {
      this.#checkListed();
      checkNotFull(this.ctx.storage.sql, this.env);
      const info = storageWork(() => this.#generations.open(input));
      await this.#generations.arm();
      return info;
    });
  }

  getGeneration(id: string): Promise<Result<GenerationInfo>> {
    return this.#run(() => this.#generations.get(id));
  }

  listGenerations(): Promise<Result<GenerationInfo[]>> {
    return this.#run(() => this.#generations.list());
  }

  /** Completes or stops a generation: its answer appended and its stream closed, in one transaction. */
  endGeneration(id: string, how: GenerationEnd): Promise<Result<GenerationOutcome>> {
    return capture(async () => {
      const outcome = await this.#generations.end(id, how).catch((error: unknown) => {
        throw transientError(error) ?? error;
      });
      if (outcome.created) await this.#generations.arm();
      return outcome;
    });
  }

  // --- watchers ---

  /** The session's events after `after` (a seq; now when absent), as Server-Sent Events. */
  events(after: number | undefined, payload: boolean): Promise<Result<ReadableStream<Uint8Array>>> {
    return capture(async () => {
      this.#checkListed();
      const stream = this.#events.openStream(after ?? this.#session.lastSeq(), payload);
      void this.#watcherMetric("sse");
      // Entries replayed from storage come with references: their values are put back as they pass.
      return this.#blobs.rehydrateStream(stream, { urls: false });
    });
  }

  #watcherMetric(transport: "sse" | "websocket"): Promise<void> {
    return this.#metric({
      kind: "watcher",
      sessionId: this.#session.state.header.id,
      transport,
      watchers: this.#events.watchers,
    });
  }

  /** A one-time ticket that opens this session's WebSocket (for browsers). */
  mintTicket(): Promise<Result<{ ticket: string; expiresAt: string }>> {
    return capture(() => {
      if (!this.#listed) throw new SessionError("not_found", "session does not exist");
      return this.#tickets.mint();
    });
  }

  /** Whether a ticket is good, using it up either way. */
  async redeemTicket(ticket: string): Promise<boolean> {
    return (await this.#tickets.redeem(ticket)) && this.#listed;
  }

  /**
   * A watcher's WebSocket (the router has authenticated it): `?after=<seq>&payload=false`; or a
   * Durable Streams request for a generation's stream (`x-generation-id`), whose answers (pages,
   * SSE) stream from here block by block as fetch answers do.
   */
  override async fetch(request: Request): Promise<Response> {
    const generation = request.headers.get(GENERATION_ID_HEADER);
    if (generation !== null) {
      const requestId = request.headers.get(STREAM_REQUEST_ID_HEADER);
      return this.#generations.handle(decodeURIComponent(generation), request, requestId);
    }
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return errorAnswer({ code: "invalid_request", message: "expected a WebSocket upgrade" });
    }
    const url = new URL(request.url);
    const pair = new WebSocketPair();
    const answer = await capture(async () => {
      this.#checkListed();
      const after = Number(url.searchParams.get("after") ?? this.#session.lastSeq());
      await this.#blobs.warm(after);
      this.#socketRound = true;
      try {
        return this.#events.acceptSocket(pair[1], after, url.searchParams.get("payload") !== "false");
      } finally {
        this.#socketRound = false;
      }
    });
    if (!answer.ok) return errorAnswer(answer.error);
    void this.#watcherMetric("websocket");
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  override async webSocketMessage(socket: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const after = requestedAfter(message);
    if (after !== undefined) {
      try {
        await this.#blobs.warm(after);
      } catch (error) {
        // The round could not be sent whole: the watcher reconnects (with its backoff) and resumes.
        await this.#logFailure("read_blobs", error);
        socket.close(1011, "blobs unavailable: resume from the last seq");
        return;
      }
    }
    this.#socketRound = true;
    try {
      this.#events.socketMessage(socket, message);
    } finally {
      this.#socketRound = false;
    }
  }

  override webSocketClose(socket: WebSocket, code: number, reason: string): void {
    try {
      socket.close(code === 1005 ? 1000 : code, reason);
    } catch {
      // Already closed on this side.
    }
  }

  // --- forks ---

  /** What a fork of the path to `targetId` copies, for the Worker to create the fork with. */
  forkSource(targetId: string, position: LeafOptions["position"]): Promise<Result<ForkSource>> {
    return this.#run((session) => session.forkSource(targetId, position));
  }

  /** Rows of a fork's path, a page of them, for the new session's object (see `copyFrom`). */
  pathRows(seqs: number[]): Promise<Result<CopiedRows>> {
    return this.#run((session) => session.pathRows(seqs));
  }

  /**
   * Copies a fork's path (`seqs` of the session `sourceId` of the same tenant) into this new
   * session, reading it from the source's object itself, so the rows cross once. Copies for up to
   * COPY_BUDGET_MS and answers the seqs left, so that no call runs long however long the path.
   */
  async copyFrom(sourceId: string, seqs: number[], builder?: string): Promise<Result<number[]>> {
    const tenant = await capture(() => this.#session.state.tenant);
    if (!tenant.ok) return tenant;
    const source = this.#placed.SESSIONS.getByName(sessionObjectName(tenant.value, sourceId));
    const started = Date.now();
    let rest = seqs;
    // A page that needs more room than granted stops, and is read again once it is granted.
    const copied = await this.#quotas.within(this.#session, (room) =>
      capture(async () => {
        while (rest.length > 0 && Date.now() - started < COPY_BUDGET_MS) {
          const page = unwrap((await source.pathRows(rest)) as Result<CopiedRows>);
          // The blobs the rows refer to are this session's too before the rows are.
          await this.#blobs.claimCopied(page.blobRefs);
          unwrap(await this.#write((session) => session.copyRows(page, room), builder));
          rest = page.rest;
        }
      }),
    );
    return copied.ok ? { ok: true, value: rest } : copied;
  }
}
