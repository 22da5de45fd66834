import type { MiddlewareHandler } from "hono";
import { errors, jwtVerify, SignJWT } from "jose";
import { SessionError } from "../core/errors";
import { DurableRepo } from "../durable/internal";
import type { AppEnv, WorkerEnv } from "./env";
import { limitAuthFailures } from "./rate-limit";

/*
 * Browsers cannot set headers on a WebSocket, and a long-lived key in a URL ends up in logs and
 * histories. So a caller asks, with its credential, for a ticket (`POST …/tickets`): the session's
 * object keeps a one-time id for a minute and honours it once, and the Worker seals that id with
 * the tenant and the session in an HS256 JWT (`jose`) keyed with SOCKET_TICKET_SECRET, expiring
 * with it. On the upgrade the Worker checks the seal, the expiry and that the ticket names the
 * session of the URL before any object hears of it, so a forged, tampered, expired or other
 * session's ticket wakes no object. A ticket opens only its session's events, read-only.
 *
 * Without SOCKET_TICKET_SECRET, local development (DEV_TENANT set, as `npm start` does) seals
 * tickets with a key each isolate makes up when it first needs one; anywhere else tickets are
 * refused with `misconfigured`.
 */

const MIN_SECRET_BYTES = 32;

let isolateKey: Uint8Array | undefined;

function misconfigured(message: string): SessionError {
  return new SessionError("misconfigured", message);
}

/** The key that seals tickets; `misconfigured` when the service has none. */
export function ticketKey(env: WorkerEnv): Uint8Array {
  const secret = env.SOCKET_TICKET_SECRET;
  if (!secret) {
    if (!env.DEV_TENANT) {
      throw misconfigured("this service issues no WebSocket tickets (SOCKET_TICKET_SECRET is not set)");
    }
    isolateKey ??= crypto.getRandomValues(new Uint8Array(32));
    return isolateKey;
  }
  const bytes = new TextEncoder().encode(secret);
  if (bytes.byteLength < MIN_SECRET_BYTES) {
    throw misconfigured(`SOCKET_TICKET_SECRET must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  // A ticket sealed with the key of bearer JWTs would be one.
  if (secret === env.JWT_SECRET) throw misconfigured("SOCKET_TICKET_SECRET must not be JWT_SECRET");
  return bytes;
}

/** What a ticket names: its tenant and session, and the one-time id the session's object holds. */
export interface TicketClaims {
  tenant: string;
  sid: string;
  id: string;
}

/** The sealed ticket of a one-time id, good until `expiresAt` (to the second, not after the id's). */
export async function sealTicket(
  key: Uint8Array,
  claims: TicketClaims,
  expiresAt: string,
): Promise<{ ticket: string; expiresAt: string }> {
  const exp = Math.floor(Date.parse(expiresAt) / 1000);
  const ticket = await new SignJWT({ tenant: claims.tenant, sid: claims.sid })
    .setProtectedHeader({ alg: "HS256" })
    .setJti(claims.id)
    .setExpirationTime(exp)
    .sign(key);
  return { ticket, expiresAt: new Date(exp * 1000).toISOString() };
}

/** What a ticket names, if its seal holds, it has not expired and it names session `sid`. */
async function openTicket(key: Uint8Array, ticket: string, sid: string): Promise<TicketClaims | undefined> {
  let payload: Record<string, unknown>;
  try {
    payload = (await jwtVerify(ticket, key, { algorithms: ["HS256"], requiredClaims: ["exp", "jti"] }))
      .payload;
  } catch (error) {
    if (error instanceof errors.JOSEError) return undefined;
    throw error;
  }
  const { tenant, sid: named, jti } = payload;
  if (typeof tenant !== "string" || named !== sid || typeof jti !== "string") return undefined;
  return { tenant, sid, id: jti };
}

/**
 * On `…/ws?ticket=`: a good ticket makes the caller its tenant, read-only; a bad one is 401. Its
 * one-time id is used up by the object as it accepts the socket, so an upgrade refused before
 * (rate limited, a bad `after`, too many sockets) leaves it good for the retry.
 */
export const socketTicket: MiddlewareHandler<AppEnv> = async (c, next) => {
  const ticket = c.req.query("ticket");
  if (ticket === undefined) return next();
  const sid = c.req.param("sid") ?? "";
  const claims = await openTicket(ticketKey(c.env), ticket, sid);
  // Only a sealed ticket of this session reaches its object, to be looked up.
  const good =
    claims !== undefined && (await new DurableRepo(c.env, claims.tenant).stub(sid).checkTicket(claims.id));
  if (!good || !claims) {
    // Counted like any failed credential: guessing tickets costs as much as guessing keys.
    await limitAuthFailures(c);
    throw new SessionError("unauthorized", "the ticket is unknown, used or expired");
  }
  c.set("caller", { tenant: claims.tenant, access: "read" });
  c.set("socketTicket", claims.id);
  return next();
};
