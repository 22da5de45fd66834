import type { DurableEnv } from "../env";
import { directoryShard } from "../names";
import type { SessionLifecycle } from "./lifecycle";
import type { QuotaChecks } from "./quota-checks";
import type { SessionStore } from "./session-store";

/*
 * What a session tells its directory shard: its info, counts and a digest of its text, after its
 * writes (writes within DIRECTORY_SYNC_MS are reported together, by the object's alarm), and at
 * once when a fork or an import is complete. A report that fails is tried again with backoff until
 * it gets through; the session never waits for its directory.
 */

/** How long after a write the directory hears of it: writes in between are reported together. */
const DEFAULT_SYNC_MS = 1000;
const MAX_RETRY_MS = 60_000;

/** What reports need of the session's object. */
export interface ReportHost {
  readonly env: DurableEnv;
  readonly storage: DurableObjectStorage;
  readonly session: SessionStore;
  readonly lifecycle: SessionLifecycle;
  readonly quotas: QuotaChecks;
  storedMetric(sessionId: string, entries: number, bytes: number): Promise<void>;
  logFailure(task: string, error: unknown, fields?: Record<string, number | string>): Promise<void>;
}

export class DirectoryReports {
  readonly #host: ReportHost;
  #scheduled = false;
  #failures = 0;

  constructor(host: ReportHost) {
    this.#host = host;
  }

  get #syncMs(): number {
    const delay = Number(this.#host.env.DIRECTORY_SYNC_MS ?? DEFAULT_SYNC_MS);
    return Number.isFinite(delay) ? delay : DEFAULT_SYNC_MS;
  }

  /** After a write: the alarm reports it soon (once, for every write until then). */
  schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#host.storage.setAlarm(Date.now() + this.#syncMs).catch((error) => {
      this.#scheduled = false;
      return this.#host.logFailure("schedule_directory_report", error);
    });
  }

  /** Nothing is waiting to be reported (the session is gone, or deleted). */
  forget(): void {
    this.#scheduled = false;
  }

  async #report(): Promise<void> {
    const { session, lifecycle, env, quotas } = this.#host;
    // Deleted sessions left the listing; incomplete ones join it once complete.
    if (lifecycle.deleted || lifecycle.pending) return;
    const { tenant, incarnation, version } = session.state;
    const { shard } = lifecycle.state;
    const info = session.info();
    await directoryShard(env, tenant, shard).put({
      info,
      incarnation,
      version,
      tenant,
      shard,
      search: session.searchDigest(),
    });
    await this.#host.storedMetric(info.id, info.entryCount, info.bytes);
    await quotas
      .settle(tenant, info.id, info.bytes)
      .catch((error) => this.#host.logFailure("settle_quota", error));
  }

  /** The alarm's report; a failure is tried again, later each time (up to a minute). */
  async reportDue(): Promise<void> {
    this.#scheduled = false;
    try {
      await this.#report();
      this.#failures = 0;
    } catch (error) {
      this.#failures++;
      const wait = Math.min(MAX_RETRY_MS, 1000 * 2 ** this.#failures);
      await this.#host.logFailure("directory_report", error, { retryInMs: wait, failures: this.#failures });
      this.#scheduled = true;
      await this.#host.storage.setAlarm(Date.now() + wait);
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
      await this.#host.logFailure("directory_report", error, { retryInMs: this.#syncMs });
      this.schedule();
    }
  }
}
