// Deliveries that fail for now are retried on the install's schedule (deliveryRetrySchedule), not
// given up after a minute: a relay that turns ten emails away (451) for more attempts than pg-boss's
// default retries allow still gets every one of them, once, when it takes mail again; each retry waits
// the schedule's time; and a delivery waiting for its retry shows when it runs (next_attempt_at).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import {
  createTenantFixture,
  insertEmailTemplate,
  insertNotificationType,
  type TenantFixture,
} from '../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';

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
  await insertEmailTemplate(app, acme.tenantId, { type: 'mail', subject: 'Order {{ order }}', content: '<p>Hi</p>' });
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
  it('retries past an outage longer than the default retries and loses none of the emails it accepted', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `r${i}`);
    const addressOf = (name: string) => `${name}@example.test`;
    for (const name of names) deferred.add(addressOf(name));
    const res = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: {
        type: 'mail',
        recipients: names.map((name) => ({ external_id: name, email: addressOf(name) })),
        variables: { order: 'R-1' },
      },
    });
    expect(res.status).toBe(202);
    const eventIds: string[] = res.body.events.map((e: { event_id: string }) => e.event_id);
    const eventId = eventIds[0]!;

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

    // Turned away more times than pg-boss's default five retries allow: all still waiting, none failed.
    await eventually(
      async () => {
        for (const id of eventIds) {
          const { delivery } = await deliveryOf(id);
          if (!delivery || delivery.attempts < 7) return false;
        }
        return true;
      },
      { timeoutMs: 90_000, message: 'seven attempts of every email' },
    );
    for (const id of eventIds) expect((await deliveryOf(id)).delivery?.status).toBe('pending');
    expect(smtp.messages.filter((m) => m.parsed.subject === 'Order R-1')).toHaveLength(0);

    // The relay takes mail again: every accepted email arrives, once.
    deferred.clear();
    for (const id of eventIds) {
      const done = await eventually(
        async () => {
          const event = await deliveryOf(id);
          return event.status === 'delivered' || event.status === 'failed' ? event : false;
        },
        { timeoutMs: 60_000, message: 'the event final' },
      );
      expect(done.status).toBe('delivered');
      expect(done.delivery).toMatchObject({ status: 'sent', next_attempt_at: null });
    }
    const received = smtp.messages.filter((m) => m.parsed.subject === 'Order R-1').map((m) => m.envelope.to.join());
    expect(received.sort()).toEqual(names.map(addressOf).sort());
  });
});
