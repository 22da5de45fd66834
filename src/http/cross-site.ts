import type { MiddlewareHandler } from "hono";
import { SessionError } from "../core/errors";
import { originAllowed } from "./cors";
import type { AppEnv } from "./env";

/*
 * Cross-site request forgery. A page on another site can make a browser send a request without
 * asking first (a form post, or fetch with mode "no-cors"), and locally the dev tenant needs no
 * credential at all. So every state-changing request that a browser marks as coming from
 * elsewhere is refused (403), unless its origin is listed in CORS_ALLOWED_ORIGINS: one with
 * `Sec-Fetch-Site: cross-site` or `same-site`, or with an `Origin` that is not the service's own
 * (`null` included). Reads are left to the browser, which keeps the answer from a page on another
 * origin unless CORS lets it through. Clients other than browsers send neither header.
 */

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** A WebSocket handshake is a GET that browsers send from any page: it is treated as a write. */
function isSocket(upgrade: string | undefined): boolean {
  return upgrade?.toLowerCase() === "websocket";
}

export const refuseCrossSite: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!STATE_CHANGING.has(c.req.method) && !isSocket(c.req.header("Upgrade"))) return next();
  const origin = c.req.header("Origin");
  const site = c.req.header("Sec-Fetch-Site")?.toLowerCase();
  const fromElsewhere =
    site === "cross-site" ||
    site === "same-site" ||
    (origin !== undefined && origin !== new URL(c.req.url).origin);
  if (fromElsewhere && !originAllowed(origin, c.env.CORS_ALLOWED_ORIGINS)) {
    throw new SessionError("forbidden", "a state-changing request from another site is refused", {
      origin: origin ?? null,
      secFetchSite: site ?? null,
    });
  }
  return next();
};
