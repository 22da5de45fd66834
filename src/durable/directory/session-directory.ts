import { DurableObject } from "cloudflare:workers";
import type { Result } from "../../core/errors";
import { capture } from "../../core/errors";
import type { TenantSearchOptions } from "../../core/search";
import { indexedText } from "../../core/search-text";
import type { ListOptions, SessionPage } from "../../core/session-schemas";
import type { BlobClaim, BlobClaimRequest } from "../blobs/blob-ledger";
import { BlobLedger, purgedOwner } from "../blobs/blob-ledger";
import type { DurableEnv } from "../env";
import { logBackgroundFailure } from "../log-line";
import { directoryShard, directoryShards, sessionObjectName } from "../names";
import { ObjectAlarm } from "../object-alarm";
import { objectCalls } from "../object-calls";
import { objectEnv } from "../placement/placed-env";
import { quotasFor } from "../quotas";
import type { Sql } from "../sql";
import { migrate, sqlOf } from "../sql";
import { streamObjectName } from "../stream/paths";
import type {
  ClaimRequest,
  DirectoryReport,
  Retention,
  SeedRow,
  StreamListing,
  StreamReport,
  StreamUsage,
  TenantUsage,
} from "../types";
import { listShard } from "./directory-listing";
import { MIGRATIONS } from "./directory-schema";
import { type ShardSearch, searchShard } from "./directory-search";
import type { StreamListOptions } from "./stream-registry";
import { StreamRegistry } from "./stream-registry";
import { TenantEventHub } from "./tenant-events";
import { TenantLedger } from "./tenant-ledger";

/*
 * One shard of a tenant's directory (directory-shards.ts): the list of the sessions that report to
 * it, kept from what each session object reports, so listing and searching never wake a session.
 * Reports are idempotent and ordered by a per-session version; a deleted session leaves a
 * tombstone so a late report cannot bring it back (a restore lifts it). Each session's name,
 * labels, preview and a digest of its text are indexed for the tenant's search. The shard also
 * enforces the tenant's retention: an alarm asks sessions idle for longer to delete themselves.
 * The tenant's streams report to it as well (stream-registry.ts), for their listing, usage and
 * retention.
 */

/** Tombstones outlive any report still in flight by far; older ones are dropped. */
const TOMBSTONE_MS = 7 * 24 * 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;
/** How often the retention sweep looks for idle sessions. */
const SWEEP_INTERVAL_MS = 3600 * 1000;
/** Idle sessions one step of the sweep handles, and how many it asks at once. */
const SWEEP_BATCH = 100;
const SWEEP_PARALLEL = 10;

/**
 * Asks each of `keys` to expire, `SWEEP_PARALLEL` at once; answers how many did. One that is gone
 * is forgotten; one that fails is logged, and the others go on.
 */
async function expireEach(
  keys: readonly string[],
  expire: (key: string) => Promise<string>,
  forget: (key: string) => void,
  failed: (key: string, error: unknown) => Promise<void>,
): Promise<number> {
  let expired = 0;
  for (let i = 0; i < keys.length; i += SWEEP_PARALLEL) {
    await Promise.all(
      keys.slice(i, i + SWEEP_PARALLEL).map(async (key) => {
        try {
          const outcome = await expire(key);
          if (outcome === "expired") expired++;
          else if (outcome === "missing") forget(key);
        } catch (error) {
          await failed(key, error);
        }
      }),
    );
  }
  return expired;
}

interface Identity {
  tenant: string;
  shard: number;
  /** The tenant's retention; `undefined` while shard 0 could not be asked for it (the alarm asks again). */
  idleDays: number | null | undefined;
}

