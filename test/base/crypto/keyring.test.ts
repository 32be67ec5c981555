// The key ring: envelope encryption bound to row identity, rotation by re-wrapping, and the failure
// modes callers rely on (a missing key is "unavailable", tampering is "failed authentication").
import { describe, expect, it } from 'vitest';
import { statSync } from 'node:fs';
import {
  DecryptionError,
  KeyRing,
  KeyUnavailableError,
  envelopeKeyId,
  generateKey,
  keyFilePath,
  loadKeyRing,
  parseKeyList,
} from '../../../server/base/crypto/keyring.ts';
import { testTempDir } from '../../support/tmp.ts';

const ring = (active: string, ...ids: string[]) =>
  new KeyRing({ active, keys: Object.fromEntries(ids.map((id) => [id, keys[id]!])) });
const keys: Record<string, string> = { a: generateKey(), b: generateKey() };

describe('KeyRing', () => {
  it('round-trips a secret and names the key that wrapped it', () => {
    const r = ring('a', 'a');
    const sealed = r.encrypt('s3cret', 'push_transports/t1/apns/secrets');
    expect(sealed).not.toContain('s3cret');
    expect(envelopeKeyId(sealed)).toBe('a');
    expect(r.decrypt(sealed, 'push_transports/t1/apns/secrets')).toBe('s3cret');
  });

  it('encrypts the same secret differently each time', () => {
    const r = ring('a', 'a');
    expect(r.encrypt('x', 'row')).not.toBe(r.encrypt('x', 'row'));
  });

  it('refuses a ciphertext moved to another row (additional data is bound)', () => {
    const r = ring('a', 'a');
    const sealed = r.encrypt('s3cret', 'email_transports/t1/password');
    expect(() => r.decrypt(sealed, 'email_transports/t2/password')).toThrow(DecryptionError);
  });

  it('detects tampering', () => {
    const r = ring('a', 'a');
    const sealed = r.encrypt('s3cret', 'row');
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3]!.split(':')[1]!, 'base64url');
    body[0] = body[0]! ^ 1;
    parts[3] = `${parts[3]!.split(':')[0]}:${body.toString('base64url')}`;
    expect(() => r.decrypt(parts.join('.'), 'row')).toThrow(DecryptionError);
  });

  it('reports a ciphertext whose key is gone as unavailable, naming the key', () => {
    const sealed = ring('a', 'a').encrypt('s3cret', 'row');
    const without = ring('b', 'b');
    expect(() => without.decrypt(sealed, 'row')).toThrow(KeyUnavailableError);
    try {
      without.decrypt(sealed, 'row');
    } catch (error) {
      expect((error as KeyUnavailableError).keyId).toBe('a');
    }
  });

  it('re-wraps under the active key without changing the secret', () => {
    const sealed = ring('a', 'a').encrypt('s3cret', 'row');
    const both = ring('b', 'a', 'b');
    const rewrapped = both.rewrap(sealed, 'row');
    expect(envelopeKeyId(rewrapped)).toBe('b');
    expect(ring('b', 'b').decrypt(rewrapped, 'row')).toBe('s3cret');
  });

  it('rejects keys of the wrong size and an active key that is not in the ring', () => {
    expect(() => new KeyRing({ active: 'x', keys: { x: Buffer.alloc(16).toString('base64') } })).toThrow(/32 bytes/);
    expect(() => new KeyRing({ active: 'y', keys: { x: generateKey() } })).toThrow(/not in the key ring/);
  });
});

describe('loading the key ring', () => {
  it('parses HERALD_ENCRYPTION_KEYS with the first key active', () => {
    const file = parseKeyList(`one:${keys.a},two:${keys.b}`);
    expect(file.active).toBe('one');
    expect(Object.keys(file.keys)).toEqual(['one', 'two']);
    expect(() => parseKeyList('garbage')).toThrow(/id:base64key/);
  });

  it('creates the key file with owner-only permissions when asked, and reuses it', () => {
    const dir = testTempDir('herald-keys-');
    expect(() => loadKeyRing({ dataDir: dir })).toThrow(/herald init/);
    const first = loadKeyRing({ dataDir: dir, create: true });
    expect(statSync(keyFilePath(dir)).mode & 0o777).toBe(0o600);
    const again = loadKeyRing({ dataDir: dir, create: true });
    expect(again.activeKeyId).toBe(first.activeKeyId);
    expect(again.decrypt(first.encrypt('x', 'r'), 'r')).toBe('x');
  });
});
