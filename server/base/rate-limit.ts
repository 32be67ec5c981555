// Rate limiting: token buckets in PostgreSQL, shared by every Herald process of an install. A bucket
// refills steadily at the sustained rate and holds up to the burst; one statement takes a token or
// reports how long until one is available. Every rate-limited route goes through take().
//
// The data plane's busy buckets are also leased (see Lease): under concurrent load a process charges
// a few milliseconds of its own demand ahead and grants those tokens without a statement, so a trigger
// waits for one statement (its own write), not two. Leased tokens come out of the shared bucket like
// any other charge, so the limit never grants more than the bucket holds; what a process has not
// granted after a short idle spell goes back to the bucket.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from './errors.ts';
import { execute, query } from './db/sql.ts';
import { jsonRowsParameter, jsonRowsSql, type JsonRowColumns } from './db/json-rows.ts';
import type { Clock } from './clock.ts';

export interface RatePolicy {
  /** Stable name, used in bucket keys and as the per-tenant override name ("rate:<name>"). */
  name: string;
  /** Tokens added per second. */
  perSecond: number;
  /** Bucket capacity. */
  burst: number;
  /** What the bucket is counted per (documentation and key prefix). */
  per: 'account' | 'ip' | 'email' | 'user';
  /** Sustained rate as people read it, for RateLimit-Policy headers. */
  window: { limit: number; seconds: number };
  /** Tokens may be charged ahead and granted by the process (see Lease): for busy data-plane routes only. */
  leased?: true;
}

const policy = (
  name: string,
  per: RatePolicy['per'],
  limit: number,
  seconds: number,
  burst = limit,
  leased = false,
): RatePolicy => ({
  name,
  per,
  perSecond: limit / seconds,
  burst,
  window: { limit, seconds },
  ...(leased ? { leased: true as const } : {}),
});

