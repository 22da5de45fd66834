import { SessionError } from "../../core/errors";
import { newId } from "../../core/ids";
import { headerBytes } from "../../core/info";
import type { SessionHeader, SessionInfo } from "../../core/session-schemas";
import { sessionObjectName } from "../names";
import { objectCalls } from "../object-calls";
import { transaction } from "../transaction";
import { unavailable } from "../transient";
import type { ExpiryOutcome, NewSessionOptions } from "../types";
import type { ForkCopy } from "./fork-copy";
import type { ForkHolds } from "./fork-source";
import type { Generations } from "./generations";
import type { SessionObjectState } from "./object-state";
import { PENDING_MS, recoveryWindowMs } from "./object-state";
import type { DirectoryReports } from "./session-reports";
import type { EventHub } from "./session-watchers";

/*
 * A session's life, as its object runs it: created (listed at once, or once a fork or an import is
 * complete), deleted from the listing and every route but kept for the recovery window, restored
 * within it, purged after it, deleted when its `expiresAt` comes; and the alarm's share of that
 * work, with indexing for search after large writes.
 */

/** When entries wait to be indexed for search, the alarm comes this soon. */
const BACKFILL_PAUSE_MS = 10;
/** A purge whose storage failed is tried again this soon. */
const PURGE_RETRY_MS = 1000;
/** Lifecycle work that failed is tried again after this, doubled for each failure in a row, up to the most. */
const FAILURE_RETRY_MS = 1000;
const MAX_FAILURE_RETRY_MS = 60_000;
/**
 * A deletion owes the directory the news: the alarm is set to come this soon before the change is
 * stored, so that an object stopped before it told the directory tells it then.
 */
const OWED_NEWS_MS = 5000;
/** A purge that waits for forks still copying from the session looks again this soon. */
const HELD_RETRY_MS = 5000;
/**
 * A fork holding the session this long is asked whether it still copies from it (a fork purged
 * before its copy was done, or whose word that it was done was lost, holds it no longer).
 */
const HOLD_CHECK_MS = 60_000;

export class SessionLife {
  readonly #object: SessionObjectState;
  readonly #reports: DirectoryReports;
  readonly #events: EventHub;
  /** The session's generations: the readers of their streams end with it. */
  readonly #generations: Generations;
  /** The forks still copying from this session, which its purge waits for. */
  readonly #holds: ForkHolds;
  /** This session's own copy, when it is a fork still copying: its source hears when it is purged. */
  readonly #copy: ForkCopy;
  /**
   * When the alarm comes back for what could not be done yet: a removal from the listing or a
   * purge that failed, a purge waiting for forks still copying, one they let go on.
   */
  #retryAt: number | undefined;
  /** Failures in a row of the alarm's lifecycle work. */
  #failures = 0;
  /**
   * The purge under way, across its calls to other objects: what comes meanwhile waits for it (a
   * create), joins it (another purge) or is refused (a restore), rather than being erased with it.
   */
  #purging: Promise<boolean> | undefined;
  /**
   * Purges that gave up the claim under the session's id: a create admitted to the tenant's room
   * before one of them (begun by the alarm, or a `DELETE ?purge=true`) asks for it again.
   */
  #quotaReleases = 0;

  constructor(
    object: SessionObjectState,
    reports: DirectoryReports,
    events: EventHub,
    generations: Generations,
    holds: ForkHolds,
    copy: ForkCopy,
  ) {
    this.#object = object;
    this.#reports = reports;
    this.#events = events;
    this.#generations = generations;
    this.#holds = holds;
    this.#copy = copy;
  }

