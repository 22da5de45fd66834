import { listDurableObjectIds } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import { addressRange } from "../../src/http/client-address";
import { secondsLeftInWindow } from "../../src/http/rate-limit";
import worker from "../../src/worker";
import { KEY_A, KEY_B } from "./helpers";

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

/**
 * The limiters' windows are aligned to the wall clock (10 s for the tight one): a burst that
 * straddles a boundary is counted in two windows. Waits, when needed, for a window with most of
 * its time ahead, so that a test's burst falls in one.
 */
async function freshWindow(periodMs = 10_000, needMs = 6_000): Promise<void> {
  const left = periodMs - (Date.now() % periodMs);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

describe("rate limit", () => {
  it("answers 429 with Retry-After once a tenant passes its budget, and only that tenant", async () => {
    const tight = { ...env, RATE_LIMITER: env.TIGHT_RATE_LIMITER };
    const get = (key: string) =>
      worker.fetch(
        new Request("http://sessions.test/v1/sessions", { headers: { Authorization: `Bearer ${key}` } }),
        tight,
        ctx(),
      );
    await freshWindow();
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

  it("answers 429 to an address whose requests keep failing authentication, and to no one else", async () => {
    const tight = { ...env, AUTH_FAILURE_LIMITER: env.TIGHT_RATE_LIMITER };
    const get = (key: string | null, address?: string) => {
      const headers: Record<string, string> = {};
      if (key !== null) headers.Authorization = `Bearer ${key}`;
      if (address) headers["CF-Connecting-IP"] = address;
      return worker.fetch(new Request("http://sessions.test/v1/sessions", { headers }), tight, ctx());
    };
    const attacker = `203.0.113.${Math.floor(Math.random() * 250) + 1}`;
    await freshWindow();
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await get(i % 2 ? "wrong-key" : null, attacker)).status);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    const limited = await get("wrong-key", attacker);
    expect(limited.status).toBe(429);
    const body = (await limited.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("rate_limited");
    expect(body.error.message).toMatch(/failed authentications from this address/);
    const retryAfter = Number(limited.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(10);
    // Another address still gets its 401; a valid key from the same address is not held back.
    expect((await get("wrong-key", "198.51.100.7")).status).toBe(401);
    expect((await get(KEY_A, attacker)).status).toBe(200);
  });

  it("counts an IPv6 client's failed authentications by its /64, and an IPv4 address written as IPv6 as that address", async () => {
    const tight = { ...env, AUTH_FAILURE_LIMITER: env.TIGHT_RATE_LIMITER };
    const get = (address: string) =>
      worker.fetch(
        new Request("http://sessions.test/v1/sessions", {
          headers: { Authorization: "Bearer wrong-key", "CF-Connecting-IP": address },
        }),
        tight,
        ctx(),
      );
    const group = () => Math.floor(Math.random() * 0xffff).toString(16);
    const prefix = `2001:db8:${group()}:${group()}`;
    const v4 = `192.0.2.${Math.floor(Math.random() * 250) + 1}`;
    await freshWindow();
    // A new address in the same /64 for every guess, written every way IPv6 allows.
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const address =
        i % 2 ? `${prefix}:${group()}:${group()}:${group()}:${group()}` : `${prefix}::${group()}`;
      statuses.push((await get(i % 4 === 3 ? address.toUpperCase() : address)).status);
    }
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(statuses).toContain(429);
    // The next /64 is another client.
    expect((await get(`2001:db8:${group()}:${group()}::1`)).status).toBe(401);
    for (let i = 0; i < 6; i++) await get(i % 2 ? v4 : `::ffff:${v4}`);
    expect((await get(`::ffff:${v4}`)).status).toBe(429);
  });

  it("names the range of addresses a client is counted by", () => {
    expect(addressRange("203.0.113.7")).toBe("203.0.113.7");
    expect(addressRange("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(addressRange("::FFFF:cb00:7107")).toBe("203.0.113.7");
    expect(addressRange("0:0:0:0:0:ffff:203.0.113.7")).toBe("203.0.113.7");
    for (const address of [
      "2001:db8:1:2::",
      "2001:db8:1:2::1",
      "2001:0DB8:0001:0002:ffff:ffff:ffff:ffff",
      "2001:db8:1:2:3::4",
      "2001:db8:1:2:0:0:192.0.2.1",
    ]) {
      expect(addressRange(address), address).toBe("2001:db8:1:2::/64");
    }
    expect(addressRange("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(addressRange("::1")).toBe("0:0:0:0::/64");
    expect(addressRange("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    // Anything that is not an address is counted as it is.
    for (const text of [
      "2001:db8::1::2",
      "192.0.2.1::",
      "2001:db8:1:2:3:4:5:6:7",
      "12345::",
      "256.0.0.1",
      // IPv4 in a form no edge writes (leading zeros read as octal, shortened, hex): as written.
      "203.0.113.007",
      "127.1",
      "0x7f.0.0.1",
      "x",
    ]) {
      expect(addressRange(text), text).toBe(text);
    }
  });

  it("answers 503 not_applied, running nothing, while a limiter cannot be asked", async () => {
    const broken: RateLimit = {
      limit: () => Promise.reject(new Error("the limiter's binding failed")),
    };
    const session = `rl-${crypto.randomUUID()}`;
    const post = (settings: Record<string, unknown>, key = KEY_A) =>
      worker.fetch(
        new Request("http://sessions.test/v1/sessions", {
          method: "POST",
          headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
          body: JSON.stringify({ id: session }),
        }),
        { ...env, ...settings },
        ctx(),
      );
    for (const settings of [{ RATE_LIMITER: broken }, { AUTH_FAILURE_LIMITER: broken }]) {
      const res = await post(settings, "RATE_LIMITER" in settings ? KEY_A : "wrong-key");
      expect(res.status).toBe(503);
      expect(res.headers.get("Retry-After")).toBe("1");
      const body = (await res.json()) as { error: { code: string; details: { outcome: string } } };
      expect(body.error.code).toBe("unavailable");
      expect(body.error.details.outcome).toBe("not_applied");
    }
    // Nothing was created: the same request with the limiter back creates the session.
    const get = await worker.fetch(
      new Request(`http://sessions.test/v1/sessions/${session}`, {
        headers: { Authorization: `Bearer ${KEY_A}` },
      }),
      env,
      ctx(),
    );
    expect(get.status).toBe(404);
    expect((await post({})).status).toBe(201);
  });

  it("counts WebSocket tickets that fail like any failed credential, waking no object", async () => {
    const tight = { ...env, AUTH_FAILURE_LIMITER: env.TIGHT_RATE_LIMITER };
    const attacker = `198.51.100.${Math.floor(Math.random() * 240) + 10}`;
    const guessed = `guessed-${crypto.randomUUID()}`;
    const forged = await new SignJWT({ tenant: "tenant-a", sid: guessed })
      .setProtectedHeader({ alg: "HS256" })
      .setJti("0".repeat(48))
      .setExpirationTime("1 minute")
      .sign(new TextEncoder().encode("a guess at the service's secret, 32+ bytes"));
    const guess = () =>
      worker.fetch(
        new Request(`http://sessions.test/v1/sessions/${guessed}/ws?ticket=${forged}`, {
          headers: { Upgrade: "websocket", "CF-Connecting-IP": attacker },
        }),
        tight,
        ctx(),
      );
    await freshWindow();
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await guess()).status);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(statuses).toContain(429);
    const object = env.SESSIONS.idFromName(sessionObjectName("tenant-a", guessed)).toString();
    expect((await listDurableObjectIds(env.SESSIONS)).map((id) => id.toString())).not.toContain(object);
  });

  it("counts nothing without the binding", async () => {
    const unlimited = { ...env, AUTH_FAILURE_LIMITER: undefined };
    for (let i = 0; i < 12; i++) {
      const res = await worker.fetch(
        new Request("http://sessions.test/v1/sessions", {
          headers: { Authorization: "Bearer wrong-key", "CF-Connecting-IP": "192.0.2.99" },
        }),
        unlimited,
        ctx(),
      );
      expect(res.status).toBe(401);
    }
  });

  it("counts Retry-After to the end of the window", () => {
    const windowStart = 1_800_000_000_000; // a multiple of both 10 s and 60 s
    expect(secondsLeftInWindow(10, windowStart)).toBe(10);
    expect(secondsLeftInWindow(10, windowStart + 3_500)).toBe(7);
    expect(secondsLeftInWindow(60, windowStart + 59_999)).toBe(1);
  });
});
