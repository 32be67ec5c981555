// POST /v1/notifications (trigger) and GET /v1/notifications/{event_id} (event status).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import pg from 'pg';
import { notifyChannelSql } from 'pg-boss/dist/plans.js';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { eventually } from '../../support/eventually.ts';
import {
  insertInboxTemplate,
  createTenantFixture,
  insertNotificationType,
  setTriggerLimit,
  sql,
  sqlOne,
  waitForFinal,
  deliveryJobsOf,
  type TenantFixture,
} from '../../support/fixtures.ts';
import { execute } from '../../../server/base/db/sql.ts';
import { BOSS_SCHEMA } from '../../../server/base/queue.ts';
import { DELIVER_EVENT_QUEUE } from '../../../server/delivery/queues.ts';
import { Waker } from '../../../server/delivery/enqueue.ts';
import { createLogger } from '../../../server/base/logger.ts';

let app: TestApp;
let acme: TenantFixture;
let other: TenantFixture;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  other = await createTenantFixture(app, 'Other');
  await insertNotificationType(app, acme.tenantId, {
    key: 'order_shipped',
    variables: [{ name: 'order_id', required: true }],
  });
  await insertInboxTemplate(app, acme.tenantId, {
    type: 'order_shipped',
    title: 'Order {{ order_id }}',
    content: 'Code {{ code }}',
  });
  await insertNotificationType(app, acme.tenantId, { key: 'plain' });
  await insertInboxTemplate(app, acme.tenantId, {
    type: 'plain',
    title: 'Hi',
    content: 'Hello {{ contact.external_id }}',
  });
});
afterAll(async () => {
  await app?.close();
});

const trigger = (body: unknown, key = acme.serviceKey, headers: Record<string, string> = {}) =>
  app.request('POST', '/v1/notifications', { token: key, body, headers });

/** `count` triggers of the tenant's 'plain' type at once, one recipient each. */
const triggerAtOnce = (tenant: TenantFixture, count: number) =>
  Promise.all(
    Array.from({ length: count }, (_, i) =>
      trigger({ type: 'plain', recipients: [`at_once_${i}`] }, tenant.serviceKey),
    ),
  );