  /** Creates the session (see `SessionObject.init`). */
  async create(tenant: string, header: SessionHeader, options: NewSessionOptions): Promise<SessionInfo> {
    // A session created while a purge is under way would go with the purged one's storage.
    await this.#purging?.catch(() => false);
    const { session, lifecycle, quotas, storage } = this.#object;
    const reports = this.#reports;
    const replaces = session.exists && (lifecycle.deleted || lifecycle.pending);
    const quotaReleases = this.#quotaReleases;
    const { builder } = options;
    // An imported session whose expiry has passed keeps none, as a restored one does: else it
    // would be deleted as soon as it is written.
    const { expiresAt, ...unexpiring } = header;
    const passed = builder !== undefined && expiresAt !== undefined && Date.parse(expiresAt) <= Date.now();
    const stored = passed ? unexpiring : header;
    // It holds its header's JSON from the start, and what it is about to receive.
    const bytes = headerBytes(stored) + (options.bytes ?? 0);
    // Admitted before anything gives the id up: a session refused for want of room leaves the
    // deleted one that holds its id restorable. It takes over the claim under that id.
    if (!session.exists || replaces) await quotas.admit(tenant, header.id, bytes);
    // A deleted session gives up its id, as does one a fork or an import never completed; one
    // that forks still copy from is kept for them a little longer. Its directory hears of its
    // deletion first: what it is owed would go with its storage, and the old listing stay.
    if (session.exists && lifecycle.deleted && !(await this.#unlist())) {
      await this.#unadmit(tenant, header.id);
      throw unavailable(
        `session ${header.id} was deleted and its directory cannot be told yet; try again`,
        "not_applied",
      );
    }
    if (replaces && !(await this.#purge({ keepsQuotaClaim: true }))) {
      await this.#unadmit(tenant, header.id);
      throw unavailable(
        `session ${header.id} was deleted and cannot be purged yet (forks still copy from it, or its tenant's ledgers cannot be reached); try again`,
        "not_applied",
      );
    }
    // A purge begun meanwhile by another (which this one joined, or which ended first) gave the
    // claim under the id up: it is asked for again, and refused (nothing written) without room.
    if (replaces && this.#quotaReleases !== quotaReleases) {
      await quotas.admit(tenant, header.id, bytes);
    }
    // Listed as it is stored: its alarm is set first (see `DirectoryReports.beforeListing`).
    if (builder === undefined && !session.exists) await reports.beforeListing();
    const info = transaction(storage, [session, lifecycle], () => {
      // A builder's token is the session's incarnation: what its calls are known by.
      const created = session.init(tenant, builder ?? newId(), stored);
      lifecycle.begin(options.shard ?? 0, builder === undefined ? null : Date.now());
      return created;
    });
    if (builder === undefined) await reports.publish();
    await this.#object.alarm.arm();
    return info;
  }

  /**
   * A session that could not take a deleted one's id gives back the room it was admitted to: a
   * deleted session holds none (one a fork or an import never completed keeps its own).
   */
  async #unadmit(tenant: string, sessionId: string): Promise<void> {
    const { lifecycle, quotas } = this.#object;
    if (lifecycle.deleted) await quotas.release(tenant, sessionId);
  }

  /**
   * Deletes the session: from every route at once, then from the listing (at once, or by the alarm
   * when the directory cannot be reached). Its data stays for `recoveryMs` (restore brings it back
   * whole), then an alarm purges it. A session never completed, or a window of 0, is purged at
   * once (once the listing has let it go).
   */
  async delete(recoveryMs: number): Promise<void> {
    const { session, lifecycle, quotas, alarm, telemetry } = this.#object;
    const { tenant, header } = session.state;
    // Under tenant-wide quotas its room goes back first: should the rest fail, the session's next
    // write claims it again. Under others the ledger only hears of it, once it is deleted.
    const counted = quotas.tenantWide(tenant);
    if (counted) await quotas.release(tenant, header.id);
    const now = Date.now();
    const purgeAt = recoveryMs <= 0 || lifecycle.pending ? now : now + recoveryMs;
    await this.#markDeleted(now, purgeAt);
    // Deleted, the ledger hears of it (again, under tenant-wide quotas): a write taken before may
    // have claimed room since the first release, which this later one takes back. Room the ledger
    // cannot be told of now goes back with the purge.
    await quotas.release(tenant, header.id).catch((error) => telemetry.logFailure("release_quota", error));
    if (!(await this.#unlist())) return;
    if (purgeAt <= now) await this.#purge();
    else {
      // Deleted, and its directory told, the session's work for the alarm is its purge (and a
      // fork's copy, which goes on): not the retry set in case it stopped first.
      this.#retryAt = undefined;
      // Should that fail, the retry's alarm stands, and sets it when it comes: the delete is done.
      await alarm.reset().catch((error) => this.#object.telemetry.logFailure("schedule_purge", error));
    }
  }

  /**
   * Deletes the session for good, now, whether it is listed or deleted already: its recovery
   * window closes before anything is awaited, so no restore brings it back, whether its storage
   * goes now or once forks still copying from it are done (the alarm goes on with the purge).
   */
  async purge(): Promise<void> {
    const { session, lifecycle, storage } = this.#object;
    if (!session.exists) throw new SessionError("not_found", "session does not exist");
    const now = Date.now();
    if (!lifecycle.deleted) await this.#markDeleted(now, now);
    else {
      // Should the object stop before the purge is done, the alarm finishes it soon.
      await this.#retryIn(this.#reports.nextBackoffMs());
      transaction(storage, [lifecycle], () => lifecycle.closeWindow(now));
    }
    // The directory hears of it before the data goes (if it cannot now, the alarm does both).
    if (await this.#unlist()) await this.#purge();
  }

  /**
   * Deleted here, and the directory owed its removal, in one transaction; watchers are told, and
   * the readers of its generations' streams end. The directory hears of it next (`#unlist`), or
   * from the alarm if it cannot be reached now, or if the object stops first.
   */
  async #markDeleted(now: number, purgeAt: number): Promise<void> {
    const { session, lifecycle, storage } = this.#object;
    const reports = this.#reports;
    const events = this.#events;
    await this.#retryIn(OWED_NEWS_MS);
    transaction(storage, [lifecycle], () => {
      lifecycle.markDeleted(now, purgeAt);
      reports.owe("removal");
    });
    reports.forget();
    events.deleted(session.state.header.id);
    this.#generations.gone();
  }

  /** Takes the session out of the listing; false when the directory cannot be reached (the alarm tries again). */
  async #unlist(): Promise<boolean> {
    const { telemetry } = this.#object;
    const reports = this.#reports;
    try {
      await reports.payOwed();
      return true;
    } catch (error) {
      await telemetry.logFailure("directory_removal", error);
      await this.#retryIn(reports.backoffMs());
      return false;
    }
  }

  /**
   * Brings a deleted session back as it was, listed again, within its recovery window, changed
   * (`updatedAt`) now. An `expiresAt` that has passed is cleared (else it would be deleted again at
   * once). A session
   * that is not deleted is `already_exists`; one never created, or purged, is `not_found`, as is
   * one whose purge is under way.
   */
  async restore(): Promise<SessionInfo> {
    const { session, lifecycle, quotas, storage, alarm } = this.#object;
    const reports = this.#reports;
    const { tenant, header } = session.state;
    if (!lifecycle.deleted) {
      throw new SessionError("already_exists", `session ${header.id} is not deleted`, { id: header.id });
    }
    if (!this.#restorable()) {
      if (await this.#unlist()) await this.#purge();
      throw new SessionError("not_found", "session does not exist");
    }
    // Back, it counts against the tenant's quotas again: refused (still deleted) without room.
    await quotas.admit(tenant, header.id, session.state.stats.bytes);
    // A purge asked for while the ledger was: the room goes back, and the session stays gone.
    if (!this.#restorable()) {
      await quotas.release(tenant, header.id);
      throw new SessionError("not_found", "session does not exist");
    }
    // The expiry first: a restore cut short here leaves the session deleted, to be restored again.
    if (header.expiresAt !== undefined && Date.parse(header.expiresAt) <= Date.now()) {
      // Without its expiry the header shrinks: no room is needed.
      session.writes.updateHeader({ expiresAt: null }, undefined);
    }
    // Back, it is as new to the tenant's retention: else its next sweep would delete it again.
    session.writes.touch();
    // Listed again as it is stored: its alarm is set first (see `DirectoryReports.beforeListing`).
    await reports.beforeListing();
    transaction(storage, [lifecycle], () => {
      lifecycle.markRestored();
      reports.owe("return");
    });
    // Listed again by its next report, which pays the directory its return first: now, or from
    // the alarm if the directory cannot be reached now.
    await reports.publish();
    // The alarm no longer waits to purge it: it comes when the restored session's work is due
    // (should that fail, the alarm set before comes, finds no purge due, and is set again).
    await alarm.reset().catch((error) => this.#object.telemetry.logFailure("schedule_restored", error));
    return session.info();
  }

  /**
   * Deletes the session (recoverably) if it has been idle since `idleBefore`: the retention sweep
   * of its directory shard asks, and the session, which knows its last write, decides. A session
   * written since is `kept`, and reports again so the directory catches up.
   */
  async expireIdle(idleBefore: string): Promise<ExpiryOutcome> {
    const { session, lifecycle, placed } = this.#object;
    const reports = this.#reports;
    if (!session.exists || lifecycle.deleted) return "missing";
    if (lifecycle.pending) return "kept";
    if (Date.parse(session.state.stats.updatedAt) >= Date.parse(idleBefore)) {
      await reports.publish();
      return "kept";
    }
    await this.delete(recoveryWindowMs(placed));
    return "expired";
  }

  /**
   * Forks still copying from the session keep it (deleted, found by no route) until they are
   * done: true when none does. A fork that has held it long is asked whether it still copies from
   * it; one that does not (purged, or its word lost) lets go. While some do, the alarm looks again.
   */
  async #unheld(): Promise<boolean> {
    const { placed, session, telemetry } = this.#object;
    const holds = this.#holds;
    const { tenant } = session.state;
    for (const { hold, forkId, since } of holds.list()) {
      if (Date.now() - since < HOLD_CHECK_MS) continue;
      try {
        const fork = objectCalls(placed.SESSIONS.getByName(sessionObjectName(tenant, forkId)));
        if ((await fork.copyHold()) !== hold) holds.remove(hold);
      } catch (error) {
        await telemetry.logFailure("fork_hold_check", error);
      }
    }
    if (holds.list().length === 0) return true;
    await this.#retryIn(HELD_RETRY_MS);
    return false;
  }

  /** Whether a purge is under way (it waits on other objects): the session is going. */
  get purging(): boolean {
    return this.#purging !== undefined;
  }

  /** Whether the deleted session can come back: its recovery window is open, and no purge is under way. */
  #restorable(): boolean {
    const { session, lifecycle } = this.#object;
    const { purgeAt } = lifecycle.state;
    return session.exists && lifecycle.deleted && purgeAt !== null && purgeAt > Date.now() && !this.#purging;
  }

  /** A fork copying from the session is done: a purge that waited for it goes on now. */
  async released(): Promise<void> {
    const { lifecycle } = this.#object;
    const holds = this.#holds;
    if (!lifecycle.deleted || holds.list().length > 0) return;
    if ((lifecycle.state.purgeAt ?? 0) <= Date.now()) await this.#retryIn(0);
  }

  /**
   * Drops the session's storage and its alarm; false (nothing dropped) while forks still copy
   * from it, or while its claims in its tenant's ledgers cannot be given up (the alarm tries
   * again). A fork still copying lets its source go first. With `keepsQuotaClaim`, the claim
   * under the session's id stays: a session created in its place was admitted to it. A purge
   * asked for while one is under way is that one.
   */
  #purge(options: { keepsQuotaClaim?: boolean } = {}): Promise<boolean> {
    this.#purging ??= this.#purgeOnce(options).finally(() => {
      this.#purging = undefined;
    });
    return this.#purging;
  }

