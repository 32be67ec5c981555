// Scheduled and cancellable sends, and quiet hours, through real HTTP and the real worker: send_at in
// the past, the future and too far ahead; cancel by key and by id, before and after an event is final;
// a contact's quiet hours (set by the backend or by the contact's own token) holding email but never
// the inbox, across midnight and a DST change in a real time zone (an injected clock), and a type that
// bypasses them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/base/clock.ts';
import { deliverEvent } from '../../server/delivery/runs/event.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import {
  createTenantFixture,
  expectValidationError,
  sql,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';

let app: TestApp;
let smtp: SmtpPeer;
let acme: TenantFixture;
let other: TenantFixture;

async function api(target: TestApp, fx: TenantFixture, method: string, path: string, body?: unknown) {
  const res = await target.request(method, path, { token: fx.serviceKey, body });
  if (res.status >= 400) throw new Error(`${method} ${path} -> ${res.status} ${res.text}`);
  return res.body;
}

async function setUpTypes(target: TestApp, fx: TenantFixture, mail: SmtpPeer) {
  await api(target, fx, 'PUT', '/v1/email-transport', {
    host: mail.host,
    port: mail.port,
    secure: false,
    from_email: 'robot@acme.test',
    from_name: 'Acme',
  });
  for (const [key, bypass] of [
    ['news', false],
    ['otp', true],
  ] as const) {
    await api(target, fx, 'POST', '/v1/notification-types', {
      key,
      channel_defaults: { inbox: true, email: true },
      bypass_quiet_hours: bypass,
    });
    await api(target, fx, 'POST', '/v1/inbox-templates', {
      notification_type_key: key,
      title: `${key} {{ n }}`,
      content: 'body',
    });
    await api(target, fx, 'POST', '/v1/email-templates', {
      notification_type_key: key,
      subject: `${key} {{ n }}`,
      content: '<p>hi</p>',
    });
  }
  await api(target, fx, 'POST', '/v1/notification-types', {
    key: 'inbox_only',
    channel_defaults: { inbox: true, email: false },
  });
  await api(target, fx, 'POST', '/v1/inbox-templates', {
    notification_type_key: 'inbox_only',
    title: 'i {{ n }}',
    content: 'body',
  });
}

beforeAll(async () => {
  smtp = await startSmtpPeer();
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  other = await createTenantFixture(app, 'Other');
  await setUpTypes(app, acme, smtp);
});

afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

describe('send_at', () => {
  it('holds a send until its time: scheduled, then delivered', async () => {
    const sendAt = new Date(Date.now() + 1500).toISOString();
    const res = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'inbox_only', recipients: ['sched_1', 'sched_2'], variables: { n: 1 }, send_at: sendAt },
    });
    expect(res.status).toBe(202);
    expect(res.body.events.map((e: { status: string }) => e.status)).toEqual(['scheduled', 'scheduled']);
    const ids = res.body.events.map((e: { event_id: string }) => e.event_id);
    const view = await api(app, acme, 'GET', `/v1/notifications/${ids[0]}`);
    expect(view.status).toBe('scheduled');
    expect(view.send_at).toBe(sendAt);
    expect(view.deliveries).toEqual([]);
    await waitForFinal(app, ids);
    const items = await sql<{ created_at: Date }>(
      app,
      `SELECT created_at FROM inbox_items WHERE event_id = ANY($1::uuid[])`,
      [ids],
    );
    expect(items).toHaveLength(2);
    for (const item of items)
      expect(new Date(item.created_at).getTime()).toBeGreaterThanOrEqual(Date.parse(sendAt) - 50);
  });

  it('sends a past send_at at once, and refuses one more than 90 days ahead', async () => {
    const past = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'inbox_only', recipients: ['sched_past'], variables: { n: 1 }, send_at: '2020-01-01T00:00:00Z' },
    });
    expect(past.status).toBe(202);
    expect(past.body.events[0].status).toBe('queued');
    await waitForFinal(app, [past.body.events[0].event_id]);
    const far = new Date(Date.now() + 91 * 86_400_000).toISOString();
    const tooFar = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'inbox_only', recipients: ['x'], send_at: far },
    });
    expectValidationError(tooFar, ['body', 'send_at']);
    expectValidationError(
      await app.request('POST', '/v1/notifications', {
        token: acme.serviceKey,
        body: { type: 'inbox_only', recipients: ['x'], send_at: 'tomorrow' },
      }),
      ['body', 'send_at'],
    );
    expectValidationError(
      await app.request('POST', '/v1/notifications', {
        token: acme.serviceKey,
        body: { type: 'inbox_only', recipients: ['x'], cancellation_key: 'k'.repeat(129) },
      }),
      ['body', 'cancellation_key'],
    );
  });
});

