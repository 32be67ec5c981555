// Authentication: turns the Authorization header into a verified credential. The tenant always comes
// from the verified credential (the service key's row or the token's signed claims), never from a header.
import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../errors.ts';
import { roleAtLeast } from '../auth/roles.ts';
import { queryOne } from '../db/sql.ts';
import type { Runtime } from '../runtime.ts';
import type { AuthRule } from './route.ts';

export type Credential =
  | { kind: 'service'; tenantId: string; apiKeyId: string }
  | { kind: 'user'; tenantId: string; userId: string; role: 'owner' | 'admin' | null }
  | { kind: 'contact'; tenantId: string; contactId: string };

export const SERVICE_KEY_PREFIX = 'sk_';

export function hashServiceKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

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

/**
 * Finds an unrevoked service key by hash and records its use (at most once a minute, same round trip).
 * A key verified in the last minute is taken from the process's cache, which change notices keep exact.
 */
async function resolveServiceKey(runtime: Runtime, em: EntityManager, key: string): Promise<Credential | null> {
  const hash = hashServiceKey(key);
  const cacheKey = hash.toString('hex');
  const cache = runtime.serviceKeys;
  const cached = cache.get(cacheKey, runtime.clock.now());
  if (cached) return cached;
  const generation = cache.generation;
  const row = await queryOne<{ id: string; tenant_id: string }>(
    em,
    `WITH k AS (
       SELECT id, tenant_id, last_used_at FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL
     ), touched AS (
       UPDATE api_keys a SET last_used_at = now() FROM k
        WHERE a.id = k.id AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '60 seconds')
     )
     SELECT id, tenant_id FROM k`,
    [hash],
  );
  if (!row) return null;
  const credential = { kind: 'service' as const, tenantId: row.tenant_id, apiKeyId: row.id };
  cache.remember(cacheKey, credential, generation, runtime.clock.now());
  return credential;
}

async function membershipRole(em: EntityManager, userId: string, tenantId: string): Promise<'owner' | 'admin' | null> {
  const row = await queryOne<{ role: 'owner' | 'admin' }>(em, `SELECT role FROM memberships WHERE user_id = $1 AND tenant_id = $2`, [userId, tenantId]);
  return row?.role ?? null;
}

/** Verifies the request's bearer credential; throws 401 when it is missing or invalid. */
export async function authenticate(runtime: Runtime, em: EntityManager, authorization: string | null): Promise<Credential> {
  const token = bearerToken(authorization);
  if (!token) throw unauthorized();
  if (token.startsWith(SERVICE_KEY_PREFIX)) {
    const credential = await resolveServiceKey(runtime, em, token);
    if (!credential) throw unauthorized('The service key is invalid or revoked', true);
    return credential;
  }
  const claims = runtime.tokens.verify(token, runtime.clock.now());
  if (!claims) throw unauthorized('The token is invalid or expired', true);
  if (claims.typ === 'contact') return { kind: 'contact', tenantId: claims.tid, contactId: claims.sub };
  return { kind: 'user', tenantId: claims.tid, userId: claims.sub, role: await membershipRole(em, claims.sub, claims.tid) };
}

/** Applies a route's credential rule to a verified credential: 403 for a valid credential of the wrong kind or role. */
export function authorize(rule: AuthRule, credential: Credential): void {
  const wrongKind = () => new AppError('wrong_credential_kind', 'This credential cannot be used on this route');
  switch (rule) {
    case 'public':
      return;
    case 'user':
      if (credential.kind !== 'user') throw wrongKind();
      return;
    case 'service':
      if (credential.kind !== 'service') throw wrongKind();
      return;
    case 'contact':
      if (credential.kind !== 'contact') throw wrongKind();
      return;
    case 'management':
      if (credential.kind === 'contact') throw wrongKind();
      if (credential.kind === 'user') requireTenantRole(credential, 'admin');
      return;
    case 'either':
      if (credential.kind === 'user') requireTenantRole(credential, 'admin');
      return;
    case 'any':
      if (credential.kind === 'user' && credential.role === null) throw new AppError('not_a_member', 'You are not a member of this tenant');
      return;
  }
}


export function requireTenantRole(credential: Extract<Credential, { kind: 'user' }>, minimum: 'admin' | 'owner'): void {
  if (credential.role === null) throw new AppError('not_a_member', 'You are not a member of this tenant');
  if (!roleAtLeast(credential.role, minimum)) throw new AppError('insufficient_role', `This action needs the ${minimum} role`);
}

/** The signed-in user of a route whose rule is 'user' (the wrapper has already checked the kind). */
export function userIdOf(auth: Credential | null): string {
  if (auth?.kind !== 'user') throw new AppError('wrong_credential_kind', 'This route needs a signed-in console user');
  return auth.userId;
}
