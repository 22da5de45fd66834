import { directoryShard } from "../names";
import { numberSetting } from "../settings";
import type { SessionObjectState } from "./object-state";

/*
 * What a session tells its directory shard: its info, counts and a digest of its text, after its
 * writes (writes within DIRECTORY_SYNC_MS are reported together, by the object's alarm), at once
 * when a fork or an import is complete, and again once what a large write, a fork or an import
 * left to index for search is indexed (the text it reports is complete only then). A report that
 * fails is tried again with backoff until it gets through; the session never waits for its
 * directory.
 *
 * Deleting and restoring change the session first and owe the directory the news (a removal, or a
 * return before the next report), kept with the session in the same transaction: a call to the
 * directory that fails, or an object stopped before making it, leaves it owed, and the alarm pays
 * it. So a session is never left live but unlisted, nor listed once gone.
 */

/** How long after a write the directory hears of it: writes in between are reported together. */
const DEFAULT_SYNC_MS = 1000;
const MAX_RETRY_MS = 60_000;
/**
 * A session being listed (`publish`) is reported by the alarm within this much, should its object
 * stop before the directory hears of it.
 */
const LISTING_GRACE_MS = 10_000;
/** Where what the directory is owed is kept (the object's key-value storage, beside its tables). */
const OWED_KEY = "directory-owed";

/** What the directory is owed: a deleted session's removal, or a restored one's return. */
export type Owed = "removal" | "return";

export class DirectoryReports {
  readonly #object: SessionObjectState;
  /** When the alarm should next report: soon after a write, later after a failure. */
  #dueAt: number | undefined;
  /**
   * The session's version as the directory last heard it from this object; unknown after a
   * restart, when a report that was waiting may have been lost with the object's memory.
   */
  #reportedVersion: number | undefined;
  /** While a session is being listed: when the alarm reports it, should the object stop first. */
  #listingDueAt: number | undefined;
  #failures = 0;
  /** The directory's news being told (`payOwed`), one at a time. */
  #paying: Promise<void> = Promise.resolve();

  constructor(object: SessionObjectState) {
    this.#object = object;
  }

  get #syncMs(): number {
    return numberSetting(this.#object.placed.DIRECTORY_SYNC_MS, DEFAULT_SYNC_MS);
  }

