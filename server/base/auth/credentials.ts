// The credentials a request can carry, and the shapes every layer shares about them: routes check
// them, services act for them, the service-key cache keeps them. The tenant always comes from the
// verified credential (the service key's row or the token's signed claims), never from a header.
import { hash, randomBytes } from 'node:crypto';
import { AppError } from '../errors.ts';

export type Credential =
  | { kind: 'service'; tenantId: string; apiKeyId: string }
  | UserCredential
  | { kind: 'contact'; tenantId: string; contactId: string }
  | HostCredential;

/**
 * A console user's access token. `mfaEnrolmentRequired`: the token's tenant requires a second factor
 * and the user has none yet, so only the routes that set one up are open to them.
 */
export type UserCredential = {
  kind: 'user';
  tenantId: string;
  userId: string;
  role: 'owner' | 'admin' | null;
  mfaEnrolmentRequired: boolean;
};

/**
 * The host operator: the CLI's local mode calling the routes in its own process, acting for one tenant
 * with a service key's rights. `actorId` is the operating-system account the audit log names.
 */
export type HostCredential = { kind: 'host'; tenantId: string; actorId: string };

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

export const HOST_TOKEN_PREFIX = 'host_';

/**
 * Host-operator tokens issued in this process, and only here: a token is 32 random bytes made when the
 * CLI opens its in-process API, so the HTTP server's process (which issues none) refuses any of them,
 * and no client can guess one issued elsewhere.
 */
const hostCredentials = new Map<string, HostCredential>();

/** Tokens are kept by their SHA-256, as service keys are, so a look-up compares digests, not the secret. */
const digestOf = (token: string) => hash('sha256', token, 'base64url');

/** Issues a token for the host operator acting for a tenant; valid in this process until revoked. */
export function issueHostToken(tenantId: string, actorId: string): string {
  const token = HOST_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  hostCredentials.set(digestOf(token), { kind: 'host', tenantId, actorId });
  return token;
}

export function revokeHostToken(token: string): void {
  hostCredentials.delete(digestOf(token));
}

export function hostCredentialOf(token: string): HostCredential | null {
  return hostCredentials.get(digestOf(token)) ?? null;
}
