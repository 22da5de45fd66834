import type { DurableEnv } from "./env";
import { logBackgroundFailure } from "./log-line";
import { quotaExceeded, quotasFor } from "./quotas";
import type { ByteLimit } from "./sqlite-session";
import { tenantUsage } from "./tenant-usage";

/*
 * A session object's side of the quotas: whether a new session may be created, and how many bytes
 * an existing one may hold after a write. Tenant-wide figures come from the tenant's directory
 * (tenant-usage.ts); the object asks only when a quota needs them.
 */
export class QuotaChecks {
  readonly #env: DurableEnv;
  /** How long the directory's figure for the other sessions is reused: one report interval. */
  readonly #reuseMs: number;
  /** The bytes of the tenant's other sessions, as the directory last told them. */
  #otherSessions: { bytes: number; at: number } | undefined;

  constructor(env: DurableEnv, reuseMs: number) {
    this.#env = env;
    this.#reuseMs = reuseMs;
  }

  /** Refuses a new session the tenant's quotas leave no room for (`bytes`: what it will hold). */
  async admit(tenant: string, bytes: number): Promise<void> {
    const quotas = quotasFor(this.#env.QUOTAS, tenant);
    if (quotas.maxSessionBytes !== undefined && bytes > quotas.maxSessionBytes) {
      throw quotaExceeded(
        "maxSessionBytes",
        quotas.maxSessionBytes,
        `the session would hold ${bytes} bytes; the quota is ${quotas.maxSessionBytes}`,
      );
    }
    if (quotas.maxSessions === undefined && quotas.maxTenantBytes === undefined) return;
    const usage = await tenantUsage(this.#env, tenant);
    if (quotas.maxSessions !== undefined && usage.sessions >= quotas.maxSessions) {
      throw quotaExceeded(
        "maxSessions",
        quotas.maxSessions,
        `the tenant holds ${usage.sessions} sessions; the quota is ${quotas.maxSessions}`,
      );
    }
    if (quotas.maxTenantBytes !== undefined && usage.bytes + bytes > quotas.maxTenantBytes) {
      throw quotaExceeded(
        "maxTenantBytes",
        quotas.maxTenantBytes,
        `the write would take this tenant past its quota of ${quotas.maxTenantBytes} bytes`,
      );
    }
  }

  /**
   * The most bytes a session may hold after a write: its own quota, or what the tenant's quota
   * leaves it beside the tenant's other sessions (their last reports). Without byte quotas, no
   * limit and no call to the directory.
   */
  byteLimit(tenant: string, sessionId: string): ByteLimit | undefined | Promise<ByteLimit | undefined> {
    const quotas = quotasFor(this.#env.QUOTAS, tenant);
    const own: ByteLimit | undefined =
      quotas.maxSessionBytes === undefined
        ? undefined
        : { maxBytes: quotas.maxSessionBytes, quota: "maxSessionBytes", limit: quotas.maxSessionBytes };
    const tenantLimit = quotas.maxTenantBytes;
    if (tenantLimit === undefined) return own;
    return this.#otherSessionsBytes(tenant, sessionId).then((others) => {
      const room = tenantLimit - others;
      if (own && own.maxBytes <= room) return own;
      return { maxBytes: room, quota: "maxTenantBytes" as const, limit: tenantLimit };
    });
  }

  async #otherSessionsBytes(tenant: string, sessionId: string): Promise<number> {
    const known = this.#otherSessions;
    if (known && Date.now() - known.at < this.#reuseMs) return known.bytes;
    try {
      const { bytes } = await tenantUsage(this.#env, tenant, sessionId);
      this.#otherSessions = { bytes, at: Date.now() };
      return bytes;
    } catch (error) {
      // The directory cannot be asked: the write goes through on what was known (or nothing).
      await logBackgroundFailure("tenant_quota_check", tenant, sessionId, error);
      return known?.bytes ?? 0;
    }
  }
}
