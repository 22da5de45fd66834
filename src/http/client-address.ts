import ipaddr from "ipaddr.js";

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

/**
 * An address as written by an edge or a socket: IPv4 in four decimal parts only (not the octal,
 * hex or shortened forms a URL parser takes), or IPv6; an IPv4 address written as IPv6
 * (`::ffff:a.b.c.d`) is read as the IPv4 address. Undefined for anything else.
 */
function parsedAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (!ipaddr.IPv6.isValid(text)) return undefined;
  const address = ipaddr.IPv6.parse(text);
  return address.isIPv4MappedAddress() ? address.toIPv4Address() : address;
}

/** 127.0.0.0/8, ::1, and IPv4 loopback written as an IPv6 address. */
export function isLoopbackAddress(address: string): boolean {
  return parsedAddress(address)?.range() === "loopback";
}

/** A host name that can only mean this machine: `localhost`, a 127.x.x.x address or `[::1]`. */
export function isLoopbackHostname(hostname: string): boolean {
  const lower = hostname.toLowerCase();
  if (lower === "localhost") return true;
  const bracketed = /^\[(.*)\]$/.exec(lower)?.[1];
  const address = bracketed === undefined ? ipaddr.IPv4.isValidFourPartDecimal(lower) && lower : bracketed;
  return address ? isLoopbackAddress(address) : false;
}

/**
 * The addresses one client is taken to hold, as a budget counts them: an IPv4 address itself (one
 * written as IPv6, `::ffff:a.b.c.d`, too); an IPv6 address by its /64, which a provider hands one
 * customer whole, so that a client cannot take a new budget with each address in it. Text that is
 * no address is its own range.
 */
export function addressRange(address: string): string {
  const parsed = parsedAddress(address);
  if (!parsed) return address;
  if (parsed.kind() === "ipv4") return parsed.toString();
  const network = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((group) => group.toString(16));
  return `${network.join(":")}::/64`;
}
