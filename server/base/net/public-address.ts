// Outbound requests to addresses a tenant or a browser chose (web push endpoints) must not reach
// Herald's own network: only public unicast addresses are allowed (isNonPublicAddress). The check runs in the socket's DNS lookup, so a name that resolves (or later
// re-resolves) to an internal address is refused too; IP-literal hosts are checked before connecting.
import { lookup as dnsLookup, promises as dnsPromises, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Public means ipaddr.js's 'unicast': every range of the IANA IPv4 and IPv6 special-purpose registries
 * (loopback, private, link-local and cloud metadata, carrier-grade NAT, documentation, benchmarking,
 * Teredo, ORCHID, local-use NAT64 64:ff9b:1::/48, IPv4-translated ::ffff:0:0:0/96, discard-only,
 * multicast, reserved) is something else. IPv6 forms that carry an IPv4 address the packets go on to
 * are judged by that address: IPv4-mapped, IPv4-compatible, the well-known NAT64 prefix 64:ff9b::/96
 * and 6to4.
 */
export function isNonPublicAddress(ip: string): boolean {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(ip.replace(/%.*$/, ''));
  } catch {
    return true; // not an address at all
  }
  if (address.kind() === 'ipv6') {
    const v6 = address as ipaddr.IPv6;
    const carried = carriedIPv4(v6);
    if (carried) return isNonPublicAddress(carried);
  }
  return address.range() !== 'unicast';
}

const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96') as [ipaddr.IPv6, number];
const SIX_TO_FOUR = ipaddr.parseCIDR('2002::/16') as [ipaddr.IPv6, number];

function carriedIPv4(address: ipaddr.IPv6): string | null {
  if (address.isIPv4MappedAddress()) return address.toIPv4Address().toString();
  const parts = address.parts;
  const v4 = (hi: number, lo: number) => `${hi >>> 8}.${hi & 0xff}.${lo >>> 8}.${lo & 0xff}`;
  // IPv4-compatible (::a.b.c.d, deprecated), which ipaddr.js calls unicast; :: and ::1 are their own ranges.
  if (parts.slice(0, 6).every((p) => p === 0) && (parts[6] !== 0 || parts[7]! > 1)) return v4(parts[6]!, parts[7]!);
  if (address.match(NAT64_WELL_KNOWN)) return v4(parts[6]!, parts[7]!);
  if (address.match(SIX_TO_FOUR)) return v4(parts[1]!, parts[2]!);
  return null;
}

export class NonPublicAddressError extends Error {
  override name = 'NonPublicAddressError';
}

/** Throws for a URL whose host is an IP literal in a non-public range (Node does not call `lookup` for those). */
export function assertPublicHost(url: URL): void {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && isNonPublicAddress(host)) throw new NonPublicAddressError(`${host} is not a public address`);
  if (host === 'localhost' || host.endsWith('.localhost'))
    throw new NonPublicAddressError(`${host} is not a public address`);
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for http(s).request that only ever connects to public addresses. */
export function publicOnlyLookup(
  hostname: string,
  options: { all?: boolean; family?: number | string },
  callback: LookupCallback,
): void {
  dnsLookup(
    hostname,
    { ...options, all: true } as never,
    (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      if (error) return callback(error, []);
      const allowed = addresses.filter((a) => !isNonPublicAddress(a.address));
      if (allowed.length === 0)
        return callback(new NonPublicAddressError(`${hostname} resolves only to non-public addresses`), []);
      if (options.all) return callback(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    },
  );
}

/**
 * Whether a hostname (or IP literal) reaches only public addresses. For clients that resolve names
 * themselves (nodemailer), checked before each connection; a name that does not resolve is not public.
 */
export async function resolvesPublicly(host: string): Promise<boolean> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost' || bare.endsWith('.localhost')) return false;
  if (isIP(bare)) return !isNonPublicAddress(bare);
  try {
    const addresses = await dnsPromises.lookup(bare, { all: true });
    return addresses.length > 0 && addresses.every((a) => !isNonPublicAddress(a.address));
  } catch {
    return false;
  }
}

/**
 * Whether a hostname (or IP literal) is known to reach only non-public addresses: a non-public literal,
 * localhost, or a name whose every address is non-public. A name that does not resolve now is not
 * known to be private (for checks at registration, where the send checks again as it connects).
 */
export async function resolvesOnlyPrivately(host: string): Promise<boolean> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (isIP(bare)) return isNonPublicAddress(bare);
  try {
    const addresses = await dnsPromises.lookup(bare, { all: true });
    return addresses.length > 0 && addresses.every((a) => isNonPublicAddress(a.address));
  } catch {
    return false;
  }
}