describe('cancel', () => {
  it('cancels scheduled events by key: they never run; events of other keys and tenants are untouched', async () => {
    const sendAt = new Date(Date.now() + 1500).toISOString();
    const trigger = async (fx: TenantFixture, key: string, recipients: string[]) =>
      (
        await api(app, fx, 'POST', '/v1/notifications', {
          type: 'inbox_only',
          recipients,
          variables: { n: 1 },
          send_at: sendAt,
          cancellation_key: key,
        })
      ).events.map((e: { event_id: string }) => e.event_id);
    const reminders = await trigger(acme, 'cart-42', ['cancel_1', 'cancel_2']);
    const kept = await trigger(acme, 'cart-43', ['cancel_3']);
    const res = await app.request('POST', '/v1/notifications/cancel', {
      token: acme.serviceKey,
      body: { cancellation_key: 'cart-42' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ canceled: 2 });
    // Another tenant's key of the same name cancels nothing of acme's.
    expect(
      (
        await app.request('POST', '/v1/notifications/cancel', {
          token: other.serviceKey,
          body: { cancellation_key: 'cart-43' },
        })
      ).body,
    ).toEqual({ canceled: 0 });
    await waitForFinal(app, kept);
    await new Promise((r) => setTimeout(r, 500));
    for (const id of reminders) {
      const view = await api(app, acme, 'GET', `/v1/notifications/${id}`);
      expect(view.status).toBe('canceled');
      expect(view.cancellation_key).toBe('cart-42');
    }
    expect(await sql(app, `SELECT 1 FROM inbox_items WHERE event_id = ANY($1::uuid[])`, [reminders])).toHaveLength(0);
    expect(await sql(app, `SELECT 1 FROM inbox_items WHERE event_id = ANY($1::uuid[])`, [kept])).toHaveLength(1);
    // Canceling again finds nothing left to cancel.
    expect(
      (
        await app.request('POST', '/v1/notifications/cancel', {
          token: acme.serviceKey,
          body: { cancellation_key: 'cart-42' },
        })
      ).body,
    ).toEqual({ canceled: 0 });
  });

  it('cancels a waiting workflow step: steps not run yet are canceled and never run', async () => {
    await api(app, acme, 'PUT', '/v1/notification-types/news/workflow', {
      steps: [
        { kind: 'channel', channel: 'inbox' },
        { kind: 'delay', seconds: 2 },
        { kind: 'channel', channel: 'email' },
      ],
    });
    try {
      const id = (
        await api(app, acme, 'POST', '/v1/notifications', {
          type: 'news',
          recipients: [{ external_id: 'wf_cancel', email: 'wf_cancel@example.test' }],
          variables: { n: 1 },
        })
      ).events[0].event_id;
      await eventually(
        async () => (await api(app, acme, 'GET', `/v1/notifications/${id}`)).steps[1]?.status === 'waiting',
        { message: 'the delay never started' },
      );
      expect((await app.request('DELETE', `/v1/notifications/${id}`, { token: acme.serviceKey })).status).toBe(204);
      await new Promise((r) => setTimeout(r, 3000));
      const view = await api(app, acme, 'GET', `/v1/notifications/${id}`);
      expect(view.status).toBe('canceled');
      expect(view.steps.map((s: { status: string }) => s.status)).toEqual(['done', 'canceled', 'canceled']);
      expect(smtp.messages.filter((m) => m.envelope.to.includes('wf_cancel@example.test'))).toHaveLength(0);
    } finally {
      await api(app, acme, 'DELETE', '/v1/notification-types/news/workflow');
    }
  });

  it("answers 409 for a final event, 404 for an unknown or another tenant's, 401 without a credential, 422 for malformed input", async () => {
    const id = (
      await api(app, acme, 'POST', '/v1/notifications', {
        type: 'inbox_only',
        recipients: ['cancel_final'],
        variables: { n: 1 },
      })
    ).events[0].event_id;
    await waitForFinal(app, [id]);
    const final = await app.request('DELETE', `/v1/notifications/${id}`, { token: acme.serviceKey });
    expect(final.status).toBe(409);
    expect(final.body.code).toBe('event_final');
    expect((await app.request('DELETE', `/v1/notifications/${id}`, { token: other.serviceKey })).status).toBe(404);
    expect(
      (
        await app.request('DELETE', `/v1/notifications/00000000-0000-7000-8000-000000000000`, {
          token: acme.serviceKey,
        })
      ).status,
    ).toBe(404);
    expect((await app.request('DELETE', `/v1/notifications/${id}`)).status).toBe(401);
    expect((await app.request('POST', '/v1/notifications/cancel', { body: { cancellation_key: 'x' } })).status).toBe(
      401,
    );
    expect(
      (
        await app.request('POST', '/v1/notifications/cancel', {
          token: acme.contactToken,
          body: { cancellation_key: 'x' },
        })
      ).status,
    ).toBe(403);
    expect((await app.request('DELETE', `/v1/notifications/${id}`, { token: acme.contactToken })).status).toBe(403);
    expectValidationError(await app.request('POST', '/v1/notifications/cancel', { token: acme.serviceKey, body: {} }), [
      'body',
      'cancellation_key',
    ]);
    expectValidationError(
      await app.request('POST', '/v1/notifications/cancel', { token: acme.serviceKey, body: { cancellation_key: '' } }),
      ['body', 'cancellation_key'],
    );
  });
});

describe('PUT /v1/contacts/{id}/quiet-hours', () => {
  it('is set by the backend or by the contact itself; 404 across tenants; 422 for a bad zone or time', async () => {
    const id = await acme.contact('qh_routes');
    const byKey = await app.request('PUT', `/v1/contacts/${id}/quiet-hours`, {
      token: acme.serviceKey,
      body: { timezone: 'Europe/Berlin', quiet_hours: { start: '22:00', end: '07:00' } },
    });
    expect(byKey.status).toBe(200);
    expect(byKey.body).toMatchObject({ timezone: 'Europe/Berlin', quiet_hours: { start: '22:00', end: '07:00' } });
    const byContact = await app.request('PUT', `/v1/contacts/${id}/quiet-hours`, {
      token: acme.tokenFor(id),
      body: { timezone: 'Asia/Tokyo', quiet_hours: null },
    });
    expect(byContact.status).toBe(200);
    expect(byContact.body).toMatchObject({ timezone: 'Asia/Tokyo', quiet_hours: null });
    const otherContact = await acme.contact('qh_other');
    expect(
      (
        await app.request('PUT', `/v1/contacts/${otherContact}/quiet-hours`, {
          token: acme.tokenFor(id),
          body: { timezone: 'UTC', quiet_hours: null },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await app.request('PUT', `/v1/contacts/${id}/quiet-hours`, {
          token: other.serviceKey,
          body: { timezone: 'UTC', quiet_hours: null },
        })
      ).status,
    ).toBe(404);
    expect(
      (await app.request('PUT', `/v1/contacts/${id}/quiet-hours`, { body: { timezone: 'UTC', quiet_hours: null } }))
        .status,
    ).toBe(401);
    expectValidationError(
      await app.request('PUT', `/v1/contacts/${id}/quiet-hours`, {
        token: acme.serviceKey,
        body: { timezone: 'Mars/Olympus', quiet_hours: null },
      }),
      ['body', 'timezone'],
    );
    expectValidationError(
      await app.request('PUT', `/v1/contacts/${id}/quiet-hours`, {
        token: acme.serviceKey,
        body: { timezone: 'UTC', quiet_hours: { start: '25:00', end: '07:00' } },
      }),
      ['body', 'quiet_hours', 'start'],
    );
    expectValidationError(
      await app.request('PUT', `/v1/contacts/${id}/quiet-hours`, {
        token: acme.serviceKey,
        body: { timezone: 'UTC', quiet_hours: { start: '07:00', end: '07:00' } },
      }),
      ['body', 'quiet_hours', 'end'],
    );
  });
});

describe('quiet hours (an injected clock)', () => {
  // 01:30 EST on 14 March 2027 in New York: inside 22:00-07:00, on the night the clocks go forward.
  // Its end, 07:00 EDT, is 11:00Z. The clock is far ahead of real time, so the held run's job (due at
  // 11:00Z that day) stays in the queue: the test runs the event itself once the clock has moved on.
  const clock = new ManualClock(Date.parse('2027-03-14T06:30:00Z'));
  let timed: TestApp;
  let mail: SmtpPeer;
  let fx: TenantFixture;

  beforeAll(async () => {
    mail = await startSmtpPeer();
    timed = await startTestApp({ clock });
    fx = await createTenantFixture(timed, 'Timed');
    await setUpTypes(timed, fx, mail);
  });
  afterAll(async () => {
    await timed?.close();
    await mail?.close();
  });

  async function contactWithQuietHours(externalId: string) {
    const id = (
      await api(timed, fx, 'POST', '/v1/contacts', { external_id: externalId, email: `${externalId}@example.test` })
    ).id;
    await api(timed, fx, 'PUT', `/v1/contacts/${id}/quiet-hours`, {
      timezone: 'America/New_York',
      quiet_hours: { start: '22:00', end: '07:00' },
    });
    return id;
  }

  const waitForEvent = async (id: string, ready: (view: any) => boolean) => {
    return eventually(
      async () => {
        const view = await api(timed, fx, 'GET', `/v1/notifications/${id}`);
        if (!ready(view)) throw new Error(`event not ready: ${JSON.stringify(view)}`);
        return view;
      },
      { timeoutMs: 15_000 },
    );
  };

  // Before the clock moves past the night (the next test moves it).
  it("holds a broadcast's event in a bulk job, as its first run was one", async () => {
    await contactWithQuietHours('qh_broadcast');
    const broadcastId = (
      await api(timed, fx, 'POST', '/v1/broadcasts', {
        type: 'news',
        audience: { all_contacts: true },
        variables: { n: 2 },
      })
    ).broadcast_id;
    const eventId = await eventually(
      async () =>
        (
          await sql<{ id: string }>(
            timed,
            `SELECT id FROM events WHERE broadcast_id = $1 AND external_id = 'qh_broadcast'`,
            [broadcastId],
          )
        )[0]?.id ?? false,
      { timeoutMs: 15_000, message: 'the broadcast wrote no event for qh_broadcast' },
    );
    // Its first run delivers the inbox and holds the email in a job of its own.
    const heldRun = async () =>
      sql<{ start_after: Date; priority: number; bulk: string | null }>(
        timed,
        `SELECT start_after, priority, data->>'bulk' AS bulk FROM pgboss.job WHERE name = 'deliver-event' AND data->'event_ids' ? $1 AND state = 'created' AND start_after > now() + interval '1 day'`,
        [eventId],
      );
    const job = await eventually(
      async () => {
        const rows = await heldRun();
        return rows.length > 0 && rows;
      },
      { timeoutMs: 15_000 },
    ).catch(() => heldRun());
    expect(job.map((j) => [new Date(j.start_after).toISOString(), j.priority, j.bulk])).toEqual([
      ['2027-03-14T11:00:00.000Z', -1, 'true'],
    ]);
  });

  it('delivers the inbox at once and holds email until the local end of the night, then sends it', async () => {
    await contactWithQuietHours('qh_night');
    const id = (
      await api(timed, fx, 'POST', '/v1/notifications', { type: 'news', recipients: ['qh_night'], variables: { n: 1 } })
    ).events[0].event_id;
    const held = await waitForEvent(id, (v) =>
      v.deliveries.some((d: { channel: string; status: string }) => d.channel === 'inbox' && d.status === 'delivered'),
    );
    expect(held.status).toBe('processing');
    expect(held.deliveries.find((d: { channel: string }) => d.channel === 'email').status).toBe('pending');
    const job = await sql<{ start_after: Date; priority: number; bulk: string | null }>(
      timed,
      `SELECT start_after, priority, data->>'bulk' AS bulk FROM pgboss.job WHERE name = 'deliver-event' AND data->'event_ids' ? $1 AND state = 'created'`,
      [id],
    );
    expect(job.map((j) => new Date(j.start_after).toISOString())).toEqual(['2027-03-14T11:00:00.000Z']);
    expect(job.map((j) => [j.priority, j.bulk])).toEqual([[0, null]]); // a trigger's run: not a bulk job
    // Still quiet a minute before the end: a run then holds it again.
    clock.advance(Date.parse('2027-03-14T10:59:00Z') - clock.now());
    await deliverEvent(timed.runtime, id, { finalAttempt: false });
    expect(mail.messages.filter((m) => m.envelope.to.includes('qh_night@example.test'))).toHaveLength(0);
    clock.advance(Date.parse('2027-03-14T11:00:00Z') - clock.now());
    await deliverEvent(timed.runtime, id, { finalAttempt: false });
    const sent = await api(timed, fx, 'GET', `/v1/notifications/${id}`);
    expect(sent.status).toBe('delivered');
    await mail.waitFor((m) => m.envelope.to.includes('qh_night@example.test'));
  });

  it('holds a workflow channel step the same way, and never holds a type that bypasses quiet hours', async () => {
    clock.advance(Date.parse('2027-03-15T03:00:00Z') - clock.now()); // 23:00 EDT on the 14th
    await contactWithQuietHours('qh_step');
    await api(timed, fx, 'PUT', '/v1/notification-types/news/workflow', {
      steps: [
        { kind: 'channel', channel: 'inbox' },
        { kind: 'channel', channel: 'email' },
      ],
    });
    const id = (
      await api(timed, fx, 'POST', '/v1/notifications', { type: 'news', recipients: ['qh_step'], variables: { n: 2 } })
    ).events[0].event_id;
    const held = await waitForEvent(id, (v) => v.steps[1]?.status === 'waiting');
    expect(held.steps[1]).toMatchObject({
      status: 'waiting',
      reason: 'quiet_hours',
      run_at: '2027-03-15T11:00:00.000Z',
    });
    expect(held.deliveries.map((d: { channel: string }) => d.channel)).toEqual(['inbox']);
    clock.advance(Date.parse('2027-03-15T11:00:01Z') - clock.now());
    await deliverEvent(timed.runtime, id, { finalAttempt: false });
    expect((await api(timed, fx, 'GET', `/v1/notifications/${id}`)).status).toBe('delivered');
    await mail.waitFor((m) => m.envelope.to.includes('qh_step@example.test'));

    clock.advance(Date.parse('2027-03-16T04:00:00Z') - clock.now()); // midnight in New York
    await contactWithQuietHours('qh_otp');
    const otp = (
      await api(timed, fx, 'POST', '/v1/notifications', { type: 'otp', recipients: ['qh_otp'], variables: { n: 3 } })
    ).events[0].event_id;
    await waitForFinal(timed, [otp]);
    expect((await api(timed, fx, 'GET', `/v1/notifications/${otp}`)).status).toBe('delivered');
    await mail.waitFor((m) => m.envelope.to.includes('qh_otp@example.test'));
  });
});
