import * as z from "zod";
import { jsonSetting } from "../settings";

/*
 * Which tenants are pinned to a jurisdiction: `TENANT_JURISDICTIONS`, JSON mapping a tenant's
 * name to `eu` or `fedramp`. A tenant left out is not pinned: its objects run wherever the platform
 * places them. A setting that cannot be read makes every request refuse (`misconfigured`): serving
 * a pinned tenant from the wrong place is worse than not serving it.
 */

/** A Durable Object jurisdiction a tenant may be pinned to (its objects run and store data only there). */
export const Jurisdiction = z.enum(["eu", "fedramp"]);
export type Jurisdiction = z.infer<typeof Jurisdiction>;

const pins = jsonSetting(
  "TENANT_JURISDICTIONS",
  z.record(z.string().min(1), Jurisdiction),
  ': {"<tenant>": "eu" | "fedramp"}',
);

/** Whether the setting pins any tenant at all. */
export function pinsAny(setting: string | undefined): boolean {
  return setting !== undefined && setting.trim() !== "" && Object.keys(pins(setting)).length > 0;
}

/** The jurisdiction `tenant` is pinned to, or undefined (`misconfigured` when the setting is invalid). */
export function tenantJurisdiction(setting: string | undefined, tenant: string): Jurisdiction | undefined {
  if (setting === undefined || setting.trim() === "") return undefined;
  const all = pins(setting);
  return Object.hasOwn(all, tenant) ? all[tenant] : undefined;
}
