// Authenticator-app codes for tests that sign in with a second factor: RFC 6238 (HMAC-SHA1, 30 s steps,
// 6 digits) written out here, independent of the library the server checks codes with.
import { createHmac } from 'node:crypto';
import { decodeBase32IgnorePadding } from '@oslojs/encoding';

/** The secret of an otpauth:// URI, or of a key as the console shows it ("ABCD EFGH ..."). */
export function totpSecret(uriOrKey: string): Uint8Array {
  const base32 = uriOrKey.startsWith('otpauth:') ? new URL(uriOrKey).searchParams.get('secret')! : uriOrKey;
  return decodeBase32IgnorePadding(base32.replace(/\s+/g, ''));
}

/** The code at `ms` (milliseconds since the epoch), `steps` 30 s steps later. */
export function totpCode(secret: Uint8Array, ms: number, steps = 0): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(ms / 30_000) + steps));
  const mac = createHmac('sha1', secret).update(counter).digest();
  const offset = mac[mac.length - 1]! & 15;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}
