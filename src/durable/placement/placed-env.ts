import { SessionError } from "../../core/errors";
import type { DurableEnv } from "../env";
import { type Jurisdiction, tenantJurisdiction } from "./jurisdictions";

/*
 * The one place where a tenant's objects are found. Every object of a tenant (its sessions, its
 * directory shards, and any kind of object added for it later) is reached through the namespace of
 * the tenant's jurisdiction, and its blobs through that jurisdiction's bucket: `placedEnv` answers
 * the environment whose `SESSIONS`, `DIRECTORY`, `STREAMS` and `BLOBS` are those. The Worker places a tenant by
 * its pin (`tenantEnv`); an object places itself by its own id's jurisdiction (`objectEnv`), so it
 * never reaches out of the place it was created in, whatever the setting says later.
 */

/** The bucket of a jurisdiction's blobs; none for a jurisdiction without one (blobs stay inline). */
function bucketOf(env: DurableEnv, jurisdiction: string): R2Bucket | undefined {
  if (jurisdiction === "eu") return env.BLOBS_EU;
  if (jurisdiction === "fedramp") return env.BLOBS_FEDRAMP;
  return undefined;
}

/** The part of a namespace restricted to a jurisdiction, or `misconfigured` where the runtime has none. */
function inJurisdiction<T extends Rpc.DurableObjectBranded | undefined>(
  namespace: DurableObjectNamespace<T>,
  jurisdiction: string,
): DurableObjectNamespace<T> {
  try {
    return namespace.jurisdiction(jurisdiction as DurableObjectJurisdiction);
  } catch {
    // Local workerd (`npm start`, the tests) has no jurisdictions: never fall back to the default.
    // What the runtime said stays here: an answer names the jurisdiction only.
    throw new SessionError(
      "misconfigured",
      `this runtime cannot keep objects in the ${jurisdiction} jurisdiction`,
      {
        jurisdiction,
      },
    );
  }
}

/** The environment whose object namespaces and blob bucket are those of `jurisdiction` (none: the default). */
export function placedEnv<E extends DurableEnv>(env: E, jurisdiction: string | undefined): E {
  if (jurisdiction === undefined) return env;
  return {
    ...env,
    SESSIONS: inJurisdiction(env.SESSIONS, jurisdiction),
    DIRECTORY: inJurisdiction(env.DIRECTORY, jurisdiction),
    STREAMS: env.STREAMS && inJurisdiction(env.STREAMS, jurisdiction),
    BLOBS: bucketOf(env, jurisdiction),
  };
}

/** The environment of a tenant's objects, by the jurisdiction TENANT_JURISDICTIONS pins it to. */
export function tenantEnv<E extends DurableEnv>(env: E, tenant: string): E {
  return placedEnv(env, tenantJurisdiction(env.TENANT_JURISDICTIONS, tenant));
}

/** The environment of the objects an object reaches: those of its own jurisdiction. */
export function objectEnv<E extends DurableEnv>(env: E, ctx: DurableObjectState): E {
  return placedEnv(env, ctx.id.jurisdiction);
}

export type { Jurisdiction };
