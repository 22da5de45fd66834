import { DurableObject } from "cloudflare:workers";
import type { EntryRef } from "../../core/append";
import type { LeafEntry, SessionEntry, StoredEntry } from "../../core/entries";
import type { Result } from "../../core/errors";
import { capture, SessionError } from "../../core/errors";
import type {
  GenerationInfo,
  GenerationPage,
  ListGenerationsQuery,
  OpenGenerationBody,
} from "../../core/generations/generation-schemas";
import type { SessionSearchOptions, SessionSearchPage } from "../../core/search";
import type { EntryQuery, HeaderPatch, LeafAt, SessionHeader, SessionInfo } from "../../core/session-schemas";
import type { AppendOptions, AppendResult, ImportOptions, LeafOptions } from "../../core/storage";
import type { TreeNodeFields } from "../../core/tree";
import type { DurableEnv } from "../env";
import { REQUEST_ID_HEADER } from "../log-line";
import { sqlOf } from "../sql";
import { storageWork, transientError } from "../transient";
import type {
  AbandonedPlan,
  AppendGuard,
  Building,
  CompactionPlan,
  ContextAnswer,
  ContextLines,
  ContextWindow,
  CopiedRows,
  EntryPage,
  ExpiryOutcome,
  ForkStart,
  NewSessionOptions,
  OmittedCount,
  ShownEntries,
  TreeLinesPage,
  TreeShapePage,
} from "../types";
import { AutoCompaction } from "./auto-compaction";
import { copySettings, ForkCopy } from "./fork-copy";
import { ForkHolds } from "./fork-source";
import type { GenerationEnd } from "./generation-rows";
import type { GenerationOutcome } from "./generations";
import { GENERATION_ID_HEADER, Generations } from "./generations";
import { SessionObjectState } from "./object-state";
import { checkNotFull } from "./schema";
import type { BlobAnswer, BlobPolicy } from "./session-blobs";
import { ContextAnswers, EntryIntake, SessionCalls, ShownAnswers } from "./session-calls";
import { SessionLife } from "./session-life";
import { DirectoryReports } from "./session-reports";
import { type SessionEventStream, SessionWatchers } from "./session-watchers";

/*
 * A session as a Durable Object: its RPC face. Each method answers a `Result` (RPC drops error
 * classes; its callers' `objectCalls` turn failures back into `SessionError`s) and is named as the
 * `SessionStorage` call it serves. The work is done by the store (session-store.ts), with what
 * every part shares (object-state.ts: the alarm, quotas, blobs, telemetry, the `lifecycle` row),
 * and by the parts the constructor makes beside it: which calls find the session and how a write
 * runs (session-calls.ts), watchers, context answers, entries coming in, a fork's copy, directory
 * reports, the session's life, generations and automatic compaction. The alarm runs what is due:
 * a fork's copy, purging, expiry, indexing for search, automatic compaction and the directory
 * report.
 */

/** Milliseconds one call spends counting what a compaction leaves out of its summarizer's input. */
const COUNT_BUDGET_MS = 1000;

export class SessionObject extends DurableObject<DurableEnv> {
  readonly #object: SessionObjectState;
  readonly #holds: ForkHolds;
  readonly #reports: DirectoryReports;
  readonly #copy: ForkCopy;
  readonly #calls: SessionCalls;
  readonly #generations: Generations;
  readonly #watchers: SessionWatchers;
  readonly #life: SessionLife;
  readonly #autoCompaction: AutoCompaction;
  readonly #contexts: ContextAnswers;
  readonly #intake: EntryIntake;
  readonly #shown: ShownAnswers;

