import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JSONWebKeySet,
  type JWK,
  type JWKSCacheInput,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  jwksCache,
  jwtVerify,
  type ProtectedHeaderParameters,
} from "jose";
import { SessionError } from "../core";
import { Access, type Caller } from "./access";
import type { WorkerEnv } from "./env";

/*
 * JWT bearer tokens, accepted next to API keys (auth.ts), verified by `jose`. What stays here is
 * our configuration and what a token means to us. HS256 is verified with the shared secret
 * `JWT_SECRET`; RS256 and ES256 (P-256) with public keys from a JWKS, given inline (`JWT_JWKS`)
 * and/or fetched from `JWT_JWKS_URL`. Each `alg` has exactly one source of keys, and jose is told
 * the one algorithm it may accept: HS256 only ever uses JWT_SECRET, so a JWKS key can never be
 * turned into an HMAC secret (algorithm confusion); RS256 and ES256 only JWKS keys of their type
 * and curve.
 */

type Alg = "HS256" | "RS256" | "ES256";
type JsonObject = Record<string, unknown>;

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

const DEFAULT_SKEW_SECONDS = 60;
/** RFC 7518 §3.2: an HS256 key shorter than the hash output must not be used. */
const MIN_SECRET_BYTES = 32;
const JWKS_TTL_MS = 5 * 60_000;
/** A token with a made-up `kid`, or an issuer that is down, must not turn into a flood of fetches. */
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

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The protected header of a token shaped like a JWT (three base64url segments, a header that is a
 * JSON object with `alg`); undefined otherwise, and the token is then taken for an API key.
 */
export function jwtHeader(token: string): ProtectedHeaderParameters | undefined {
  if (!JWT_SHAPE.test(token)) return undefined;
  try {
    const header = decodeProtectedHeader(token);
    return Object.hasOwn(header, "alg") ? header : undefined;
  } catch {
    return undefined;
  }
}

/** The caller a verified token names; throws `unauthorized` for every token it does not accept. */
export async function verifyJwt(
  token: string,
  header: ProtectedHeaderParameters,
  config: JwtConfig | undefined,
): Promise<Caller> {
  if (!config) throw refuse("bearer JWTs are not accepted: no JWT verification is configured");
  const alg = acceptedAlg(header, config);
  // Only the shape of the claims is looked at before the signature holds: a forger learns nothing.
  try {
    decodeJwt(token);
  } catch {
    throw malformed();
  }
  const options: JWTVerifyOptions = {
    algorithms: [alg],
    audience: config.audience,
    issuer: config.issuer,
    clockTolerance: config.skewSeconds,
    requiredClaims: ["exp"],
  };
  let payload: JWTPayload;
  try {
    payload =
      alg === "HS256"
        ? (await jwtVerify(token, new TextEncoder().encode(config.secret), options)).payload
        : await verifyWithJwks(token, jwksKeys(config), options);
  } catch (error) {
    throw refusal(error, alg, header.kid, config);
  }
  // jose checks `iat` only against a maximum age; one from the future is refused here.
  if (typeof payload.iat === "number" && payload.iat > Date.now() / 1000 + config.skewSeconds) {
    throw refuse("token is issued in the future (iat)");
  }
  return callerOf(payload, config);
}

function isAlg(value: unknown): value is Alg {
  return value === "HS256" || value === "RS256" || value === "ES256";
}

