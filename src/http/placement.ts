import type { Context, MiddlewareHandler } from "hono";
import { SessionError } from "../core/errors";
import type { LocationHint } from "../core/location";
import { checkPlacement, tenantJurisdiction } from "../durable/internal";
import type { AppEnv } from "./env";

/*
 * Where a tenant's requests go and where its new sessions are created: every /v1 request of a
 * tenant is checked against where its sessions are (placement-check.ts), and a session being
 * created gets a location hint, asked for or taken from where the request came from.
 */

/** Refuses a tenant whose pin moved away from where its sessions are (see `checkPlacement`). */
export const placement: MiddlewareHandler<AppEnv> = async (c, next) => {
  await checkPlacement(c.env, c.get("caller").tenant);
  return next();
};

/** Countries Cloudflare reports in Asia whose nearest location is the Middle East's. */
const MIDDLE_EAST = new Set("AE BH IL IQ IR JO KW LB OM PS QA SA SY YE".split(" "));

/**
 * The location nearest to where a request came from, by the continent (and for the Americas and
 * Europe, the longitude; for Asia, the country) the runtime reports; none when it reports none.
 */
export function nearestLocation(cf: IncomingRequestCfProperties | undefined): LocationHint | undefined {
  if (!cf) return undefined;
  const longitude = Number(cf.longitude);
  const known = cf.longitude !== undefined && Number.isFinite(longitude);
  switch (cf.continent) {
    case "NA":
      return known && longitude < -100 ? "wnam" : "enam";
    case "SA":
      return "sam";
    case "EU":
      return known && longitude >= 20 ? "eeur" : "weur";
    case "AF":
      return "afr";
    case "AS":
      return typeof cf.country === "string" && MIDDLE_EAST.has(cf.country) ? "me" : "apac";
    case "OC":
      return "oc";
    default:
      return undefined;
  }
}

/**
 * The location hint of a session this request creates: the one asked for, else the one nearest
 * the request. A tenant pinned to a jurisdiction is placed by it alone: asking for a location
 * there is refused, and none is taken from the request.
 */
export function creationLocation(
  c: Context<AppEnv>,
  asked: LocationHint | undefined,
): LocationHint | undefined {
  const jurisdiction = tenantJurisdiction(c.env.TENANT_JURISDICTIONS, c.get("caller").tenant);
  if (jurisdiction !== undefined) {
    if (asked !== undefined) {
      throw new SessionError(
        "invalid_request",
        `this tenant is pinned to the ${jurisdiction} jurisdiction, which decides where its sessions live`,
        { location: asked, jurisdiction },
      );
    }
    return undefined;
  }
  return asked ?? nearestLocation(c.req.raw.cf as IncomingRequestCfProperties | undefined);
}
