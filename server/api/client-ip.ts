// Which client address counts for per-IP rate limits. By default the socket's peer address; only when
// the peer is a configured trusted proxy (an address or a CIDR range) is X-Forwarded-For consulted (right to left, skipping trusted
// hops), so a client can never choose its own rate-limit bucket by sending a header.
import type { H3Event } from 'h3';
import { getRequestIP } from 'h3';
import { trustedProxyMatcher } from '../base/net/trusted-proxies.ts';

export function clientIp(event: H3Event, trustedProxies: readonly string[]): string {
  const peer = normalise(getRequestIP(event) ?? 'unknown');
  if (trustedProxies.length === 0) return peer;
  const trusted = trustedProxyMatcher(trustedProxies);
  if (!trusted(peer)) return peer;
  const forwarded = (event.req.headers.get('x-forwarded-for') ?? '')
    .split(',')
    .map((s) => normalise(s.trim()))
    .filter(Boolean);
  for (let i = forwarded.length - 1; i >= 0; i--) {
    if (!trusted(forwarded[i]!)) return forwarded[i]!;
  }
  return peer;
}

function normalise(ip: string): string {
  return ip.startsWith('::ffff:') ? ip.slice(7) : ip;
}
