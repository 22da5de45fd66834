import { SessionError } from "../../core/errors";
import type { DurableEnv } from "../env";
import { tenantUsage } from "../router/tenant-usage";
import { tenantKey } from "../tenant-key";
import { unavailable } from "../transient";
import { pinsAny, tenantJurisdiction } from "./jurisdictions";
import { placedEnv } from "./placed-env";
import type { PlaceName } from "./tenant-placement";

/*
 * Before a tenant's request reaches its objects: is the tenant where its pin says? The registry
 * (tenant-placement.ts) records where a tenant was first served. A tenant it has not seen yet is
 * recorded where its pin says, unless it already has sessions in the default location (served
 * before the registry was bound): then there, and the pin is refused. A tenant pinned elsewhere since
 * is refused (`wrong_jurisdiction`) while it still has sessions where it was: moving a tenant is
 * an export and an import (docs/operations.md, "Moving a tenant to a jurisdiction"). A tenant with
 * nothing left there moves with its pin. An isolate trusts what it found for a tenant and pin for
 * a minute, then asks again: an isolate of an older deployment, still serving during a rollout,
 * stops serving a place the registry has since moved away from within that minute.
 */

/** Tenants (with their pin) this isolate found in place, with when that stops being trusted. */
const checked = new Map<string, number>();
const CHECKED_MAX = 10_000;
const CHECKED_FOR_MS = 60_000;

const placeLabel = (place: PlaceName) =>
  place === "" ? "the default location" : `the ${place} jurisdiction`;

/** Where a tenant seen for the first time is recorded: where its sessions are, if it has any. */
async function firstPlace(env: DurableEnv, tenant: string, wanted: PlaceName): Promise<PlaceName> {
  if (wanted === "") return "";
  return (await tenantUsage(env, tenant)).sessions > 0 ? "" : wanted;
}

/**
 * Refuses a request of a tenant whose sessions are in another place than its pin names
 * (`wrong_jurisdiction`), and any request of a pinned tenant without the `PLACEMENTS` binding or
 * in a runtime that cannot reach its jurisdiction (`misconfigured`).
 */
export async function checkPlacement(env: DurableEnv, tenant: string): Promise<void> {
  const pinned = tenantJurisdiction(env.TENANT_JURISDICTIONS, tenant);
  const registry = env.PLACEMENTS;
  if (!registry) {
    // Without the registry a changed pin could not be noticed: pins need it.
    if (pinsAny(env.TENANT_JURISDICTIONS)) {
      throw new SessionError(
        "misconfigured",
        "TENANT_JURISDICTIONS needs the PLACEMENTS binding (docs/configuration.md)",
      );
    }
    return;
  }
  const wanted: PlaceName = pinned ?? "";
  const key = `${wanted}\n${tenant}`;
  if ((checked.get(key) ?? 0) > Date.now()) return;
  // A place this runtime cannot reach is refused before anything is recorded (`misconfigured`).
  placedEnv(env, pinned);
  const record = registry.getByName(await tenantKey(tenant));
  const placed = (await record.placed()) ?? (await record.place(await firstPlace(env, tenant, wanted)));
  if (placed !== wanted) {
    const left = await tenantUsage(placedEnv(env, placed === "" ? undefined : placed), tenant);
    if (left.sessions > 0) {
      throw new SessionError(
        "wrong_jurisdiction",
        `this tenant's sessions are in ${placeLabel(placed)}, but it is now pinned to ${placeLabel(wanted)}: moving a tenant is an export and an import (docs/operations.md)`,
        { stored: placed || null, pinned: wanted || null, sessions: left.sessions },
      );
    }
    // Another isolate may have moved it meanwhile: then it must be where this one wants it.
    if (!(await record.move(placed, wanted)) && (await record.place(wanted)) !== wanted) {
      // Refused before anything ran: a client may send it again, whatever it was.
      throw unavailable("this tenant is being moved; try again", "not_applied");
    }
  }
  if (checked.size >= CHECKED_MAX) checked.clear();
  checked.set(key, Date.now() + CHECKED_FOR_MS);
}
