// Time-based one-time passwords (RFC 6238: HMAC-SHA1, 6 digits, 30 s steps, what every authenticator
// app reads from an otpauth:// URI) and recovery codes. Codes are checked against the caller's clock,
// one step either side for drift, each step's code compared in constant time; the step a code matched
// is returned so that the caller can refuse that step (and earlier ones) afterwards.
import { createHash, randomBytes } from 'node:crypto';
import { createTOTPKeyURI, verifyHOTP } from '@oslojs/otp';

export const TOTP_PERIOD_SECONDS = 30;
export const TOTP_DIGITS = 6;
/** RFC 4226 asks for at least 128 bits and recommends 160. */
const SECRET_BYTES = 20;
/** Steps accepted either side of the current one: a phone's clock a little off, a code typed late. */
const DRIFT_STEPS = 1;

export function newTotpSecret(): Buffer {
  return randomBytes(SECRET_BYTES);
}

/** The TOTP time step of a moment (milliseconds since the epoch). */
export function totpStep(nowMs: number): number {
  return Math.floor(nowMs / (TOTP_PERIOD_SECONDS * 1000));
}

/** The step within the drift window whose code `code` is, or null. Every step of the window is checked. */
export function matchingTotpStep(secret: Uint8Array, code: string, nowMs: number): number | null {
  const now = totpStep(nowMs);
  let matched: number | null = null;
  for (let step = now - DRIFT_STEPS; step <= now + DRIFT_STEPS; step++) {
    if (verifyHOTP(secret, BigInt(step), TOTP_DIGITS, code)) matched = step;
  }
  return matched;
}

/** The otpauth:// URI an authenticator app enrols from (it holds the secret: shown once, never logged). */
export function totpUri(issuer: string, account: string, secret: Uint8Array): string {
  return createTOTPKeyURI(issuer, account, secret, TOTP_PERIOD_SECONDS, TOTP_DIGITS);
}

// Recovery codes: 16 characters of a 32-letter alphabet without 0/o and 1/l (80 random bits), printed
// in groups of four. At 80 bits a fast hash is safe to store, as for link tokens.
const RECOVERY_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';
const RECOVERY_LENGTH = 16;
export const RECOVERY_CODE_PATTERN = /^[a-km-np-z2-9]{16}$/;

/** A new recovery code as printed, e.g. "k7qm-2xfp-9dhe-wt4r". */
export function newRecoveryCode(): string {
  // 256 is a multiple of 32, so masking a byte picks each letter with the same chance.
  const letters = [...randomBytes(RECOVERY_LENGTH)].map((b) => RECOVERY_ALPHABET[b & 31]!).join('');
  return letters.match(/.{4}/g)!.join('-');
}

/** The stored form of a recovery code, from the code as printed or as typed (case, spaces, dashes dropped). */
export function hashRecoveryCode(code: string): Buffer {
  return createHash('sha256')
    .update(code.toLowerCase().replace(/[\s-]+/g, ''), 'utf8')
    .digest();
}
