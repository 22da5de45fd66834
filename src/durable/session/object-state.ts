import type { Result } from "../../core/errors";
import { capture } from "../../core/errors";
import { LATEST_EXPIRES_AT } from "../../core/limits";
import type { DurableEnv } from "../env";
import { logBackgroundFailure, tenantHash } from "../log-line";
import type { MetricPoint } from "../metrics";
import { writeMetric } from "../metrics";
import { ObjectAlarm } from "../object-alarm";
import { objectEnv } from "../placement/placed-env";
import { QuotaLedger } from "../quota-ledger";
import { DEFAULT_OPEN_GENERATIONS, quotaExceeded, quotasFor, tenantWide } from "../quotas";
import { checkedNumberSetting } from "../settings";
import type { Sql } from "../sql";
import { sqlOf } from "../sql";
import { unavailable } from "../transient";
import type { ClaimRequest } from "../types";
import { hasSchema } from "./schema";
import { SessionBlobs } from "./session-blobs";
import { SessionStore } from "./session-store";
import type { ByteLimit } from "./session-writes";
import { ClaimExceeded } from "./session-writes";

/*
 * What every part of a session's object works with, made once by the object: its Durable Object
 * state and storage, its environment, the session's store, the `lifecycle` row, the alarm, the
 * session's side of its tenant's quotas, its blobs and its telemetry. A part is built with this
 * and with the other parts it uses, named in its constructor.
 *
 * Below: the object's metrics and logs (`SessionTelemetry`), the `lifecycle` row (`LifecycleRow`),
 * and the session's side of its tenant's quotas, whose ledger the tenant's first directory shard
 * keeps (`QuotaChecks`).
 */

export class SessionObjectState {
  readonly ctx: DurableObjectState;
  readonly storage: DurableObjectStorage;
  /**
   * The environment of the objects the session reaches (blobs, the directory, the quota ledger,
   * its forks and sources): those of the object's own jurisdiction. In a jurisdiction it is a copy
   * made with the object, so the settings read from it (the directory's sync interval, the
   * recovery window, quotas) are as the object was made.
   */
  readonly placed: DurableEnv;
  readonly session: SessionStore;
  readonly lifecycle: LifecycleRow;
  /** The object's alarm, which comes by the time each part's work is due. */
  readonly alarm: ObjectAlarm;
  readonly quotas: QuotaChecks;
  readonly blobs: SessionBlobs;
  readonly telemetry: SessionTelemetry;
  readonly #current: () => DurableEnv;

  /** `current` answers the object's environment as it stands (see `env`). */
  constructor(ctx: DurableObjectState, env: DurableEnv, current: () => DurableEnv) {
    this.ctx = ctx;
    this.storage = ctx.storage;
    this.#current = current;
    this.placed = objectEnv(env, ctx);
    const session = ctx.storage.transactionSync(() => new SessionStore(ctx.storage));
    this.session = session;
    this.lifecycle = new LifecycleRow(sqlOf(ctx.storage.sql));
    this.telemetry = new SessionTelemetry(() => current().METRICS, session);
    this.alarm = new ObjectAlarm(ctx.storage, (task, error) => this.telemetry.logFailure(task, error));
    this.quotas = new QuotaChecks(this.placed);
    this.blobs = new SessionBlobs(this.placed, ctx, session);
  }

