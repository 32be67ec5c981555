// Idempotency-Key for POST /v1/notifications: a key is claimed (row 'in_flight') in its own short
// statement before the work starts, so a concurrent request with the same key sees it at once; the
// work's own transaction marks it 'done' with the response, so the answer and the accepted events
// commit together. A failed request releases its claim; a claim left by a crashed process goes stale.
import { createHmac } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, invalidField } from '../../base/errors.ts';
import { execute, queryOne } from '../../base/db/sql.ts';
import type { Context } from '../../base/context.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/**
 * An in_flight claim older than this is taken to belong to a request that died without releasing it,
 * and a retry takes it over; until then a retry is answered 409 with the seconds left in Retry-After.
 * A request still running when its claim is taken over cannot commit: its completion finds the claim
 * no longer its own (completeIdempotencyKey), so the key's work commits once either way.
 */
export const IDEMPOTENCY_STALE_MS = 10 * 1000;
export const IDEMPOTENCY_KEY_MAX = 255;

export interface IdempotencyClaim {
  tenantId: string;
  key: string;
  requestHash: string;
  /** When the claim was made (epoch ms): it tells this claim from a later one that took it over. */
  claimedAt: number;
}

export type ClaimResult =
  { kind: 'claimed'; claim: IdempotencyClaim } | { kind: 'replay'; status: number; body: unknown };

const CLAIM_KEY = `INSERT INTO idempotency_keys AS k (tenant_id, key, request_hash, state, created_at, expires_at)
  VALUES ($1, $2, $3, 'in_flight', to_timestamp($4 / 1000.0), to_timestamp($5 / 1000.0))
  ON CONFLICT (tenant_id, key) DO UPDATE
     SET request_hash = EXCLUDED.request_hash, state = 'in_flight', response_status = NULL, response_body = NULL,
         created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
   WHERE k.expires_at <= to_timestamp($4 / 1000.0)
      OR (k.state = 'in_flight' AND k.created_at <= to_timestamp($6 / 1000.0))
  RETURNING k.key`;
const EARLIER_CLAIM = `SELECT request_hash, state, response_status, response_body,
         extract(epoch FROM created_at) * 1000 AS claimed_ms
  FROM idempotency_keys WHERE tenant_id = $1 AND key = $2`;

/** The claim's row, while it is still this claim's (not taken over by a retry since). */
const OWN_CLAIM = `tenant_id = $1 AND key = $2 AND request_hash = $3 AND state = 'in_flight' AND created_at = to_timestamp($4 / 1000.0)`;
const COMPLETE_CLAIM = `UPDATE idempotency_keys SET state = 'done', response_status = $5, response_body = $6
  WHERE ${OWN_CLAIM}`;
const RELEASE_CLAIM = `DELETE FROM idempotency_keys WHERE ${OWN_CLAIM}`;

const PRUNE_EXPIRED = `DELETE FROM idempotency_keys WHERE expires_at <= to_timestamp($1 / 1000.0)`;

/** The Idempotency-Key header, checked; null when the request has none. */
export function idempotencyKeyOf(header: string | null): string | null {
  if (header === null) return null;
  if (header.length === 0 || header.length > IDEMPOTENCY_KEY_MAX || !/^[\x21-\x7e]+$/.test(header)) {
    throw invalidField(['header', 'Idempotency-Key'], `must be 1 to ${IDEMPOTENCY_KEY_MAX} visible ASCII characters`);
  }
  return header;
}

/**
 * A stable, keyed hash of a parsed body (object keys sorted at every level, so key order does not
 * matter). Keyed (HMAC), because the body carries secret variables: a plain hash of a short secret
 * such as a one-time code could be reversed by trying every value.
 */
export function requestHash(body: unknown, key: Buffer): string {
  return createHmac('sha256', key).update(canonicalJson(body)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * Claims a key, or tells what the earlier request with it decided: a replay of its response (same
 * body), 422 idempotency_key_reused (another body), 409 idempotency_in_flight (still running).
 * An expired record or a stale claim is taken over.
 */
export async function claimIdempotencyKey(em: EntityManager, claim: IdempotencyClaim): Promise<ClaimResult> {
  const now = claim.claimedAt;
  const claimed = await queryOne<{ key: string }>(em, CLAIM_KEY, [
    claim.tenantId,
    claim.key,
    claim.requestHash,
    now,
    now + IDEMPOTENCY_TTL_MS,
    now - IDEMPOTENCY_STALE_MS,
  ]);
  if (claimed) return { kind: 'claimed', claim };
  const existing = await queryOne<{
    request_hash: string;
    state: string;
    response_status: number | null;
    response_body: unknown;
    claimed_ms: number;
  }>(em, EARLIER_CLAIM, [claim.tenantId, claim.key]);
  if (existing && existing.request_hash !== claim.requestHash) {
    throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
  }
  if (!existing || existing.state === 'in_flight' || existing.response_status === null) {
    const staleInMs = existing ? Number(existing.claimed_ms) + IDEMPOTENCY_STALE_MS - now : 0;
    throw new AppError('idempotency_in_flight', 'A request with this Idempotency-Key is still being processed', {
      headers: { 'retry-after': String(Math.max(1, Math.ceil(staleInMs / 1000))) },
    });
  }
  return { kind: 'replay', status: existing.response_status, body: existing.response_body };
}

/**
 * Records the response; call it inside the transaction that does the request's work. Throws 409 when a
 * retry has taken the claim over (it went stale while this request ran), which undoes that work.
 */
export async function completeIdempotencyKey(
  em: EntityManager,
  claim: IdempotencyClaim,
  status: number,
  body: unknown,
): Promise<void> {
  const completed = await execute(em, COMPLETE_CLAIM, [
    claim.tenantId,
    claim.key,
    claim.requestHash,
    claim.claimedAt,
    status,
    JSON.stringify(body),
  ]);
  if (completed === 0) {
    throw new AppError('idempotency_in_flight', 'A retry with this Idempotency-Key took over this request', {
      headers: { 'retry-after': '1' },
    });
  }
}

/** Releases the claim of a request that failed, so the client can retry with the same key. */
export async function releaseIdempotencyKey(em: EntityManager, claim: IdempotencyClaim): Promise<void> {
  await execute(em, RELEASE_CLAIM, [claim.tenantId, claim.key, claim.requestHash, claim.claimedAt]);
}

/**
 * Runs `accept` under an Idempotency-Key when one is given: a repeat of a finished request replays its
 * answer, and a request that fails frees its key. `accept` gets the claim (null without a key) and
 * records its answer with completeIdempotencyKey in the transaction that does its work.
 */
export async function withIdempotencyKey<T>(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  key: string | null,
  request: unknown,
  accept: (claim: IdempotencyClaim | null) => Promise<T>,
  status = 202,
): Promise<{ status: number; body: T }> {
  if (!key) return { status, body: await accept(null) };
  const claim: IdempotencyClaim = {
    tenantId,
    key,
    requestHash: requestHash(request, runtime.tokens.derive('idempotency')),
    claimedAt: runtime.clock.now(),
  };
  const claimed = await claimIdempotencyKey(em, claim);
  if (claimed.kind === 'replay') return { status: claimed.status, body: claimed.body as T };
  try {
    return { status, body: await accept(claim) };
  } catch (error) {
    await releaseIdempotencyKey(em, claim).catch((e) =>
      runtime.logger.warn('idempotency release failed', { error: e }),
    );
    throw error;
  }
}

/** Deletes expired records (the scheduled prune job). */
export async function pruneIdempotencyKeys(em: EntityManager, now: number): Promise<number> {
  return execute(em, PRUNE_EXPIRED, [now]);
}
