import type { DurableEnv } from "./env";
import type { TenantUsage } from "./session-directory";

/*
 * A tenant's usage as its directory sums it: the one place that knows where the figures live, so
 * quotas and `GET /v1/usage` do not depend on the directory's shape.
 */

export type { TenantUsage } from "./session-directory";

/** Sessions, entries and bytes of a tenant; with `except`, without that session. */
export function tenantUsage(env: DurableEnv, tenant: string, except?: string): Promise<TenantUsage> {
  return env.DIRECTORY.getByName(tenant).usage(except);
}
