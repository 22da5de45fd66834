import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JSONWebKeySet,
  type JWK,
  type JWTVerifyGetKey,
} from "jose";
import { SessionError } from "../core/errors";
import { tryParseJson } from "../core/json";
import { isRecord } from "../core/providers/incoming";
import { checkedSetting } from "./checked-setting";
import type { WorkerEnv } from "./env";

/*
 * The JWT settings, read once per value and checked as a whole: a secret too short for HS256, an
 * inline JWKS that is not one, a JWKS URL that is not https or a clock skew that is not a number
 * make every /v1 request answer 503 `misconfigured` (the reason in the log), as an invalid API_KEYS
 * does. An operator then looks at the configuration, not at the callers' tokens.
 */

export interface JwtConfig {
  /** The HS256 key (JWT_SECRET's UTF-8 bytes); HS256 is refused without it. */
  secret: Uint8Array | undefined;
  /** The RS256 and ES256 keys: the inline set first, then the one at the URL. */
  keys: JwtKeys | undefined;
  audience: string | undefined;
  issuer: string | undefined;
  skewSeconds: number;
  tenantClaim: string;
  accessClaim: string;
}

export interface JwtKeys {
  getKey: JWTVerifyGetKey;
  /** Every key the sets hold right now (to say why none fitted a token). */
  known(): JWK[];
}

const DEFAULT_SKEW_SECONDS = 60;
/** RFC 7518 §3.2: an HS256 key shorter than the hash output must not be used. */
const MIN_SECRET_BYTES = 32;
const JWKS_TTL_MS = 5 * 60_000;
/** A token with a made-up `kid`, or an issuer that is down, must not turn into a flood of fetches. */
const JWKS_MIN_INTERVAL_MS = 30_000;
const JWKS_FETCH_TIMEOUT_MS = 5_000;

const SETTINGS = [
  "JWT_SECRET",
  "JWT_JWKS",
  "JWT_JWKS_URL",
  "JWT_AUDIENCE",
  "JWT_ISSUER",
  "JWT_CLOCK_SKEW_SECONDS",
  "JWT_TENANT_CLAIM",
  "JWT_ACCESS_CLAIM",
] as const;

const settings = checkedSetting<JwtConfig | undefined>(
  "JWT settings",
  "the JWT settings are invalid, so every /v1 request answers 503 until they are fixed",
);

/**
 * The JWT settings of `env`, or undefined when no way to verify a token is configured;
 * `misconfigured` when a setting is invalid, logged once for each value the settings take.
 */
export function jwtConfig(env: WorkerEnv): JwtConfig | undefined {
  return settings(JSON.stringify(SETTINGS.map((name) => env[name] ?? null)), () => readConfig(env));
}

function readConfig(env: WorkerEnv): JwtConfig | undefined {
  if (!env.JWT_SECRET && !env.JWT_JWKS && !env.JWT_JWKS_URL) return undefined;
  const inline = env.JWT_JWKS ? inlineKeys(env.JWT_JWKS) : undefined;
  const remote = env.JWT_JWKS_URL ? remoteKeys(env.JWT_JWKS_URL) : undefined;
  return {
    secret: env.JWT_SECRET ? secretBytes(env.JWT_SECRET) : undefined,
    keys: inline || remote ? combined(inline, remote) : undefined,
    audience: env.JWT_AUDIENCE || undefined,
    issuer: env.JWT_ISSUER || undefined,
    skewSeconds: skewSeconds(env.JWT_CLOCK_SKEW_SECONDS),
    tenantClaim: env.JWT_TENANT_CLAIM || "tenant",
    accessClaim: env.JWT_ACCESS_CLAIM || "access",
  };
}

function secretBytes(secret: string): Uint8Array {
  const bytes = new TextEncoder().encode(secret);
  if (bytes.byteLength < MIN_SECRET_BYTES) {
    throw new Error(`JWT_SECRET is shorter than ${MIN_SECRET_BYTES} bytes, too short for HS256`);
  }
  return bytes;
}

