import type { MiddlewareHandler } from "hono";
import { SessionError } from "../core/errors";
import { DurableRepo } from "../durable/internal";
import type { AppEnv } from "./env";
import { limitAuthFailures } from "./rate-limit";

/*
 * Browsers cannot set headers on a WebSocket, and a long-lived key in a URL ends up in logs and
 * histories. So a caller asks, with its credential, for a ticket (`POST …/tickets`): the session's
 * object keeps it for a minute and honours it once. The ticket names its tenant (to find the
 * object) before its secret part (which only that object holds), and opens only that session's
 * events, read-only.
 */

export function ticketFor(tenant: string, secret: string): string {
  const bytes = new TextEncoder().encode(tenant);
  const encoded = btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
  return `${encoded}.${secret}`;
}

function readTicket(ticket: string): { tenant: string; secret: string } | undefined {
  const match = /^([A-Za-z0-9_-]{1,4096})\.([0-9a-f]{48})$/.exec(ticket);
  if (!match) return undefined;
  try {
    const binary = atob((match[1] as string).replace(/-/g, "+").replace(/_/g, "/"));
    const tenant = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(
      Uint8Array.from(binary, (char) => char.charCodeAt(0)),
    );
    return { tenant, secret: match[2] as string };
  } catch {
    return undefined;
  }
}

/**
 * On `…/ws?ticket=`: a good ticket makes the caller its tenant, read-only; a bad one is 401. It is
 * used up by the object as it accepts the socket, so an upgrade refused before (rate limited, a
 * bad `after`, too many sockets) leaves it good for the retry.
 */
export const socketTicket: MiddlewareHandler<AppEnv> = async (c, next) => {
  const ticket = c.req.query("ticket");
  if (ticket === undefined) return next();
  const read = readTicket(ticket);
  const sid = c.req.param("sid");
  // A malformed ticket never reaches an object.
  const good =
    read !== undefined &&
    sid !== undefined &&
    (await new DurableRepo(c.env, read.tenant).stub(sid).checkTicket(read.secret));
  if (!good || !read) {
    // Counted like any failed credential: guessing tickets costs as much as guessing keys.
    await limitAuthFailures(c);
    throw new SessionError("unauthorized", "the ticket is unknown, used or expired");
  }
  c.set("caller", { tenant: read.tenant, access: "read" });
  c.set("socketTicket", read.secret);
  return next();
};
