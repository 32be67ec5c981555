// Outbound connections to addresses a tenant or a browser chose (web push endpoints, webhook URLs,
// SMTP hosts) must not reach Herald's own network: only public unicast addresses are allowed
// (isNonPublicAddress). A name is resolved once and the connection goes to the addresses that check
// saw, never to the name again: HTTP clients through publicOnlyLookup (the socket's own lookup), SMTP
// through checkedAddresses (smtp-connections.ts connects to them). IP-literal hosts, which Node does
// not look up, are checked before connecting (assertPublicHost).
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

/** A host as URLs and settings spell it, without the brackets of an IPv6 literal. */
function bareHost(host: string): string {
  return host.replace(/^\[|\]$/g, '');
}

/** `localhost` and the names under it (absolute or not) are loopback whatever a resolver says (RFC 6761). */
function isLocalhost(bare: string): boolean {
  const name = bare.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** Throws for a URL whose host is an IP literal in a non-public range (Node does not call `lookup` for those). */
export function assertPublicHost(url: URL): void {
  const host = bareHost(url.hostname);
  if ((isIP(host) && isNonPublicAddress(host)) || isLocalhost(host))
    throw new NonPublicAddressError(`${host} is not a public address`);
}

/** The addresses among `addresses` that may be connected to: the public ones, or every one when `allowPrivate`. */
function connectable(addresses: LookupAddress[], allowPrivate: boolean): LookupAddress[] {
  return allowPrivate ? addresses : addresses.filter((a) => !isNonPublicAddress(a.address));
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
      const allowed = connectable(addresses, false);
      if (allowed.length === 0)
        return callback(new NonPublicAddressError(`${hostname} resolves only to non-public addresses`), []);
      if (options.all) return callback(null, allowed);
      callback(null, allowed[0]!.address, allowed[0]!.family);
    },
  );
}

export interface ResolveOptions {
  /** DNS servers (`host:port`) asked instead of the system's resolver (config.dnsServers). */
  dnsServers?: readonly string[];
}

/** How long a resolution through dnsServers may take per try (two tries). */
const DNS_TIMEOUT_MS = 5_000;

/**
 * Every address a host name (or IP literal) resolves to, asked once: through config.dnsServers when
 * set (A and AAAA records), else the system's resolver (getaddrinfo, /etc/hosts included). Rejects as
 * the resolution fails (ENOTFOUND and the like: a DNS failure, worth trying again later).
 */
export async function resolveHost(host: string, options: ResolveOptions = {}): Promise<LookupAddress[]> {
  const bare = bareHost(host);
  const family = isIP(bare);
  if (family) return [{ address: bare, family }];
  const servers = options.dnsServers ?? [];
  if (servers.length === 0) return dnsPromises.lookup(bare, { all: true, order: 'verbatim' });
  if (isLocalhost(bare))
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  // Nothing is cached here: each connection asks afresh, so an answer is never kept past its TTL.
  const resolver = new dnsPromises.Resolver({ timeout: DNS_TIMEOUT_MS, tries: 2 });
  resolver.setServers([...servers]);
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(bare), resolver.resolve6(bare)]);
  const addresses = [
    ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
    ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
  ];
  if (addresses.length > 0) return addresses;
  throw v4.status === 'rejected' ? v4.reason : new Error(`${bare} has no addresses`);
}

export interface GuardOptions extends ResolveOptions {
  /** Let the connection reach non-public addresses too (the allowPrivate* settings); resolved once all the same. */
  allowPrivate?: boolean;
}

/**
 * The addresses a connection to `host` may go to, resolved once: its public ones (every one when
 * `allowPrivate`). The caller connects to these and never resolves the name again, so a name that
 * answers a public address to a check and an internal one to the connection (DNS rebinding) gets
 * nowhere. Rejects with NonPublicAddressError when none is left, else as the resolution fails.
 */
export async function checkedAddresses(host: string, options: GuardOptions = {}): Promise<LookupAddress[]> {
  const bare = bareHost(host);
  if (!options.allowPrivate && isLocalhost(bare)) throw new NonPublicAddressError(`${bare} is not a public address`);
  const allowed = connectable(await resolveHost(bare, options), options.allowPrivate ?? false);
  if (allowed.length === 0) throw new NonPublicAddressError(`${bare} resolves only to non-public addresses`);
  return allowed;
}

/** What a registration check learns of a host: it reaches only public addresses, some other one, or nothing now. */
export type HostReach = 'public' | 'non_public' | 'unresolved';

/** Whether a hostname (or IP literal) reaches only public addresses, for checks at registration. */
export async function hostReach(host: string, options: ResolveOptions = {}): Promise<HostReach> {
  const bare = bareHost(host);
  if (isLocalhost(bare)) return 'non_public';
  let addresses: LookupAddress[];
  try {
    addresses = await resolveHost(bare, options);
  } catch {
    return 'unresolved';
  }
  if (addresses.length === 0) return 'unresolved';
  return addresses.every((a) => !isNonPublicAddress(a.address)) ? 'public' : 'non_public';
}

const HOST_UNRESOLVED = 'the host name does not resolve (check its spelling, or try again if DNS is failing)';

/**
 * Why a registration check refuses a host, as its 422 message: `refused` (the caller's, naming the
 * setting that allows private addresses) for a non-public one, or that it does not resolve; null
 * when it reaches only public addresses.
 */
export async function hostRefusal(host: string, options: ResolveOptions, refused: string): Promise<string | null> {
  const reach = await hostReach(host, options);
  return reach === 'public' ? null : reach === 'unresolved' ? HOST_UNRESOLVED : refused;
}

/**
 * Whether a hostname (or IP literal) is known to reach only non-public addresses: a non-public literal,
 * localhost, or a name whose every address is non-public. A name that does not resolve now is not
 * known to be private (for checks at registration, where the send checks again as it connects).
 */
export async function resolvesOnlyPrivately(host: string, options: ResolveOptions = {}): Promise<boolean> {
  const bare = bareHost(host);
  if (isLocalhost(bare)) return true;
  try {
    const addresses = await resolveHost(bare, options);
    return addresses.length > 0 && addresses.every((a) => isNonPublicAddress(a.address));
  } catch {
    return false;
  }
}