export class SessionDirectory extends DurableObject<DurableEnv> {
  readonly #sql: Sql;
  readonly #events: TenantEventHub;
  readonly #ledger: TenantLedger;
  readonly #blobs: BlobLedger;
  readonly #streams: StreamRegistry;
  /** Blobs being deleted from the bucket now: a claim of one waits until it is gone. */
  readonly #deleting = new Map<string, Promise<void>>();
  /**
   * The ledger's seeding under way, which claims arriving meanwhile wait for, and the holders
   * released while it reads the shards (which may list them still): the seed does not count them.
   */
  #seeding: { done: Promise<void>; released: Set<string> } | undefined;
  #identity: Identity | undefined;
  readonly #alarm: ObjectAlarm;
  /** When the retention sweep is next due, if this instance knows (else the alarm stands as set). */
  #sweepDue: number | undefined;
  /** The environment of the objects it reaches: those of its own jurisdiction. */
  readonly #placed: DurableEnv;

  constructor(ctx: DurableObjectState, env: DurableEnv) {
    super(ctx, env);
    this.#placed = objectEnv(env, ctx);
    this.#sql = sqlOf(ctx.storage.sql);
    this.#ledger = new TenantLedger(this.#sql);
    this.#blobs = new BlobLedger(this.#sql);
    this.#streams = new StreamRegistry(this.#sql);
    this.#alarm = new ObjectAlarm(ctx.storage, (task, error) => this.#logFailure(task, error));
    this.#alarm.add(() =>
      this.#identity === undefined || this.#identity.idleDays === null ? undefined : this.#sweepDue,
    );
    this.#events = new TenantEventHub(ctx, (error) => this.#logFailure("tenant_events", error));
    ctx.storage.transactionSync(() => migrate(ctx.storage.sql, MIGRATIONS));
    const row = this.#sql<{
      tenant: string;
      shard: number;
      idle_days: number | null;
      retention_known: number;
    }>`
      SELECT tenant, shard, idle_days, retention_known FROM shard`.toArray()[0];
    if (row) {
      const idleDays = row.retention_known ? row.idle_days : undefined;
      this.#identity = { tenant: row.tenant, shard: row.shard, idleDays };
    }
  }

  /** A failure of the shard's background work, logged as the sessions' are (its tenant hashed). */
  #logFailure(task: string, error: unknown, sessionId?: string): Promise<void> {
    return logBackgroundFailure(task, this.#identity?.tenant ?? "", sessionId, error, {
      shard: this.#identity?.shard ?? -1,
    });
  }

  #saveIdentity(identity: Identity): void {
    const known = identity.idleDays === undefined ? 0 : 1;
    this.#sql`INSERT OR REPLACE INTO shard (singleton, tenant, shard, idle_days, retention_known)
      VALUES (1, ${identity.tenant}, ${identity.shard}, ${identity.idleDays ?? null}, ${known})`;
    this.#identity = identity;
  }

  /**
   * Learns which tenant and shard this is from the first report. A shard added when the count
   * grew asks shard 0 for the tenant's retention, which was set before it existed; should shard 0
   * not answer, the alarm asks again.
   */
  async #learn(tenant: string, shard: number): Promise<void> {
    if (this.#identity) return;
    const idleDays = shard === 0 ? null : await this.#askRetention(tenant, shard);
    if (this.#identity) return;
    this.#saveIdentity({ tenant, shard, idleDays });
    await this.#armSweep();
  }

  /** The tenant's retention as shard 0 holds it, or `undefined` if it could not be asked. */
  async #askRetention(tenant: string, shard: number): Promise<number | null | undefined> {
    try {
      return (await directoryShard(this.#placed, tenant, 0).retention()).idleDays;
    } catch (error) {
      await logBackgroundFailure("read_retention", tenant, undefined, error, { shard });
      return undefined;
    }
  }

  /** Asks shard 0 again for the tenant's retention, if this shard could not learn it; one set meanwhile stands. */
  async #relearnRetention(): Promise<void> {
    const identity = this.#identity;
    if (identity === undefined || identity.idleDays !== undefined) return;
    const idleDays = await this.#askRetention(identity.tenant, identity.shard);
    if (idleDays !== undefined && this.#identity?.idleDays === undefined)
      this.#saveIdentity({ ...identity, idleDays });
  }

  /** @internal */
  async put(report: DirectoryReport): Promise<void> {
    if (report.tenant !== undefined && report.shard !== undefined)
      await this.#learn(report.tenant, report.shard);
    const { info, incarnation, version } = report;
    const buried = this
      .#sql`SELECT 1 FROM tombstones WHERE id = ${info.id} AND incarnation = ${incarnation}`.toArray();
    if (buried.length > 0) return;
    const json = JSON.stringify(info);
    const listed = this.#sql<{ incarnation: string }>`
      SELECT incarnation FROM sessions WHERE id = ${info.id}`.toArray()[0];
    const written = this.#sql<{ rowid: number }>`
      INSERT INTO sessions (id, incarnation, version, created_at, updated_at, info)
      VALUES (${info.id}, ${incarnation}, ${version}, ${info.createdAt}, ${info.updatedAt}, ${json})
      ON CONFLICT (id) DO UPDATE SET
        incarnation = excluded.incarnation, version = excluded.version,
        created_at = excluded.created_at, updated_at = excluded.updated_at, info = excluded.info
      WHERE sessions.incarnation != excluded.incarnation OR sessions.version < excluded.version
      RETURNING rowid`.toArray()[0];
    if (!written) return;
    this.#sql`DELETE FROM session_text WHERE rowid = ${written.rowid}`;
    this.#sql`INSERT INTO session_text (rowid, name, labels, preview, text)
      VALUES (${written.rowid}, ${indexedText(info.name ?? "")}, ${indexedText(report.search?.labels ?? "")},
        ${indexedText(info.preview ?? "")}, ${indexedText(report.search?.text ?? "")})`;
    this.#events.listed(info, listed?.incarnation !== incarnation);
  }

  /** What this shard's listing gains, changes and loses, from now, as Server-Sent Events. @internal */
  events(): Promise<Result<ReadableStream<Uint8Array>>> {
    return capture(() => this.#events.open());
  }

  /**
   * Drops the session's row; with `read`, only while the row is as it was read then: a report that
   * came meanwhile (the id created again, the session restored) lists a session that is there.
   */
  #drop(id: string, read?: { incarnation: string; version: number }): void {
    const row = this.#sql<{ rowid: number; incarnation: string; version: number }>`
      SELECT rowid, incarnation, version FROM sessions WHERE id = ${id}`.toArray()[0];
    if (!row || (read && (row.incarnation !== read.incarnation || row.version !== read.version))) return;
    this.#sql`DELETE FROM session_text WHERE rowid = ${row.rowid}`;
    this.#sql`DELETE FROM sessions WHERE rowid = ${row.rowid}`;
    this.#events.unlisted(id);
  }

  /** @internal */
  remove(id: string, incarnation: string): void {
    const now = Date.now();
    this.ctx.storage.transactionSync(() => {
      this
        .#sql`INSERT OR IGNORE INTO tombstones (id, incarnation, deleted_at) VALUES (${id}, ${incarnation}, ${now})`;
      const listed = this
        .#sql`SELECT 1 FROM sessions WHERE id = ${id} AND incarnation = ${incarnation}`.toArray();
      if (listed.length > 0) this.#drop(id);
      this.#sql`DELETE FROM tombstones WHERE deleted_at < ${now - TOMBSTONE_MS}`;
    });
  }

  /**
   * The tenant's usage; with `except`, without that session (which knows its own figures better).
   * @internal
   */
  usage(except?: string): TenantUsage {
    const total = this.#sql<{
      sessions: number;
      entries: number;
      bytes: number;
    }>`SELECT sessions, entries, bytes FROM usage`.one();
    if (except === undefined) return { ...total };
    const row = this.#sql<{ entries: number | null; bytes: number | null }>`
      SELECT info->>'entryCount' AS entries, info->>'bytes' AS bytes FROM sessions WHERE id = ${except}`.toArray()[0];
    if (!row) return { ...total };
    return {
      sessions: total.sessions - 1,
      entries: total.entries - (row.entries ?? 0),
      bytes: total.bytes - (row.bytes ?? 0),
    };
  }

  /**
   * Each listed session's and stream's bytes as last reported: what a quota ledger is seeded from.
   * @internal
   */
  quotaSeed(): SeedRow[] {
    const sessions = this.#sql<{ id: string; bytes: number | null }>`
      SELECT id, info->>'bytes' AS bytes FROM sessions`
      .toArray()
      .map((row) => ({ id: row.id, bytes: row.bytes ?? 0 }));
    return [...sessions, ...this.#streams.quotaSeed()];
  }

  /** What a stream's object reports about it. @internal */
  async reportStream(report: StreamReport): Promise<void> {
    await this.#learn(report.tenant, report.shard);
    this.#streams.report(report);
  }

  /** This shard's streams for a page of the tenant's listing. @internal */
  listStreams(options: StreamListOptions): StreamListing[] {
    return this.#streams.list(options);
  }

  /** The streams that report to this shard, and their bytes. @internal */
  streamUsage(): StreamUsage {
    return this.#streams.usage();
  }

  /**
   * The bytes a session may hold after a write, from the tenant's ledger (shard 0 keeps it), or
   * `quota_exceeded`. A ledger new to these quotas is seeded from every shard first.
   * @internal
   */
  async claimQuota(tenant: string, request: ClaimRequest): Promise<Result<number>> {
    return capture(async () => {
      const quotas = quotasFor(this.env.QUOTAS, tenant);
      const setting = JSON.stringify(quotas);
      if (!this.#ledger.seededFor(setting)) {
        if (!this.#seeding) {
          const released = new Set<string>();
          const done = this.#seedLedger(tenant, setting, released).finally(() => {
            this.#seeding = undefined;
          });
          this.#seeding = { done, released };
        }
        await this.#seeding.done;
      }
      return this.ctx.storage.transactionSync(() => this.#ledger.claim(request, quotas));
    });
  }

  async #seedLedger(tenant: string, setting: string, released: ReadonlySet<string>): Promise<void> {
    const rows = await Promise.all(
      directoryShards(this.#placed, tenant).map((shard, index) =>
        index === 0 ? this.quotaSeed() : shard.quotaSeed(),
      ),
    );
    const held = rows.flat().filter((row) => !released.has(row.id));
    this.ctx.storage.transactionSync(() => this.#ledger.seed(held, setting));
  }

  /** A session idle at `holds` bytes hands back the rest of its claim. @internal */
  settleQuota(sessionId: string, holds: number, seq: number): void {
    this.#ledger.settle(sessionId, holds, seq);
  }

  /**
   * A deleted session no longer counts against the tenant's quotas. Its holder tells the ledger
   * under any quotas: one told under quotas it was not seeded for (holders it may not have heard
   * of came and went meanwhile) is seeded again before its next claim. A claim the holder sent
   * before `seq` that arrives after is refused. @internal
   */
  releaseQuota(tenant: string, sessionId: string, seq?: number): void {
    const setting = JSON.stringify(quotasFor(this.env.QUOTAS, tenant));
    this.#seeding?.released.add(sessionId);
    this.ctx.storage.transactionSync(() => {
      this.#ledger.release(sessionId, seq);
      if (!this.#ledger.seededFor(setting)) this.#ledger.unseed();
    });
  }

  /**
   * Claims blobs for a session (`owner`: its id and incarnation) before it uploads them and writes
   * the entries that hold them (blob-ledger.ts). A blob being deleted is claimed once it is gone, to
   * be uploaded again.
   * @internal
   */
  async claimBlobs(owner: string, requests: BlobClaimRequest[]): Promise<Result<BlobClaim[]>> {
    const keys = requests.map((request) => request.key);
    // Another deletion may begin while one is waited for: claimed once none is under way. One that
    // failed leaves its blob to be deleted, which a claim takes back (to be uploaded again).
    for (let under = this.#deletionsOf(keys); under.length > 0; under = this.#deletionsOf(keys)) {
      await Promise.allSettled(under);
    }
    return capture(() => this.ctx.storage.transactionSync(() => this.#blobs.claim(owner, requests)));
  }

  /** The deletions from the bucket under way of these blobs. */
  #deletionsOf(keys: readonly string[]): Promise<void>[] {
    return keys.flatMap((key) => this.#deleting.get(key) ?? []);
  }

  /** The sizes in an entry of the tenant's blobs (of those given), before a session reads any. @internal */
  blobSizes(keys: string[]): Array<{ key: string; jsonBytes: number }> {
    return this.#blobs.sizes(keys);
  }

  /**
   * Blobs a session (`owner`) uploaded after claiming them. A session purged meanwhile is refused
   * (`not_found`), and those of its uploads no session claims are deleted from the bucket: its
   * purge may have deleted them before they reached it. @internal
   */
  async confirmBlobs(owner: string, uploads: Required<BlobClaimRequest>[]): Promise<Result<void>> {
    return capture(async () => {
      const keys = uploads.map((upload) => upload.key);
      // A deletion under way may have reached the bucket before the upload: deleted again after it.
      for (let under = this.#deletionsOf(keys); under.length > 0; under = this.#deletionsOf(keys)) {
        await Promise.allSettled(under);
      }
      const confirmation = this.ctx.storage.transactionSync(() => this.#blobs.confirm(owner, uploads));
      if (confirmation.confirmed) return;
      if (confirmation.unclaimed.length > 0 && this.#placed.BLOBS) {
        await this.#deleteBlobs(this.#placed.BLOBS, confirmation.unclaimed);
      }
      throw purgedOwner();
    });
  }

  /**
   * A purged session's claims given up; blobs no session holds any more are deleted from the bucket.
   * @internal
   */
  async releaseBlobs(owner: string): Promise<Result<void>> {
    return capture(async () => {
      let unclaimed = this.ctx.storage.transactionSync(() => this.#blobs.release(owner));
      // The ledger answers a thousand at a time (what one deletion from the bucket takes): each
      // deleted, until none is left. Without the bucket they stay marked, to be deleted by a
      // release once it is bound again.
      while (unclaimed.length > 0 && this.#placed.BLOBS) {
        await this.#deleteBlobs(this.#placed.BLOBS, unclaimed);
        unclaimed = this.#blobs.unclaimed();
      }
    });
  }

  /**
   * A session's claims of blobs a write of it claimed but did not commit, given back; those no
   * session holds any more are deleted from the bucket. @internal
   */
  async giveBackBlobs(owner: string, keys: string[]): Promise<Result<void>> {
    return capture(async () => {
      const unclaimed = this.ctx.storage.transactionSync(() => this.#blobs.giveBack(owner, keys));
      if (unclaimed.length > 0 && this.#placed.BLOBS) await this.#deleteBlobs(this.#placed.BLOBS, unclaimed);
    });
  }

  /** Deletes blobs from the bucket, and from the ledger once gone; one being deleted already is waited for. */
  async #deleteBlobs(bucket: R2Bucket, keys: string[]): Promise<void> {
    const under = new Set<Promise<void>>();
    for (const key of keys) {
      const deletion = this.#deleting.get(key);
      if (deletion) under.add(deletion);
    }
    const fresh = keys.filter((key) => !this.#deleting.has(key));
    if (fresh.length > 0) {
      const deletion = bucket.delete(fresh).then(() => this.#blobs.deleted(fresh));
      const tracked = deletion.finally(() => {
        for (const key of fresh) if (this.#deleting.get(key) === tracked) this.#deleting.delete(key);
      });
      for (const key of fresh) this.#deleting.set(key, tracked);
      under.add(tracked);
    }
    await Promise.all(under);
  }

  /** The tenant's blobs and their bytes as entries hold them. @internal */
  blobUsage(): { blobs: number; bytes: number } {
    return this.#blobs.usage();
  }

  /** Lets a restored session be listed again (its next report puts it back). @internal */
  unbury(id: string, incarnation: string): void {
    this.#sql`DELETE FROM tombstones WHERE id = ${id} AND incarnation = ${incarnation}`;
  }

  /**
   * A page of this shard's listing: its first `limit` sessions after the cursor, or fewer when
   * their infos would pass `maxChars` of JSON (one at least; `listShard`). @internal
   */
  list(options: ListOptions, maxChars: number = Number.POSITIVE_INFINITY): Promise<Result<SessionPage>> {
    return capture(() => listShard(this.#sql, options, maxChars));
  }

  /**
   * This shard's best sessions for a query, with the best snippet of each field that matched, their
   * infos within `maxChars` of JSON (one at least; `searchShard`). @internal
   */
  search(
    options: TenantSearchOptions,
    maxChars: number = Number.POSITIVE_INFINITY,
  ): Promise<Result<ShardSearch>> {
    return capture(() => searchShard(this.#sql, options, maxChars));
  }

  /** @internal */
  retention(): Retention {
    return { idleDays: this.#identity?.idleDays ?? null };
  }

  /** Sets the tenant's retention on this shard (the router sets it on every shard). @internal */
  async setRetention(retention: Retention, tenant: string, shard: number): Promise<void> {
    this.#saveIdentity({ tenant, shard, idleDays: retention.idleDays });
    // A retention set sweeps at once; none clears the alarm (nothing else is due on a shard).
    this.#sweepDue = retention.idleDays === null ? undefined : Date.now();
    await this.#alarm.reset();
  }

  async #armSweep(): Promise<void> {
    this.#sweepDue ??= Date.now() + SWEEP_INTERVAL_MS;
    await this.#alarm.arm();
  }

  override async alarm(): Promise<void> {
    const now = Date.now();
    // Should the sweep fail, the alarm comes again for the next one.
    this.#sweepDue = now + SWEEP_INTERVAL_MS;
    try {
      await this.#relearnRetention();
      await this.sweep(now);
    } finally {
      await this.#alarm.arm();
    }
  }

  /**
   * Asks the sessions idle since `now` minus the retention to delete themselves (each checks its
   * own last write: the listing may lag), a bounded step at a time; answers how many did. Runs
   * from the alarm; `now` is a parameter so retention can be exercised without waiting for days.
   * @internal
   */
  async sweep(now: number): Promise<number> {
    const identity = this.#identity;
    const idleDays = identity?.idleDays;
    if (!identity || idleDays == null) return 0;
    const idleBefore = new Date(now - idleDays * DAY_MS).toISOString();
    const idle = new Map(
      this.#sql<{ id: string; incarnation: string; version: number }>`
        SELECT id, incarnation, version FROM sessions WHERE updated_at < ${idleBefore}
        ORDER BY updated_at LIMIT ${SWEEP_BATCH}`
        .toArray()
        .map(({ id, incarnation, version }) => [id, { incarnation, version }]),
    );
    const expired = await expireEach(
      [...idle.keys()],
      (id) =>
        objectCalls(this.#placed.SESSIONS.getByName(sessionObjectName(identity.tenant, id))).expireIdle(
          idleBefore,
        ),
      // A row whose session is gone would be asked forever; one reported again meanwhile stays.
      (id) => this.#drop(id, idle.get(id)),
      (id, error) => this.#logFailure("retention", error, id),
    );
    const streams = await this.#sweepStreams(identity.tenant, now - idleDays * DAY_MS);
    this.#streams.prune(now);
    const more = (idle.size === SWEEP_BATCH && expired > 0) || streams.more;
    this.#sweepDue = now + (more ? 1000 : SWEEP_INTERVAL_MS);
    await this.#alarm.arm();
    return expired + streams.expired;
  }

  /** Asks the streams idle since `before` to delete themselves; answers how many did. */
  async #sweepStreams(tenant: string, before: number): Promise<{ expired: number; more: boolean }> {
    const objects = this.#placed.STREAMS;
    if (!objects) return { expired: 0, more: false };
    const idle = this.#streams.idle(before, SWEEP_BATCH);
    const expired = await expireEach(
      idle,
      (key) => objects.getByName(streamObjectName(tenant, key)).expireIdle(key, before),
      (key) => this.#streams.forget(key),
      (key, error) => this.#logFailure("stream_retention", error, key),
    );
    return { expired, more: idle.length === SWEEP_BATCH && expired > 0 };
  }
}
