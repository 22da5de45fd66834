import type { BlobKind } from "../../core/blob-refs";
import { SessionError } from "../../core/errors";
import { numberSetting } from "../settings";

/*
 * Short-lived URLs of blobs, for `?blobs=url`: `GET /v1/blobs/<tenant key>/<kind>/<sha256>` with
 * `expires` (Unix seconds) and `signature`, and `jurisdiction` for a pinned tenant's. The
 * signature is HMAC-SHA256 (Web Crypto) keyed with BLOB_URL_SECRET over the message
 *
 *   cf-sessions-blob-url/v1 \n <jurisdiction or empty> \n <tenant key> \n <kind> \n <sha256> \n <expires>
 *
 * in base64url without padding. Whoever holds the URL may read that one blob until it expires;
 * nothing else about it is secret.
 */

export const MIN_SECRET_BYTES = 32;
const DEFAULT_TTL_SECONDS = 900;
const MAX_TTL_SECONDS = 7 * 24 * 3600;

export interface BlobAddress {
  jurisdiction: string | undefined;
  tenantKey: string;
  kind: BlobKind;
  sha256: string;
}

let cached: { secret: string; key: Promise<CryptoKey> } | undefined;

/** The HMAC key of the secret; `misconfigured` when it is too short to be one. */
function hmacKey(secret: string): Promise<CryptoKey> {
  if (cached?.secret === secret) return cached.key;
  const bytes = new TextEncoder().encode(secret);
  if (bytes.byteLength < MIN_SECRET_BYTES) {
    throw new SessionError(
      "misconfigured",
      `BLOB_URL_SECRET must be at least ${MIN_SECRET_BYTES} bytes; blob URLs are not signed until it is`,
    );
  }
  const key = crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
  cached = { secret, key };
  return key;
}

function message(address: BlobAddress, expires: number): Uint8Array {
  const { jurisdiction, tenantKey, kind, sha256 } = address;
  return new TextEncoder().encode(
    ["cf-sessions-blob-url/v1", jurisdiction ?? "", tenantKey, kind, sha256, String(expires)].join("\n"),
  );
}

function base64url(bytes: ArrayBuffer): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
    return Uint8Array.from(binary, (char) => char.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** Seconds a signed URL stays valid (BLOB_URL_TTL_SECONDS, default 900, at most a week). */
export function urlTtlSeconds(setting: string | undefined): number {
  return numberSetting(setting, DEFAULT_TTL_SECONDS, { min: 1, max: MAX_TTL_SECONDS });
}

/** A URL (on `origin`) that reads one blob until `expires` (Unix seconds). */
export async function signBlobUrl(
  secret: string,
  origin: string,
  address: BlobAddress,
  expires: number,
): Promise<string> {
  const signature = await crypto.subtle.sign("HMAC", await hmacKey(secret), message(address, expires));
  const query = new URLSearchParams();
  if (address.jurisdiction !== undefined) query.set("jurisdiction", address.jurisdiction);
  query.set("expires", String(expires));
  query.set("signature", base64url(signature));
  return `${origin}/v1/blobs/${address.tenantKey}/${address.kind}/${address.sha256}?${query}`;
}

/** Whether a signature is the one of this address and expiry (compared in constant time by Web Crypto). */
export async function verifyBlobUrl(
  secret: string,
  address: BlobAddress,
  expires: number,
  signature: string,
): Promise<boolean> {
  const bytes = fromBase64url(signature);
  if (bytes?.byteLength !== 32) return false;
  return crypto.subtle.verify("HMAC", await hmacKey(secret), bytes, message(address, expires));
}
