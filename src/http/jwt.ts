import { SessionError } from "../core";
import type { Caller } from "./auth";
import type { WorkerEnv } from "./env";

/*
 * JWT bearer tokens, accepted next to API keys (auth.ts). HS256 is verified with the shared secret
 * `JWT_SECRET`; RS256 and ES256 (P-256) with public keys from a JWKS, given inline (`JWT_JWKS`)
 * and/or fetched from `JWT_JWKS_URL`. The kind of key follows from the token's `alg`, and each
 * `alg` has exactly one source of keys: HS256 only ever uses JWT_SECRET, RS256 only JWKS keys with
 * `kty: "RSA"`, ES256 only JWKS keys with `kty: "EC", crv: "P-256"`. A JWKS key is never imported
 * for HMAC, so a public key cannot be turned into a shared secret (algorithm confusion).
 */

type Alg = "HS256" | "RS256" | "ES256";
type JsonObject = Record<string, unknown>;

/** A JWK as found in a JWKS: every member unchecked until used. */
type Jwk = JsonObject;

export interface JwtConfig {
  secret: string | undefined;
  jwks: string | undefined;
  jwksUrl: string | undefined;
  audience: string | undefined;
  issuer: string | undefined;
  skewSeconds: number;
  tenantClaim: string;
  accessClaim: string;
}

export interface DecodedJwt {
  header: JsonObject;
  payloadSegment: string;
  signatureSegment: string;
  /** The bytes the signature covers: `<header>.<payload>` as sent. */
  signingInput: Uint8Array;
}

const DEFAULT_SKEW_SECONDS = 60;
/** RFC 7518 §3.2: an HS256 key shorter than the hash output must not be used. */
const MIN_SECRET_BYTES = 32;
const JWKS_TTL_MS = 5 * 60_000;
/** A token with a made-up `kid` must not turn into a flood of JWKS fetches. */
const JWKS_MIN_INTERVAL_MS = 30_000;
const JWKS_FETCH_TIMEOUT_MS = 5_000;

const refuse = (message: string) => new SessionError("unauthorized", message);
const malformed = () => refuse("malformed token");

/** The JWT settings of `env`, or undefined when no way to verify a token is configured. */
export function jwtConfig(env: WorkerEnv): JwtConfig | undefined {
  if (!env.JWT_SECRET && !env.JWT_JWKS && !env.JWT_JWKS_URL) return undefined;
  return {
    secret: env.JWT_SECRET || undefined,
    jwks: env.JWT_JWKS || undefined,
    jwksUrl: env.JWT_JWKS_URL || undefined,
    audience: env.JWT_AUDIENCE || undefined,
    issuer: env.JWT_ISSUER || undefined,
    skewSeconds: skewSeconds(env.JWT_CLOCK_SKEW_SECONDS),
    tenantClaim: env.JWT_TENANT_CLAIM || "tenant",
    accessClaim: env.JWT_ACCESS_CLAIM || "access",
  };
}

function skewSeconds(value: string | undefined): number {
  const skew = Number(value);
  if (!value || !Number.isFinite(skew) || skew < 0) return DEFAULT_SKEW_SECONDS;
  return skew;
}

const JWT_SHAPE = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]*)$/;

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function base64urlBytes(segment: string): Uint8Array {
  const base64 = segment.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, "="));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

/** The JSON object a segment encodes, or undefined when it is not one. */
function jsonSegment(segment: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(base64urlBytes(segment)),
    );
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The token split into its parts when it has the shape of a JWT (three base64url segments, a header
 * that is a JSON object with `alg`); undefined otherwise, and the token is then taken for an API key.
 */
export function decodeJwt(token: string): DecodedJwt | undefined {
  const match = JWT_SHAPE.exec(token);
  if (!match) return undefined;
  const [, headerSegment = "", payloadSegment = "", signatureSegment = ""] = match;
  const header = jsonSegment(headerSegment);
  if (!header || !Object.hasOwn(header, "alg")) return undefined;
  const signingInput = new TextEncoder().encode(`${headerSegment}.${payloadSegment}`);
  return { header, payloadSegment, signatureSegment, signingInput };
}