  /** After a write: the alarm reports it soon (once, for every write until then). */
  schedule(): void {
    // A deleted session is not reported (its removal is its life's to tell), nor one gone.
    const { session, lifecycle } = this.#object;
    if (this.#dueAt !== undefined || !session.exists || lifecycle.deleted) return;
    this.#dueAt = Date.now() + this.#syncMs;
    this.#object.alarm.armSoon("schedule_directory_report");
  }

  /**
   * When the alarm should next report, if a report is waiting. A listing's time, once passed, is
   * spent: the alarm came for it (a report that takes longer is not asked for again and again).
   */
  nextDue(): number | undefined {
    if (!this.#object.session.exists) return undefined;
    const listing =
      this.#listingDueAt !== undefined && this.#listingDueAt > Date.now() ? this.#listingDueAt : undefined;
    // A deleted session is reported no more; one being restored is listed again soon.
    if (this.#object.lifecycle.deleted) return listing;
    if (this.#dueAt === undefined || listing === undefined) return this.#dueAt ?? listing;
    return Math.min(this.#dueAt, listing);
  }

  /**
   * Whether the alarm reports now: one waiting is due, or nothing is waiting yet the session
   * changed since the directory last heard from this object (a change no write made, such as the
   * last step of indexing for search, or a report lost in a restart). Other alarms (a fork's copy,
   * a generation's deadline) do not tell the directory anything.
   */
  due(): boolean {
    if (this.#dueAt !== undefined) return this.#dueAt <= Date.now();
    const { session } = this.#object;
    return session.exists && session.state.version !== this.#reportedVersion;
  }

  /** Nothing is waiting to be reported (the session is gone, or deleted). */
  forget(): void {
    this.#dueAt = undefined;
    this.#listingDueAt = undefined;
    this.#failures = 0;
  }

  /** Records what the directory is owed; call it in the transaction that changes the session. */
  owe(owed: Owed): void {
    this.#object.storage.kv.put(OWED_KEY, owed);
  }

  /** Whether the directory is owed the news of a delete or a restore. */
  get owes(): boolean {
    return this.#object.storage.kv.get<Owed>(OWED_KEY) !== undefined;
  }

  /**
   * Tells the directory what it is owed, if anything; throws (and it stays owed) when it cannot.
   * One call at a time, so that the directory hears a delete and a restore in the order they were
   * made: a removal sent while a return is out (or the other way round) would otherwise overtake it.
   */
  payOwed(): Promise<void> {
    const paid = this.#paying.then(() => this.#payOwed());
    this.#paying = paid.catch(() => undefined);
    return paid;
  }

  async #payOwed(): Promise<void> {
    const { storage, session, lifecycle, placed } = this.#object;
    const owed = storage.kv.get<Owed>(OWED_KEY);
    if (owed === undefined || !session.exists) return;
    const { tenant, incarnation, header } = session.state;
    const shard = directoryShard(placed, tenant, lifecycle.state.shard);
    if (owed === "removal") await shard.remove(header.id, incarnation);
    else await shard.unbury(header.id, incarnation);
    // A delete or a restore that came while the call was out owes something else now: it stays.
    if (storage.kv.get<Owed>(OWED_KEY) === owed) storage.kv.delete(OWED_KEY);
    this.#failures = 0;
  }

  /** A call to the directory failed again: how long to wait before the next try. */
  backoffMs(): number {
    const wait = this.nextBackoffMs();
    this.#failures++;
    return wait;
  }

  /** How long the next try waits should the next call fail (a failure then counts no more). */
  nextBackoffMs(): number {
    return Math.min(MAX_RETRY_MS, 1000 * 2 ** (this.#failures + 1));
  }

  async #report(): Promise<void> {
    const { session, lifecycle, placed, quotas, telemetry } = this.#object;
    // Deleted sessions left the listing; incomplete ones join it once complete.
    if (lifecycle.deleted || lifecycle.pending) return;
    await this.payOwed();
    // Deleted (or purged) while the directory was told of its return: it is not listed again.
    if (!session.exists || lifecycle.deleted) return;
    const { tenant, incarnation, version } = session.state;
    const { shard } = lifecycle.state;
    const info = session.info();
    await directoryShard(placed, tenant, shard).put({
      info,
      incarnation,
      version,
      tenant,
      shard,
      search: session.reads.searchDigest(),
    });
    this.#reportedVersion = version;
    await telemetry.metric({
      kind: "storage",
      sessionId: info.id,
      entries: info.entryCount,
      bytes: info.bytes,
    });
    // Writes may have come while the directory was told: the session's bytes as they stand now. A
    // write running within its room is settled after it: the report comes again.
    const settled = await quotas.settle(session).catch(async (error) => {
      await telemetry.logFailure("settle_quota", error);
      return true;
    });
    if (!settled) this.schedule();
  }

  /** The alarm's report, when one is due; a failure is tried again, later each time (up to a minute). */
  async reportDue(): Promise<void> {
    if (!this.due()) return;
    const { telemetry } = this.#object;
    this.#dueAt = undefined;
    try {
      await this.#report();
      this.#failures = 0;
    } catch (error) {
      const wait = this.backoffMs();
      await telemetry.logFailure("directory_report", error, { retryInMs: wait, failures: this.#failures });
      this.#dueAt = Date.now() + wait;
    }
  }

  /**
   * Sets the alarm to report the session soon, before a change that lists it is stored (created,
   * restored, or published complete): should the object stop before the directory hears, the
   * alarm tells it then. Should setting it fail, the change and its report go on all the same.
   */
  async beforeListing(): Promise<void> {
    const { alarm, telemetry } = this.#object;
    this.#listingDueAt = Date.now() + LISTING_GRACE_MS;
    await alarm.arm().catch((error) => telemetry.logFailure("schedule_directory_report", error));
  }

  /**
   * Lists the session now (a fork or an import: once complete). The session exists whether or not
   * the directory answers; if it does not, the alarm keeps reporting until it does.
   */
  async publish(): Promise<void> {
    const { session, lifecycle, alarm, telemetry } = this.#object;
    if (!session.exists || lifecycle.deleted) return;
    await this.beforeListing();
    lifecycle.listed();
    try {
      await this.#report();
      this.#failures = 0;
    } catch (error) {
      await telemetry.logFailure("directory_report", error, { retryInMs: this.#syncMs });
      this.schedule();
    } finally {
      // Told, or to be told by the report's own retry: an alarm that nothing else is due for goes.
      this.#listingDueAt = undefined;
      if (alarm.nextDue() === undefined)
        await alarm.clear().catch((error) => telemetry.logFailure("schedule_directory_report", error));
    }
  }
}