function acceptedAlg(header: ProtectedHeaderParameters, config: JwtConfig): Alg {
  const alg: unknown = header.alg;
  if (typeof alg === "string" && alg.toLowerCase() === "none") {
    throw refuse('unsigned tokens (alg "none") are refused');
  }
  if (!isAlg(alg)) throw refuse("token alg is not supported (HS256, RS256 and ES256 are)");
  if (!algConfigured(alg, config)) throw refuse(`${alg} tokens are not accepted by this service`);
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

/**
 * Verifies against a key set. Without a `kid` several keys may fit the token's algorithm; jose
 * then hands them over one by one, and the first whose signature holds wins.
 */
async function verifyWithJwks(token: string, keys: JWTVerifyGetKey, options: JWTVerifyOptions) {
  try {
    return (await jwtVerify(token, keys, options)).payload;
  } catch (error) {
    if (!(error instanceof errors.JWKSMultipleMatchingKeys)) throw error;
    for await (const key of error) {
      try {
        return (await jwtVerify(token, key, options)).payload;
      } catch (attempt) {
        if (!(attempt instanceof errors.JWSSignatureVerificationFailed)) throw attempt;
      }
    }
    throw new errors.JWSSignatureVerificationFailed();
  }
}

/** The inline keys first, then the ones at the URL. */
function jwksKeys(config: JwtConfig): JWTVerifyGetKey {
  const inline = inlineKeys(config.jwks);
  const remote = config.jwksUrl ? remoteKeys(config.jwksUrl) : undefined;
  return async (header, token) => {
    if (inline) {
      try {
        return await inline.getKey(header, token);
      } catch (error) {
        if (!remote || !(error instanceof errors.JWKSNoMatchingKey)) throw error;
      }
    }
    if (!remote) throw new errors.JWKSNoMatchingKey();
    return remote.getKey(header, token);
  };
}

/** Every key the configured sets hold right now (to say why none fitted). */
function knownKeys(config: JwtConfig): JWK[] {
  const remote = config.jwksUrl ? remotes.get(config.jwksUrl) : undefined;
  return [...(inlineKeys(config.jwks)?.keys ?? []), ...(remote?.keys ?? [])];
}

/** The keys of a JWKS document, or undefined when it is not one. */
function parseJwks(value: unknown): JSONWebKeySet | undefined {
  if (!isObject(value) || !Array.isArray(value.keys)) return undefined;
  return { keys: value.keys.filter(isObject) as JWK[] };
}

interface KeySet {
  keys: JWK[];
  getKey: JWTVerifyGetKey;
}

let inline: { source: string; set: KeySet | undefined } | undefined;

function inlineKeys(source: string | undefined): KeySet | undefined {
  if (!source) return undefined;
  if (inline?.source !== source) {
    let jwks: JSONWebKeySet | undefined;
    try {
      jwks = parseJwks(JSON.parse(source));
    } catch {}
    if (!jwks) console.error('auth: JWT_JWKS is not a JWKS ({"keys": [...]}); its keys are ignored');
    inline = { source, set: jwks && { keys: jwks.keys, getKey: createLocalJWKSet(jwks) } };
  }
  return inline.set;
}

/** jose's errors that mean "no key for this token", as opposed to "the key set could not be had". */
function isKeySelectionError(error: unknown): boolean {
  return (
    error instanceof errors.JWKSNoMatchingKey ||
    error instanceof errors.JWKSMultipleMatchingKeys ||
    error instanceof errors.JOSENotSupported
  );
}

/**
 * The keys at a JWKS URL, through jose's remote key set: cached for five minutes, fetched again for
 * an unknown `kid` at most every 30 seconds. On top of it, a failed fetch keeps the keys fetched
 * before and is not retried for 30 seconds either, so an issuer that is down neither locks every
 * caller out at once nor turns each token into an outgoing request.
 */
class RemoteKeys implements KeySet {
  /** jose writes each JWKS it fetched here, with the time. */
  readonly #cache: JWKSCacheInput = {};
  readonly #remote: JWTVerifyGetKey;
  #failedAt = Number.NEGATIVE_INFINITY;

  constructor(url: URL) {
    this.#remote = createRemoteJWKSet(url, {
      cacheMaxAge: JWKS_TTL_MS,
      cooldownDuration: JWKS_MIN_INTERVAL_MS,
      timeoutDuration: JWKS_FETCH_TIMEOUT_MS,
      [jwksCache]: this.#cache,
    });
  }

  get keys(): JWK[] {
    return "jwks" in this.#cache ? this.#cache.jwks.keys : [];
  }

  getKey: JWTVerifyGetKey = async (header, token) => {
    if (Date.now() - this.#failedAt >= JWKS_MIN_INTERVAL_MS) {
      try {
        return await this.#remote(header, token);
      } catch (error) {
        if (isKeySelectionError(error)) throw error;
        this.#failedAt = Date.now();
        console.error("auth: could not fetch JWT_JWKS_URL; keeping the keys fetched before:", String(error));
      }
    }
    if (!("jwks" in this.#cache)) throw new errors.JWKSNoMatchingKey();
    return createLocalJWKSet(this.#cache.jwks)(header, token);
  };
}

const remotes = new Map<string, RemoteKeys | undefined>();

function remoteKeys(url: string): RemoteKeys | undefined {
  if (!remotes.has(url)) {
    const https = URL.canParse(url) && new URL(url).protocol === "https:";
    if (!https) console.error("auth: JWT_JWKS_URL must be an https URL; its keys are ignored");
    remotes.set(url, https ? new RemoteKeys(new URL(url)) : undefined);
  }
  return remotes.get(url);
}

/** Why a token was refused, in words that never repeat the token. */
function refusal(error: unknown, alg: Alg, kid: string | undefined, config: JwtConfig): SessionError {
  if (error instanceof SessionError) return error;
  if (error instanceof errors.JWTExpired) return refuse("token has expired");
  if (error instanceof errors.JWTClaimValidationFailed) return claimRefusal(error);
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return refuse("token signature does not verify");
  if (error instanceof errors.JWKSNoMatchingKey) {
    if (kid === undefined) return refuse(`no configured key verifies ${alg} tokens`);
    if (!knownKeys(config).some((key) => key.kid === kid)) return refuse("unknown token key id (kid)");
    return refuse(`the key named by the token's kid does not verify ${alg} tokens`);
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return malformed();
  if (error instanceof errors.JOSENotSupported)
    return refuse("token uses a JOSE feature this service refuses");
  console.error("auth: a token could not be verified:", error instanceof Error ? error.name : typeof error);
  return refuse("token could not be verified");
}

function claimRefusal(error: InstanceType<typeof errors.JWTClaimValidationFailed>): SessionError {
  const { claim, reason } = error;
  if (claim === "aud") return refuse("token audience (aud) does not match");
  if (claim === "iss") return refuse("token issuer (iss) does not match");
  if (claim === "exp" && reason === "missing") return refuse("token has no expiry (exp)");
  if (claim === "nbf" && reason === "check_failed") return refuse("token is not valid yet (nbf)");
  if (reason === "invalid") return refuse(`token claim ${claim} is not a number`);
  return refuse(`token claim ${claim} is not acceptable`);
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
  const claimed = claimAt(payload, config.accessClaim);
  if (claimed === undefined) return { tenant, access: "write" };
  const access = Access.safeParse(claimed);
  if (!access.success) {
    throw refuse(`token claim "${config.accessClaim}" must be "read" or "write"`);
  }
  return { tenant, access: access.data };
}
