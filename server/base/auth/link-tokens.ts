// Emailed link tokens (verification, password reset, invitations): 32 random bytes, base64url in the
// link, stored only as their SHA-256. A token carries 256 random bits, so a fast hash is safe, and the
// lookup by hash is an index probe: no comparison of secrets in application code.
import { createHash, randomBytes } from 'node:crypto';

export interface LinkToken {
  /** The plaintext, for the email only: never stored, never logged. */
  token: string;
  hash: Buffer;
}

export function newLinkToken(): LinkToken {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashLinkToken(token) };
}

export function hashLinkToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Tokens are 43 base64url characters; anything else cannot be one (kept loose to allow future lengths). */
export const LINK_TOKEN_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
