import { SessionError } from "../core/errors";
import type { DurableEnv } from "./env";
import { directoryShard } from "./names";
import { objectCalls } from "./object-calls";
import { unavailable } from "./transient";
import type { ClaimRequest } from "./types";

/*
 * A holder's calls to its tenant's quota ledger, kept by the tenant's first directory shard (see
 * tenant-ledger.ts): a session's object, or a stream's. Its requests carry one sequence that only
 * grows, across restarts too, so the ledger ignores what comes late. A claim or a release the
 * ledger cannot be asked refuses for now (`unavailable`, nothing applied); the ledger's own
 * refusal (`quota_exceeded`) is answered as it is.
 */

export class QuotaLedger {
  readonly #env: DurableEnv;
  #seq = 0;

  constructor(env: DurableEnv) {
    this.#env = env;
  }

  /** The sequence's next number (a stream's reports to its directory are numbered by it too). */
  nextSeq(): number {
    this.#seq = Math.max(this.#seq + 1, Date.now() * 1000);
    return this.#seq;
  }

  #ledger(tenant: string) {
    return directoryShard(this.#env, tenant, 0);
  }

  async #reach<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof SessionError) throw error;
      throw unavailable("the tenant's quota ledger cannot be reached; try again", "not_applied");
    }
  }

  /** Asks for room (`wants` bytes more than the `holds` counted): answers what the holder may hold. */
  claim(tenant: string, request: Omit<ClaimRequest, "seq">): Promise<number> {
    return this.#reach(() =>
      objectCalls(this.#ledger(tenant)).claimQuota(tenant, { ...request, seq: this.nextSeq() }),
    );
  }

  /** The holder is idle holding `holds` bytes: what it was granted beyond them goes back. */
  settle(tenant: string, holderId: string, holds: number): Promise<void> {
    return this.#ledger(tenant).settleQuota(holderId, holds, this.nextSeq());
  }

  /**
   * The holder is gone (or deleted): it counts against no quota, nor does a claim it asked before
   * that reaches the ledger after. Under quotas that are not
   * tenant-wide (`counted` false) the ledger still hears of it, to count right should such quotas
   * come back, but one out of reach does not hold the holder's end up.
   */
  async release(tenant: string, holderId: string, counted: boolean): Promise<void> {
    const seq = this.nextSeq();
    const told = this.#reach(() => this.#ledger(tenant).releaseQuota(tenant, holderId, seq));
    await (counted ? told : told.catch(() => undefined));
  }
}
