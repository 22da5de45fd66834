import * as z from "zod";
import { SessionError } from "../core/errors";
import { jsonSetting } from "./settings";

/*
 * Per-tenant quotas, from the `QUOTAS` setting: JSON with defaults for every tenant and, under
 * `tenants`, overrides for some (each field of an override replaces the default's). A limit left
 * out, or null, is no limit; without `QUOTAS` nothing is limited, but for the open generations of a
 * session (DEFAULT_OPEN_GENERATIONS). A write that would pass a limit is refused with
 * `quota_exceeded` before anything is written.
 */

/** Open generations one session may hold at once when `QUOTAS` sets no `maxOpenGenerations`. */
export const DEFAULT_OPEN_GENERATIONS = 64;

/** The limits that apply to a tenant; an absent one is no limit. */
export interface Quotas {
  /** Sessions the tenant may hold; creating, forking or importing one more is refused. */
  maxSessions?: number;
  /** Streams (`/v1/stream/*`) the tenant may hold; creating or forking one more is refused. */
  maxStreams?: number;
  /** Bytes one session may hold (`SessionInfo.bytes`: its header's and entries' JSON, its generations' chunks). */
  maxSessionBytes?: number;
  /** Bytes all the tenant's sessions and streams may hold together. */
  maxTenantBytes?: number;
  /** Generations one session may hold open at once (DEFAULT_OPEN_GENERATIONS unless set); one more is refused. */
  maxOpenGenerations?: number;
}

const Limit = z.number().int().nonnegative().nullable().optional();
const Limits = z
  .object({
    maxSessions: Limit,
    maxStreams: Limit,
    maxSessionBytes: Limit,
    maxTenantBytes: Limit,
    maxOpenGenerations: Limit,
  })
  .strict();
type Limits = z.infer<typeof Limits>;
const QuotaSetting = Limits.extend({ tenants: z.record(z.string(), Limits).optional() }).strict();

const quotaSetting = jsonSetting("QUOTAS", QuotaSetting);

/** The quotas that apply to a tenant (`misconfigured` when the setting is invalid). */
export function quotasFor(setting: string | undefined, tenant: string): Quotas {
  if (setting === undefined || setting.trim() === "") return { maxOpenGenerations: DEFAULT_OPEN_GENERATIONS };
  const { tenants, ...defaults } = quotaSetting(setting);
  const own = tenants && Object.hasOwn(tenants, tenant) ? tenants[tenant] : undefined;
  const limits: Limits = { ...defaults, ...own };
  const quotas: Quotas = {};
  for (const key of [
    "maxSessions",
    "maxStreams",
    "maxSessionBytes",
    "maxTenantBytes",
    "maxOpenGenerations",
  ] as const) {
    const limit = limits[key];
    if (limit !== undefined && limit !== null) quotas[key] = limit;
  }
  quotas.maxOpenGenerations ??= DEFAULT_OPEN_GENERATIONS;
  return quotas;
}

/**
 * Whether the tenant's quotas count its holders of a kind together, so its quota ledger holds their
 * room: a count of them, or the tenant's bytes, is limited.
 */
export function tenantWide(quotas: Quotas, holders: "sessions" | "streams"): boolean {
  const count = holders === "sessions" ? quotas.maxSessions : quotas.maxStreams;
  return count !== undefined || quotas.maxTenantBytes !== undefined;
}

export function quotaExceeded(quota: keyof Quotas, limit: number, message: string): SessionError {
  return new SessionError("quota_exceeded", message, { quota, limit });
}
