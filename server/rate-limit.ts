// Rate limiting: token buckets in PostgreSQL, shared by every Herald process of an install. A bucket
// refills steadily at the sustained rate and holds up to the burst; one statement takes a token or
// reports how long until one is available. Every rate-limited route goes through take().
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from './errors.ts';
import { execute, query } from './db/sql.ts';
import type { Clock } from './clock.ts';

export interface RatePolicy {
  /** Stable name, used in bucket keys and as the per-tenant override name ("rate:<name>"). */
  name: string;
  /** Tokens added per second. */
  perSecond: number;
  /** Bucket capacity. */
  burst: number;
  /** What the bucket is counted per (documentation and key prefix). */
  per: 'account' | 'ip' | 'email';
  /** Sustained rate as people read it, for RateLimit-Policy headers. */
  window: { limit: number; seconds: number };
}

const policy = (name: string, per: RatePolicy['per'], limit: number, seconds: number, burst = limit): RatePolicy => ({
  name,
  per,
  perSecond: limit / seconds,
  burst,
  window: { limit, seconds },
});

/** The spec's Limits table. Tenant-counted policies can be raised per tenant (herald tenants limits). */
export const RATE_POLICIES = {
  trigger: policy('trigger', 'account', 60, 60, 120),
  contactTokens: policy('contact_tokens', 'account', 120, 60, 120),
  contactsBulk: policy('contacts_bulk', 'account', 20, 60, 20),
  loginIp: policy('login_ip', 'ip', 10, 60),
  loginEmail: policy('login_email', 'email', 5, 15 * 60),
  register: policy('register', 'ip', 5, 3600),
  /** One budget shared by password-reset, resend-verification and data requests. */
  accountRecovery: policy('account_recovery', 'ip', 5, 3600),
  /** SSO sign-ins started (each stores a state row until it is used or expires). */
  ssoStart: policy('sso_start', 'ip', 30, 60),
} as const satisfies Record<string, RatePolicy>;

export interface RateCheck {
  policy: RatePolicy;
  /** The subject counted: tenant id, client IP or normalised email. */
  subject: string;
  /** Overrides for a tenant-counted policy (from tenant_limits), already resolved. */
  override?: { perSecond: number; burst: number } | undefined;
}

export interface RateResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until a token is available (0 when allowed). */
  retryAfter: number;
  /** Seconds until the bucket is full again. */
  reset: number;
  policy: RatePolicy;
}

interface BucketRow {
  key: string;
  /** Tokens left after this statement's charge. */
  tokens: number;
  /** How many of the requested charges were granted. */
  granted: number;
}

// Locks the buckets, refills them to `now`, and grants up to $4 charges of one token from each bucket:
// as many as every bucket can pay for (and none if a bucket is missing). One round trip on the hot
// path; row locks are held for the statement only (the table is unlogged: its commit waits for no flush).
// The input is a jsonb array rather than arrays: PostgreSQL estimates unnest() of a known array
// exactly, so it re-planned the statement on every call; with jsonb its cached generic plan is used.
// The epsilon absorbs float drift of stepwise refills (5 s + 1 s of 1/6 token per s must make one token).
const CHARGE_SQL = `
  WITH input AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS t(key text, rate float8, burst float8)
  ), locked AS (
    SELECT b.key, LEAST(i.burst, b.tokens + GREATEST(0, $2::bigint - b.updated_ms) / 1000.0 * i.rate) AS tokens
      FROM rate_limit_buckets b JOIN input i ON i.key = b.key
     ORDER BY b.key
       FOR UPDATE OF b
  ), decision AS (
    SELECT CASE WHEN count(*) = $3::int THEN GREATEST(0, LEAST($4::int, floor(min(tokens) + 1e-9)))::int ELSE 0 END AS granted
      FROM locked
  )
  UPDATE rate_limit_buckets b
     SET tokens = l.tokens - d.granted,
         updated_ms = GREATEST(b.updated_ms, $2::bigint)
    FROM locked l, decision d
   WHERE b.key = l.key
  RETURNING b.key, b.tokens, d.granted`;

const CREATE_SQL = `
  INSERT INTO rate_limit_buckets (key, tokens, updated_ms)
  SELECT key, burst, $2::bigint FROM jsonb_to_recordset($1::jsonb) AS t(key text, burst float8)
  ON CONFLICT (key) DO NOTHING`;

interface BucketSet {
  checks: RateCheck[];
  keys: string[];
  rates: number[];
  bursts: number[];
  /** The statement's input, also the identity of the set (same buckets, same rates). */
  json: string;
}

interface Waiter {
  em: EntityManager;
  resolve: (results: RateResult[]) => void;
  reject: (error: unknown) => void;
}

/**
 * Takes waiting for a statement on the same buckets. Under load, the concurrent requests of one tenant
 * would each wait on the bucket's row lock in turn; instead, while one statement is in flight, later
 * takes of the same buckets queue here and the next statement charges them all at once, in arrival
 * order. A single take still costs exactly one statement.
 */
const queues = new Map<string, Waiter[]>();

/**
 * Takes one token from each bucket, all or nothing: if any bucket is empty none is charged, so a call
 * rejected by the per-email login bucket does not also drain the per-IP one.
 */
