import {
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  jwtVerify,
  type ProtectedHeaderParameters,
} from "jose";
import { SessionError } from "../core/errors";
import { isRecord } from "../core/providers/incoming";
import { Access, type Caller } from "./access";
import type { JwtConfig } from "./jwt-config";

/*
 * JWT bearer tokens, accepted next to API keys (auth.ts), verified by `jose` with the keys
 * jwt-config.ts reads. What stays here is what a token means to us. HS256 is verified with the
 * shared secret `JWT_SECRET`; RS256 and ES256 (P-256) with public keys from a JWKS. Each `alg` has
 * exactly one source of keys, and jose is told the one algorithm it may accept: HS256 only ever uses
 * JWT_SECRET, so a JWKS key can never be turned into an HMAC secret (algorithm confusion); RS256 and
 * ES256 only JWKS keys of their type and curve.
 */

type Alg = "HS256" | "RS256" | "ES256";
type JsonObject = Record<string, unknown>;

const refuse = (message: string) => new SessionError("unauthorized", message);
const malformed = () => refuse("malformed token");

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

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
  const { alg, key } = accepted(header, config);
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
      key instanceof Uint8Array
        ? (await jwtVerify(token, key, options)).payload
        : await verifyWithJwks(token, key, options);
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

/** The token's algorithm and the one source of keys it may be verified with. */
function accepted(
  header: ProtectedHeaderParameters,
  config: JwtConfig,
): { alg: Alg; key: Uint8Array | JWTVerifyGetKey } {
  const alg: unknown = header.alg;
  if (typeof alg === "string" && alg.toLowerCase() === "none") {
    throw refuse('unsigned tokens (alg "none") are refused');
  }
  if (!isAlg(alg)) throw refuse("token alg is not supported (HS256, RS256 and ES256 are)");
  const key = alg === "HS256" ? config.secret : config.keys?.getKey;
  if (!key) throw refuse(`${alg} tokens are not accepted by this service`);
  if (header.kid !== undefined && typeof header.kid !== "string") throw malformed();
  return { alg, key };
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

/** Why a token was refused, in words that never repeat the token. */
function refusal(error: unknown, alg: Alg, kid: string | undefined, config: JwtConfig): SessionError {
  if (error instanceof SessionError) return error;
  if (error instanceof errors.JWTExpired) return refuse("token has expired");
  if (error instanceof errors.JWTClaimValidationFailed) return claimRefusal(error);
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return refuse("token signature does not verify");
  if (error instanceof errors.JWKSNoMatchingKey) {
    if (kid === undefined) return refuse(`no configured key verifies ${alg} tokens`);
    if (!config.keys?.known().some((key) => key.kid === kid)) return refuse("unknown token key id (kid)");
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
    if (!isRecord(value) || !Object.hasOwn(value, part)) return undefined;
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
