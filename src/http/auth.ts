import type { MiddlewareHandler } from "hono";
import { SessionError } from "../core";
import type { AppEnv, WorkerEnv } from "./env";
import { decodeJwt, jwtConfig, verifyJwt } from "./jwt";

/*
 * Callers are tenants. `API_KEYS` (a secret) maps the SHA-256 (hex) of each key to its tenant:
 * `{"<sha256>": "acme"}` or, for a key that may only read, `{"<sha256>": {"tenant": "acme",
 * "access": "read"}}`. A bearer token shaped like a JWT is verified as one instead (jwt.ts: tenant
 * and read-only access from its claims). Without keys or JWT settings every /v1 request is refused
 * (fail closed), except that `DEV_TENANT`, set by `npm start`, serves requests made to a loopback
 * address as that tenant.
 */

export interface Caller {
  tenant: string;
  access: "write" | "read";
}

type KeyTable = Map<string, Caller>;

let parsed: { source: string; table: KeyTable } | undefined;

function keyTable(source: string | undefined): KeyTable {
  if (!source) return new Map();
  if (parsed?.source === source) return parsed.table;
  const table: KeyTable = new Map();
  try {
    const raw = JSON.parse(source) as Record<string, unknown>;
    for (const [hash, value] of Object.entries(raw)) {
      if (typeof value === "string" && value)
        table.set(hash.toLowerCase(), { tenant: value, access: "write" });
      else if (value && typeof value === "object" && typeof (value as Caller).tenant === "string") {
        const access = (value as Caller).access === "read" ? "read" : "write";
        table.set(hash.toLowerCase(), { tenant: (value as Caller).tenant, access });
      }
    }
  } catch {
    console.error("auth: API_KEYS is not valid JSON; every request will be refused");
  }
  parsed = { source, table };
  return table;
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function apiKeyCaller(env: WorkerEnv, key: string): Promise<Caller> {
  // Lookup by digest: no comparison of the secret itself, so nothing to time.
  const caller = keyTable(env.API_KEYS).get(await sha256Hex(key));
  if (!caller) throw new SessionError("unauthorized", "unknown key");
  return caller;
}

/** The caller a bearer credential names: a JWT when it has the shape of one, else an API key. */
async function bearerCaller(env: WorkerEnv, token: string): Promise<Caller> {
  const jwt = decodeJwt(token);
  return jwt ? verifyJwt(jwt, jwtConfig(env)) : apiKeyCaller(env, token);
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
let warnedDev = false;

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const header = c.req.header("Authorization");
  let caller: Caller | undefined;
  if (header) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new SessionError("unauthorized", "use Authorization: Bearer <key>");
    caller = await bearerCaller(c.env, match[1] as string);
  } else if (c.env.DEV_TENANT && LOOPBACK.has(new URL(c.req.url).hostname)) {
    if (!warnedDev) {
      warnedDev = true;
      console.warn(
        `auth: no key given; serving local requests as dev tenant "${c.env.DEV_TENANT}" (DEV_TENANT)`,
      );
    }
    caller = { tenant: c.env.DEV_TENANT, access: "write" };
  } else {
    throw new SessionError("unauthorized", "missing Authorization: Bearer <key>");
  }
  if (caller.access === "read" && WRITE_METHODS.has(c.req.method)) {
    throw new SessionError("forbidden", "this credential may only read");
  }
  c.set("caller", caller);
  return next();
};
