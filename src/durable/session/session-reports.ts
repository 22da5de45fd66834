import { LATEST_EXPIRES_AT } from "../../core/limits";
import type { DurableEnv } from "../env";
import { logBackgroundFailure, tenantHash } from "../log-line";
import type { MetricPoint } from "../metrics";
import { writeMetric } from "../metrics";
import { directoryShard } from "../names";
import type { ObjectAlarm } from "../object-alarm";
import { numberSetting } from "../settings";
import type { Sql } from "../sql";
import type { QuotaChecks } from "./quota-checks";
import { hasSchema } from "./schema";
import type { SessionStore } from "./session-store";

/*
 * What a session tells its directory shard: its info, counts and a digest of its text, after its
 * writes (writes within DIRECTORY_SYNC_MS are reported together, by the object's alarm), and at
 * once when a fork or an import is complete. A report that fails is tried again with backoff until
 * it gets through; the session never waits for its directory.
 *
 * Deleting and restoring change the session first and owe the directory the news (a removal, or a
 * return before the next report), kept with the session in the same transaction: a call to the
 * directory that fails, or an object stopped before making it, leaves it owed, and the alarm pays
 * it. So a session is never left live but unlisted, nor listed once gone.
 *
 * Below the reports: the object's metrics and logs (`SessionTelemetry`), and the `lifecycle` row
 * the reports are made from (`LifecycleRow`).
 */

/** How long after a write the directory hears of it: writes in between are reported together. */
const DEFAULT_SYNC_MS = 1000;
const MAX_RETRY_MS = 60_000;
/** Where what the directory is owed is kept (the object's key-value storage, beside its tables). */
const OWED_KEY = "directory-owed";

/** What the directory is owed: a deleted session's removal, or a restored one's return. */
export type Owed = "removal" | "return";

/** What reports need of the session's object. */
export interface ReportHost {
  readonly env: DurableEnv;
  readonly storage: DurableObjectStorage;
  /** The object's alarm, which comes by the time each part's work is due. */
  readonly alarm: ObjectAlarm;
  readonly session: SessionStore;
  readonly lifecycle: LifecycleRow;
  readonly quotas: QuotaChecks;
  readonly telemetry: SessionTelemetry;
}

export class DirectoryReports {
  readonly #host: ReportHost;
  /** When the alarm should next report: soon after a write, later after a failure. */
  #dueAt: number | undefined;
  #failures = 0;

  constructor(host: ReportHost) {
    this.#host = host;
  }

  get #syncMs(): number {
    return numberSetting(this.#host.env.DIRECTORY_SYNC_MS, DEFAULT_SYNC_MS);
  }