describe('POST /v1/notifications', () => {
  it('validates an object recipient as a contact is created: trimmed, language canonical, the same limits', async () => {
    const res = await trigger({
      type: 'plain',
      recipients: [{ external_id: 'same_rules', name: '  Ann  ', language: 'DE-at', phone: ' +49 30 123456 ' }],
    });
    expect(res.status).toBe(202);
    const contact = await sqlOne(
      app,
      `SELECT name, language, phone FROM contacts WHERE tenant_id = $1 AND external_id = 'same_rules'`,
      [acme.tenantId],
    );
    expect(contact).toEqual({ name: 'Ann', language: 'de-AT', phone: '+4930123456' });
    for (const [field, value] of [
      ['name', 'x'.repeat(201)],
      ['name', '   '],
      ['language', 'not a tag!'],
      ['email', 'nope'],
      ['phone', '+49 30 1'],
      ['phone', '030 1234567'],
    ] as const) {
      const refused = await trigger({ type: 'plain', recipients: [{ external_id: 'same_rules', [field]: value }] });
      expect(refused.status, `${field} ${value}`).toBe(422);
      expect(
        refused.body.detail.some((d: { loc: unknown[] }) => d.loc.at(-1) === field),
        JSON.stringify(refused.body),
      ).toBe(true);
    }
  });

  it('accepts a trigger: one queued event per recipient, contacts upserted, 202 only after commit', async () => {
    const res = await trigger({
      type: 'order_shipped',
      recipients: ['ext_1', { external_id: 'ext_2', email: 'Ann@Example.org', name: 'Ann', language: 'de' }],
      variables: { order_id: 'A-1' },
      secret_variables: { code: '4711-secret' },
    });
    expect(res.status).toBe(202);
    expect(res.body.events).toHaveLength(2);
    expect(res.body.events.map((e: { external_id: string }) => e.external_id)).toEqual(['ext_1', 'ext_2']);
    for (const e of res.body.events)
      expect(e).toEqual({
        event_id: expect.any(String),
        external_id: expect.any(String),
        contact_id: expect.any(String),
        status: 'queued',
      });
    const contact = await sqlOne<{ email: string; name: string; language: string }>(
      app,
      `SELECT email, name, language FROM contacts WHERE tenant_id = $1 AND external_id = 'ext_2'`,
      [acme.tenantId],
    );
    expect(contact).toEqual({ email: 'ann@example.org', name: 'Ann', language: 'de' });
    const events = await sql<{ secret_variables_ciphertext: string | null; secret_keys: string[]; variables: object }>(
      app,
      `SELECT secret_variables_ciphertext, secret_keys, variables FROM events WHERE id = ANY($1::uuid[])`,
      [res.body.events.map((e: { event_id: string }) => e.event_id)],
    );
    expect(events).toHaveLength(2);
    for (const e of events) {
      expect(e.secret_keys).toEqual(['code']);
      expect(e.variables).toEqual({ order_id: 'A-1' });
      if (e.secret_variables_ciphertext) expect(e.secret_variables_ciphertext).not.toContain('4711');
    }
    // Every event in a delivery job, once.
    const jobs = await deliveryJobsOf(
      app,
      res.body.events.map((e: { event_id: string }) => e.event_id),
    );
    expect(jobs.flatMap((j) => j.event_ids).sort()).toEqual(
      res.body.events.map((e: { event_id: string }) => e.event_id).sort(),
    );
    await waitForFinal(
      app,
      res.body.events.map((e: { event_id: string }) => e.event_id),
    );
  });

  it('answers 401 without a credential', async () => {
    const res = await app.request('POST', '/v1/notifications', { body: { type: 'plain', recipients: ['x'] } });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthorized');
  });

  it('answers 403 for a contact token', async () => {
    const created = await trigger({ type: 'plain', recipients: ['ext_tok'] });
    const res = await trigger({ type: 'plain', recipients: ['x'] }, acme.tokenFor(created.body.events[0].contact_id));
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('wrong_credential_kind');
  });

  it.each([
    ['an unknown type', { type: 'nope', recipients: ['a'] }, ['body', 'type']],
    ['no recipients', { type: 'plain', recipients: [] }, ['body', 'recipients']],
    [
      'more than 100 recipients',
      { type: 'plain', recipients: Array.from({ length: 101 }, (_, i) => `r${i}`) },
      ['body', 'recipients'],
    ],
    ['a missing required variable', { type: 'order_shipped', recipients: ['a'] }, ['body', 'variables', 'order_id']],
    [
      'a key in both variables and secret_variables',
      { type: 'plain', recipients: ['a'], variables: { k: 1 }, secret_variables: { k: 2 } },
      ['body', 'secret_variables', 'k'],
    ],
    ['an unknown brand', { type: 'plain', recipients: ['a'], brand: 'nope' }, ['body', 'brand']],
    ['a malformed recipient', { type: 'plain', recipients: [{ email: 'x@y.z' }] }, ['body', 'recipients', 0]],
    ['an unknown channel', { type: 'plain', recipients: ['a'], channels: ['fax'] }, ['body', 'channels', 0]],
  ])('answers 422 for %s', async (_name, body, loc) => {
    const before = await sqlOne<{ n: number }>(app, `SELECT count(*)::int AS n FROM events WHERE tenant_id = $1`, [
      acme.tenantId,
    ]);
    const res = await trigger(body);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc.slice(0, loc.length)).toEqual(loc);
    const after = await sqlOne<{ n: number }>(app, `SELECT count(*)::int AS n FROM events WHERE tenant_id = $1`, [
      acme.tenantId,
    ]);
    expect(after!.n).toBe(before!.n);
  });

  it('accepts a required variable given as a secret variable', async () => {
    const res = await trigger({
      type: 'order_shipped',
      recipients: ['a'],
      secret_variables: { order_id: 'S-1', code: 'x' },
    });
    expect(res.status).toBe(202);
  });

  it('answers 422 for a deleted type', async () => {
    await insertNotificationType(app, acme.tenantId, { key: 'gone' });
    await execute(
      app.runtime.orm.em.fork(),
      `UPDATE notification_types SET deleted_at = now() WHERE tenant_id = $1 AND key = 'gone'`,
      [acme.tenantId],
    );
    const res = await trigger({ type: 'gone', recipients: ['a'] });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'type']);
  });

  it('answers 422 for malformed JSON', async () => {
    const res = await app.request('POST', '/v1/notifications', { token: acme.serviceKey, rawBody: '{"type": ' });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body']);
  });

  it('answers 422 for U+0000 in a variable, a secret variable or a recipient, and writes nothing', async () => {
    for (const [body, loc] of [
      [{ type: 'plain', recipients: ['nul_1'], variables: { note: 'a\u0000' } }, ['body', 'variables', 'note']],
      [
        { type: 'plain', recipients: ['nul_1'], secret_variables: { code: '\u0000' } },
        ['body', 'secret_variables', 'code'],
      ],
      [
        { type: 'plain', recipients: [{ external_id: 'nul_1', email: 'a@example.org', name: 'A\u0000' }] },
        ['body', 'recipients', 0, 'name'],
      ],
    ] as const) {
      const res = await trigger(body);
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(loc);
    }
    expect(
      await sql(app, `SELECT 1 FROM contacts WHERE tenant_id = $1 AND external_id = 'nul_1'`, [acme.tenantId]),
    ).toHaveLength(0);
  });

  it("does not see another tenant's types (422, never another tenant's data)", async () => {
    const res = await trigger({ type: 'plain', recipients: ['a'] }, other.serviceKey);
    expect(res.status).toBe(422);
  });

  it('answers 409 tenant_archived for an archived tenant', async () => {
    const archived = await createTenantFixture(app, 'Archived');
    await insertNotificationType(app, archived.tenantId, { key: 'plain' });
    await execute(app.runtime.orm.em.fork(), `UPDATE tenants SET archived_at = now() WHERE id = $1`, [
      archived.tenantId,
    ]);
    const res = await trigger({ type: 'plain', recipients: ['a'] }, archived.serviceKey);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('tenant_archived');
    expect(await sql(app, `SELECT 1 FROM events WHERE tenant_id = $1`, [archived.tenantId])).toHaveLength(0);
  });

  it('answers 429 with Retry-After past the tenant trigger budget, counted per account', async () => {
    const limited = await createTenantFixture(app, 'Limited');
    await insertNotificationType(app, limited.tenantId, { key: 'plain' });
    await setTriggerLimit(app, limited.tenantId, 1, 1);
    const first = await trigger({ type: 'plain', recipients: ['a'] }, limited.serviceKey);
    expect(first.status).toBe(202);
    const second = await trigger({ type: 'plain', recipients: ['a'] }, limited.serviceKey);
    expect(second.status).toBe(429);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  // Bursts and rates chosen so that nothing refills noticeably during a test. With a burst of 8 the
  // concurrent triggers are charged together; with 200 the process may also charge up to 20 ahead.
  it.each([
    ['charged together', 'Busy', 5, 8, 20],
    ['charged ahead for the process', 'Leased', 1, 200, 250],
  ])(
    'grants concurrent triggers (%s) exactly what the bucket holds, each told a different remainder',
    async (_how, name, perMinute, burst, attempts) => {
      const busy = await createTenantFixture(app, name);
      await insertNotificationType(app, busy.tenantId, { key: 'plain' });
      await setTriggerLimit(app, busy.tenantId, perMinute, burst);
      const results = await triggerAtOnce(busy, attempts);
      const accepted = results.filter((r) => r.status === 202);
      expect(accepted).toHaveLength(burst);
      expect(results.filter((r) => r.status === 429)).toHaveLength(attempts - burst);
      // Every accepted trigger saw its own place in the bucket: burst - 1, ..., 0 left, each once.
      const remainders = accepted.map((r) => Number(r.headers.get('ratelimit-remaining'))).sort((a, b) => a - b);
      expect(remainders).toEqual(Array.from({ length: burst }, (_, i) => i));
      expect(await sql(app, `SELECT 1 FROM events WHERE tenant_id = $1`, [busy.tenantId])).toHaveLength(burst);
    },
  );

  it('accepts concurrent triggers naming the same recipients in different orders', async () => {
    const names = Array.from({ length: 40 }, (_, i) => `conc_${i}`);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => trigger({ type: 'plain', recipients: i % 2 ? names : [...names].reverse() })),
    );
    expect(results.map((r) => r.status)).toEqual([202, 202, 202, 202, 202, 202]);
    expect(results[1]!.body.events.map((e: { external_id: string }) => e.external_id)).toEqual(names);
    expect(results[0]!.body.events.map((e: { external_id: string }) => e.external_id)).toEqual([...names].reverse());
  });

  it('makes one event per distinct recipient', async () => {
    const res = await trigger({ type: 'plain', recipients: ['dup', { external_id: 'dup', name: 'D' }] });
    expect(res.status).toBe(202);
    expect(res.body.events).toHaveLength(1);
  });

  it("wakes the delivery workers on pg-boss's channel once the trigger has committed", async () => {
    const listener = new pg.Client({ connectionString: app.runtime.db.url });
    await listener.connect();
    try {
      const channel = (await listener.query(`SELECT ${notifyChannelSql(BOSS_SCHEMA)} AS c`)).rows[0].c as string;
      const woken: string[] = [];
      listener.on('notification', (n) => woken.push(n.payload ?? ''));
      await listener.query(`LISTEN "${channel}"`);
      const res = await trigger({ type: 'plain', recipients: ['woken_1'] });
      expect(res.status).toBe(202);
      await vi.waitFor(() => expect(woken).toContain(DELIVER_EVENT_QUEUE), { timeout: 2000 });
    } finally {
      await listener.end();
    }
  });
});