/** The caller a verified token names; throws `unauthorized` for every token it does not accept. */
export async function verifyJwt(
  jwt: DecodedJwt,
  config: JwtConfig | undefined,
  nowMs = Date.now(),
): Promise<Caller> {
  if (!config) throw refuse("bearer JWTs are not accepted: no JWT verification is configured");
  const alg = acceptedAlg(jwt.header, config);
  const payload = jsonSegment(jwt.payloadSegment);
  if (!payload) throw malformed();
  let signature: Uint8Array;
  try {
    signature = base64urlBytes(jwt.signatureSegment);
  } catch {
    throw malformed();
  }
  // Claims are read only once the signature holds: a forger learns nothing about them.
  if (!(await signatureVerifies(alg, jwt, signature, config, nowMs))) {
    throw refuse("token signature does not verify");
  }
  checkClaims(payload, config, nowMs / 1000);
  return callerOf(payload, config);
}

function isAlg(value: unknown): value is Alg {
  return value === "HS256" || value === "RS256" || value === "ES256";
}

function acceptedAlg(header: JsonObject, config: JwtConfig): Alg {
  const { alg } = header;
  if (typeof alg === "string" && alg.toLowerCase() === "none") {
    throw refuse('unsigned tokens (alg "none") are refused');
  }
  if (!isAlg(alg)) throw refuse("token alg is not supported (HS256, RS256 and ES256 are)");
  if (!algConfigured(alg, config)) throw refuse(`${alg} tokens are not accepted by this service`);
  // RFC 7515 §4.1.11: extensions marked critical that we do not implement mean refusal.
  if (header.crit !== undefined) throw refuse("token header lists critical extensions (crit)");
  if (header.kid !== undefined && typeof header.kid !== "string") throw malformed();
  return alg;
}

function algConfigured(alg: Alg, config: JwtConfig): boolean {
  if (alg === "HS256") return hmacSecretUsable(config.secret);
  return Boolean(config.jwks || config.jwksUrl);
}

let warnedShortSecret = false;

function hmacSecretUsable(secret: string | undefined): secret is string {
  if (!secret) return false;
  if (new TextEncoder().encode(secret).byteLength >= MIN_SECRET_BYTES) return true;
  if (!warnedShortSecret) {
    warnedShortSecret = true;
    console.error(`auth: JWT_SECRET is shorter than ${MIN_SECRET_BYTES} bytes; HS256 tokens are refused`);
  }
  return false;
}

async function signatureVerifies(
  alg: Alg,
  jwt: DecodedJwt,
  signature: Uint8Array,
  config: JwtConfig,
  nowMs: number,
): Promise<boolean> {
  if (alg === "HS256") {
    // crypto.subtle.verify compares in constant time; comparing signature strings would not.
    const key = await hmacKey(config.secret as string);
    return crypto.subtle.verify("HMAC", key, signature, jwt.signingInput);
  }
  const kid = jwt.header.kid as string | undefined;
  for (const jwk of await candidateKeys(alg, kid, config, nowMs)) {
    const key = await publicKey(jwk, alg);
    if (key && (await verifyWith(alg, key, signature, jwt.signingInput))) return true;
  }
  return false;
}

async function verifyWith(
  alg: Exclude<Alg, "HS256">,
  key: CryptoKey,
  signature: Uint8Array,
  data: Uint8Array,
): Promise<boolean> {
  // JWS ES256 signatures are r || s, 32 bytes each: what WebCrypto's ECDSA expects.
  if (alg === "ES256" && signature.byteLength !== 64) return false;
  const params = alg === "RS256" ? { name: "RSASSA-PKCS1-v1_5" } : { name: "ECDSA", hash: "SHA-256" };
  try {
    return await crypto.subtle.verify(params, key, signature, data);
  } catch {
    return false;
  }
}

let hmac: { secret: string; key: Promise<CryptoKey> } | undefined;

function hmacKey(secret: string): Promise<CryptoKey> {
  if (hmac?.secret !== secret) {
    const raw = new TextEncoder().encode(secret);
    const key = crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    hmac = { secret, key };
  }
  return hmac.key;
}