  /**
   * Makes what every part shares (object-state.ts), then the parts, each with the others it uses.
   */
  constructor(ctx: DurableObjectState, env: DurableEnv) {
    super(ctx, env);
    const object = new SessionObjectState(ctx, env, () => this.env);
    const { session, alarm } = object;
    const reports = new DirectoryReports(object);
    const copy = new ForkCopy(object, reports);
    const calls = new SessionCalls(object, copy, reports);
    // The generations and the watchers use each other: the generations tell the watchers' hub of
    // each change through a function, called only once both are made.
    const generations = new Generations(object, calls, (info) =>
      watchers.hub.changed({ event: "generation", data: info }),
    );
    const watchers = new SessionWatchers(object, calls, copy, () => generations.openOnes());
    session.writes.onWritten = (entries, leafId) => watchers.hub.written(entries, leafId);
    const holds = new ForkHolds(sqlOf(ctx.storage.sql));
    const life = new SessionLife(object, reports, watchers.hub, generations, holds, copy);
    this.#autoCompaction = new AutoCompaction(object, calls, watchers.hub, () => generations.anyOpen());
    this.#contexts = new ContextAnswers(object, calls);
    this.#intake = new EntryIntake(object, calls, () => generations.oldestOpenId());
    this.#shown = new ShownAnswers(object, calls);
    this.#object = object;
    this.#holds = holds;
    this.#reports = reports;
    this.#copy = copy;
    this.#calls = calls;
    this.#generations = generations;
    this.#watchers = watchers;
    this.#life = life;
    // The parts with work for the alarm, each saying when it is next due.
    alarm.add(() => life.nextDue());
    alarm.add(() => reports.nextDue());
    alarm.add(() => generations.nextDue());
    alarm.add(() => copy.nextDue());
    if (session.writes.searchBackfillPending) alarm.armSoon("schedule_search_indexing");
    // A fork's copy goes on after an eviction or a restart; the life's work due has its alarm.
    copy.armSoon();
    life.resume();
    // A compaction cut off by a restart is not left running.
    this.#autoCompaction.failInterrupted();
    // An open generation is stopped if abandoned, though the object restarted before it set the alarm.
    if (generations.nextDue() !== undefined) alarm.armSoon("schedule_generations");
  }