export function take(em: EntityManager, clock: Clock, checks: RateCheck[]): Promise<RateResult[]> {
  if (checks.length === 0) return Promise.resolve([]);
  const keys = checks.map((c) => `${c.policy.name}:${c.subject}`);
  const rates = checks.map((c) => c.override?.perSecond ?? c.policy.perSecond);
  const bursts = checks.map((c) => c.override?.burst ?? c.policy.burst);
  const set: BucketSet = { checks, keys, rates, bursts, json: JSON.stringify(keys.map((key, i) => ({ key, rate: rates[i], burst: bursts[i] }))) };
  return new Promise((resolve, reject) => {
    const waiting = queues.get(set.json);
    if (waiting) return void waiting.push({ em, resolve, reject });
    queues.set(set.json, [{ em, resolve, reject }]);
    void drain(clock, set);
  });
}

/** Charges the queue of a bucket set, batch after batch, until nobody waits. */
async function drain(clock: Clock, set: BucketSet): Promise<void> {
  for (;;) {
    const batch = queues.get(set.json)!.splice(0);
    if (batch.length === 0) {
      queues.delete(set.json);
      return;
    }
    try {
      const results = await charge(batch[0]!.em, clock.now(), set, batch.length);
      batch.forEach((waiter, i) => waiter.resolve(results[i]!));
    } catch (error) {
      for (const waiter of batch) waiter.reject(error);
    }
  }
}

/** One statement for `count` takes of the set; the results in take order. */
async function charge(em: EntityManager, now: number, set: BucketSet, count: number): Promise<RateResult[][]> {
  const { checks, keys, rates, bursts, json } = set;
  let rows = await query<BucketRow>(em, CHARGE_SQL, [json, now, keys.length, count]);
  if (rows.length < keys.length) {
    // First use of a bucket: create it full, then decide again (nothing was charged: the count differed).
    await query(em, CREATE_SQL, [json, now]);
    rows = await query<BucketRow>(em, CHARGE_SQL, [json, now, keys.length, count]);
  }
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const granted = Number(rows[0]?.granted ?? 0);
  return Array.from({ length: count }, (_, n) =>
    checks.map((check, i) => {
      const row = byKey.get(keys[i]!)!;
      const allowed = n < granted;
      // What this take left in the bucket: the takes granted after it have not charged yet.
      const tokens = Number(row.tokens) + (allowed ? granted - 1 - n : 0);
      const rate = rates[i]!;
      const burst = bursts[i]!;
      return {
        allowed,
        limit: burst,
        remaining: Math.max(0, Math.floor(tokens)),
        retryAfter: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / rate - 1e-6)),
        reset: Math.max(0, Math.ceil((burst - tokens) / rate)),
        policy: check.policy,
      };
    }),
  );
}

/** Response headers for the tightest of the results (IETF RateLimit fields + Retry-After). */
export function rateLimitHeaders(results: RateResult[]): Record<string, string> {
  if (results.length === 0) return {};
  const rejected = results.filter((r) => !r.allowed);
  const pool = rejected.length > 0 ? rejected : results;
  const tightest = pool.reduce((a, b) => (b.remaining < a.remaining || b.retryAfter > a.retryAfter ? b : a));
  const headers: Record<string, string> = {
    'RateLimit-Limit': String(tightest.limit),
    'RateLimit-Remaining': String(tightest.remaining),
    'RateLimit-Reset': String(tightest.allowed ? tightest.reset : tightest.retryAfter),
    'RateLimit-Policy': `${tightest.policy.window.limit};w=${tightest.policy.window.seconds};burst=${tightest.limit}`,
  };
  if (!tightest.allowed) headers['Retry-After'] = String(tightest.retryAfter);
  return headers;
}

/** Throws the 429 for a rejected set of results. */
export function assertAllowed(results: RateResult[]): void {
  if (results.every((r) => r.allowed)) return;
  throw new AppError('rate_limited', 'Too many requests; retry after the time given in Retry-After', { headers: rateLimitHeaders(results) });
}

/** Per-tenant overrides of tenant-counted policies: tenant_limits rows named "rate:<policy>" (sustained per minute). */
export async function tenantOverride(em: EntityManager, tenantId: string, p: RatePolicy): Promise<RateCheck['override']> {
  const rows = await query<{ name: string; value: number }>(
    em,
    `SELECT name, value FROM tenant_limits WHERE tenant_id = $1 AND name IN ($2, $3)`,
    [tenantId, `rate:${p.name}`, `rate:${p.name}:burst`],
  );
  if (rows.length === 0) return undefined;
  const perMinute = rows.find((r) => r.name === `rate:${p.name}`)?.value;
  const burst = rows.find((r) => r.name === `rate:${p.name}:burst`)?.value;
  return {
    perSecond: perMinute !== undefined ? Number(perMinute) / 60 : p.perSecond,
    burst: burst !== undefined ? Number(burst) : perMinute !== undefined ? Math.max(p.burst, Number(perMinute)) : p.burst,
  };
}

/** Deletes buckets not touched since `beforeMs` (see server/jobs/rate-limit-prune.ts). */
export async function pruneIdleBuckets(em: EntityManager, beforeMs: number): Promise<number> {
  return execute(em, `DELETE FROM rate_limit_buckets WHERE updated_ms < $1`, [beforeMs]);
}
