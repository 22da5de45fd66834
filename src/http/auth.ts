import type { Context, MiddlewareHandler } from "hono";
import { sha256Hex } from "../core/bytes";
import { SessionError } from "../core/errors";
import type { Caller } from "./access";
import { apiKeyTable, type KeyTable } from "./api-keys";
import { devCaller } from "./dev-tenant";
import type { AppEnv } from "./env";
import { jwtHeader, verifyJwt } from "./jwt";
import { type JwtConfig, jwtConfig } from "./jwt-config";
import { limitAuthFailures } from "./rate-limit";

/*
 * Callers are tenants. A bearer credential names one: an API key from `API_KEYS` (api-keys.ts), or
 * a JWT (jwt.ts) when the token has the shape of one. Without keys or JWT settings every /v1
 * request is refused (fail closed), except for the dev tenant of `npm start` (dev-tenant.ts).
 * Failed attempts are counted per client address (rate-limit.ts).
 */

export { sha256Hex };

async function apiKeyCaller(keys: KeyTable, key: string): Promise<Caller> {
  // Lookup by digest: no comparison of the secret itself, so nothing to time.
  const caller = keys.get(await sha256Hex(key));
  if (!caller) throw new SessionError("unauthorized", "unknown key");
  return caller;
}

/** The caller a bearer credential names: a JWT when it has the shape of one, else an API key. */
async function bearerCaller(keys: KeyTable, jwt: JwtConfig | undefined, token: string): Promise<Caller> {
  const header = jwtHeader(token);
  return header ? verifyJwt(token, header, jwt) : apiKeyCaller(keys, token);
}

async function callerOf(c: Context<AppEnv>, keys: KeyTable, jwt: JwtConfig | undefined): Promise<Caller> {
  const header = c.req.header("Authorization");
  if (header) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new SessionError("unauthorized", "use Authorization: Bearer <key>");
    return bearerCaller(keys, jwt, match[1] as string);
  }
  const dev = devCaller(c);
  if (dev) return dev;
  throw new SessionError("unauthorized", "missing Authorization: Bearer <key>");
}

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Requests that only read although they are POSTs: a ticket to watch a session; and MCP, whose
 * every message is a POST: a read-only caller is offered only the tools that read (mcp/server.ts).
 */
const READ_BY_POST = /^(?:\/v1\/sessions\/[^/]+\/tickets|\/mcp)$/;

export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  // Already known from a WebSocket ticket (socket-ticket.ts).
  if (c.get("caller")) return next();
  // Invalid API_KEYS or JWT settings refuse every request, whatever credential it carries.
  const keys = apiKeyTable(c.env.API_KEYS);
  const jwt = jwtConfig(c.env);
  let caller: Caller;
  try {
    caller = await callerOf(c, keys, jwt);
  } catch (error) {
    if (error instanceof SessionError && error.code === "unauthorized") await limitAuthFailures(c);
    throw error;
  }
  if (caller.access === "read" && WRITE_METHODS.has(c.req.method) && !READ_BY_POST.test(c.req.path)) {
    throw new SessionError("forbidden", "this credential may only read");
  }
  c.set("caller", caller);
  return next();
};
