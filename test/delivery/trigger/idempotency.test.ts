// Idempotency-Key on POST /v1/notifications: replay, reuse with another body, in-flight conflicts,
// concurrency, release after failure, stale claims, expiry and the prune job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  insertInboxTemplate,
  createTenantFixture,
  insertNotificationType,
  sql,
  sqlOne,
  type TenantFixture,
} from '../../support/fixtures.ts';
import { ManualClock } from '../../../server/base/clock.ts';
import { execute } from '../../../server/base/db/sql.ts';
import {
  IDEMPOTENCY_STALE_MS,
  claimIdempotencyKey,
  completeIdempotencyKey,
  pruneIdempotencyKeys,
  releaseIdempotencyKey,
  requestHash,
} from '../../../server/delivery/trigger/idempotency.ts';

let app: TestApp;
let acme: TenantFixture;
let other: TenantFixture;
const clock = new ManualClock(Date.parse('2026-11-21T12:00:00Z'));

beforeAll(async () => {
  app = await startTestApp({ clock });
  acme = await createTenantFixture(app, 'Acme');
  other = await createTenantFixture(app, 'Other');
  for (const t of [acme, other]) {
    await insertNotificationType(app, t.tenantId, { key: 'plain' });
    await insertInboxTemplate(app, t.tenantId, { type: 'plain', title: 'Hi', content: 'Hello' });
  }
});
afterAll(async () => {
  await app?.close();
});

const send = (key: string | undefined, body: unknown, token = acme.serviceKey) =>
  app.request('POST', '/v1/notifications', {
    token,
    body,
    headers: key === undefined ? {} : { 'idempotency-key': key },
  });

const eventCount = async (tenantId: string) =>
  (await sqlOne<{ n: number }>(app, `SELECT count(*)::int AS n FROM events WHERE tenant_id = $1`, [tenantId]))!.n;

