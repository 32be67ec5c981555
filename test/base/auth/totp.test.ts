// TOTP against RFC 6238's own test vectors (Appendix B, HMAC-SHA1, the 8-digit codes' last six digits),
// the drift window of one step either side, and the recovery codes' alphabet, form and hashing.
import { describe, expect, it } from 'vitest';
import {
  RECOVERY_CODE_PATTERN,
  hashRecoveryCode,
  matchingTotpStep,
  newRecoveryCode,
  totpStep,
  totpUri,
} from '../../../server/base/auth/totp.ts';

const RFC_SECRET = Buffer.from('12345678901234567890', 'ascii');
// [unix seconds, 8-digit TOTP] from RFC 6238 Appendix B (SHA1 rows).
const VECTORS: Array<[number, string]> = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

describe('matchingTotpStep', () => {
  it("accepts RFC 6238's codes at their time and names their step", () => {
    for (const [seconds, code] of VECTORS) {
      expect(matchingTotpStep(RFC_SECRET, code.slice(-6), seconds * 1000), String(seconds)).toBe(
        Math.floor(seconds / 30),
      );
    }
  });

  it('accepts a code one step early or late, and nothing further off', () => {
    const code = VECTORS[1]![1].slice(-6);
    const at = VECTORS[1]![0] * 1000;
    expect(matchingTotpStep(RFC_SECRET, code, at + 30_000)).toBe(totpStep(at));
    expect(matchingTotpStep(RFC_SECRET, code, at - 30_000)).toBe(totpStep(at));
    expect(matchingTotpStep(RFC_SECRET, code, at + 60_000)).toBeNull();
    expect(matchingTotpStep(RFC_SECRET, code, at - 60_000)).toBeNull();
  });

  it('refuses another secret, a wrong code and a malformed one', () => {
    const [seconds, code] = VECTORS[0]!;
    expect(matchingTotpStep(Buffer.from('another secret of 20b'), code.slice(-6), seconds * 1000)).toBeNull();
    expect(matchingTotpStep(RFC_SECRET, '000000', seconds * 1000)).toBeNull();
    expect(matchingTotpStep(RFC_SECRET, code, seconds * 1000)).toBeNull();
    expect(matchingTotpStep(RFC_SECRET, '', seconds * 1000)).toBeNull();
  });
});

describe('totpUri', () => {
  it('is an otpauth URI with the issuer, the account, the base32 secret, 6 digits and 30 s', () => {
    const raw = totpUri('Herald herald.acme.test', 'ann@acme.test', RFC_SECRET);
    expect(decodeURIComponent(raw.split('?')[0]!)).toBe('otpauth://totp/Herald herald.acme.test:ann@acme.test');
    const uri = new URL(raw);
    expect(Object.fromEntries(uri.searchParams)).toEqual({
      issuer: 'Herald herald.acme.test',
      algorithm: 'SHA1',
      secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ',
      period: '30',
      digits: '6',
    });
  });
});

describe('recovery codes', () => {
  it('are 16 letters of a 32-letter alphabet in four groups, all different', () => {
    const codes = Array.from({ length: 200 }, newRecoveryCode);
    for (const code of codes) {
      expect(code).toMatch(/^[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}$/);
      expect(code.replace(/-/g, '')).toMatch(RECOVERY_CODE_PATTERN);
      expect(code).not.toMatch(/[01lo]/);
    }
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('hash the same however they are typed, and differently from each other', () => {
    const code = newRecoveryCode();
    const typed = ` ${code.toUpperCase().replace(/-/g, ' ')} `;
    expect(hashRecoveryCode(typed).equals(hashRecoveryCode(code))).toBe(true);
    expect(hashRecoveryCode(newRecoveryCode()).equals(hashRecoveryCode(code))).toBe(false);
  });
});