  /**
   * Runs the work that is due: a fork's copy goes on; the lifecycle's (purge, expiry, indexing for
   * search); then after writes: compacts if automatic compaction is on and the context outgrew its
   * budget, reports to the directory, and stops or removes the generations whose time came. Then
   * the alarm is set for whatever is due next (../object-alarm.ts).
   */
  override async alarm(): Promise<void> {
    // A fork's copy goes on whatever else is due (a deleted fork that was listed can be restored whole).
    await this.#copy.alarm();
    // Should the lifecycle's work fail, it is tried again later, and the rest below still runs.
    if (await this.#life.due()) return await this.#object.alarm.arm();
    try {
      if (!this.#object.session.exists) return;
      // A compaction reads the whole path: a fork compacts once its copy is done. An open
      // generation's answer goes under the parent it opened on, leaving behind a compaction
      // appended meanwhile: the session compacts once it ends (its ending is a write, and the alarm
      // comes after it). Should it fail (its path's blobs unreadable), the reports and the
      // generations' work still run.
      if (!this.#copy.copying && !this.#generations.anyOpen())
        await this.#autoCompaction
          .runIfDue()
          .catch((error) => this.#object.telemetry.logFailure("auto_compaction", error));
      if (!this.#object.session.exists) return;
      await this.#reports.reportDue();
      await this.#generations.alarm();
    } finally {
      await this.#object.alarm.arm();
    }
  }

  // --- a session's life: created, listed, deleted, restored, purged ---

  /**
   * Creates the session, listed at once; with `builder` (a fork or an import), found only by its
   * builder's calls until it publishes it, complete. A deleted session still in its recovery window
   * gives up its id: it is purged, as is one a fork or an import began and never completed. `bytes`
   * is what it is about to receive (a fork's or an import's entries), so that the quotas refuse it
   * before anything is written.
   * @internal
   */
  async init(
    tenant: string,
    header: SessionHeader,
    options: NewSessionOptions = {},
  ): Promise<Result<SessionInfo>> {
    return capture(async () => {
      const created = await this.#life.create(tenant, header, options);
      if (!options.fork) return created;
      // A fork begins with its path's first page, then is listed (the directory hears of it in the
      // background, and the alarm tells it again if it cannot); its copy goes on in the background.
      await this.#copy.begin(options.fork);
      void this.#reports.publish();
      await this.#armAfterBegin();
      return this.#object.session.info();
    });
  }

  /** Lists the session its builder completed (a fork or an import); again, it does nothing. @internal */
  publish(builder: string): Promise<Result<void>> {
    return capture(async () => {
      this.#checkBuiltBy(builder);
      // Being purged (its id taken over while it was built), it is going: not listed.
      if (this.#life.purging) throw new SessionError("not_found", "session does not exist");
      await this.#reports.publish();
      // Complete, its expiry counts.
      await this.#object.alarm.arm();
    });
  }

  /**
   * The info of the session `builder` made, once it is listed (a fork lists itself once it holds its
   * first page): what a fork is answered with when what followed its listing failed, or its answer
   * was lost on the way; `not_found` for any other session. The fork has its alarm set, should
   * setting it have been what failed. @internal
   */
  listedInfo(builder: string): Promise<Result<SessionInfo>> {
    return capture(async () => {
      this.#checkBuiltBy(builder);
      this.#calls.checkListed();
      await this.#armAfterBegin();
      return this.#object.session.info();
    });
  }

  /**
   * Sets the alarm of a fork just listed: its copy's next step, and its entries' indexing for
   * search (once copied). A fork whose path came whole with its first page has no copy to set it,
   * and its alarm was set while it was not yet listed (to drop it, left incomplete, a day later).
   */
  async #armAfterBegin(): Promise<void> {
    await this.#copy.arm();
    await this.#object.alarm.arm();
  }

  /** Throws `not_found` unless the object holds the session `builder` made. */
  #checkBuiltBy(builder: string): void {
    if (!this.#object.session.exists || this.#object.session.state.incarnation !== builder) {
      throw new SessionError("not_found", "session does not exist");
    }
  }

  /**
   * Deletes the session, restorable for `recoveryMs` (see `SessionLife.delete`); a builder's, at once.
   * @internal
   */
  delete(recoveryMs: number, builder?: string): Promise<Result<void>> {
    return capture(() => {
      this.#calls.checkListed(builder);
      return this.#life.delete(recoveryMs);
    });
  }

  /** Deletes the session for good, now, whether it is listed or deleted already. @internal */
  purge(): Promise<Result<void>> {
    return capture(() => {
      if (!this.#object.lifecycle.deleted) this.#calls.checkListed();
      return this.#life.purge();
    });
  }

  /** Brings a deleted session back within its recovery window (see `SessionLife.restore`). @internal */
  restore(): Promise<Result<SessionInfo>> {
    return capture(() => {
      if (!this.#object.lifecycle.deleted) this.#calls.checkListed();
      return this.#life.restore();
    });
  }

  /**
   * Deletes the session if idle since `idleBefore` (the retention sweep of its directory shard asks).
   * @internal
   */
  expireIdle(idleBefore: string): Promise<Result<ExpiryOutcome>> {
    // A session with an answer being written is not idle, however long ago its last entry came.
    return capture(() =>
      this.#generations.openOnes().length > 0 ? "kept" : this.#life.expireIdle(idleBefore),
    );
  }

  // --- the session's header, head and entries (the SessionStorage calls) ---

  /** @internal */
  getInfo(): Promise<Result<SessionInfo>> {
    return this.#calls.run((session) => session.info());
  }

  /** @internal */
  getHeader(): Promise<Result<SessionHeader>> {
    return this.#calls.run((session) => session.state.header);
  }

  /** @internal */
  async updateHeader(patch: HeaderPatch): Promise<Result<SessionHeader>> {
    const result = await this.#calls.limitedWrite((session, room) => {
      const header = session.writes.updateHeader(patch, room);
      this.#watchers.hub.changed({ event: "session", data: session.info() });
      return header;
    });
    if (result.ok && patch.expiresAt !== undefined) await this.#object.alarm.arm();
    return result;
  }

  /** @internal */
  getLeafId(builder?: string): Promise<Result<string | null>> {
    return this.#calls.run((session) => session.state.leafId, builder);
  }

  /** @internal */
  setLeafId(
    targetId: string | null,
    options: LeafOptions & Building,
  ): Promise<Result<StoredEntry<LeafEntry>>> {
    const { builder, ...leaf } = options;
    return this.#calls.limitedWrite(
      (session, room) => session.writes.setLeafId(targetId, leaf, room),
      builder,
    );
  }

  /**
   * Where the leaf stood at `asOf` (ISO 8601; the head when undefined), from the leaf's history.
   * @internal
   */
  leafAt(asOf: string | undefined): Promise<Result<LeafAt>> {
    return this.#calls.run((session) => ({
      leafId: asOf === undefined ? session.state.leafId : session.reads.leafAt(asOf),
      historyStartsAt: session.reads.historyStartsAt(),
    }));
  }

