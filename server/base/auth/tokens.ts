// Stateless signed tokens (HS256 JWT): console access tokens and contact tokens. The signing key is an
// install secret kept encrypted in the database, so every Herald process of an install verifies the
// same tokens. A token names its kind, so a contact token can never pass as an access token.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createJWTSignatureMessage, encodeJWT, parseJWT } from '@oslojs/jwt';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { KeyRing } from '../crypto/keyring.ts';
import { installSecretAad } from '../crypto/aad.ts';
import { readInstallSecret, storeInstallSecretOnce } from '../install-secrets.ts';

export type TokenKind = 'access' | 'contact';

export interface TokenClaims {
  typ: TokenKind;
  /** user id (access) or contact id (contact) */
  sub: string;
  /** tenant the token is scoped to */
  tid: string;
  iat: number;
  exp: number;
}

const HEADER = JSON.stringify({ alg: 'HS256', typ: 'JWT' });
const SIGNING_SECRET = 'token_signing_key';

export class TokenSigner {
  readonly #key: Buffer;
  constructor(key: Buffer) {
    this.#key = key;
  }

  sign(kind: TokenKind, subject: string, tenantId: string, ttlSeconds: number, nowMs: number): string {
    const iat = Math.floor(nowMs / 1000);
    const payload = JSON.stringify({
      typ: kind,
      sub: subject,
      tid: tenantId,
      iat,
      exp: iat + ttlSeconds,
    } satisfies TokenClaims);
    const signature = createHmac('sha256', this.#key).update(createJWTSignatureMessage(HEADER, payload)).digest();
    return encodeJWT(HEADER, payload, signature);
  }

  /**
   * A key for another purpose (e.g. keyed request hashes), derived from the install secret so every
   * process agrees on it; it survives key-ring rotations, unlike anything derived from ring keys.
   */
  derive(purpose: string): Buffer {
    return createHmac('sha256', this.#key).update(`herald:${purpose}`).digest();
  }

  /** The claims of a valid, unexpired token of `kind`; null for anything else. */
  verify(token: string, nowMs: number): TokenClaims | null {
    let parts: ReturnType<typeof parseJWT>;
    try {
      parts = parseJWT(token);
    } catch {
      return null;
    }
    const [header, payload, signature, message] = parts;
    if ((header as { alg?: unknown }).alg !== 'HS256') return null;
    const expected = createHmac('sha256', this.#key).update(message).digest();
    if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) return null;
    const claims = payload as Partial<TokenClaims>;
    if (
      (claims.typ !== 'access' && claims.typ !== 'contact') ||
      typeof claims.sub !== 'string' ||
      typeof claims.tid !== 'string'
    )
      return null;
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= nowMs) return null;
    return claims as TokenClaims;
  }
}

/** Loads the install's token signing key, creating it on first use (safe under concurrent starts). */
export async function loadTokenSigner(em: EntityManager, keyRing: KeyRing): Promise<TokenSigner> {
  const aad = installSecretAad(SIGNING_SECRET);
  await storeInstallSecretOnce(em, SIGNING_SECRET, keyRing.encrypt(randomBytes(32).toString('base64'), aad));
  const ciphertext = await readInstallSecret(em, SIGNING_SECRET);
  return new TokenSigner(Buffer.from(keyRing.decrypt(ciphertext!, aad), 'base64'));
}
