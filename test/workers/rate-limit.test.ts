import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { secondsLeftInWindow } from "../../src/http/rate-limit";
import worker from "../../src/worker";
import { KEY_A, KEY_B } from "./helpers";

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

describe("rate limit", () => {
  it("answers 429 with Retry-After once a tenant passes its budget, and only that tenant", async () => {
    const tight = { ...env, RATE_LIMITER: env.TIGHT_RATE_LIMITER };
    const get = (key: string) =>
      worker.fetch(
        new Request("http://sessions.test/v1/sessions", { headers: { Authorization: `Bearer ${key}` } }),
        tight,
        ctx(),
      );
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await get(KEY_A)).status);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(5);
    const limited = await get(KEY_A);
    expect(limited.status).toBe(429);
    const body = (await limited.json()) as {
      error: { code: string; details: { retryAfterSeconds: number } };
    };
    expect(body.error.code).toBe("rate_limited");
    const retryAfter = Number(limited.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(10);
    expect(body.error.details.retryAfterSeconds).toBe(retryAfter);
    expect((await get(KEY_B)).status).toBe(200);
  });

  it("counts Retry-After to the end of the window", () => {
    const windowStart = 1_800_000_000_000; // a multiple of both 10 s and 60 s
    expect(secondsLeftInWindow(10, windowStart)).toBe(10);
    expect(secondsLeftInWindow(10, windowStart + 3_500)).toBe(7);
    expect(secondsLeftInWindow(60, windowStart + 59_999)).toBe(1);
  });
});