/** Whether a JWKS key may verify `alg`: its type decides, never the token. */
function fits(jwk: Jwk, alg: Exclude<Alg, "HS256">): boolean {
  if (jwk.alg !== undefined && jwk.alg !== alg) return false;
  if (jwk.use !== undefined && jwk.use !== "sig") return false;
  if (alg === "RS256") return jwk.kty === "RSA" && typeof jwk.n === "string" && typeof jwk.e === "string";
  return jwk.kty === "EC" && jwk.crv === "P-256" && typeof jwk.x === "string" && typeof jwk.y === "string";
}

/** The keys to try: the one named by `kid`, or without `kid` every key that fits `alg`. */
async function candidateKeys(
  alg: Exclude<Alg, "HS256">,
  kid: string | undefined,
  config: JwtConfig,
  nowMs: number,
): Promise<Jwk[]> {
  const keys = await jwksKeys(config, nowMs);
  if (kid === undefined) {
    const fitting = keys.filter((jwk) => fits(jwk, alg));
    if (fitting.length === 0) throw refuse(`no configured key verifies ${alg} tokens`);
    return fitting;
  }
  let named = keys.filter((jwk) => jwk.kid === kid);
  if (named.length === 0 && config.jwksUrl) {
    // The issuer may have rotated keys since the last fetch.
    const fresh = await remoteJwks(config.jwksUrl).refreshed(nowMs);
    named = [...inlineKeys(config.jwks), ...fresh].filter((jwk) => jwk.kid === kid);
  }
  if (named.length === 0) throw refuse("unknown token key id (kid)");
  const fitting = named.filter((jwk) => fits(jwk, alg));
  if (fitting.length === 0) throw refuse(`the key named by the token's kid does not verify ${alg} tokens`);
  return fitting;
}

async function jwksKeys(config: JwtConfig, nowMs: number): Promise<Jwk[]> {
  const remote = config.jwksUrl ? await remoteJwks(config.jwksUrl).current(nowMs) : [];
  return [...inlineKeys(config.jwks), ...remote];
}

/** The keys of a JWKS document, or undefined when it is not one. */
export function parseJwks(value: unknown): Jwk[] | undefined {
  if (!isObject(value) || !Array.isArray(value.keys)) return undefined;
  return value.keys.filter(isObject);
}

let inline: { source: string; keys: Jwk[] } | undefined;

function inlineKeys(source: string | undefined): Jwk[] {
  if (!source) return [];
  if (inline?.source === source) return inline.keys;
  let keys: Jwk[] | undefined;
  try {
    keys = parseJwks(JSON.parse(source));
  } catch {}
  if (!keys) console.error('auth: JWT_JWKS is not a JWKS ({"keys": [...]}); its keys are ignored');
  inline = { source, keys: keys ?? [] };
  return inline.keys;
}

/** Imported keys, by the JWK object they came from (stable while its JWKS stays cached). */
const imported = new WeakMap<Jwk, Promise<CryptoKey | undefined>>();

function publicKey(jwk: Jwk, alg: Exclude<Alg, "HS256">): Promise<CryptoKey | undefined> {
  let key = imported.get(jwk);
  if (!key) {
    key = importPublicKey(jwk, alg);
    imported.set(jwk, key);
  }
  return key;
}

async function importPublicKey(jwk: Jwk, alg: Exclude<Alg, "HS256">): Promise<CryptoKey | undefined> {
  // Only the public members are imported: a JWKS that carries private parts by mistake still yields
  // a verify-only key, and `key_ops` or `ext` in the document cannot widen what the key may do.
  const [publicJwk, params] =
    alg === "RS256"
      ? [
          { kty: "RSA", n: jwk.n, e: jwk.e },
          { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
        ]
      : [
          { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y },
          { name: "ECDSA", namedCurve: "P-256" },
        ];
  try {
    return await crypto.subtle.importKey("jwk", publicJwk as JsonWebKey, params, false, ["verify"]);
  } catch {
    console.error(`auth: a JWKS key (kid ${String(jwk.kid)}) could not be imported for ${alg}; skipped`);
    return undefined;
  }
}

export type JwksLoader = (url: string) => Promise<unknown>;

async function loadJwks(url: string): Promise<unknown> {
  if (!url.startsWith("https://")) throw new Error("JWT_JWKS_URL must be an https URL");
  const res = await fetch(url, {
    headers: { Accept: "application/json" },
    signal: AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS),
  });
  if (!res.ok) throw new Error(`the JWKS URL answered ${res.status}`);
  return res.json();
}