describe('Waker (the coalesced wake-up of the delivery workers)', () => {
  const logLines: string[] = [];
  const logger = createLogger('warn', {}, (line) => logLines.push(line));

  it('sends one wake-up for all the asks made while one was on its way', async () => {
    const pending: Array<() => void> = [];
    let sent = 0;
    const waker = new Waker(
      () => {
        sent++;
        return new Promise<void>((resolve) => pending.push(resolve));
      },
      logger,
      0,
    );
    waker.wake();
    waker.wake();
    waker.wake();
    expect(sent).toBe(1);
    pending.shift()!();
    await vi.waitFor(() => expect(sent).toBe(2));
    pending.shift()!();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(sent).toBe(2);
    waker.wake();
    expect(sent).toBe(3);
    pending.shift()!();
  });

  it('sends at once after a quiet spell, and under steady asks no more often than the spacing', async () => {
    const began: number[] = [];
    const waker = new Waker(
      async () => {
        began.push(performance.now());
      },
      logger,
      50,
    );
    waker.wake();
    expect(began).toHaveLength(1);
    // Asks every 5 ms for 300 ms: about one wake-up per 50 ms, the last ask answered too.
    let lastAsk = 0;
    for (let i = 0; i < 60; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      lastAsk = performance.now();
      waker.wake();
    }
    await vi.waitFor(() => expect(began.at(-1)!).toBeGreaterThanOrEqual(lastAsk));
    const gaps = began.slice(1).map((t, i) => t - began[i]!);
    // Timers round to the millisecond, so a wait of 50 ms may end a little early.
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(45);
    // One per spacing over the asks' span, and the one that answers the last ask, which may begin up to
    // a spacing after it (gaps a little short of 50 ms can fit one more in the span).
    expect(began.length).toBeLessThanOrEqual(Math.ceil((lastAsk - began[0]!) / 45) + 2);
    expect(began.length).toBeGreaterThanOrEqual(4);
    // After a quiet spell longer than the spacing, an ask is sent at once.
    await new Promise((resolve) => setTimeout(resolve, 80));
    const before = began.length;
    waker.wake();
    expect(began).toHaveLength(before + 1);
  });

  it('logs a failed wake-up without throwing, and sends the next one', async () => {
    let calls = 0;
    const waker = new Waker(
      async () => {
        calls++;
        if (calls === 1) throw new Error('connection refused');
      },
      logger,
      0,
    );
    waker.wake();
    await vi.waitFor(() =>
      expect(
        logLines.some((l) => l.includes('waking the delivery workers failed') && l.includes('connection refused')),
      ).toBe(true),
    );
    waker.wake();
    await vi.waitFor(() => expect(calls).toBe(2));
  });
});

