/** The object of one session: a tenant's session id, so two tenants never share one. */
export function sessionObjectName(tenant: string, sessionId: string): string {
  return JSON.stringify([tenant, sessionId]);
}

/**
 * The object of one shard of a tenant's directory. Shard 0 keeps the name a tenant's only
 * directory had before the directory was sharded (the tenant itself), so its rows stay listed;
 * other shards, and shard 0 of a tenant whose name starts like a JSON array, are named
 * `[tenant, shard]`. Names of the first kind never start with `[`, so no tenant's shard can be
 * named like another tenant's.
 */
export function directoryObjectName(tenant: string, shard: number): string {
  return shard === 0 && !tenant.startsWith("[") ? tenant : JSON.stringify([tenant, shard]);
}
