import type { MiddlewareHandler } from "hono";
import { SessionError } from "../core";
import type { AppEnv } from "./env";

/*
 * Per-tenant request rate, counted by Cloudflare's rate-limiting binding (`RATE_LIMITER` in
 * wrangler.toml: a fixed window per location, no network hop). A tenant over its budget gets
 * 429 with Retry-After: the seconds left in the current window.
 */

const DEFAULT_PERIOD_SECONDS = 10;

export function secondsLeftInWindow(periodSeconds: number, now = Date.now()): number {
  const elapsed = Math.floor(now / 1000) % periodSeconds;
  return Math.max(1, periodSeconds - elapsed);
}

export const rateLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const limiter = c.env.RATE_LIMITER;
  if (!limiter) return next();
  const { success } = await limiter.limit({ key: c.get("caller").tenant });
  if (!success) {
    const period = Number(c.env.RATE_LIMIT_PERIOD_SECONDS) || DEFAULT_PERIOD_SECONDS;
    const retryAfter = secondsLeftInWindow(period);
    throw new SessionError("rate_limited", `too many requests for this tenant; retry in ${retryAfter} s`, {
      retryAfterSeconds: retryAfter,
    });
  }
  return next();
};
