// trustedProxies entries: exact addresses and CIDR ranges, matched whatever the peer's spelling; a
// malformed entry is refused when the configuration loads.
import { describe, expect, it } from 'vitest';
import { isProxyEntry, trustedProxyMatcher } from '../../../server/base/net/trusted-proxies.ts';
import { loadConfig } from '../../../server/base/config.ts';

describe('trustedProxyMatcher', () => {
  const trusted = trustedProxyMatcher(['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '2001:db8::1']);
  it.each(['10.0.0.1', '10.255.255.254', '::ffff:10.1.2.3', '192.168.1.7', 'fd12::1', '2001:db8::1', '2001:db8:0::1'])(
    'trusts %s',
    (ip) => expect(trusted(ip)).toBe(true),
  );
  it.each(['11.0.0.1', '192.168.1.8', 'fe80::1', '2001:db8::2', 'unknown', ''])('does not trust %s', (ip) =>
    expect(trusted(ip)).toBe(false),
  );
});

describe('trustedProxies in the configuration', () => {
  it('takes addresses and CIDR ranges, from the environment too', () => {
    const config = loadConfig({}, { HERALD_TRUSTED_PROXIES: '10.0.0.0/8,::1' });
    expect(config.trustedProxies).toEqual(['10.0.0.0/8', '::1']);
  });
  it.each(['10.0.0.0/33', 'proxy.internal', '10.0.0', 'fd00::/129'])('refuses %s', (entry) => {
    expect(isProxyEntry(entry)).toBe(false);
    expect(() => loadConfig({ trustedProxies: [entry] }, {})).toThrow(/trustedProxies/);
  });
});
