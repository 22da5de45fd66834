import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { newId } from "../../src/core/ids";
import type { WorkerEnv } from "../../src/http/env";
import worker from "../../src/worker";

const AUDIENCE = "sessions-api";
const ISSUER = "https://issuer.test/";

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

const utf8 = (text: string) => new TextEncoder().encode(text);

function base64url(data: Uint8Array | string): string {
  const bytes = typeof data === "string" ? utf8(data) : data;
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

const SIGN_PARAMS: Record<string, string | SubtleCryptoSignAlgorithm> = {
  HS256: "HMAC",
  RS256: "RSASSA-PKCS1-v1_5",
  ES256: { name: "ECDSA", hash: "SHA-256" },
};

/**
 * A compact JWS of `payload`, signed with `key` by the header's alg (with HMAC for an alg the signer
 * does not know, so that unsupported algs can be sent); unsigned without a key.
 */
async function sign(header: Record<string, unknown>, payload: unknown, key?: CryptoKey): Promise<string> {
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  if (!key) return `${input}.`;
  const params = SIGN_PARAMS[String(header.alg)] ?? "HMAC";
  const signature = await crypto.subtle.sign(params, key, utf8(input));
  return `${input}.${base64url(new Uint8Array(signature))}`;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Claims that pass every check, for `tenant`, with `extra` on top. */
function claims(tenant: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { iss: ISSUER, aud: AUDIENCE, tenant, iat: nowSeconds(), exp: nowSeconds() + 300, ...extra };
}

let hmacSecret: string;
let hmacKey: CryptoKey;
let rsa: CryptoKeyPair;
let ec: CryptoKeyPair;
let strangerRsa: CryptoKeyPair;
let rsaJwk: JsonWebKey & { kid: string };
let ecJwk: JsonWebKey & { kid: string };

beforeAll(async () => {
  // The shared secret is the hex of a generated HMAC key: JWT_SECRET is text, used as its UTF-8 bytes.
  const generated = (await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256", length: 256 }, true, [
    "sign",
  ])) as CryptoKey;
  const raw = new Uint8Array((await crypto.subtle.exportKey("raw", generated)) as ArrayBuffer);
  hmacSecret = [...raw].map((b) => b.toString(16).padStart(2, "0")).join("");
  hmacKey = await crypto.subtle.importKey("raw", utf8(hmacSecret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const rsaParams = {
    name: "RSASSA-PKCS1-v1_5",
    modulusLength: 2048,
    publicExponent: new Uint8Array([1, 0, 1]),
    hash: "SHA-256",
  };
  rsa = (await crypto.subtle.generateKey(rsaParams, true, ["sign", "verify"])) as CryptoKeyPair;
  strangerRsa = (await crypto.subtle.generateKey(rsaParams, true, ["sign", "verify"])) as CryptoKeyPair;
  ec = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  rsaJwk = { ...((await crypto.subtle.exportKey("jwk", rsa.publicKey)) as JsonWebKey), kid: "rsa-1" };
  ecJwk = { ...((await crypto.subtle.exportKey("jwk", ec.publicKey)) as JsonWebKey), kid: "ec-1" };
});

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

const hs256 = (payload: unknown, header: Record<string, unknown> = {}) =>
  sign({ alg: "HS256", typ: "JWT", ...header }, payload, hmacKey);
const rs256 = (payload: unknown, header: Record<string, unknown> = { kid: "rsa-1" }, key = rsa.privateKey) =>
  sign({ alg: "RS256", typ: "JWT", ...header }, payload, key);
const es256 = (payload: unknown, header: Record<string, unknown> = { kid: "ec-1" }) =>
  sign({ alg: "ES256", typ: "JWT", ...header }, payload, ec.privateKey);

/** The worker's env with every JWT method configured (and API keys as in the other tests). */
function jwtEnv(overrides: Partial<WorkerEnv> = {}): WorkerEnv {
  return {
    ...env,
    JWT_SECRET: hmacSecret,
    JWT_JWKS: JSON.stringify({ keys: [rsaJwk, ecJwk] }),
    JWT_AUDIENCE: AUDIENCE,
    JWT_ISSUER: ISSUER,
    ...overrides,
  };
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: { error?: { code: string; message: string } } & Record<string, unknown>;
}

async function call(
  token: string,
  options: { method?: string; path?: string; body?: unknown; env?: WorkerEnv } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const request = new Request(`http://sessions.test${options.path ?? "/v1/sessions"}`, {
    method: options.method ?? "GET",
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const res = await worker.fetch(request, options.env ?? jwtEnv(), ctx());
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : {} };
}

/** A 401 `unauthorized` whose message gives the reason and never echoes the token. */
async function expectRefused(token: string, reason: RegExp, options: Parameters<typeof call>[1] = {}) {
  const res = await call(token, options);
  expect(res.status, res.text).toBe(401);
  expect(res.body.error?.code).toBe("unauthorized");
  expect(res.body.error?.message).toMatch(reason);
  for (const part of token.split(".").filter((segment) => segment.length > 8)) {
    expect(res.text).not.toContain(part);
  }
}

async function createSession(token: string, sessionEnv?: WorkerEnv): Promise<string> {
  const id = `s-${newId()}`;
  const res = await call(token, { method: "POST", body: { id }, env: sessionEnv });
  expect(res.status, res.text).toBe(201);
  return id;
}

const tenant = () => `t-${newId()}`;

describe("JWT bearer tokens", () => {
  it("accepts HS256, RS256 and ES256 tokens, and API keys next to them", async () => {
    for (const token of [
      await hs256(claims(tenant())),
      await rs256(claims(tenant())),
      await es256(claims(tenant())),
      await rs256(claims(tenant()), {}), // no kid: every RSA key of the JWKS is tried
      await es256(claims(tenant()), {}),
    ]) {
      const res = await call(token);
      expect(res.status, res.text).toBe(200);
    }
    expect((await call("key-a")).status).toBe(200);
  });

  it("takes the tenant from the tenant claim, or from a dotted custom claim", async () => {
    const acme = tenant();
    const id = await createSession(await rs256({ ...claims("unused"), org: { id: acme } }), {
      ...jwtEnv(),
      JWT_TENANT_CLAIM: "org.id",
    });
    // Created under the tenant the nested claim named: the default claim with that value sees it.
    expect((await call(await es256(claims(acme)), { path: `/v1/sessions/${id}` })).status).toBe(200);
    expect((await call(await es256(claims("unused")), { path: `/v1/sessions/${id}` })).status).toBe(404);
  });

  it("keeps tenants apart: another tenant's token answers 404", async () => {
    const x = await hs256(claims(tenant()));
    const y = await hs256(claims(tenant()));
    const id = await createSession(x);
    expect((await call(x, { path: `/v1/sessions/${id}` })).status).toBe(200);
    const other = await call(y, { path: `/v1/sessions/${id}` });
    expect(other.status).toBe(404);
    expect(other.body.error?.code).toBe("not_found");
  });

  it("lets a token with the read access claim read but not write", async () => {
    const name = tenant();
    const id = await createSession(await es256(claims(name)));
    const reader = await es256(claims(name, { access: "read" }));
    expect((await call(reader, { path: `/v1/sessions/${id}` })).status).toBe(200);
    const write = await call(reader, { method: "POST", body: { id: `s-${newId()}` } });
    expect(write.status).toBe(403);
    expect(write.body.error?.code).toBe("forbidden");
    const custom = await es256(claims(name, { perm: { level: "read" } }));
    const customEnv = { ...jwtEnv(), JWT_ACCESS_CLAIM: "perm.level" };
    expect(
      (await call(custom, { method: "POST", body: { id: `s-${newId()}` }, env: customEnv })).status,
    ).toBe(403);
  });

  it("accepts only read or write as the access claim, and refuses any other value", async () => {
    const name = tenant();
    const writer = await es256(claims(name, { access: "write" }));
    expect((await call(writer, { method: "POST", body: { id: `s-${newId()}` } })).status).toBe(201);
    // Absent, the claim grants what it always did: write.
    expect(
      (await call(await es256(claims(name)), { method: "POST", body: { id: `s-${newId()}` } })).status,
    ).toBe(201);
    const refused: string[] = [];
    for (const access of ["READ", "Read", "readonly", ["read"], "", null, 1, { level: "read" }]) {
      const token = await es256(claims(name, { access }));
      await expectRefused(token, /access.* must be "read" or "write"/);
      refused.push(`s-${newId()}`);
      await expectRefused(token, /access.* must be "read" or "write"/, {
        method: "POST",
        body: { id: refused.at(-1) },
      });
    }
    for (const id of refused) expect((await call(writer, { path: `/v1/sessions/${id}` })).status).toBe(404);
  });

  it("tolerates the configured clock skew, and accepts aud given as an array", async () => {
    expect((await call(await hs256(claims(tenant(), { exp: nowSeconds() - 30 })))).status).toBe(200);
    expect((await call(await hs256(claims(tenant(), { nbf: nowSeconds() + 30 })))).status).toBe(200);
    expect((await call(await hs256(claims(tenant(), { aud: ["other", AUDIENCE] })))).status).toBe(200);
    const strict = { ...jwtEnv(), JWT_CLOCK_SKEW_SECONDS: "0" };
    await expectRefused(await hs256(claims(tenant(), { exp: nowSeconds() - 30 })), /expired/, {
      env: strict,
    });
  });
});

describe("JWT refusals", () => {
  it("refuses expired, not yet valid and future-issued tokens, and tokens without exp", async () => {
    await expectRefused(await rs256(claims(tenant(), { exp: nowSeconds() - 3600 })), /expired/);
    await expectRefused(await rs256(claims(tenant(), { nbf: nowSeconds() + 3600 })), /not valid yet/);
    await expectRefused(await rs256(claims(tenant(), { iat: nowSeconds() + 3600 })), /future/);
    await expectRefused(await rs256(claims(tenant(), { exp: undefined })), /no expiry/);
    await expectRefused(await rs256(claims(tenant(), { exp: "tomorrow" })), /exp is not a number/);
  });

  it("refuses a wrong audience or issuer", async () => {
    await expectRefused(await es256(claims(tenant(), { aud: "someone-else" })), /audience/);
    await expectRefused(await es256(claims(tenant(), { aud: ["a", "b"] })), /audience/);
    await expectRefused(await es256(claims(tenant(), { aud: undefined })), /audience/);
    await expectRefused(await es256(claims(tenant(), { iss: "https://evil.test/" })), /issuer/);
  });

  it("refuses a tampered payload for every algorithm", async () => {
    for (const token of [
      await hs256(claims("victim")),
      await rs256(claims("victim")),
      await es256(claims("victim")),
    ]) {
      const [header, , signature] = token.split(".");
      const forged = `${header}.${base64url(JSON.stringify(claims("attacker")))}.${signature}`;
      await expectRefused(forged, /signature/);
    }
  });

  it('refuses alg "none" and algorithms it does not support', async () => {
    await expectRefused(await sign({ alg: "none" }, claims(tenant())), /alg "none"/);
    await expectRefused(await sign({ alg: "None" }, claims(tenant())), /alg "none"/);
    await expectRefused(await sign({ alg: "HS512" }, claims(tenant()), hmacKey), /not supported/);
    await expectRefused(await sign({ alg: 256 }, claims(tenant()), hmacKey), /not supported/);
  });

  it("refuses an algorithm that is not configured: HS256 with only a JWKS, RS256 with only a secret", async () => {
    await expectRefused(await hs256(claims(tenant())), /HS256 tokens are not accepted/, {
      env: jwtEnv({ JWT_SECRET: undefined }),
    });
    await expectRefused(await rs256(claims(tenant())), /RS256 tokens are not accepted/, {
      env: jwtEnv({ JWT_JWKS: undefined }),
    });
  });

  it("answers 503 misconfigured to every request while a JWT setting is invalid, and logs why", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const invalid: Array<[Partial<WorkerEnv>, RegExp]> = [
      // RFC 7518 §3.2: an HS256 key shorter than the hash output must not be used.
      [{ JWT_SECRET: "short" }, /JWT_SECRET is shorter than 32 bytes/],
      [{ JWT_JWKS: "{not json" }, /JWT_JWKS is not valid JSON/],
      [{ JWT_JWKS: JSON.stringify([rsaJwk]) }, /JWT_JWKS must be a JWKS/],
      [{ JWT_JWKS_URL: `http://issuer.test/${newId()}/jwks.json` }, /JWT_JWKS_URL must be an https URL/],
      [{ JWT_JWKS_URL: "not a url" }, /JWT_JWKS_URL must be an https URL/],
      [{ JWT_CLOCK_SKEW_SECONDS: "soon" }, /JWT_CLOCK_SKEW_SECONDS must be a number/],
    ];
    for (const [overrides, reason] of invalid) {
      errors.mockClear();
      const badEnv = jwtEnv(overrides);
      const id = `s-${newId()}`;
      // Whatever the credential: a valid token, an API key, a token of the broken kind.
      for (const token of [await es256(claims(tenant())), "key-a", await hs256(claims(tenant()))]) {
        const res = await call(token, { method: "POST", body: { id }, env: badEnv });
        expect(res.status, res.text).toBe(503);
        expect(res.body.error?.code).toBe("misconfigured");
        expect(res.body.error?.message).toMatch(/JWT settings/);
      }
      expect(JSON.stringify(errors.mock.calls)).toMatch(reason);
      // Nothing was written: with the settings fixed, the session is not there.
      expect((await call("key-a", { path: `/v1/sessions/${id}` })).status).toBe(404);
    }
  });

  it("never uses a public key as an HMAC secret (algorithm confusion)", async () => {
    // The classic attack: HS256 signed with the text of the server's public key.
    for (const publicText of [JSON.stringify(rsaJwk), rsaJwk.n as string]) {
      const key = await crypto.subtle.importKey(
        "raw",
        utf8(publicText),
        { name: "HMAC", hash: "SHA-256" },
        false,
        ["sign"],
      );
      const forged = await sign({ alg: "HS256", kid: "rsa-1" }, claims(tenant()), key);
      await expectRefused(forged, /HS256 tokens are not accepted/, {
        env: jwtEnv({ JWT_SECRET: undefined }),
      });
      await expectRefused(forged, /signature/);
    }
    // A kid naming a key of another type does not make that key verify the token's alg.
    await expectRefused(await es256(claims(tenant()), { kid: "rsa-1" }), /does not verify ES256/);
  });

  it("uses JWKS keys only for the algorithm their type and curve fit", async () => {
    const p384 = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-384" }, true, [
      "sign",
      "verify",
    ])) as CryptoKeyPair;
    const p384Jwk = {
      ...((await crypto.subtle.exportKey("jwk", p384.publicKey)) as JsonWebKey),
      kid: "ec-384",
    };
    const octSecret = "a shared secret someone put in the JWKS, 32+ bytes long";
    const octJwk = { kty: "oct", k: base64url(octSecret), kid: "oct-1" };
    const keysEnv = jwtEnv({ JWT_JWKS: JSON.stringify({ keys: [rsaJwk, ecJwk, p384Jwk, octJwk] }) });
    await expectRefused(await es256(claims(tenant()), { kid: "ec-384" }), /does not verify ES256/, {
      env: keysEnv,
    });
    const octKey = await crypto.subtle.importKey(
      "raw",
      utf8(octSecret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const octToken = await sign({ alg: "HS256", kid: "oct-1" }, claims(tenant()), octKey);
    await expectRefused(octToken, /signature/, { env: keysEnv });
    await expectRefused(octToken, /HS256 tokens are not accepted/, {
      env: { ...keysEnv, JWT_SECRET: undefined },
    });
  });

  it("refuses a token signed by a key it does not know, or naming an unknown kid", async () => {
    await expectRefused(await rs256(claims(tenant()), {}, strangerRsa.privateKey), /signature/);
    await expectRefused(await rs256(claims(tenant()), { kid: "rsa-1" }, strangerRsa.privateKey), /signature/);
    await expectRefused(
      await rs256(claims(tenant()), { kid: "rsa-2" }, strangerRsa.privateKey),
      /unknown .*kid/,
    );
  });

  it("refuses a token without a string tenant", async () => {
    await expectRefused(await hs256(claims(tenant(), { tenant: undefined })), /no tenant/);
    await expectRefused(await hs256(claims(tenant(), { tenant: "" })), /no tenant/);
    await expectRefused(await hs256(claims(tenant(), { tenant: 42 })), /no tenant/);
    await expectRefused(await hs256(claims(tenant())), /no tenant: claim "org.id"/, {
      env: jwtEnv({ JWT_TENANT_CLAIM: "org.id" }),
    });
  });

  it("refuses malformed tokens: bad base64, bad JSON, a header without alg", async () => {
    const header = base64url(JSON.stringify({ alg: "HS256" }));
    const payload = base64url(JSON.stringify(claims(tenant())));
    await expectRefused(`${header}.${base64url("not json")}.c2ln`, /malformed/);
    await expectRefused(`${header}.${base64url("[1,2]")}.c2ln`, /malformed/);
    await expectRefused(`${header}.abcde.c2ln`, /malformed/);
    await expectRefused(`${header}.${payload}.abcde`, /malformed/);
    // Not shaped like a JWT, so taken for an API key, which is unknown.
    await expectRefused(`${base64url("{not json")}.${payload}.c2ln`, /unknown key/);
    await expectRefused(`${base64url(JSON.stringify({ typ: "JWT" }))}.${payload}.c2ln`, /unknown key/);
    await expectRefused("a.b.c", /unknown key/);
  });

  it("refuses every bearer token when neither API keys nor JWT settings are configured", async () => {
    const bare: WorkerEnv = { ...env, API_KEYS: undefined, DEV_TENANT: undefined };
    await expectRefused(await hs256(claims(tenant())), /not accepted/, { env: bare });
    await expectRefused(await rs256(claims(tenant())), /not accepted/, { env: bare });
    await expectRefused("key-a", /unknown key/, { env: bare });
  });
});

describe("JWKS from a URL", () => {
  const jwksResponse = (keys: JsonWebKey[]) => Response.json({ keys });

  it("fetches the JWKS once, serves from cache, and re-fetches for an unknown kid at most every 30 s", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2030-01-01T00:00:00Z"));
    const url = `https://issuer.test/${newId()}/jwks.json`;
    let served: JsonWebKey[] = [rsaJwk];
    const realFetch = globalThis.fetch;
    const fetchSpy = vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
      const target = input instanceof Request ? input.url : String(input);
      return target === url ? Promise.resolve(jwksResponse(served)) : realFetch(input, init);
    });
    const jwksCalls = () => fetchSpy.mock.calls.filter(([input]) => String(input) === url).length;
    const urlEnv = jwtEnv({ JWT_SECRET: undefined, JWT_JWKS: undefined, JWT_JWKS_URL: url });

    expect((await call(await rs256(claims(tenant())), { env: urlEnv })).status).toBe(200);
    expect((await call(await rs256(claims(tenant())), { env: urlEnv })).status).toBe(200);
    expect(jwksCalls()).toBe(1);

    // The issuer adds a key; within 30 s of the last fetch an unknown kid does not fetch again.
    served = [rsaJwk, ecJwk];
    vi.setSystemTime(new Date("2030-01-01T00:00:10Z"));
    await expectRefused(await es256(claims(tenant())), /unknown .*kid/, { env: urlEnv });
    expect(jwksCalls()).toBe(1);

    vi.setSystemTime(new Date("2030-01-01T00:00:41Z"));
    expect((await call(await es256(claims(tenant())), { env: urlEnv })).status).toBe(200);
    expect(jwksCalls()).toBe(2);
    expect((await call(await es256(claims(tenant())), { env: urlEnv })).status).toBe(200);
    expect(jwksCalls()).toBe(2);
  });

  it("caches for five minutes, keeps its keys when a fetch fails, and retries a failed fetch only after 30 s", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2031-01-01T00:00:00Z"));
    const url = `https://issuer.test/${newId()}/jwks.json`;
    const answers: Array<JsonWebKey[] | "down"> = [[rsaJwk], "down", [ecJwk]];
    const realFetch = globalThis.fetch;
    const fetchSpy = vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
      const target = input instanceof Request ? input.url : String(input);
      if (target !== url) return realFetch(input, init);
      const answer = answers.shift();
      return Promise.resolve(
        answer === "down" || !answer ? new Response("down", { status: 503 }) : jwksResponse(answer),
      );
    });
    vi.spyOn(console, "error").mockImplementation(() => {});
    const jwksCalls = () => fetchSpy.mock.calls.filter(([input]) => String(input) === url).length;
    const urlEnv = jwtEnv({ JWT_SECRET: undefined, JWT_JWKS: undefined, JWT_JWKS_URL: url });
    const at = (time: string) => vi.setSystemTime(new Date(`2031-01-01T00:${time}Z`));

    expect((await call(await rs256(claims(tenant())), { env: urlEnv })).status).toBe(200);
    expect(jwksCalls()).toBe(1);
    at("04:00");
    expect((await call(await rs256(claims(tenant())), { env: urlEnv })).status).toBe(200);
    expect(jwksCalls()).toBe(1);

    // Stale after five minutes: the fetch fails, the keys fetched before still verify.
    at("05:00");
    expect((await call(await rs256(claims(tenant())), { env: urlEnv })).status).toBe(200);
    expect(jwksCalls()).toBe(2);
    // Neither staleness nor an unknown kid fetches again within 30 s of the failed attempt.
    at("05:29");
    expect((await call(await rs256(claims(tenant())), { env: urlEnv })).status).toBe(200);
    await expectRefused(await es256(claims(tenant())), /unknown .*kid/, { env: urlEnv });
    expect(jwksCalls()).toBe(2);

    at("05:30");
    expect((await call(await es256(claims(tenant())), { env: urlEnv })).status).toBe(200);
    expect(jwksCalls()).toBe(3);
  });

  it("refuses tokens while the JWKS cannot be fetched", async () => {
    const url = `https://issuer.test/${newId()}/jwks.json`;
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
      const target = input instanceof Request ? input.url : String(input);
      return target === url ? Promise.resolve(new Response("nope", { status: 503 })) : realFetch(input, init);
    });
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const urlEnv = jwtEnv({ JWT_SECRET: undefined, JWT_JWKS: undefined, JWT_JWKS_URL: url });
    // Never fetched, no token can be checked (with a kid or without): the service is unavailable,
    // until the next fetch may be made; the token is not refused.
    for (const token of [await rs256(claims(tenant())), await rs256(claims(tenant()), {})]) {
      const res = await call(token, { env: urlEnv });
      expect(res.status, res.text).toBe(503);
      expect(res.body.error?.code).toBe("unavailable");
      const wait = Number(res.headers.get("Retry-After"));
      expect(wait).toBeGreaterThanOrEqual(1);
      expect(wait).toBeLessThanOrEqual(30);
      for (const part of token.split(".").filter((segment) => segment.length > 8)) {
        expect(res.text).not.toContain(part);
      }
    }
    expect(errors).toHaveBeenCalled();
    // The log says what failed, never a credential.
    expect(JSON.stringify(errors.mock.calls)).not.toContain(rsaJwk.n);
  });
});