  /**
   * The object's environment as it stands now, for the settings a part reads when it uses them (a
   * fork's copy, a generation's defaults, the summarizer, the storage ceiling, metrics).
   */
  get env(): DurableEnv {
    return this.#current();
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

  /**
   * Writes a data point for this session's tenant, or for `tenant` (a purged session's, whose
   * storage is gone); nothing without the METRICS binding.
   */
  async metric(
    point: MetricPoint,
    tenant = this.#session.exists ? this.#session.state.tenant : undefined,
  ): Promise<void> {
    const metrics = this.#metrics();
    if (!metrics || tenant === undefined) return;
    writeMetric(metrics, await tenantHash(tenant), point);
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

/**
 * How long a deleted session stays restorable (RECOVERY_WINDOW_SECONDS; 0 purges at once). Set to
 * anything else it is `misconfigured`: read as the default, it could purge sooner than meant.
 */
export function recoveryWindowMs(env: Pick<DurableEnv, "RECOVERY_WINDOW_SECONDS">): number {
  const seconds = checkedNumberSetting(
    "RECOVERY_WINDOW_SECONDS",
    env.RECOVERY_WINDOW_SECONDS,
    DEFAULT_RECOVERY_SECONDS,
    {
      whole: false,
    },
  );
  return seconds * 1000;
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

  /** A deleted session's recovery window closes now (if it had not): it is purged, and restored by no one. */
  closeWindow(now: number): void {
    if (this.deleted && (this.state.purgeAt === null || this.state.purgeAt > now)) {
      this.#save({ ...this.state, purgeAt: now });
    }
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
    // An expiry stored before expiries were bounded may lie past what an alarm can be set to; one
    // of a session being written counts once it is complete.
    const expiry =
      expiresAt === undefined || this.state.pendingSince !== null ? Number.NaN : Date.parse(expiresAt);
    if (expiry < Date.parse(LATEST_EXPIRES_AT)) times.push(expiry);
    if (soon !== undefined) times.push(soon);
    return times.length > 0 ? Math.min(...times) : undefined;
  }
}

/*
 * A session object's side of the quotas. `maxSessionBytes` is the session's own affair. The
 * tenant-wide quotas (`maxSessions`, `maxTenantBytes`) are kept by the tenant's ledger
 * (tenant-ledger.ts): a new or restored session is admitted by it, and a session writes within the
 * room it was granted (its claim), asking for more only when a write needs it and handing back what
 * it did not use once idle. Without tenant-wide quotas the ledger hears only of deleted sessions,
 * which tells it to seed itself again should the quotas come back.
 */

/** Attempts a write makes to get the room it needs (others may take room between them). */
const CLAIM_ATTEMPTS = 3;

export class QuotaChecks {
  readonly #env: DurableEnv;
  readonly #ledger: QuotaLedger;
  /** The bytes this session may hold without asking the ledger again; unknown until it asks. */
  #claim: number | undefined;
  /**
   * Writes running within the session's room. The idle settle waits until none is: it would shrink
   * the claim one of them asked for, or was given, before it commits.
   */
  #writing = 0;

  constructor(env: DurableEnv) {
    this.#env = env;
    this.#ledger = new QuotaLedger(env);
  }

  async #ask(tenant: string, request: Omit<ClaimRequest, "seq">): Promise<number> {
    this.#claim = await this.#ledger.claim(tenant, request);
    return this.#claim;
  }

  /** Whether the tenant's quotas count its sessions together (the ledger holds their room). */
  tenantWide(tenant: string): boolean {
    return tenantWide(quotasFor(this.#env.QUOTAS, tenant), "sessions");
  }

  /**
   * Refuses a session being created or restored (holding `bytes`) that the tenant's quotas leave
   * no room for; else it counts against them from now.
   */
  async admit(tenant: string, sessionId: string, bytes: number): Promise<void> {
    const quotas = quotasFor(this.#env.QUOTAS, tenant);
    if (quotas.maxSessionBytes !== undefined && bytes > quotas.maxSessionBytes) {
      throw quotaExceeded(
        "maxSessionBytes",
        quotas.maxSessionBytes,
        `the session would hold ${bytes} bytes; the quota is ${quotas.maxSessionBytes}`,
      );
    }
    if (tenantWide(quotas, "sessions"))
      await this.#ask(tenant, { sessionId, holds: 0, wants: bytes, newSession: true });
  }

  /** The most bytes the session (holding `holds`) may hold after a write; none without byte quotas. */
  byteLimit(tenant: string, holds: number): ByteLimit | undefined {
    const quotas = quotasFor(this.#env.QUOTAS, tenant);
    const own: ByteLimit | undefined =
      quotas.maxSessionBytes === undefined
        ? undefined
        : { maxBytes: quotas.maxSessionBytes, quota: "maxSessionBytes", limit: quotas.maxSessionBytes };
    if (quotas.maxTenantBytes === undefined) return own;
    // Not known (the object just woke): nothing beyond what it holds, until a write asks for more.
    const claim = this.#claim ?? holds;
    if (own && own.maxBytes <= claim) return own;
    return { maxBytes: claim, quota: "claim", limit: quotas.maxTenantBytes };
  }

  /**
   * Runs a write (`run` answers a Result) within the session's room, and when it needs more of the
   * tenant's room than the session was granted, asks for it and runs the write again (nothing was
   * written the first time).
   */
  async within<T>(
    session: SessionStore,
    run: (room: ByteLimit | undefined) => Promise<Result<T>>,
  ): Promise<Result<T>> {
    this.#writing++;
    try {
      return await this.#within(session, run);
    } finally {
      this.#writing--;
    }
  }

  async #within<T>(
    session: SessionStore,
    run: (room: ByteLimit | undefined) => Promise<Result<T>>,
  ): Promise<Result<T>> {
    for (let attempt = 1; ; attempt++) {
      const room = await capture(() =>
        session.exists ? this.byteLimit(session.state.tenant, session.state.stats.bytes) : undefined,
      );
      if (!room.ok) return room;
      let needed: ClaimExceeded;
      try {
        return await run(room.value);
      } catch (error) {
        if (!(error instanceof ClaimExceeded)) throw error;
        if (attempt >= CLAIM_ATTEMPTS) {
          const busy = unavailable("the session's writes keep outgrowing its room; try again", "not_applied");
          return { ok: false, error: busy.toJSON() };
        }
        needed = error;
      }
      const { tenant, header } = session.state;
      // Asks for room for `wants` more bytes; `quota_exceeded` when the tenant has none left.
      const { holds, wants } = needed;
      const grown = await capture(() =>
        this.#ask(tenant, { sessionId: header.id, holds, wants, newSession: false }),
      );
      if (!grown.ok) return grown;
    }
  }

  /**
   * The most room the session can have now for a write that keeps what fits of what it would have
   * written, which needs the session to hold `upTo` bytes at the most: its own quota, or what the
   * tenant's quota leaves it. Its claim grows only as far as both quotas let the write use it:
   * room claimed beyond that would be refused to the tenant's other sessions until this one settles.
   */
  async mostRoom(session: SessionStore, upTo: number): Promise<Result<ByteLimit | undefined>> {
    this.#writing++;
    try {
      return await capture(async () => {
        if (!session.exists) return undefined;
        const { tenant, header, stats } = session.state;
        const { maxTenantBytes, maxSessionBytes } = quotasFor(this.#env.QUOTAS, tenant);
        const wanted = Math.min(upTo, maxSessionBytes ?? upTo);
        const holds = stats.bytes;
        if (maxTenantBytes !== undefined && wanted > Math.max(this.#claim ?? holds, holds)) {
          // Granted all that is left of the tenant's quota when that is less.
          const request = { sessionId: header.id, holds, wants: wanted - holds };
          await this.#ask(tenant, { ...request, newSession: false, partial: true });
        }
        return this.byteLimit(tenant, session.state.stats.bytes);
      });
    } finally {
      this.#writing--;
    }
  }

  /** Refuses a generation opened beside `open` others when the tenant's quota allows no more. */
  checkOpenGenerations(tenant: string, open: number): void {
    const limit = quotasFor(this.#env.QUOTAS, tenant).maxOpenGenerations ?? DEFAULT_OPEN_GENERATIONS;
    if (open < limit) return;
    throw quotaExceeded(
      "maxOpenGenerations",
      limit,
      `the session holds ${open} open generations; complete or stop one first`,
    );
  }

  /**
   * The session is idle: what it was granted beyond what it holds goes back. What it holds is read
   * as its claim is dropped: a write committed before counts, and one after asks for its room. Not
   * idle (a write runs within its room): nothing is settled, and it answers false.
   */
  async settle(session: SessionStore): Promise<boolean> {
    if (this.#writing > 0) return false;
    if (!session.exists) return true;
    const { tenant, header, stats } = session.state;
    if (quotasFor(this.#env.QUOTAS, tenant).maxTenantBytes === undefined) return true;
    this.#claim = undefined;
    await this.#ledger.settle(tenant, header.id, stats.bytes);
    return true;
  }

  /**
   * The session was deleted: it counts against no quota until it is restored. The ledger is told
   * even without tenant-wide quotas (see `SessionDirectory.releaseQuota`).
   */
  async release(tenant: string, sessionId: string): Promise<void> {
    this.#claim = undefined;
    await this.#ledger.release(tenant, sessionId, this.tenantWide(tenant));
  }
}