/**
 * The keys at a JWKS URL, cached for this isolate: fetched when older than a few minutes, and again
 * on demand for an unknown `kid`, but never more often than every 30 seconds. A failed fetch keeps
 * the keys it had. Concurrent requests share one fetch in flight (workerd delivers its result to
 * each waiting request in that request's own context).
 */
export class RemoteJwks {
  private keys: Jwk[] = [];
  private loadedAt = Number.NEGATIVE_INFINITY;
  private attemptedAt = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly load: JwksLoader = loadJwks,
  ) {}

  /** The keys, fetched first when the cached ones are stale. */
  async current(nowMs: number): Promise<Jwk[]> {
    if (nowMs - this.loadedAt >= JWKS_TTL_MS) await this.refresh(nowMs);
    return this.keys;
  }

  /** The keys after a fetch, unless one was attempted less than 30 seconds ago. */
  async refreshed(nowMs: number): Promise<Jwk[]> {
    await this.refresh(nowMs);
    return this.keys;
  }

  private refresh(nowMs: number): Promise<void> {
    if (this.inFlight) return this.inFlight;
    if (nowMs - this.attemptedAt < JWKS_MIN_INTERVAL_MS) return Promise.resolve();
    this.attemptedAt = nowMs;
    this.inFlight = this.fetchKeys(nowMs).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async fetchKeys(nowMs: number): Promise<void> {
    try {
      const keys = parseJwks(await this.load(this.url));
      if (!keys) throw new Error('the JWKS URL did not answer a JWKS ({"keys": [...]})');
      this.keys = keys;
      this.loadedAt = nowMs;
    } catch (error) {
      console.error("auth: could not fetch JWT_JWKS_URL; keeping the keys cached before", String(error));
    }
  }
}

const remotes = new Map<string, RemoteJwks>();

function remoteJwks(url: string): RemoteJwks {
  let remote = remotes.get(url);
  if (!remote) {
    remote = new RemoteJwks(url);
    remotes.set(url, remote);
  }
  return remote;
}

function numericClaim(payload: JsonObject, name: string): number | undefined {
  const value = payload[name];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value))
    throw refuse(`token claim ${name} is not a number`);
  return value;
}

function checkClaims(payload: JsonObject, config: JwtConfig, nowSeconds: number): void {
  const skew = config.skewSeconds;
  const exp = numericClaim(payload, "exp");
  if (exp === undefined) throw refuse("token has no expiry (exp)");
  if (nowSeconds - skew >= exp) throw refuse("token has expired");
  const nbf = numericClaim(payload, "nbf");
  if (nbf !== undefined && nowSeconds + skew < nbf) throw refuse("token is not valid yet (nbf)");
  const iat = numericClaim(payload, "iat");
  if (iat !== undefined && iat > nowSeconds + skew) throw refuse("token is issued in the future (iat)");
  if (config.audience !== undefined && !audienceMatches(payload.aud, config.audience)) {
    throw refuse("token audience (aud) does not match");
  }
  if (config.issuer !== undefined && payload.iss !== config.issuer) {
    throw refuse("token issuer (iss) does not match");
  }
}

function audienceMatches(aud: unknown, expected: string): boolean {
  return aud === expected || (Array.isArray(aud) && aud.includes(expected));
}

/**
 * A claim by name: the name as one key first (issuers such as Auth0 name claims by URL, dots
 * included), else as a dotted path into nested objects (`org.id`).
 */
function claimAt(payload: JsonObject, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  let value: unknown = payload;
  for (const part of name.split(".")) {
    if (!isObject(value) || !Object.hasOwn(value, part)) return undefined;
    value = value[part];
  }
  return value;
}

function callerOf(payload: JsonObject, config: JwtConfig): Caller {
  const tenant = claimAt(payload, config.tenantClaim);
  if (typeof tenant !== "string" || !tenant) {
    throw refuse(`token has no tenant: claim "${config.tenantClaim}" is missing or not a string`);
  }
  return { tenant, access: claimAt(payload, config.accessClaim) === "read" ? "read" : "write" };
}