describe('GET /v1/notifications/{event_id}', () => {
  it('shows the status with deliveries and secret values masked', async () => {
    const res = await trigger({
      type: 'order_shipped',
      recipients: ['status_1'],
      variables: { order_id: 'B-2' },
      secret_variables: { code: 'top-secret-77' },
    });
    const id = res.body.events[0].event_id;
    await waitForFinal(app, [id]);
    const got = await app.request('GET', `/v1/notifications/${id}`, { token: acme.serviceKey });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      event_id: id,
      type: 'order_shipped',
      external_id: 'status_1',
      contact_id: res.body.events[0].contact_id,
      status: 'delivered',
      variables: { order_id: 'B-2', code: '********' },
      deliveries: [
        { channel: 'inbox', status: 'delivered', reason: null, provider: null, attempts: 1, last_error: null },
      ],
    });
    expect(got.text).not.toContain('top-secret-77');
    // The recipient got it in full, and the logs never saw it.
    const item = await sqlOne<{ body: string }>(app, `SELECT body FROM inbox_items WHERE event_id = $1`, [id]);
    expect(item!.body).toBe('Code top-secret-77');
    expect(app.logs.join('\n')).not.toContain('top-secret-77');
    // Delivered: the ciphertext is gone too.
    expect(
      (await sqlOne<{ c: string | null }>(app, `SELECT secret_variables_ciphertext AS c FROM events WHERE id = $1`, [
        id,
      ]))!.c,
    ).toBeNull();
  });

  it('shows the status and the deliveries as one moment saw them, while a run moves them on', async () => {
    const res = await trigger({ type: 'plain', recipients: ['one_moment'] });
    const id = res.body.events[0].event_id;
    await waitForFinal(app, [id]);
    // A run's transaction moves the event and its delivery on together, and holds the deliveries
    // table until the read has begun: a read of the event first and of its deliveries later would
    // see the event as it was and the delivery as it is now.
    const run = new pg.Client({ connectionString: app.runtime.db.url });
    await run.connect();
    try {
      const runPid = (await run.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await run.query('BEGIN');
      await run.query(`UPDATE events SET status = 'failed' WHERE id = $1`, [id]);
      await run.query(`UPDATE deliveries SET status = 'failed' WHERE event_id = $1`, [id]);
      await run.query('LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE');
      const read = app.request('GET', `/v1/notifications/${id}`, { token: acme.serviceKey });
      await eventually(
        async () =>
          !!(await sqlOne(
            app,
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%deliveries%' AND pid <> $1`,
            [runPid],
          )),
        { intervalMs: 20, message: 'the read never waited for the deliveries table' },
      );
      await run.query('COMMIT');
      const got = await read;
      expect(got.status).toBe(200);
      expect([got.body.status, got.body.deliveries.map((d: { status: string }) => d.status)]).toEqual([
        'failed',
        ['failed'],
      ]);
    } finally {
      await run.end();
    }
  });

  it("answers 404 for another tenant's event and for an unknown id", async () => {
    const res = await trigger({ type: 'plain', recipients: ['x404'] });
    const id = res.body.events[0].event_id;
    expect((await app.request('GET', `/v1/notifications/${id}`, { token: other.serviceKey })).status).toBe(404);
    expect(
      (await app.request('GET', `/v1/notifications/0190a000-0000-7000-8000-000000000000`, { token: acme.serviceKey }))
        .status,
    ).toBe(404);
    expect((await app.request('GET', `/v1/notifications/not-a-uuid`, { token: acme.serviceKey })).status).toBe(404);
  });

  it('answers 401 without a credential and 403 for a contact token', async () => {
    const res = await trigger({ type: 'plain', recipients: ['x403'] });
    const id = res.body.events[0].event_id;
    expect((await app.request('GET', `/v1/notifications/${id}`)).status).toBe(401);
    const forbidden = await app.request('GET', `/v1/notifications/${id}`, {
      token: acme.tokenFor(res.body.events[0].contact_id),
    });
    expect(forbidden.status).toBe(403);
  });

  it('answers 422 for a malformed event id', async () => {
    const res = await app.request('GET', `/v1/notifications/${'x'.repeat(80)}`, { token: acme.serviceKey });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc[0]).toBe('path');
  });
});
