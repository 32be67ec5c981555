// The sign-in related limits of the spec's Limits table, at their boundaries, with an injected clock:
// login 10/min per IP and 5/15 min per email (counted at once, all or nothing; a right password gets the
// email's token back), register 5/hour per IP, and one 5/hour per-IP budget shared by password-reset,
// resend-verification and data requests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { ManualClock } from '../../server/base/clock.ts';
import { PASSWORD, freshIp, requestAs, signUp, uniqueEmail } from '../support/fixtures.ts';
import { queryOne } from '../../server/base/db/sql.ts';

let app: TestApp;
const clock = new ManualClock(Date.parse('2026-06-01T12:00:00Z'));

beforeAll(async () => {
  app = await startTestApp({ clock, config: { trustedProxies: ['127.0.0.1'] } });
});
afterAll(async () => {
  await app?.close();
});

const login = (ip: string, email: string, password = 'wrong password') =>
  requestAs(app, 'POST', '/v1/auth/login', { body: { email, password } }, ip);

describe('POST /v1/auth/login per IP (10 per minute, burst 10)', () => {
  it('allows 10 attempts, answers 429 with Retry-After to the 11th, and refills one token every 6 s', async () => {
    const ip = freshIp();
    for (let i = 0; i < 10; i++) {
      const res = await login(ip, uniqueEmail());
      expect(res.status).toBe(401);
      // the tightest bucket is reported: the fresh email's (4 left) until the IP's runs lower
      expect(res.headers.get('ratelimit-remaining')).toBe(String(Math.min(9 - i, 4)));
    }
    const limited = await login(ip, uniqueEmail());
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(limited.headers.get('retry-after')).toBe('6');
    expect(limited.headers.get('ratelimit-limit')).toBe('10');
    expect(limited.headers.get('ratelimit-policy')).toBe('10;w=60;burst=10');
    clock.advance(5_000);
    const almost = await login(ip, uniqueEmail());
    expect(almost.status).toBe(429);
    expect(almost.headers.get('retry-after')).toBe('1');
    clock.advance(1_000);
    expect((await login(ip, uniqueEmail())).status).toBe(401);
    expect((await login(ip, uniqueEmail())).status).toBe(429);
  });

  it('also limits correct passwords (the limit is on attempts)', async () => {
    const user = await signUp(app);
    const ip = freshIp();
    for (let i = 0; i < 10; i++) await login(ip, uniqueEmail());
    expect((await login(ip, user.email, PASSWORD)).status).toBe(429);
  });
});

describe('POST /v1/auth/login per email (5 per 15 minutes)', () => {
  it('allows 5 attempts on one address from many IPs, then 429 for 180 s; the refused attempt costs the IP nothing', async () => {
    const email = uniqueEmail('target');
    for (let i = 0; i < 5; i++) expect((await login(freshIp(), email)).status).toBe(401);
    const ip = freshIp();
    const limited = await login(ip, email.toUpperCase());
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('180');
    // all or nothing: the per-IP bucket of the refused call was created full and not charged
    const bucket = await queryOne<{ tokens: number }>(
      app.runtime.orm.em.fork(),
      `SELECT tokens FROM rate_limit_buckets WHERE key = $1`,
      [`login_ip:${ip}`],
    );
    expect(Number(bucket!.tokens)).toBe(10);
    clock.advance(180_000);
    expect((await login(freshIp(), email)).status).toBe(401);
    expect((await login(freshIp(), email)).status).toBe(429);
  });
});

describe('POST /v1/auth/login per email counts failed attempts only', () => {
  it('lets an owner sign in again and again, and still stops the sixth wrong password', async () => {
    const user = await signUp(app);
    for (let i = 0; i < 8; i++) expect((await login(freshIp(), user.email, PASSWORD)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await login(freshIp(), user.email)).status).toBe(401);
    expect((await login(freshIp(), user.email)).status).toBe(429);
    // Once stopped, the right password waits too: the limit holds whoever is guessing.
    expect((await login(freshIp(), user.email, PASSWORD)).status).toBe(429);
  });

  it('passes six sign-ins from one IP within a minute, and answers the sixth failed one 429 with Retry-After', async () => {
    const user = await signUp(app);
    const ip = freshIp();
    for (let i = 0; i < 6; i++) {
      expect((await login(ip, user.email, PASSWORD)).status).toBe(200);
      clock.advance(5_000);
    }
    // The IP's bucket refills; the email's was never drawn down by the sign-ins.
    clock.advance(60_000);
    for (let i = 0; i < 5; i++) expect((await login(ip, user.email)).status).toBe(401);
    const limited = await login(ip, user.email);
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(limited.headers.get('retry-after')).toBe('180');
    expect(limited.headers.get('ratelimit-policy')).toBe('5;w=900;burst=5');
    // After Retry-After, the owner's right password passes (and gives its token back).
    clock.advance(180_000);
    expect((await login(ip, user.email, PASSWORD)).status).toBe(200);
    expect((await login(ip, user.email)).status).toBe(401);
    expect((await login(ip, user.email)).status).toBe(429);
  });
});

