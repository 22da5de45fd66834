import type { Context } from "hono";
import type { Caller } from "./access";
import { clientAddress, isLoopbackAddress, isLoopbackHostname } from "./client-address";
import type { AppEnv } from "./env";

/*
 * The dev tenant lets `npm start` answer without a key. A request without credentials is served as
 * DEV_TENANT only when all of these hold:
 * - DEV_TENANT is set. `npm start` sets it, and only when the server listens on a loopback address:
 *   the local server passes a CF-Connecting-IP sent by the client through unchanged, so once it
 *   listens where others can reach it, no part of a request proves where it came from.
 * - The connecting address (CF-Connecting-IP, set from the socket) is a loopback address. Missing,
 *   or more than one, is refused.
 * - The Host names a loopback address. A page whose own name resolves to 127.0.0.1 (DNS
 *   rebinding) reaches the server with its name in Host, and is refused.
 */

let warned = false;

export function devCaller(c: Context<AppEnv>): Caller | undefined {
  const tenant = c.env.DEV_TENANT;
  if (!tenant) return undefined;
  const address = clientAddress(c.req.raw.headers);
  if (address === undefined || !isLoopbackAddress(address)) return undefined;
  if (!isLoopbackHostname(new URL(c.req.url).hostname)) return undefined;
  if (!warned) {
    warned = true;
    console.warn(`auth: no key given; serving loopback requests as dev tenant "${tenant}" (DEV_TENANT)`);
  }
  return { tenant, access: "write" };
}
