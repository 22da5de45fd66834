import type { StoredEntry } from "../../core/entries";
import type { Result } from "../../core/errors";
import { capture, SessionError, unwrap } from "../../core/errors";
import { forkExtras } from "../../core/fork";
import type { DurableEnv } from "../env";
import { sessionObjectName } from "../names";
import { objectCalls } from "../object-calls";
import { numberSetting } from "../settings";
import { storageWork, transientError, unavailable } from "../transient";
import type { ForkBegin } from "../types";
import { CopyNeeded } from "./entry-rows";
import type { SessionObjectState } from "./object-state";
import { PAGE_CHARS } from "./schema";
import type { DirectoryReports } from "./session-reports";
import type { ByteLimit } from "./session-writes";

/*
 * A fork's side of its copy. The fork answered once it held its path's first page (its head and
 * the rows above it); the rest comes from the source's object a page at a time, each page read
 * from where the last one ended, up to the root, and written with where the copy stands in one
 * transaction, so an eviction or a restart goes on from there. The alarm copies STEP_PAGES pages
 * at a time, FORK_COPY_PAUSE_MS apart; each page is one call to the source, so its writers wait
 * for one page at most. When the root is copied the source is told, and lets go of what it kept for
 * the fork (fork-source.ts).
 *
 * Meanwhile every call answers as if the copy were complete: one that needs entries still to copy
 * (`CopyNeeded`) learns from the source whether the ids it looked for are on that path, or waits
 * for the rest to be copied now, then runs again (`retrying`).
 */

/** Pages one alarm copies before it lets the object rest. */
const STEP_PAGES = 2;
/** The default of FORK_COPY_PAUSE_MS. */
const DEFAULT_PAUSE_MS = 10;
/** A copy that failed (its source unreachable) is tried again this much later. */
const RETRY_MS = 1000;

/** Bytes of payloads the page a fork answers with carries at most: its answer costs what a small read costs. */
const FIRST_PAGE_BYTES = 16 * 1024;

export interface CopySettings {
  /** Bytes of payloads a page of the copy carries (FORK_COPY_PAGE_BYTES). */
  pageBytes: number;
  /** Those of the page a fork answers with. */
  firstPageBytes: number;
  /** Milliseconds between the alarm's steps (FORK_COPY_PAUSE_MS). */
  pauseMs: number;
}

export function copySettings(
  env: Pick<DurableEnv, "FORK_COPY_PAGE_BYTES" | "FORK_COPY_PAUSE_MS">,
): CopySettings {
  const pageBytes = numberSetting(env.FORK_COPY_PAGE_BYTES, PAGE_CHARS, { min: 1, max: PAGE_CHARS });
  return {
    pageBytes,
    firstPageBytes: Math.min(pageBytes, FIRST_PAGE_BYTES),
    pauseMs: numberSetting(env.FORK_COPY_PAUSE_MS, DEFAULT_PAUSE_MS),
  };
}

export class ForkCopy {
  readonly #object: SessionObjectState;
  /** The directory hears of the fork once its copy is done. */
  readonly #reports: DirectoryReports;
  /** The page being copied: pages are copied one after the other. */
  #page: Promise<void> = Promise.resolve();
  /** When the alarm copies the next pages (or tells the source again that the copy is done). */
  #dueAt: number | undefined;

  constructor(object: SessionObjectState, reports: DirectoryReports) {
    this.#object = object;
    this.#reports = reports;
  }

  /** The copy's settings, as the object's environment stands now. */
  #settings(): CopySettings {
    return copySettings(this.#object.env);
  }

  /** Whether part of the path is still to copy. */
  get copying(): boolean {
    return this.#object.session.exists && this.#object.session.copy.copying;
  }

