import type { Context, MiddlewareHandler } from "hono";
import { SessionError } from "../core/errors";
import { numberSetting, unavailable } from "../durable/internal";
import { addressRange, clientAddress } from "./client-address";
import type { AppEnv } from "./env";

/*
 * Request rates, counted by Cloudflare's rate-limiting bindings (wrangler.toml: a fixed window per
 * location, no network hop). `RATE_LIMITER` counts each tenant's requests; `AUTH_FAILURE_LIMITER`
 * counts the requests from one client address that fail authentication, so that a flood of bad
 * credentials is cut off before it costs much. Over budget: 429 with Retry-After, the seconds left
 * in the current window. Without a binding, nothing is counted. A limiter that cannot be asked
 * (its binding failed for the moment) refuses the request before anything ran: 503 `unavailable`,
 * `not_applied`, for the client to send again.
 */

const DEFAULT_PERIOD_SECONDS = 10;

export function secondsLeftInWindow(periodSeconds: number, now = Date.now()): number {
  const elapsed = Math.floor(now / 1000) % periodSeconds;
  return Math.max(1, periodSeconds - elapsed);
}

function rateLimited(what: string, periodSetting: string | undefined): SessionError {
  const period = numberSetting(periodSetting, DEFAULT_PERIOD_SECONDS, { min: 1 });
  const retryAfter = secondsLeftInWindow(period);
  const message = `too many ${what}; retry in ${retryAfter} s`;
  return new SessionError("rate_limited", message, { retryAfterSeconds: retryAfter });
}

/** Counts one request against `key`: whether it is within the budget. */
async function withinBudget(limiter: RateLimit, key: string): Promise<boolean> {
  try {
    return (await limiter.limit({ key })).success;
  } catch {
    throw unavailable("the request budget cannot be checked right now; try again", "not_applied");
  }
}

export const rateLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  await countRequests(c, 1);
  return next();
};

/**
 * Counts `count` requests against the caller's tenant (a request that carries several, as an MCP
 * batch does, counts as that many); throws `rate_limited` once it is over its budget.
 */
export async function countRequests(c: Context<AppEnv>, count: number): Promise<void> {
  const limiter = c.env.RATE_LIMITER;
  if (!limiter) return;
  for (let counted = 0; counted < count; counted++) {
    if (!(await withinBudget(limiter, c.get("caller").tenant)))
      throw rateLimited("requests for this tenant", c.env.RATE_LIMIT_PERIOD_SECONDS);
  }
}

/**
 * Counts one failed authentication against the client's address (an IPv6 address by its /64);
 * throws `rate_limited` once the address is over its budget. Requests whose address is unknown
 * share one budget.
 */
export async function limitAuthFailures(c: Context<AppEnv>): Promise<void> {
  const limiter = c.env.AUTH_FAILURE_LIMITER;
  if (!limiter) return;
  const address = clientAddress(c.req.raw.headers);
  if (!(await withinBudget(limiter, address === undefined ? "unknown" : addressRange(address)))) {
    throw rateLimited("failed authentications from this address", c.env.AUTH_FAILURE_LIMIT_PERIOD_SECONDS);
  }
}
