// Deliveries that fail for now are retried on the install's schedule (deliveryRetrySchedule), not
// given up after a minute: a relay that turns an address away (451) for more attempts than pg-boss's
// default retries still gets the email once it takes it; each retry waits the schedule's time; and a
// delivery waiting for its retry shows when it runs (next_attempt_at).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import { createTenantFixture, insertNotificationType, type TenantFixture } from '../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { execute } from '../../server/base/db/sql.ts';
import { newId } from '../../server/base/ids.ts';

/** The first wait is longer than pg-boss's first backoff (1-2 s), so a test can tell them apart. */
const SCHEDULE = [4, 1, 1, 1, 1, 1, 1, 1, 1];

let app: TestApp;
let smtp: SmtpPeer;
let acme: TenantFixture;
/** Addresses the SMTP peer turns away for now (451). */
const deferred = new Set<string>();

beforeAll(async () => {
  smtp = await startSmtpPeer({ deferRecipients: deferred });
  app = await startTestApp({ config: { deliveryRetrySchedule: SCHEDULE } });
  acme = await createTenantFixture(app, 'Acme');
  const res = await app.request('PUT', '/v1/email-transport', {
    token: acme.serviceKey,
    body: { host: smtp.host, port: smtp.port, secure: false, from_email: 'robot@acme.test' },
  });
  expect(res.status).toBe(200);
  await insertNotificationType(app, acme.tenantId, { key: 'mail', channels: { email: true } });
  await execute(
    app.runtime.orm.em.fork(),
    `INSERT INTO email_templates (id, tenant_id, notification_type_key, brand_key, language, subject, content)
     VALUES ($1, $2, 'mail', 'default', 'en', 'Order {{ order }}', '<p>Hi</p>')`,
    [newId(), acme.tenantId],
  );
});

afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

interface Delivery {
  status: string;
  attempts: number;
  last_error: string | null;
  next_attempt_at: string | null;
  updated_at: string;
}

async function deliveryOf(eventId: string): Promise<{ status: string; delivery: Delivery | undefined }> {
  const res = await app.request('GET', `/v1/notifications/${eventId}`, { token: acme.serviceKey });
  expect(res.status).toBe(200);
  return {
    status: res.body.status,
    delivery: res.body.deliveries.find((d: { channel: string }) => d.channel === 'email'),
  };
}

describe('the delivery retry schedule', () => {
  it('retries past an outage longer than the default retries and delivers once the relay takes the email', async () => {
    const address = 'ann@example.test';
    deferred.add(address);
    const res = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'mail', recipients: [{ external_id: 'ann', email: address }], variables: { order: 'R-1' } },
    });
    expect(res.status).toBe(202);
    const eventId: string = res.body.events[0].event_id;

    // After the first attempt: pending, with its next attempt the schedule's first wait after it.
    const first = await eventually(
      async () => {
        const { delivery } = await deliveryOf(eventId);
        return delivery?.attempts === 1 && delivery.next_attempt_at ? delivery : false;
      },
      { timeoutMs: 30_000, message: 'the first attempt, turned away, with its next attempt shown' },
    );
    expect(first.status).toBe('pending');
    expect(first.last_error).toMatch(/451|deferred|try again/i);
    const firstWaitMs = Date.parse(first.next_attempt_at!) - Date.parse(first.updated_at);
    expect(firstWaitMs).toBeGreaterThanOrEqual(SCHEDULE[0]! * 1000 - 100);

    // Turned away more times than pg-boss's default five retries allow: still waiting, not failed.
    const later = await eventually(
      async () => {
        const { delivery } = await deliveryOf(eventId);
        return delivery && delivery.attempts >= 7 ? delivery : false;
      },
      { timeoutMs: 60_000, message: 'seven attempts' },
    );
    expect(later.status).toBe('pending');
    expect(smtp.messages.filter((m) => m.parsed.subject === 'Order R-1')).toHaveLength(0);

    deferred.delete(address);
    const done = await eventually(
      async () => {
        const event = await deliveryOf(eventId);
        return event.status === 'delivered' || event.status === 'failed' ? event : false;
      },
      { timeoutMs: 60_000, message: 'the event final' },
    );
    expect(done.status).toBe('delivered');
    expect(done.delivery).toMatchObject({ status: 'sent', next_attempt_at: null });
    expect(smtp.messages.filter((m) => m.parsed.subject === 'Order R-1')).toHaveLength(1);
  });
});