  /**
   * Whether the alarm copies the rest: not for a fork removed by the request that made it (deleted
   * before it was listed), which no one reads or restores, and whose source was told to let go of
   * what it kept for it; its purge is what is left (and tells the source again).
   */
  get #goesOn(): boolean {
    const { lifecycle } = this.#object;
    return this.copying && !(lifecycle.deleted && lifecycle.pending);
  }

  /** Whether the copy is done and its source has still to hear. */
  get #releaseOwed(): boolean {
    return this.#object.session.exists && this.#object.session.copy.state?.releaseOwed === true;
  }

  #source(sourceId: string) {
    const { tenant } = this.#object.session.state;
    return objectCalls(this.#object.placed.SESSIONS.getByName(sessionObjectName(tenant, sourceId)));
  }

  /**
   * Begins a new fork (created, not yet listed): its path's first page, its figures and labels as
   * the source answered them, then what `forkExtras` adds so that labels and the name read as in
   * the source, with the head back at the fork's target.
   */
  async begin({ sourceId, start, name }: ForkBegin): Promise<void> {
    const { session, blobs, quotas } = this.#object;
    const { page, leafId } = start;
    if (page === null || leafId === null) return;
    await blobs.claimCopied(page.blobRefs);
    storageWork(() => session.writes.beginFork(sourceId, { ...start, page, leafId }));
    const extras = forkExtras(start.path, start.sourceLabels, name);
    if (extras.length === 0) return;
    const within = <T>(write: (room: ByteLimit | undefined) => T) =>
      quotas.within(session, (room) => capture(() => storageWork(() => write(room))));
    unwrap(await within((room) => session.writes.appendEntries(extras, {}, room)));
    unwrap(await within((room) => session.writes.setLeafId(leafId, {}, room)));
  }

  /** Copies the next page, after the one before it. */
  #next(): Promise<void> {
    const page = this.#page.then(() => this.#copyPage());
    this.#page = page.catch(() => undefined);
    return page;
  }

  async #copyPage(): Promise<void> {
    const { session, blobs } = this.#object;
    const state = session.copy.state;
    if (!session.exists || !state?.next) return;
    const from = state.next.seq;
    const { incarnation } = session.state;
    const page = await this.#source(state.sourceId).forkPage(state.hold, from, this.#settings().pageBytes);
    // Purged while its source answered (perhaps created anew under its id), the session has no
    // copy to go on with: the page is not its own.
    if (!session.exists || session.state.incarnation !== incarnation) {
      throw new SessionError(
        "not_found",
        "session does not exist: it was purged while its copy was under way",
      );
    }
    // The blobs the rows refer to are this session's too before the rows are.
    await blobs.claimCopied(page.blobRefs);
    storageWork(() => session.writes.copyPage(from, page));
    if (page.next === null) {
      // Its entries are indexed for search; the directory hears of the whole fork, and of its text
      // once indexed (the indexing's last step raises the session's version).
      this.#reports.schedule();
      this.#object.alarm.armSoon("schedule_search_indexing");
      await this.release().catch((error) => this.#object.telemetry.logFailure("fork_release", error));
    }
  }

  /** Copies what is left now (what waits for it: a call that needs the whole path). */
  async whole(): Promise<void> {
    while (this.copying) await this.#next();
  }

  /**
   * The entry `id` of the part of the path still to copy, as its source holds it (its blobs'
   * values in place); undefined when it is none, or when the copy is done.
   */
  async entryOf(id: string): Promise<StoredEntry | undefined> {
    const state = this.copying ? this.#object.session.copy.state : null;
    if (!state?.next) return undefined;
    try {
      return (await this.#source(state.sourceId).forkEntry(state.hold, state.next.seq, id)) ?? undefined;
    } catch (error) {
      // The source lets go once the copy is done: the fork holds the path itself then.
      if (!this.copying) return undefined;
      throw uncopied(error);
    }
  }

  /** A replay of the entries after `after`: from the part still to copy, it waits for the copy. */
  async replaying(after: number): Promise<void> {
    const state = this.#object.session.exists ? this.#object.session.copy.state : null;
    if (state?.next && after < state.forkSeq) await this.whole();
  }

  /**
   * Runs `work`; should it need entries still to copy, learns whether those it looked for are on
   * the path (or copies the rest) and runs it again. Nothing was written by a run that needed them:
   * when they cannot be had now, the answer is `uncopied`'s failure.
   */
  async retrying<T>(work: () => Promise<Result<T>>): Promise<Result<T>> {
    for (;;) {
      let needed: CopyNeeded;
      try {
        return await work();
      } catch (error) {
        if (!(error instanceof CopyNeeded)) throw error;
        needed = error;
      }
      const resolved = await capture(async () => {
        if (!this.copying) throw new SessionError("internal", "an entry row is missing");
        await this.#resolve(needed).catch((error: unknown) => {
          throw uncopied(error);
        });
      });
      if (!resolved.ok) return resolved;
    }
  }

  /**
   * Copies what `need` reads: up to the entry it reaches; or learns what the source knows of the
   * ids it names, and copies the rest when one is on the path; or, naming nothing, copies the rest.
   */
  async #resolve({ ids, reach }: CopyNeeded): Promise<void> {
    const { copy, reads } = this.#object.session;
    if (reach !== undefined) {
      while (this.copying && !reads.holds(reach)) await this.#next();
      return;
    }
    const asked = ids.filter((id) => copy.refOf(id) === undefined);
    const state = copy.state;
    if (asked.length > 0 && state?.next) {
      const found = await this.#source(state.sourceId).forkRefs(state.hold, state.next.seq, asked);
      copy.learn(asked, found);
    }
    // Entries of the path are read, and written under, once copied; so is the rest of the path.
    if (ids.length === 0 || ids.some((id) => copy.refOf(id) !== null)) await this.whole();
  }

  /** The alarm's share: STEP_PAGES pages, and the next step set. */
  async alarm(): Promise<void> {
    if (!this.#goesOn && !this.#releaseOwed) return;
    try {
      for (let page = 0; page < STEP_PAGES && this.#goesOn; page++) await this.#next();
      if (this.#releaseOwed) await this.release();
    } catch (error) {
      await this.#object.telemetry.logFailure("fork_copy", error);
      await this.arm(RETRY_MS);
      return;
    }
    await this.arm();
  }

  /** The alarm comes back `after` milliseconds from now while the copy goes on. */
  async arm(after = this.#settings().pauseMs): Promise<void> {
    if (!this.#goesOn && !this.#releaseOwed) return;
    this.#dueAt = Date.now() + after;
    await this.#object.alarm.arm();
  }

  /** When the copy's next step is due, while it goes on (at once, after a restart). */
  nextDue(): number | undefined {
    if (!this.#goesOn && !this.#releaseOwed) return undefined;
    return this.#dueAt ?? Date.now();
  }

  /** `arm`, from where it cannot be waited for (a failure is logged). */
  armSoon(): void {
    this.arm().catch((error) => this.#object.telemetry.logFailure("fork_copy", error));
  }

  /**
   * Tells the source that this fork no longer needs what it kept for it: the copy is done, or the
   * fork is purged before it was. Until the source hears, the alarm tells it again.
   */
  async release(): Promise<void> {
    const { session } = this.#object;
    const state = session.copy.state;
    if (!session.exists || !state) return;
    await this.#source(state.sourceId).releaseFork(state.hold);
    if (!state.next) storageWork(() => session.copy.released());
  }

  /** The hold this fork copies its path by, while it does: what a source that holds for it asks. */
  hold(): string | null {
    if (!this.#object.session.exists) return null;
    const state = this.#object.session.copy.state;
    return state?.next ? state.hold : null;
  }
}

/**
 * What a call answers when the part of the path still to copy cannot be had now: its source's
 * storage or its own failed (and rolled back), the source cannot be reached, no longer keeps the
 * path, or a blob of it cannot be claimed. The fork is there, and nothing was written: unavailable,
 * to be tried again. A failure of any other kind is a defect, and stays as it is.
 */
function uncopied(error: unknown): unknown {
  if (error instanceof SessionError) {
    if (error.code !== "not_found") return error;
    return unavailable("the rest of this fork's path cannot be copied now; try again", "not_applied");
  }
  return transientError(error) ?? error;
}