/** The spec's Limits table. Tenant-counted policies can be raised per tenant (herald tenants limits). */
export const RATE_POLICIES = {
  trigger: policy('trigger', 'account', 60, 60, 120, true),
  contactTokens: policy('contact_tokens', 'account', 120, 60, 120, true),
  contactsBulk: policy('contacts_bulk', 'account', 20, 60, 20),
  loginIp: policy('login_ip', 'ip', 10, 60),
  loginEmail: policy('login_email', 'email', 5, 15 * 60),
  register: policy('register', 'ip', 5, 3600),
  /** One budget shared by password-reset, resend-verification and data requests. */
  accountRecovery: policy('account_recovery', 'ip', 5, 3600),
  /** Second-factor codes tried per console user (the sign-in's second step, removing a factor), as login per email. */
  mfaCode: policy('mfa_code', 'user', 5, 15 * 60),
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

/** A bucket of a charge: its key, and the rate and burst of its policy. */
const BUCKET_COLUMNS = [
  ['key', 'text'],
  ['rate', 'float8'],
  ['burst', 'float8'],
] as const satisfies JsonRowColumns<{ key: string; rate: number; burst: number }>;

// Locks the buckets, refills them to `now`, and grants up to $4 charges of one token from each bucket:
// as many as every bucket can pay for (and none if a bucket is missing). One round trip on the hot
// path; row locks are held for the statement only (the table is unlogged: its commit waits for no flush).
// The input is JSON rows (db/json-rows.ts) rather than arrays: PostgreSQL estimates unnest() of a known
// array exactly, so it re-planned the statement on every call; with jsonb its cached generic plan is used.
// The epsilon absorbs float drift of stepwise refills (5 s + 1 s of 1/6 token per s must make one token).
const CHARGE_SQL = `
  WITH input AS (
    SELECT * FROM ${jsonRowsSql('$1', BUCKET_COLUMNS)} AS t
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
  SELECT key, burst, $2::bigint FROM ${jsonRowsSql('$1', BUCKET_COLUMNS)} AS t
  ON CONFLICT (key) DO NOTHING`;

// Gives a lease's ungranted tokens back, up to the burst. They were charged at or before the bucket's
// last update, so they add to the tokens it stored then; its refill since is added at the next charge.
const RETURN_SQL = `UPDATE rate_limit_buckets SET tokens = LEAST($3::float8, tokens + $2::float8) WHERE key = $1`;

/** A tenant's overrides ($2 the sustained rate's name, $3 the burst's). */
const OVERRIDE_SQL = `SELECT name, value FROM tenant_limits WHERE tenant_id = $1 AND name IN ($2, $3)`;
const PRUNE_SQL = `DELETE FROM rate_limit_buckets WHERE updated_ms < $1`;

interface BucketSet {
  checks: RateCheck[];
  keys: string[];
  rates: number[];
  bursts: number[];
  /** The identity of the set: the same buckets at the same rates. */
  id: string;
  /** One bucket of a leased policy: takes may be granted from this process's lease. */
  leased: boolean;
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
 * Tokens this process has charged ahead from a leased bucket and not granted yet. A take that finds
 * one answers at once. A charge made while takes come in concurrently (two or more since the last
 * charge) adds LEASE_HORIZON_MS of that demand, at most a tenth of the burst, and a grant that leaves
 * less than half of that starts the next charge, so busy takes rarely wait for a statement. One take
 * at a time charges nothing ahead: a lone client sees the bucket exactly. Tokens not granted within
 * LEASE_IDLE_MS of the last take go back to the bucket; until then another process can be refused
 * while this one holds them (at most a tenth of the burst).
 */
interface Lease {
  tokens: number;
  /** The bucket's tokens after the charge that last filled the lease (for the headers). */
  bucket: number;
  /** What the last charge aimed to hold: below half of it, a grant starts the next charge. */
  target: number;
  /** Takes since the last charge was sent, and when that was (the clock's milliseconds, as usedAt). */
  demand: number;
  chargedAt: number;
  usedAt: number;
  /** What the tokens go back through: the EntityManager of the take that started the last charge. */
  em: EntityManager;
}

const LEASE_HORIZON_MS = 20;
const LEASE_IDLE_MS = 100;
const leases = new Map<string, Lease>();

/**
 * Takes one token from each bucket, all or nothing: if any bucket is empty none is charged, so a call
 * rejected by the per-email login bucket does not also drain the per-IP one.
 */
export function take(em: EntityManager, clock: Clock, checks: RateCheck[]): Promise<RateResult[]> {
  if (checks.length === 0) return Promise.resolve([]);
  const keys = checks.map((c) => `${c.policy.name}:${c.subject}`);
  const rates = checks.map((c) => c.override?.perSecond ?? c.policy.perSecond);
  const bursts = checks.map((c) => c.override?.burst ?? c.policy.burst);
  const id = `${keys.join('\n')}\n${rates.join(' ')}\n${bursts.join(' ')}`;
  const set: BucketSet = {
    checks,
    keys,
    rates,
    bursts,
    id,
    leased: checks.length === 1 && checks[0]!.policy.leased === true,
  };
  if (set.leased) {
    const lease = leaseOf(set, em, clock);
    if (lease.tokens >= 1) return Promise.resolve([grantLeased(clock, set, lease, em)]);
  }
  return new Promise((resolve, reject) => {
    const waiting = queues.get(set.id);
    if (waiting) return void waiting.push({ em, resolve, reject });
    queues.set(set.id, [{ em, resolve, reject }]);
    void drain(clock, set, em);
  });
}

/** The set's lease, counting this take as demand; a new one is dropped after LEASE_IDLE_MS unused. */
function leaseOf(set: BucketSet, em: EntityManager, clock: Clock): Lease {
  const now = clock.now();
  let lease = leases.get(set.id);
  if (!lease) {
    const created: Lease = { tokens: 0, bucket: 0, target: 0, demand: 0, chargedAt: now, usedAt: now, em };
    leases.set(set.id, created);
    setTimeout(() => endIdleLease(set, created, clock), LEASE_IDLE_MS).unref();
    lease = created;
  }
  lease.demand++;
  lease.usedAt = now;
  return lease;
}

function grantLeased(clock: Clock, set: BucketSet, lease: Lease, em: EntityManager): RateResult {
  lease.tokens--;
  if (lease.tokens < lease.target / 2 && !queues.has(set.id)) {
    queues.set(set.id, []);
    void drain(clock, set, em);
  }
  return resultOf(set, 0, lease.bucket + lease.tokens, true);
}

/** Gives back what an idle lease holds and forgets it; a lease in use, or charging, waits another spell. */
function endIdleLease(set: BucketSet, lease: Lease, clock: Clock): void {
  const idleFor = clock.now() - lease.usedAt;
  if (idleFor < LEASE_IDLE_MS || queues.has(set.id)) {
    setTimeout(
      () => endIdleLease(set, lease, clock),
      idleFor < LEASE_IDLE_MS ? LEASE_IDLE_MS - idleFor : LEASE_IDLE_MS,
    ).unref();
    return;
  }
  leases.delete(set.id);
  // A failed return loses nothing for good: the bucket refills them at its rate.
  if (lease.tokens > 0)
    void execute(lease.em, RETURN_SQL, [set.keys[0], lease.tokens, set.bursts[0]]).catch(() => undefined);
}

/** How many tokens the next charge adds for the lease, beyond the takes waiting. */
function tokensAhead(set: BucketSet, lease: Lease, now: number): number {
  if (lease.demand < 2) return 0;
  const perMs = lease.demand / Math.max(1, now - lease.chargedAt);
  lease.target = Math.min(Math.floor(set.bursts[0]! / 10), Math.ceil(perMs * LEASE_HORIZON_MS));
  return Math.max(0, lease.target - lease.tokens);
}

/**
 * Charges the queue of a bucket set, batch after batch, until nobody waits; with a lease, each charge
 * also tops it up, and a charge for the lease alone (started by a grant) is made once.
 */
async function drain(clock: Clock, set: BucketSet, em: EntityManager): Promise<void> {
  let leaseOnlyCharged = false;
  for (;;) {
    const batch = queues.get(set.id)!.splice(0);
    const lease = set.leased ? leases.get(set.id) : undefined;
    // Takes that queued while the last charge was in flight: its top-up may cover them.
    while (lease && lease.tokens >= 1 && batch.length > 0) {
      lease.tokens--;
      batch.shift()!.resolve([resultOf(set, 0, lease.bucket + lease.tokens, true)]);
    }
    const now = clock.now();
    const leaseOnly = batch.length === 0;
    const ahead = lease && !(leaseOnly && leaseOnlyCharged) ? tokensAhead(set, lease, now) : 0;
    if (batch.length + ahead === 0) {
      queues.delete(set.id);
      return;
    }
    if (leaseOnly) leaseOnlyCharged = true;
    if (lease) {
      lease.demand = 0;
      lease.chargedAt = now;
    }
    try {
      const { granted, tokens } = await charge(batch[0]?.em ?? em, clock.now(), set, batch.length + ahead);
      batch.forEach((waiter, n) => {
        const allowed = n < granted;
        // What this take left: the takes granted after it, the lease's included, have not charged yet.
        waiter.resolve(
          set.checks.map((_, i) => resultOf(set, i, tokens[i]! + (allowed ? granted - 1 - n : 0), allowed)),
        );
      });
      if (lease && granted > batch.length) {
        lease.tokens += granted - batch.length;
        lease.bucket = tokens[0]!;
        lease.em = batch[0]?.em ?? em;
      }
    } catch (error) {
      for (const waiter of batch) waiter.reject(error);
    }
  }
}

/** One statement for `count` takes of the set: how many it granted, and each bucket's tokens after. */
async function charge(
  em: EntityManager,
  now: number,
  set: BucketSet,
  count: number,
): Promise<{ granted: number; tokens: number[] }> {
  const { keys, rates, bursts } = set;
  const json = jsonRowsParameter(
    keys.map((key, i) => ({ key, rate: rates[i]!, burst: bursts[i]! })),
    BUCKET_COLUMNS,
  );
  let rows = await query<BucketRow>(em, CHARGE_SQL, [json, now, keys.length, count]);
  if (rows.length < keys.length) {
    // First use of a bucket: create it full, then decide again (nothing was charged: the count differed).
    await query(em, CREATE_SQL, [json, now]);
    rows = await query<BucketRow>(em, CHARGE_SQL, [json, now, keys.length, count]);
  }
  const byKey = new Map(rows.map((r) => [r.key, Number(r.tokens)]));
  return { granted: Number(rows[0]?.granted ?? 0), tokens: keys.map((key) => byKey.get(key)!) };
}

/** The answer for bucket `i` of the set, with `tokens` left in it after this take. */
function resultOf(set: BucketSet, i: number, tokens: number, allowed: boolean): RateResult {
  const rate = set.rates[i]!;
  const burst = set.bursts[i]!;
  return {
    allowed,
    limit: burst,
    remaining: Math.max(0, Math.floor(tokens)),
    retryAfter: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / rate - 1e-6)),
    reset: Math.max(0, Math.ceil((burst - tokens) / rate)),
    policy: set.checks[i]!.policy,
  };
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

/**
 * Gives back the token a granted take charged `check`'s bucket: for a limit that counts only the
 * attempts that fail (a sign-in's per-email bucket), once the attempt has succeeded.
 */
export async function giveBack(em: EntityManager, check: RateCheck): Promise<void> {
  const burst = check.override?.burst ?? check.policy.burst;
  await execute(em, RETURN_SQL, [`${check.policy.name}:${check.subject}`, 1, burst]);
}

/** Throws the 429 for a rejected set of results. */
export function assertAllowed(results: RateResult[]): void {
  if (results.every((r) => r.allowed)) return;
  throw new AppError('rate_limited', 'Too many requests; retry after the time given in Retry-After', {
    headers: rateLimitHeaders(results),
  });
}

/** Per-tenant overrides of tenant-counted policies: tenant_limits rows named "rate:<policy>" (sustained per minute). */
export async function tenantOverride(
  em: EntityManager,
  tenantId: string,
  p: RatePolicy,
): Promise<RateCheck['override']> {
  const rows = await query<{ name: string; value: number }>(em, OVERRIDE_SQL, [
    tenantId,
    `rate:${p.name}`,
    `rate:${p.name}:burst`,
  ]);
  if (rows.length === 0) return undefined;
  const perMinute = rows.find((r) => r.name === `rate:${p.name}`)?.value;
  const burst = rows.find((r) => r.name === `rate:${p.name}:burst`)?.value;
  return {
    perSecond: perMinute !== undefined ? Number(perMinute) / 60 : p.perSecond,
    burst:
      burst !== undefined ? Number(burst) : perMinute !== undefined ? Math.max(p.burst, Number(perMinute)) : p.burst,
  };
}

/** Deletes buckets not touched since `beforeMs` (see server/jobs/rate-limit-prune.ts). */
export async function pruneIdleBuckets(em: EntityManager, beforeMs: number): Promise<number> {
  return execute(em, PRUNE_SQL, [beforeMs]);
}
