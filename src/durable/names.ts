import type { SessionDirectory } from "./directory/session-directory";
import type { DurableEnv } from "./env";
import { checkedNumberSetting } from "./settings";

/*
 * Which object holds what. A session's object is named by its tenant and id. A tenant's directory
 * is in shards: each session reports to one shard for its whole life, chosen when it is created by
 * a stable hash of its id over the shard count configured then (DIRECTORY_SHARDS). The count may
 * grow: sessions created before keep reporting to the shard they were given (it is stored with
 * them), new sessions spread over all shards, and listing reads every shard up to the current
 * count, which includes every shard ever used. So no row is lost or listed twice. The count must
 * never shrink: the shards above it would no longer be read.
 */

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

export const DEFAULT_SHARDS = 1;
export const MAX_SHARDS = 64;

/**
 * The configured shard count (DIRECTORY_SHARDS, 1 to 64; more is read as 64, the most ever used).
 * Set to anything else it is `misconfigured`: read as one shard, it would hide every other shard.
 */
export function shardCount(env: Pick<DurableEnv, "DIRECTORY_SHARDS">): number {
  return checkedNumberSetting("DIRECTORY_SHARDS", env.DIRECTORY_SHARDS, DEFAULT_SHARDS, {
    min: 1,
    max: MAX_SHARDS,
  });
}

/** FNV-1a over the id's UTF-8 bytes: the same shard for the same id, in every runtime and release. */
export function shardOf(sessionId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(sessionId)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

export function directoryShard(
  env: Pick<DurableEnv, "DIRECTORY">,
  tenant: string,
  shard: number,
): DurableObjectStub<SessionDirectory> {
  return env.DIRECTORY.getByName(directoryObjectName(tenant, shard));
}

/** Every shard of a tenant's directory, in order. */
export function directoryShards(env: DurableEnv, tenant: string): DurableObjectStub<SessionDirectory>[] {
  return Array.from({ length: shardCount(env) }, (_, shard) => directoryShard(env, tenant, shard));
}
