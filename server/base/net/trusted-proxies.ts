// Trusted proxies (config trustedProxies): exact addresses or CIDR ranges (10.0.0.0/8, fd00::/8),
// matched whatever the spelling (an IPv4-mapped IPv6 peer matches its IPv4 entry).
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Whether an entry of trustedProxies is an address or a CIDR range (in the usual notation only). */
export function isProxyEntry(entry: string): boolean {
  const [address, bits, ...rest] = entry.split('/');
  if (rest.length > 0 || isIP(address!) === 0) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && safely(() => ipaddr.parseCIDR(entry)) !== null);
}

const matchers = new WeakMap<readonly string[], (ip: string) => boolean>();

/** A test for "this address is one of the trusted proxies", built once per list. */
export function trustedProxyMatcher(entries: readonly string[]): (ip: string) => boolean {
  let matcher = matchers.get(entries);
  if (!matcher) {
    const ranges = entries.map((entry) =>
      entry.includes('/') ? ipaddr.parseCIDR(entry) : ([ipaddr.parse(entry), entry.includes(':') ? 128 : 32] as const),
    );
    matcher = (ip: string) => {
      const address = safely(() => ipaddr.process(ip));
      if (!address) return false;
      // Same kind on both sides, so the IPv4 signature stands for either.
      return ranges.some(
        ([base, bits]) => address.kind() === base.kind() && (address as ipaddr.IPv4).match(base as ipaddr.IPv4, bits),
      );
    };
    matchers.set(entries, matcher);
  }
  return matcher;
}

function safely<T>(f: () => T): T | null {
  try {
    return f();
  } catch {
    return null;
  }
}
