// The credentials a request can carry, and the shapes every layer shares about them: routes check
// them, services act for them, the service-key cache keeps them. The tenant always comes from the
// verified credential (the service key's row or the token's signed claims), never from a header.
import { hash } from 'node:crypto';
import { AppError } from '../errors.ts';

export type Credential =
  | { kind: 'service'; tenantId: string; apiKeyId: string }
  | { kind: 'user'; tenantId: string; userId: string; role: 'owner' | 'admin' | null }
  | { kind: 'contact'; tenantId: string; contactId: string };

export const SERVICE_KEY_PREFIX = 'sk_';

/**
 * Service keys are stored only as their SHA-256: 32 random bytes need no slow hash. One-shot: every
 * service-key request hashes its key, and a Hash object costs twice the digest.
 */
export function hashServiceKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

/** 401 with the WWW-Authenticate challenge RFC 6750 asks for. */
export function unauthorized(detail = 'A valid bearer credential is required', invalid = false): AppError {
  return new AppError('unauthorized', detail, {
    headers: { 'WWW-Authenticate': invalid ? 'Bearer error="invalid_token"' : 'Bearer' },
  });
}

export function bearerToken(header: string | null): string | null {
  if (!header) return null;
  const match = /^Bearer[ \t]+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}