  /** After a write: the alarm reports it soon (once, for every write until then). */
  schedule(): void {
    if (this.#dueAt !== undefined) return;
    this.#dueAt = Date.now() + this.#syncMs;
    this.#host.alarm.armSoon("schedule_directory_report");
  }

  /** When the alarm should next report, if a report is waiting. */
  nextDue(): number | undefined {
    return this.#dueAt;
  }

  /** Nothing is waiting to be reported (the session is gone, or deleted). */
  forget(): void {
    this.#dueAt = undefined;
  }

  /** Records what the directory is owed; call it in the transaction that changes the session. */
  owe(owed: Owed): void {
    this.#host.storage.kv.put(OWED_KEY, owed);
  }

  /** Tells the directory what it is owed, if anything; throws (and it stays owed) when it cannot. */
  async payOwed(): Promise<void> {
    const { storage, session, lifecycle, env } = this.#host;
    const owed = storage.kv.get<Owed>(OWED_KEY);
    if (owed === undefined || !session.exists) return;
    const { tenant, incarnation, header } = session.state;
    const shard = directoryShard(env, tenant, lifecycle.state.shard);
    if (owed === "removal") await shard.remove(header.id, incarnation);
    else await shard.unbury(header.id, incarnation);
    // A delete or a restore that came while the call was out owes something else now: it stays.
    if (storage.kv.get<Owed>(OWED_KEY) === owed) storage.kv.delete(OWED_KEY);
    this.#failures = 0;
  }

  /** A call to the directory failed again: how long to wait before the next try. */
  backoffMs(): number {
    this.#failures++;
    return Math.min(MAX_RETRY_MS, 1000 * 2 ** this.#failures);
  }

  async #report(): Promise<void> {
    const { session, lifecycle, env, quotas, telemetry } = this.#host;
    // Deleted sessions left the listing; incomplete ones join it once complete.
    if (lifecycle.deleted || lifecycle.pending) return;
    await this.payOwed();
    const { tenant, incarnation, version } = session.state;
    const { shard } = lifecycle.state;
    const info = session.info();
    await directoryShard(env, tenant, shard).put({
      info,
      incarnation,
      version,
      tenant,
      shard,
      search: session.reads.searchDigest(),
    });
    await telemetry.metric({
      kind: "storage",
      sessionId: info.id,
      entries: info.entryCount,
      bytes: info.bytes,
    });
    await quotas
      .settle(tenant, info.id, info.bytes)
      .catch((error) => telemetry.logFailure("settle_quota", error));
  }

  /** The alarm's report; a failure is tried again, later each time (up to a minute). */
  async reportDue(): Promise<void> {
    const { telemetry } = this.#host;
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
   * Lists the session now (a fork or an import: once complete). The session exists whether or not
   * the directory answers; if it does not, the alarm keeps reporting until it does.
   */
  async publish(): Promise<void> {
    const { session, lifecycle } = this.#host;
    if (!session.exists || lifecycle.deleted) return;
    lifecycle.listed();
    try {
      await this.#report();
    } catch (error) {
      await this.#host.telemetry.logFailure("directory_report", error, { retryInMs: this.#syncMs });
      this.schedule();
    }
  }
}

/*
 * What the object tells of its session outside itself: data points for the session's tenant
 * (nothing without the METRICS binding), and log lines for work in the background that failed.
 * Neither needs the session to exist: without one, no data point is written and a log line names
 * no tenant.
 */

export class SessionTelemetry {
  /** The METRICS binding, as the object's environment holds it when a point is written. */
  readonly #metrics: () => AnalyticsEngineDataset | undefined;
  readonly #session: SessionStore;

  constructor(metrics: () => AnalyticsEngineDataset | undefined, session: SessionStore) {
    this.#metrics = metrics;
    this.#session = session;
  }

  /** Whether data points are written at all (the METRICS binding is there). */
  get measuring(): boolean {
    return this.#metrics() !== undefined;
  }

  /** Writes a data point for this session's tenant (nothing without the METRICS binding). */
  async metric(point: MetricPoint): Promise<void> {
    const metrics = this.#metrics();
    if (!metrics || !this.#session.exists) return;
    writeMetric(metrics, await tenantHash(this.#session.state.tenant), point);
  }

  async logFailure(task: string, error: unknown, fields?: Record<string, number | string>): Promise<void> {
    const state = this.#session.exists ? this.#session.state : undefined;
    await logBackgroundFailure(task, state?.tenant ?? "", state?.header.id, error, fields);
  }
}

/*
 * The `lifecycle` row (`LifecycleRow`): where a session stands apart from its content. The
 * directory shard it reports to (fixed when it is created), whether it is still being written by a
 * fork or an import (not listed until complete), and whether it is deleted: a deleted session
 * answers not_found everywhere but keeps its data until `purgeAt`, so it can be restored whole
 * until then.
 */

export const DEFAULT_RECOVERY_SECONDS = 7 * 24 * 3600;
/** An unlisted session a fork or an import never completed is dropped after this long. */
export const PENDING_MS = 24 * 3600 * 1000;

/** How long a deleted session stays restorable (RECOVERY_WINDOW_SECONDS; 0 purges at once). */
export function recoveryWindowMs(env: Pick<DurableEnv, "RECOVERY_WINDOW_SECONDS">): number {
  return numberSetting(env.RECOVERY_WINDOW_SECONDS, DEFAULT_RECOVERY_SECONDS, { whole: false }) * 1000;
}

export interface LifecycleState {
  shard: number;
  /** When an unlisted (fork or import in progress) session was created; null once listed. */
  pendingSince: number | null;
  deletedAt: number | null;
  purgeAt: number | null;
}

const FRESH: LifecycleState = { shard: 0, pendingSince: null, deletedAt: null, purgeAt: null };

export class LifecycleRow {
  readonly #sql: Sql;
  #stored: LifecycleState | undefined;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** The state as stored (read when first needed, and again after `reload`). */
  get state(): Readonly<LifecycleState> {
    this.#stored ??= this.#load();
    return this.#stored;
  }

  /** Reads the state again from storage: a transaction that wrote it failed and rolled back. */
  reload(): void {
    this.#stored = undefined;
  }

  /** The stored state; a session written before lifecycles existed reports to shard 0. */
  #load(): LifecycleState {
    if (!hasSchema(this.#sql)) return { ...FRESH };
    const row = this.#sql<{
      directory_shard: number;
      pending_since: number | null;
      deleted_at: number | null;
      purge_at: number | null;
    }>`SELECT directory_shard, pending_since, deleted_at, purge_at FROM lifecycle`.toArray()[0];
    if (!row) return { ...FRESH };
    return {
      shard: row.directory_shard,
      pendingSince: row.pending_since,
      deletedAt: row.deleted_at,
      purgeAt: row.purge_at,
    };
  }

  get deleted(): boolean {
    return this.state.deletedAt !== null;
  }

  get pending(): boolean {
    return this.state.pendingSince !== null;
  }

  #save(next: LifecycleState): void {
    this
      .#sql`INSERT OR REPLACE INTO lifecycle (singleton, directory_shard, pending_since, deleted_at, purge_at)
      VALUES (1, ${next.shard}, ${next.pendingSince}, ${next.deletedAt}, ${next.purgeAt})`;
    this.#stored = next;
  }

  /** A new session: its shard, and whether it waits to be listed until it is complete. */
  begin(shard: number, pendingSince: number | null): void {
    this.#save({ ...FRESH, shard, pendingSince });
  }

  listed(): void {
    if (this.pending) this.#save({ ...this.state, pendingSince: null });
  }

  markDeleted(now: number, purgeAt: number): void {
    this.#save({ ...this.state, deletedAt: now, purgeAt });
  }

  markRestored(): void {
    this.#save({ ...this.state, deletedAt: null, purgeAt: null });
  }

  /** Forgets the state after the object's storage was deleted. */
  reset(): void {
    this.#stored = { ...FRESH };
  }

  /**
   * When the object must next wake for its lifecycle: to purge a deleted session, to drop one left
   * incomplete, to delete one whose `expiresAt` came, or (`soon`) to go on with background work.
   */
  dueAt(expiresAt: string | undefined, soon: number | undefined): number | undefined {
    if (this.state.purgeAt !== null) return this.state.purgeAt;
    const times: number[] = [];
    if (this.state.pendingSince !== null) times.push(this.state.pendingSince + PENDING_MS);
    // An expiry stored before expiries were bounded may lie past what an alarm can be set to.
    const expiry = expiresAt === undefined ? Number.NaN : Date.parse(expiresAt);
    if (expiry < Date.parse(LATEST_EXPIRES_AT)) times.push(expiry);
    if (soon !== undefined) times.push(soon);
    return times.length > 0 ? Math.min(...times) : undefined;
  }
}