describe('Idempotency-Key', () => {
  it('replays the first response for the same key and body, creating nothing new', async () => {
    const body = { type: 'plain', recipients: ['i1', 'i2'], variables: { a: 1, b: 2 } };
    const first = await send('key-replay', body);
    expect(first.status).toBe(202);
    const before = await eventCount(acme.tenantId);
    // Same body, keys in another order: the same canonical body.
    const second = await send('key-replay', { variables: { b: 2, a: 1 }, recipients: ['i1', 'i2'], type: 'plain' });
    expect(second.status).toBe(202);
    expect(second.body).toEqual(first.body);
    expect(await eventCount(acme.tenantId)).toBe(before);
  });

  it('answers 422 idempotency_key_reused for the same key with another body', async () => {
    expect((await send('key-reuse', { type: 'plain', recipients: ['r1'] })).status).toBe(202);
    const res = await send('key-reuse', { type: 'plain', recipients: ['r2'] });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('idempotency_key_reused');
  });

  it('answers 409 idempotency_in_flight while the first request with the key is running', async () => {
    const body = { type: 'plain', recipients: ['f1'] };
    await execute(
      app.runtime.orm.em.fork(),
      `INSERT INTO idempotency_keys (tenant_id, key, request_hash, state, created_at, expires_at)
       VALUES ($1, 'key-flight', $2, 'in_flight', to_timestamp($3 / 1000.0), to_timestamp($3 / 1000.0) + interval '1 day')`,
      [
        acme.tenantId,
        requestHash({ ...body, variables: {}, secret_variables: {} }, app.runtime.tokens.derive('idempotency')),
        clock.now(),
      ],
    );
    const res = await send('key-flight', body);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('idempotency_in_flight');
    expect(res.headers.get('retry-after')).toBe(String(IDEMPOTENCY_STALE_MS / 1000));
    clock.advance(IDEMPOTENCY_STALE_MS - 2_500);
    expect((await send('key-flight', body)).headers.get('retry-after')).toBe('3');
    // A claim left by a crashed request goes stale within seconds and is taken over.
    clock.advance(2_500);
    const later = await send('key-flight', body);
    expect(later.status).toBe(202);
    expect(IDEMPOTENCY_STALE_MS).toBeLessThanOrEqual(10_000);
  });

  it("lets a request whose stale claim a retry took over neither commit nor free the retry's claim", async () => {
    const em = app.runtime.orm.em.fork();
    const first = { tenantId: acme.tenantId, key: 'key-takeover', requestHash: 'h', claimedAt: clock.now() };
    expect((await claimIdempotencyKey(em, first)).kind).toBe('claimed');
    clock.advance(IDEMPOTENCY_STALE_MS);
    const retry = { ...first, claimedAt: clock.now() };
    expect((await claimIdempotencyKey(em, retry)).kind).toBe('claimed');
    await expect(completeIdempotencyKey(em, first, 202, { from: 'first' })).rejects.toMatchObject({
      code: 'idempotency_in_flight',
    });
    await releaseIdempotencyKey(em, first);
    await completeIdempotencyKey(em, retry, 202, { from: 'retry' });
    expect((await claimIdempotencyKey(em, { ...retry, claimedAt: clock.now() })).kind === 'replay').toBe(true);
    const row = await sqlOne<{ response_body: unknown }>(
      app,
      `SELECT response_body FROM idempotency_keys WHERE tenant_id = $1 AND key = 'key-takeover'`,
      [acme.tenantId],
    );
    expect(row!.response_body).toEqual({ from: 'retry' });
  });

  it('lets exactly one of two simultaneous requests with one key do the work', async () => {
    const body = { type: 'plain', recipients: ['c1', 'c2', 'c3'] };
    const before = await eventCount(acme.tenantId);
    const results = await Promise.all([send('key-race', body), send('key-race', body), send('key-race', body)]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 202).length).toBeGreaterThanOrEqual(1);
    for (const r of results) {
      expect([202, 409]).toContain(r.status);
      if (r.status === 202) expect(r.body).toEqual(results.find((x) => x.status === 202)!.body);
      else expect(r.body.code).toBe('idempotency_in_flight');
    }
    expect(await eventCount(acme.tenantId)).toBe(before + 3);
  });

  it('releases the key when the request fails, so a corrected retry may use it', async () => {
    const failed = await send('key-fail', { type: 'nope', recipients: ['x'] });
    expect(failed.status).toBe(422);
    expect(
      await sql(app, `SELECT 1 FROM idempotency_keys WHERE tenant_id = $1 AND key = 'key-fail'`, [acme.tenantId]),
    ).toHaveLength(0);
    const fixed = await send('key-fail', { type: 'plain', recipients: ['x'] });
    expect(fixed.status).toBe(202);
  });

  it('keys are per tenant', async () => {
    const a = await send('key-shared', { type: 'plain', recipients: ['s'] });
    const b = await send('key-shared', { type: 'plain', recipients: ['s'] }, other.serviceKey);
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.events[0].event_id).not.toBe(a.body.events[0].event_id);
  });

  it('rejects an over-long or empty key with 422', async () => {
    const res = await send('k'.repeat(256), { type: 'plain', recipients: ['x'] });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['header', 'Idempotency-Key']);
  });

  it('expires after 24 h: the key then starts afresh, and the prune job deletes old records', async () => {
    const body = { type: 'plain', recipients: ['e1'] };
    const first = await send('key-expire', body);
    clock.advance(24 * 3600 * 1000 + 1000);
    const again = await send('key-expire', body);
    expect(again.status).toBe(202);
    expect(again.body.events[0].event_id).not.toBe(first.body.events[0].event_id);
    clock.advance(24 * 3600 * 1000 + 1000);
    // The prune job is scheduled by the worker processes (hourly).
    expect((await app.runtime.boss!.getSchedules('prune-idempotency-keys')).map((sch) => sch.cron)).toEqual([
      '17 * * * *',
    ]);
    const removed = await pruneIdempotencyKeys(app.runtime.orm.em.fork(), clock.now());
    expect(removed).toBeGreaterThan(0);
    expect(
      await sql(app, `SELECT 1 FROM idempotency_keys WHERE expires_at <= to_timestamp($1 / 1000.0)`, [clock.now()]),
    ).toHaveLength(0);
  });
});
