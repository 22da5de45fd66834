import type { Result } from "../../core/errors";
import { capture, SessionError } from "../../core/errors";
import type { DurableEnv } from "../env";
import { directoryShard } from "../names";
import { objectCalls } from "../object-calls";
import type { Quotas } from "../quotas";
import { DEFAULT_OPEN_GENERATIONS, quotaExceeded, quotasFor } from "../quotas";
import { unavailable } from "../transient";
import type { ClaimRequest } from "../types";
import type { SessionStore } from "./session-store";
import type { ByteLimit } from "./session-writes";
import { ClaimExceeded } from "./session-writes";

/*
 * A session object's side of the quotas. `maxSessionBytes` is the session's own affair. The
 * tenant-wide quotas (`maxSessions`, `maxTenantBytes`) are kept by the tenant's ledger
 * (tenant-ledger.ts): a new or restored session is admitted by it, and a session writes within the
 * room it was granted (its claim), asking for more only when a write needs it and handing back what
 * it did not use once idle. Without quotas nothing is asked of anyone.
 */

/** Attempts a write makes to get the room it needs (others may take room between them). */
const CLAIM_ATTEMPTS = 3;

function tenantWide(quotas: Quotas): boolean {
  return quotas.maxSessions !== undefined || quotas.maxTenantBytes !== undefined;
}

export class QuotaChecks {
  readonly #env: DurableEnv;
  /** The bytes this session may hold without asking the ledger again; unknown until it asks. */
  #claim: number | undefined;
  /** The sequence of this session's ledger requests: it only grows, across restarts too. */
  #seq = 0;

  constructor(env: DurableEnv) {
    this.#env = env;
  }

  #nextSeq(): number {
    this.#seq = Math.max(this.#seq + 1, Date.now() * 1000);
    return this.#seq;
  }

  #ledger(tenant: string) {
    return directoryShard(this.#env, tenant, 0);
  }

  /** A ledger that cannot be reached refuses the write for now; nothing is written. */
  async #reach<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof SessionError) throw error;
      throw unavailable("the tenant's quota ledger cannot be reached; try again", "not_applied");
    }
  }

  async #ask(tenant: string, request: Omit<ClaimRequest, "seq">): Promise<number> {
    this.#claim = await this.#reach(() =>
      objectCalls(this.#ledger(tenant)).claimQuota(tenant, { ...request, seq: this.#nextSeq() }),
    );
    return this.#claim;
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
    if (tenantWide(quotas)) await this.#ask(tenant, { sessionId, holds: 0, wants: bytes, newSession: true });
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

  /** The session is idle holding `holds` bytes: what it was granted beyond them goes back. */
  async settle(tenant: string, sessionId: string, holds: number): Promise<void> {
    if (quotasFor(this.#env.QUOTAS, tenant).maxTenantBytes === undefined) return;
    this.#claim = undefined;
    await this.#ledger(tenant).settleQuota(sessionId, holds, this.#nextSeq());
  }

  /** The session was deleted: it counts against no quota until it is restored. */
  async release(tenant: string, sessionId: string): Promise<void> {
    this.#claim = undefined;
    if (!tenantWide(quotasFor(this.#env.QUOTAS, tenant))) return;
    await this.#reach(() => this.#ledger(tenant).releaseQuota(sessionId));
  }
}
