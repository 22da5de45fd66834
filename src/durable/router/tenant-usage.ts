import type { DurableEnv } from "../env";
import { directoryShards } from "../names";
import type { TenantUsage } from "../types";

/*
 * A tenant's usage as its directory sums it: the one place that knows where the figures live, so
 * quotas and `GET /v1/usage` do not depend on the directory's shape. Each shard keeps the totals
 * of the sessions that report to it; the tenant's are their sum.
 */

export type { TenantUsage } from "../types";

/** Sessions, entries and bytes of a tenant; with `except`, without that session. */
export async function tenantUsage(env: DurableEnv, tenant: string, except?: string): Promise<TenantUsage> {
  const shards = await Promise.all(directoryShards(env, tenant).map((shard) => shard.usage(except)));
  return shards.reduce(
    (sum, shard) => ({
      sessions: sum.sessions + shard.sessions,
      entries: sum.entries + shard.entries,
      bytes: sum.bytes + shard.bytes,
    }),
    { sessions: 0, entries: 0, bytes: 0 },
  );
}