  async #purgeOnce({ keepsQuotaClaim = false }: { keepsQuotaClaim?: boolean }): Promise<boolean> {
    const { session, lifecycle, storage, telemetry, alarm } = this.#object;
    const reports = this.#reports;
    const copy = this.#copy;
    const { incarnation, tenant, header } = session.exists ? session.state : {};
    if (session.exists && !(await this.#unheld())) return false;
    if (session.exists) {
      // Its claims go next: a deleted session cannot come back whole from here, so its window
      // closes first (should the purge stop part-way, the alarm finishes it soon; no restore comes
      // between), as it would try again after a failure here.
      await this.#retryIn(this.#reports.nextBackoffMs());
      transaction(storage, [lifecycle], () => lifecycle.closeWindow(Date.now()));
      await copy.release().catch((error) => telemetry.logFailure("fork_release", error));
      if (!(await this.#releaseClaims(keepsQuotaClaim))) {
        await this.#retryIn(reports.backoffMs());
        return false;
      }
    }
    // What came while the purge awaited other objects is not erased with it: a session of another
    // incarnation, or one no longer deleted (nor left incomplete).
    const same = session.exists && session.state.incarnation === incarnation;
    if (incarnation !== undefined && !(same && (lifecycle.deleted || lifecycle.pending))) return false;
    await alarm.clear();
    try {
      await storage.deleteAll();
    } catch (error) {
      // The alarm comes back to purge again (one running now is not retried once its alarm is gone).
      await this.#retryIn(PURGE_RETRY_MS);
      throw error;
    }
    this.#retryAt = undefined;
    session.reset();
    lifecycle.reset();
    reports.forget();
    this.#generations.gone();
    // The session holds nothing now: its storage point says so.
    if (header)
      await telemetry.metric({ kind: "storage", sessionId: header.id, entries: 0, bytes: 0 }, tenant);
    return true;
  }

  /**
   * Gives up the session's claims on its tenant's room (unless `keepsQuotaClaim`) and on its
   * blobs; false (logged) when either could not be. Both claims are keyed by the session alone: once its storage is gone,
   * nothing would give them up, and the tenant would keep less room, and R2 the blobs, for good.
   */
  async #releaseClaims(keepsQuotaClaim: boolean): Promise<boolean> {
    const { session, quotas, blobs, telemetry } = this.#object;
    const { tenant, header } = session.state;
    const attempt = (task: string, release: Promise<void>) =>
      release.then(
        () => true,
        async (error: unknown) => {
          await telemetry.logFailure(task, error);
          return false;
        },
      );
    if (!keepsQuotaClaim) this.#quotaReleases++;
    const released = await Promise.all([
      keepsQuotaClaim || attempt("release_quota", quotas.release(tenant, header.id)),
      attempt("release_blobs", blobs.release()),
    ]);
    return released.every(Boolean);
  }

  /**
   * The lifecycle work due now: purging a deleted session whose window closed, dropping one a
   * fork or import never completed, deleting one whose `expiresAt` came, a step of indexing an
   * old session. True when the session is gone or deleted, so the alarm has nothing else to do.
   * Work that fails is logged and tried again by the alarm, later after each failure in a row:
   * the runtime retries a failed alarm only a few times, and the other parts' work still runs.
   */
  async due(): Promise<boolean> {
    try {
      const gone = await this.#due();
      this.#failures = 0;
      return gone;
    } catch (error) {
      await this.#object.telemetry.logFailure("lifecycle", error);
      this.#failures++;
      const at = Date.now() + Math.min(MAX_FAILURE_RETRY_MS, FAILURE_RETRY_MS * 2 ** this.#failures);
      this.#retryAt = Math.min(this.#retryAt ?? at, at);
      return this.#object.lifecycle.deleted;
    }
  }

  async #due(): Promise<boolean> {
    const { session, lifecycle, placed } = this.#object;
    if (!session.exists) return false;
    const now = Date.now();
    this.#retryAt = undefined;
    const { pendingSince, purgeAt } = lifecycle.state;
    if (lifecycle.deleted) {
      if (!(await this.#unlist())) return true;
      if (purgeAt === null || purgeAt <= now) await this.#purge();
      return true;
    }
    if (pendingSince !== null && pendingSince + PENDING_MS <= now) {
      await this.#purge();
      return true;
    }
    // A session being written (an import) expires once it is complete.
    const { expiresAt } = session.state.header;
    if (pendingSince === null && expiresAt !== undefined && Date.parse(expiresAt) <= now) {
      await this.delete(recoveryWindowMs(placed));
      return true;
    }
    // The step that indexes the last raises the version: the alarm's report, next, carries the text.
    await session.writes.indexForSearch();
    return false;
  }

  /**
   * On waking, whatever the session's life has due has its alarm, though the object stopped, or
   * setting it failed, before it was set: its purge or expiry, and news the directory is still
   * owed, told soon (a deleted session's removal by the life, a restored one's return by its next
   * report).
   */
  resume(): void {
    const { session, lifecycle, alarm } = this.#object;
    if (!session.exists) return;
    if (this.#reports.owes) {
      if (lifecycle.deleted) this.#retryAt = Date.now();
      else this.#reports.schedule();
    }
    alarm.armSoon("resume_lifecycle");
  }

  /** The alarm comes back for lifecycle work that could not be done yet, `ms` from now. */
  async #retryIn(ms: number): Promise<void> {
    const at = Date.now() + ms;
    this.#retryAt = this.#retryAt === undefined ? at : Math.min(this.#retryAt, at);
    await this.#object.alarm.arm();
  }

  /**
   * When lifecycle work is next due: a purge, an incomplete session dropped, an expiry, indexing
   * for search going on, or what could not be done yet, tried again.
   */
  nextDue(): number | undefined {
    const { session, lifecycle } = this.#object;
    if (!session.exists) return undefined;
    const soon = session.writes.searchBackfillPending ? Date.now() + BACKFILL_PAUSE_MS : undefined;
    const at = lifecycle.dueAt(session.state.header.expiresAt, soon);
    if (this.#retryAt === undefined) return at;
    // What could not be done is tried again when its retry comes: a due time passed already is that
    // same work, and does not bring it sooner (else an unreachable directory is asked without pause).
    if (at === undefined || at <= Date.now()) return this.#retryAt;
    return Math.min(at, this.#retryAt);
  }
}