function skewSeconds(value: string | undefined): number {
  if (!value) return DEFAULT_SKEW_SECONDS;
  const skew = Number(value);
  if (!Number.isFinite(skew) || skew < 0) {
    throw new Error("JWT_CLOCK_SKEW_SECONDS must be a number of seconds, 0 or more");
  }
  return skew;
}

function inlineKeys(source: string): JwtKeys {
  const jwks = tryParseJson(source);
  if (jwks === undefined) throw new Error("JWT_JWKS is not valid JSON");
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (typeof jwks !== "object" || !Array.isArray(keys)) {
    throw new Error('JWT_JWKS must be a JWKS: {"keys": [...]}');
  }
  const set: JSONWebKeySet = { keys: keys.filter((key): key is JWK => isRecord(key)) };
  return { getKey: createLocalJWKSet(set), known: () => set.keys };
}

/** The inline keys first, then the ones at the URL. */
function combined(inline: JwtKeys | undefined, remote: JwtKeys | undefined): JwtKeys {
  return {
    getKey: async (header, token) => {
      if (inline) {
        try {
          return await inline.getKey(header, token);
        } catch (error) {
          if (!remote || !(error instanceof errors.JWKSNoMatchingKey)) throw error;
        }
      }
      if (!remote) throw new errors.JWKSNoMatchingKey();
      return remote.getKey(header, token);
    },
    known: () => [...(inline?.known() ?? []), ...(remote?.known() ?? [])],
  };
}

/** jose's errors that mean "no key for this token", as opposed to "the key set could not be had". */
function isKeySelectionError(error: unknown): boolean {
  return (
    error instanceof errors.JWKSNoMatchingKey ||
    error instanceof errors.JWKSMultipleMatchingKeys ||
    error instanceof errors.JOSENotSupported
  );
}

/** One remote key set per URL for the isolate's life: its cache outlives a change of other settings. */
const remotes = new Map<string, JwtKeys>();

/**
 * The keys at a JWKS URL, through jose's remote key set (cached for five minutes, fetched again for
 * an unknown `kid` at most every 30 seconds, a timeout on each fetch). What jose does not do is
 * added here: a failed fetch keeps the keys fetched before and is not retried for 30 seconds, so an
 * issuer that is down neither locks every caller out at once nor turns each token into a request.
 * With no keys fetched before, a token cannot be checked at all: that is `unavailable` (503, to be
 * tried again when the next fetch may be made), not a refusal of the token.
 */
function remoteKeys(url: string): JwtKeys {
  if (!URL.canParse(url) || new URL(url).protocol !== "https:") {
    throw new Error("JWT_JWKS_URL must be an https URL");
  }
  let keys = remotes.get(url);
  if (keys) return keys;
  const remote = createRemoteJWKSet(new URL(url), {
    cacheMaxAge: JWKS_TTL_MS,
    cooldownDuration: JWKS_MIN_INTERVAL_MS,
    timeoutDuration: JWKS_FETCH_TIMEOUT_MS,
  });
  let failedAt = Number.NEGATIVE_INFINITY;
  const fetched = () => remote.jwks();
  keys = {
    known: () => fetched()?.keys ?? [],
    getKey: async (header, token) => {
      if (Date.now() - failedAt >= JWKS_MIN_INTERVAL_MS) {
        try {
          return await remote(header, token);
        } catch (error) {
          if (isKeySelectionError(error)) throw error;
          failedAt = Date.now();
          console.error(
            "auth: could not fetch JWT_JWKS_URL; keeping the keys fetched before:",
            String(error),
          );
        }
      }
      const before = fetched();
      if (!before) {
        const wait = Math.ceil((failedAt + JWKS_MIN_INTERVAL_MS - Date.now()) / 1000);
        throw new SessionError(
          "unavailable",
          "the service cannot fetch the keys that verify tokens; try again",
          {
            retryAfterSeconds: Math.max(1, wait),
            outcome: "not_applied",
          },
        );
      }
      return createLocalJWKSet(before)(header, token);
    },
  };
  remotes.set(url, keys);
  return keys;
}
