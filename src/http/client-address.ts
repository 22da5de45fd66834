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

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HEXTET = /^[0-9a-f]{1,4}$/;

/** An IPv4 address's four octets, or undefined when it is not one. */
function ipv4Octets(text: string): [number, number, number, number] | undefined {
  const octets = IPV4.exec(text)?.slice(1).map(Number);
  return octets?.every((octet) => octet <= 255) ? (octets as [number, number, number, number]) : undefined;
}

/**
 * The groups of IPv6 text without `::`, or undefined; where it ends the address, its last two
 * groups may be written as an IPv4 address.
 */
function hextets(text: string, endsAddress: boolean): number[] | undefined {
  if (text === "") return [];
  const parts = text.split(":");
  const last = parts.at(-1) as string;
  const ipv4 = endsAddress && last.includes(".") ? ipv4Octets(last) : undefined;
  if (ipv4) {
    const [a, b, c, d] = ipv4;
    parts.splice(-1, 1, (a * 256 + b).toString(16), (c * 256 + d).toString(16));
  }
  if (!parts.every((part) => HEXTET.test(part))) return undefined;
  return parts.map((part) => Number.parseInt(part, 16));
}

/** An IPv6 address's eight groups (`::` and a trailing IPv4 address read), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  const halves = address.toLowerCase().split("::");
  if (halves.length > 2) return undefined;
  const head = hextets(halves[0] as string, halves.length === 1);
  const tail = halves.length === 2 ? hextets(halves[1] as string, true) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  return [...head, ...Array<number>(missing).fill(0), ...tail];
}

/**
 * The addresses one client is taken to hold, as a budget counts them: an IPv4 address itself (one
 * written as IPv6, `::ffff:a.b.c.d`, too); an IPv6 address by its /64, which a provider hands one
 * customer whole, so that a client cannot take a new budget with each address in it. Text that is
 * no address is its own range.
 */
export function addressRange(address: string): string {
  const octets = ipv4Octets(address);
  if (octets) return octets.join(".");
  const groups = ipv6Groups(address);
  if (!groups) return address;
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high, low] = groups.slice(6) as [number, number];
    return [high >> 8, high & 255, low >> 8, low & 255].join(".");
  }
  const network = groups.slice(0, 4).map((group) => group.toString(16));
  return `${network.join(":")}::/64`;
}
