/*
 * Where a request comes from. Cloudflare's edge sets `CF-Connecting-IP` to the client's address,
 * replacing any value the client sent. workerd's local server (`wrangler dev`) sets it from the
 * socket too, but passes a value the client sent through unchanged: locally it is only proof of
 * a loopback connection while the server listens on loopback alone (see dev-tenant.ts).
 */

/** The client's address, or undefined when it is missing or not one single value. */
export function clientAddress(headers: Headers): string | undefined {
  const value = headers.get("CF-Connecting-IP")?.trim();
  if (!value || value.length > 64 || /[\s,]/.test(value)) return undefined;
  return value;
}

const LOOPBACK_V4 = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function isLoopbackV4(address: string): boolean {
  const match = LOOPBACK_V4.exec(address);
  return match?.slice(1).every((octet) => Number(octet) <= 255) ?? false;
}

/** 127.0.0.0/8, ::1, and IPv4 loopback written as an IPv6 address. */
export function isLoopbackAddress(address: string): boolean {
  const lower = address.toLowerCase();
  if (lower === "::1" || lower === "0:0:0:0:0:0:0:1") return true;
  if (lower.startsWith("::ffff:")) return isLoopbackV4(lower.slice("::ffff:".length));
  return isLoopbackV4(lower);
}

/** A host name that can only mean this machine: `localhost`, a 127.x.x.x address or `[::1]`. */
export function isLoopbackHostname(hostname: string): boolean {
  const lower = hostname.toLowerCase();
  return lower === "localhost" || lower === "[::1]" || isLoopbackV4(lower);
}
