// Authentication: turns the Authorization header into a verified credential: a service key looked up
// by its hash (or taken from the process's cache), a host-operator token this process issued, or a
// signed token whose user's role in the token's tenant is read from the memberships, with whether that
// tenant still waits for the user's second factor.
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../db/sql.ts';
import type { Context } from '../context.ts';
import { findServiceKeyByHash } from './api-keys.ts';
import {
  HOST_TOKEN_PREFIX,
  SERVICE_KEY_PREFIX,
  bearerToken,
  hashServiceKey,
  hostCredentialOf,
  unauthorized,
  type Credential,
  type UserCredential,
} from './credentials.ts';

// The user's role in the tenant, and whether the tenant requires a second factor the user has not set up.
const MEMBERSHIP = `SELECT m.role, t.require_mfa AND NOT EXISTS (
         SELECT 1 FROM mfa_factors f WHERE f.user_id = m.user_id AND f.confirmed_at IS NOT NULL
       ) AS mfa_enrolment_required
  FROM memberships m JOIN tenants t ON t.id = m.tenant_id
 WHERE m.user_id = $1 AND m.tenant_id = $2`;

/**
 * Finds an unrevoked service key by hash and records its use (at most once a minute, same round trip).
 * A key verified in the last minute is taken from the process's cache, which change notices keep exact.
 */
async function resolveServiceKey(runtime: Context, em: EntityManager, key: string): Promise<Credential | null> {
  const hash = hashServiceKey(key);
  const cacheKey = hash.toString('hex');
  const cache = runtime.serviceKeys;
  const cached = cache.get(cacheKey, runtime.clock.now());
  if (cached) return cached;
  const generation = cache.generation;
  const row = await findServiceKeyByHash(em, hash);
  if (!row) return null;
  const credential = { kind: 'service' as const, tenantId: row.tenant_id, apiKeyId: row.id };
  cache.remember(cacheKey, credential, generation, runtime.clock.now());
  return credential;
}

/** A user's standing in a tenant: no role (and nothing required) when they are not a member. */
export async function membershipOf(
  em: EntityManager,
  userId: string,
  tenantId: string,
): Promise<Pick<UserCredential, 'role' | 'mfaEnrolmentRequired'>> {
  const row = await queryOne<{ role: 'owner' | 'admin'; mfa_enrolment_required: boolean }>(em, MEMBERSHIP, [
    userId,
    tenantId,
  ]);
  return { role: row?.role ?? null, mfaEnrolmentRequired: row?.mfa_enrolment_required ?? false };
}

/** Verifies the request's bearer credential; throws 401 when it is missing or invalid. */
export async function authenticate(
  runtime: Context,
  em: EntityManager,
  authorization: string | null,
): Promise<Credential> {
  const token = bearerToken(authorization);
  if (!token) throw unauthorized();
  if (token.startsWith(SERVICE_KEY_PREFIX)) {
    const credential = await resolveServiceKey(runtime, em, token);
    if (!credential) throw unauthorized('The service key is invalid or revoked', true);
    return credential;
  }
  if (token.startsWith(HOST_TOKEN_PREFIX)) {
    const credential = hostCredentialOf(token);
    if (!credential) throw unauthorized('The token is invalid or expired', true);
    return credential;
  }
  const claims = runtime.tokens.verify(token, runtime.clock.now());
  if (!claims) throw unauthorized('The token is invalid or expired', true);
  if (claims.typ === 'contact') return { kind: 'contact', tenantId: claims.tid, contactId: claims.sub };
  return {
    kind: 'user',
    tenantId: claims.tid,
    userId: claims.sub,
    ...(await membershipOf(em, claims.sub, claims.tid)),
  };
}