  /** @internal */
  getEntry(id: string): Promise<Result<StoredEntry | undefined>> {
    return capture(async () => {
      this.#calls.checkListed();
      const held = () => storageWork(() => this.#object.session.reads.heldEntry(id));
      const entry = held();
      if (entry) return (await this.#object.blobs.fill([entry]))[0];
      // In a fork still copying its path, an entry of the part still to copy is read from its
      // source; should the copy have ended meanwhile, the fork holds it now.
      const borrowed = await this.#copy.entryOf(id);
      if (borrowed) return borrowed;
      const copied = held();
      return copied && (await this.#object.blobs.fill([copied]))[0];
    });
  }

  /*
   * Reads answer a first page of entries and the seqs left (`readEntries` fetches those), so no
   * answer passes the 32 MiB RPC limit however long the path or large the entries; the tree, its
   * shape and then its nodes, in pages too.
   */

  /** @internal */
  getEntries(query: EntryQuery): Promise<Result<EntryPage>> {
    return this.#calls.runFilled((session) => session.reads.page(session.reads.entrySeqs(query)));
  }

  /** @internal */
  getBranch(leafId: string | null | undefined): Promise<Result<EntryPage>> {
    return this.#calls.runFilled((session) => session.reads.page(session.reads.pathSeqs(leafId)));
  }

  /** The path buildSessionContext needs (what the latest compaction dropped left out). @internal */
  getContextPath(leafId: string | null | undefined): Promise<Result<EntryPage>> {
    return this.#calls.runFilled((session) => session.reads.page(session.reads.contextSeqs(leafId)));
  }

  /**
   * What a compaction at `leafId` reads whole and what it only counts (see session-reads.ts).
   * @internal
   */
  compactionPlan(leafId: string, keepRecentTokens: number): Promise<Result<CompactionPlan>> {
    return this.#calls.run((session) => session.reads.compactionPlan(leafId, keepRecentTokens));
  }

  /**
   * What a branch summary leaving `fromLeafId` for `targetId` reads whole and what it only counts
   * (see session-reads.ts).
   * @internal
   */
  abandonedPlan(fromLeafId: string, targetId: string | null): Promise<Result<AbandonedPlan>> {
    return this.#calls.run((session) => session.reads.abandonedPlan(fromLeafId, targetId));
  }

  /** Counts omitted entries from the first of `seqs`, for up to COUNT_BUDGET_MS. @internal */
  countOmitted(seqs: number[], compactionId: string | undefined): Promise<Result<OmittedCount>> {
    return this.#calls.run((session) => session.reads.countOmitted(seqs, compactionId, COUNT_BUDGET_MS));
  }

  /** @internal */
  readEntries(seqs: number[]): Promise<Result<EntryPage>> {
    return this.#calls.runFilled((session) => session.reads.page(seqs));
  }

  /**
   * A page of the tree's shape (see `TreeShapePage`): the first without `bound`, the next ones
   * after the last seq of the one before, with its `bound`. @internal
   */
  getTreeShape(after: number, bound?: number): Promise<Result<TreeShapePage>> {
    return this.#calls.run((session) => session.reads.treeShape(after, bound));
  }

  /** The tree's nodes of these seqs, in order, as many as a page holds. @internal */
  getTreeNodes(seqs: number[]): Promise<Result<TreeNodeFields[]>> {
    return this.#calls.run((session) => session.reads.treeNodes(seqs));
  }

  /*
   * What a reader is shown (MCP's read tools, `ShownAnswers` in session-calls.ts): windows of a context's lines and
   * of the tree's, and the entries around one, each costing what it shows.
   */

  /** Lines of the context of `leafId` in `window`, each message's text cut to `maxChars`. @internal */
  getContextLines(
    leafId: string | null | undefined,
    window: ContextWindow,
    maxChars: number,
  ): Promise<Result<ContextLines>> {
    return this.#shown.contextLines(leafId, window, maxChars);
  }

  /**
   * `count` lines of the tree drawn as text from the line in position `from`: the tree of the
   * entries up to seq `bound`, all of them without it. @internal
   */
  getTreeLines(from: number, count: number, bound?: number): Promise<Result<TreeLinesPage>> {
    return this.#shown.treeLines(from, count, bound);
  }

  /** The entries around `centre` (an id, or a seq), as lines and whole while small. @internal */
  getEntriesAround(
    centre: string | number,
    around: number,
    options: { maxChars: number; wholeChars: number; left: number },
  ): Promise<Result<ShownEntries>> {
    return this.#shown.entriesAround(centre, around, options);
  }

  /** @internal */
  getLabels(): Promise<Result<Record<string, string>>> {
    return this.#calls.run((session) => session.reads.labels());
  }

  /**
   * Appends entries. Under the router's blob `policy`, values large enough are stored as blobs
   * first (session-blobs.ts); references an entry holds are read back into values.
   * @internal
   */
  appendEntries(
    entries: readonly unknown[],
    options: AppendOptions & AppendGuard & { validated?: boolean; blobs?: BlobPolicy } & Building,
  ): Promise<Result<AppendResult>> {
    return this.#calls.copied(() => this.#intake.append(entries, options));
  }

  /** Writes entries verbatim (an import), their large values stored as blobs under `policy`. @internal */
  importEntries(
    entries: readonly SessionEntry[],
    options: ImportOptions & { blobs?: BlobPolicy } & Building,
  ): Promise<Result<void>> {
    return this.#calls.copied(() => this.#intake.import(entries, options));
  }

  /** Refuses (`quota_exceeded`) when `bytes` more would take the session past its byte quotas. @internal */
  checkRoom(bytes: number, builder?: string): Promise<Result<void>> {
    return this.#calls.limitedWrite((session, room) => session.writes.checkRoom(bytes, room), builder);
  }

  /**
   * What waits to be indexed is indexed first, for a bounded time: a search after a huge import
   * answers in time, with what is indexed by then (and `indexing`).
   * @internal
   */
  search(options: SessionSearchOptions): Promise<Result<SessionSearchPage>> {
    return this.#calls.copied(() =>
      capture(async () => {
        this.#calls.checkListed();
        const session = this.#object.session;
        const { version } = session.state;
        await session.writes.indexForSearch();
        // It indexed the last of what waited to be: the directory hears of the text it searches.
        if (session.state.version !== version) this.#reports.schedule();
        this.#calls.checkListed();
        return storageWork(() => session.reads.search(options));
      }),
    );
  }

  /**
   * The context of a leaf as JSON, streamed: projected here, read page by page as it is sent; only
   * what was appended when `since` names a version the context grew from. A caller that already
   * holds the current version (`ifNoneMatch`) gets the version alone: no body is built. Blobs
   * come back as their values, or as signed URLs when `blobs` asks for them.
   * @internal
   */
  getContext(
    leafId: string | null | undefined,
    options: { since?: string; ifNoneMatch?: readonly string[]; blobs?: BlobAnswer } = {},
  ): Promise<Result<ContextAnswer>> {
    return this.#contexts.answer(leafId, options);
  }

  // --- generations: answers being written (generations.ts) ---

  /** Opens a generation; a full session opens none (its answer would have nowhere to go). @internal */
  openGeneration(input: OpenGenerationBody): Promise<Result<GenerationInfo>> {
    return this.#calls.copied(() =>
      capture(async () => {
        this.#calls.checkListed();
        checkNotFull(this.ctx.storage.sql, this.env);
        const info = storageWork(() => this.#generations.open(input));
        await this.#object.alarm.arm();
        return info;
      }),
    );
  }

  /** @internal */
  getGeneration(id: string): Promise<Result<GenerationInfo>> {
    return this.#calls.run(() => this.#generations.get(id));
  }

  /** @internal */
  listGenerations(query: ListGenerationsQuery): Promise<Result<GenerationPage>> {
    return this.#calls.run(() => this.#generations.list(query));
  }

  /**
   * Completes or stops a generation: its answer appended and its stream closed, in one transaction.
   * @internal
   */
  endGeneration(id: string, how: GenerationEnd): Promise<Result<GenerationOutcome>> {
    return this.#calls.copied(() =>
      capture(async () => {
        const outcome = await this.#generations.end(id, how).catch((error: unknown) => {
          throw transientError(error) ?? error;
        });
        if (outcome.created) await this.#object.alarm.arm();
        return outcome;
      }),
    );
  }

  // --- watchers (session-watchers.ts) ---

  /**
   * The session's events after `after` (a seq; now when absent), as Server-Sent Events, and the
   * seq they start after. @internal
   */
  events(after: number | undefined, payload: boolean): Promise<Result<SessionEventStream>> {
    return this.#watchers.events(after, payload);
  }

  /** A one-time ticket that opens this session's WebSocket (for browsers). @internal */
  mintTicket(): Promise<Result<{ ticket: string; expiresAt: string }>> {
    return this.#watchers.mintTicket();
  }

  /** Whether a ticket is good for this session's WebSocket; the socket it opens uses it up. @internal */
  checkTicket(ticket: string): boolean {
    return this.#watchers.checkTicket(ticket);
  }

  /**
   * A watcher's WebSocket (the router has authenticated it): `?after=<seq>&payload=false`; or a
   * Durable Streams request for a generation's stream (`x-generation-id`, a header only the router
   * sets: a client's own never reaches the object), whose answers (pages, SSE) stream from here
   * block by block as fetch answers do.
   */
  override async fetch(request: Request): Promise<Response> {
    const generation = request.headers.get(GENERATION_ID_HEADER);
    if (generation !== null) {
      const requestId = request.headers.get(REQUEST_ID_HEADER);
      return this.#generations.handle(decodeURIComponent(generation), request, requestId);
    }
    return this.#watchers.acceptSocket(request);
  }

  override async webSocketMessage(socket: WebSocket, message: string | ArrayBuffer): Promise<void> {
    await this.#watchers.socketMessage(socket, message);
  }

  override webSocketClose(socket: WebSocket, code: number, reason: string): void {
    try {
      socket.close(code === 1005 ? 1000 : code, reason);
    } catch {
      // Already closed on this side.
    }
  }

  // --- forks: this session as a source, and as a fork still copying its path ---

  /**
   * A fork of the path to `targetId` as it starts (fork-source.ts): what the fork holds from the
   * moment it answers, and its path's first page. Unless that page is the whole path, the session
   * keeps the rest for the fork `forkId` by a hold, until the fork releases it.
   * @internal
   */
  forkStart(targetId: string, position: LeafOptions["position"], forkId: string): Promise<Result<ForkStart>> {
    const { firstPageBytes } = copySettings(this.env);
    return this.#calls.run((session) => {
      const start = session.reads.forkStart(targetId, position, firstPageBytes);
      return start.page?.next ? { ...start, hold: this.#holds.add(forkId) } : start;
    });
  }

  /**
   * A page of a fork's path, from the row `from` up, by its `hold` (deleted, the session still answers it).
   * @internal
   */
  forkPage(hold: string, from: number, pageBytes: number): Promise<Result<CopiedRows>> {
    return this.#calls.copied(() =>
      capture(() => {
        this.#checkHeld(hold);
        return storageWork(() => this.#object.session.reads.forkPage(from, pageBytes));
      }),
    );
  }

  /**
   * The entry `id`, with its blobs' values, if it is on the path root → the row `from`, which the
   * fork of `hold` still copies.
   * @internal
   */
  forkEntry(hold: string, from: number, id: string): Promise<Result<StoredEntry | null>> {
    return this.#calls.copied(() =>
      capture(async () => {
        this.#checkHeld(hold);
        const { reads } = this.#object.session;
        const onPath = storageWork(() => Object.hasOwn(reads.refsOnPath(from, [id]), id));
        const entry = onPath ? storageWork(() => reads.heldEntry(id)) : undefined;
        return entry ? ((await this.#object.blobs.fill([entry]))[0] as StoredEntry) : null;
      }),
    );
  }

  /**
   * Which of `ids` are entries of the path root → the row `from`, which the fork of `hold` still copies.
   * @internal
   */
  forkRefs(hold: string, from: number, ids: string[]): Promise<Result<Record<string, EntryRef>>> {
    return this.#calls.copied(() =>
      capture(() => {
        this.#checkHeld(hold);
        return storageWork(() => this.#object.session.reads.refsOnPath(from, ids));
      }),
    );
  }

  /**
   * The fork of `hold` copied its path (or is gone): the session no longer keeps anything for it.
   * @internal
   */
  releaseFork(hold: string): Promise<Result<void>> {
    return capture(async () => {
      storageWork(() => this.#holds.remove(hold));
      await this.#life.released();
    });
  }

  /**
   * The hold this session copies its path by, while it does (what a source holding for it asks).
   * @internal
   */
  copyHold(): Promise<Result<string | null>> {
    return capture(() => this.#copy.hold());
  }

  #checkHeld(hold: string): void {
    if (!this.#object.session.exists || !this.#holds.has(hold)) {
      throw new SessionError("not_found", "the path this fork copies is gone");
    }
  }
}
