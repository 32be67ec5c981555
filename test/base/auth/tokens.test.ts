// Signed tokens: kind, subject, tenant and expiry are verified; anything altered is rejected.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { TokenSigner } from '../../../server/base/auth/tokens.ts';

const signer = new TokenSigner(randomBytes(32));
const now = Date.UTC(2026, 0, 1);

describe('TokenSigner', () => {
  it('verifies its own tokens with their claims', () => {
    const token = signer.sign('contact', 'contact-1', 'tenant-1', 3600, now);
    expect(signer.verify(token, now + 1000)).toMatchObject({ typ: 'contact', sub: 'contact-1', tid: 'tenant-1' });
  });

  it('rejects an expired token', () => {
    const token = signer.sign('access', 'user-1', 'tenant-1', 60, now);
    expect(signer.verify(token, now + 59_000)).not.toBeNull();
    expect(signer.verify(token, now + 60_000)).toBeNull();
  });

  it('rejects a token signed with another key', () => {
    const other = new TokenSigner(randomBytes(32));
    expect(signer.verify(other.sign('access', 'u', 't', 60, now), now)).toBeNull();
  });

  it('rejects a token whose payload was altered', () => {
    const [h, , s] = signer.sign('contact', 'c1', 't1', 60, now).split('.');
    const forged = Buffer.from(JSON.stringify({ typ: 'access', sub: 'c1', tid: 't1', iat: 0, exp: 9e9 })).toString(
      'base64url',
    );
    expect(signer.verify(`${h}.${forged}.${s}`, now)).toBeNull();
  });

  it('rejects alg none and garbage', () => {
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"typ":"access","sub":"u","tid":"t","exp":9999999999}').toString('base64url')}.`;
    expect(signer.verify(none, now)).toBeNull();
    expect(signer.verify('not-a-token', now)).toBeNull();
  });
});
