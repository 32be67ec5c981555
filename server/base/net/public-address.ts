// Outbound requests to addresses a tenant or a browser chose (web push endpoints) must not reach
// Herald's own network: loopback, private, link-local, carrier-grade NAT, multicast and reserved
// ranges are refused. The check runs in the socket's DNS lookup, so a name that resolves (or later
// re-resolves) to an internal address is refused too; IP-literal hosts are checked before connecting.
import { lookup as dnsLookup, promises as dnsPromises, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';

const V4_BLOCKED: Array<[number, number]> = [
  [0x00000000, 8], // 0.0.0.0/8 "this network"
  [0x0a000000, 8], // 10/8
  [0x64400000, 10], // 100.64/10 carrier-grade NAT
  [0x7f000000, 8], // 127/8 loopback
  [0xa9fe0000, 16], // 169.254/16 link-local (cloud metadata)
  [0xac100000, 12], // 172.16/12
  [0xc0000000, 24], // 192.0.0/24 IETF protocol assignments
  [0xc0000200, 24], // 192.0.2/24 documentation
  [0xc0a80000, 16], // 192.168/16
  [0xc6120000, 15], // 198.18/15 benchmarking
  [0xc6336400, 24], // 198.51.100/24 documentation
  [0xcb007100, 24], // 203.0.113/24 documentation
  [0xe0000000, 4], // 224/4 multicast
  [0xf0000000, 4], // 240/4 reserved, broadcast
];

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((n, part) => (n << 8) + Number(part), 0) >>> 0;
}

/** The eight 16-bit groups of an IPv6 address (also in dotted-tail or compressed form). */
function ipv6Groups(ip: string): number[] | null {
  let text = ip.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4ToInt(dotted[1]!);
    text = text.slice(0, -dotted[1]!.length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

const v4FromGroups = (hi: number, lo: number) => `${hi >>> 8}.${hi & 0xff}.${lo >>> 8}.${lo & 0xff}`;

export function isNonPublicAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) {
    const n = v4ToInt(ip);
    return V4_BLOCKED.some(([base, bits]) => n >>> (32 - bits) === base >>> (32 - bits));
  }
  if (family === 6) {
    const g = ipv6Groups(ip);
    if (!g) return true;
    const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
    // IPv6 forms that carry an IPv4 address are judged by that address (in any spelling, hex included):
    // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64), 2002:AABB:CCDD:: (6to4).
    if (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) {
      if (g[5] === 0 && g[6] === 0 && (g[7] === 0 || g[7] === 1)) return true; // :: and ::1
      return isNonPublicAddress(v4FromGroups(g[6]!, g[7]!));
    }
    if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return isNonPublicAddress(v4FromGroups(g[6]!, g[7]!));
    if (g[0] === 0x2002) return isNonPublicAddress(v4FromGroups(g[1]!, g[2]!));
    const first = g[0]!;
    return (
      (first & 0xfe00) === 0xfc00 /* fc00::/7 unique local */ ||
      (first & 0xffc0) === 0xfe80 /* fe80::/10 link-local */ ||
      (first & 0xffc0) === 0xfec0 /* fec0::/10 site-local (deprecated) */ ||
      (first & 0xff00) === 0xff00 /* multicast */ ||
      (first === 0x2001 && g[1] === 0x0db8) /* documentation */
    );
  }
  return true; // not an address at all
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