describe('POST /v1/auth/register per IP (5 per hour)', () => {
  it('allows 5 sign-ups from one IP, then 429 until a token refills (720 s)', async () => {
    const ip = freshIp();
    const register = () =>
      requestAs(
        app,
        'POST',
        '/v1/auth/register',
        { body: { email: uniqueEmail(), password: PASSWORD, tenant_name: 'T' } },
        ip,
      );
    for (let i = 0; i < 5; i++) expect((await register()).status).toBe(201);
    const limited = await register();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('720');
    clock.advance(720_000);
    expect((await register()).status).toBe(201);
    expect((await register()).status).toBe(429);
  });
});

describe('account recovery budget (5 per hour per IP, shared)', () => {
  it('password-reset, resend-verification and data requests draw on one budget', async () => {
    const owner = await signUp(app);
    const ip = freshIp();
    const reset = () => requestAs(app, 'POST', '/v1/auth/password-reset', { body: { email: uniqueEmail() } }, ip);
    const resend = () => requestAs(app, 'POST', '/v1/auth/resend-verification', { body: { email: uniqueEmail() } }, ip);
    const dataRequest = () =>
      requestAs(
        app,
        'POST',
        `/v1/auth/tenants/${owner.tenantId}/data-requests`,
        {
          token: app.runtime.tokens.sign('access', owner.userId, owner.tenantId, 3600, clock.now()),
          body: { kind: 'export' },
        },
        ip,
      );
    expect((await reset()).status).toBe(202);
    expect((await reset()).status).toBe(202);
    expect((await resend()).status).toBe(202);
    expect((await resend()).status).toBe(202);
    expect((await dataRequest()).status).toBe(202);
    for (const call of [reset, resend, dataRequest]) {
      const res = await call();
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('720');
    }
    clock.advance(720_000);
    expect((await resend()).status).toBe(202);
    expect((await reset()).status).toBe(429);
  });
});

describe('client address', () => {
  it('ignores X-Forwarded-For from an untrusted peer: a client cannot pick its own bucket', async () => {
    const plain = await startTestApp({ clock });
    try {
      for (let i = 0; i < 10; i++) {
        const res = await plain.request('POST', '/v1/auth/login', {
          body: { email: uniqueEmail(), password: 'x' },
          headers: { 'x-forwarded-for': freshIp() },
        });
        expect(res.status).toBe(401);
      }
      const res = await plain.request('POST', '/v1/auth/login', {
        body: { email: uniqueEmail(), password: 'x' },
        headers: { 'x-forwarded-for': freshIp() },
      });
      expect(res.status).toBe(429);
    } finally {
      await plain.close();
    }
  });
});

describe('idle bucket pruning', () => {
  it('deletes buckets idle for a day and keeps recent ones', async () => {
    const { pruneIdleBuckets } = await import('../../server/base/rate-limit.ts');
    const { RATE_LIMIT_IDLE_MS } = await import('../../server/jobs/rate-limit-prune.ts');
    const { execute, query } = await import('../../server/base/db/sql.ts');
    const em = app.runtime.orm.em.fork();
    const now = Date.now();
    await execute(
      em,
      `INSERT INTO rate_limit_buckets (key, tokens, updated_ms) VALUES ('prune:old', 1, $1), ('prune:new', 1, $2)`,
      [now - RATE_LIMIT_IDLE_MS - 1000, now],
    );
    expect(await pruneIdleBuckets(em, now - RATE_LIMIT_IDLE_MS)).toBeGreaterThanOrEqual(1);
    const left = await query<{ key: string }>(em, `SELECT key FROM rate_limit_buckets WHERE key LIKE 'prune:%'`);
    expect(left.map((r) => r.key)).toEqual(['prune:new']);
  });
});
