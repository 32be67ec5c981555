// The sms channel through real HTTP and the real worker, against the Twilio, Vonage and HTTP gateway
// peers: each provider's success, permanent and retryable errors, failover both ways, the circuit
// opening and reopening (a manual clock), a 429's Retry-After pausing the provider, delivery receipts
// (signed and forged), inbound STOP/START with contact.unsubscribed, and the trail of providers in
// GET /v1/notifications/{id}. Each scenario has its own tenant: circuits and pauses are per tenant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  createTenantFixture,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  waitForFinal,
  type TenantFixture,
} from '../../support/fixtures.ts';
import {
  postForm,
  postJson,
  startHttpGatewayPeer,
  startTwilioPeer,
  startVonagePeer,
  type HttpGatewayPeer,
  type TwilioPeer,
  type VonagePeer,
} from '../../support/provider-peers/index.ts';
import { ManualClock } from '../../../server/base/clock.ts';
import { freePort } from '../../../server/base/db/embedded-postgres.ts';
import { sweepEarlyReceipts } from '../../../server/delivery/early-receipts.ts';

let app: TestApp;
let twilio: TwilioPeer;
let vonage: VonagePeer;
let signedVonage: VonagePeer;
let gateway: HttpGatewayPeer;
const clock = new ManualClock();
const SIGNATURE_SECRET = 'vonage-signature-secret-1';

beforeAll(async () => {
  [twilio, vonage, signedVonage, gateway] = await Promise.all([
    startTwilioPeer(),
    startVonagePeer(),
    startVonagePeer({ signatureSecret: SIGNATURE_SECRET }),
    startHttpGatewayPeer(),
  ]);
  // Twilio signs the URL it was given: the public URL names the port Herald listens on.
  const port = await freePort();
  app = await startTestApp({
    port,
    clock,
    config: {
      publicUrl: `http://127.0.0.1:${port}`,
      providers: { twilioUrl: twilio.url, vonageUrl: vonage.url },
      allowPrivateWebhookUrls: true,
    },
  });
});
afterAll(async () => {
  await app?.close();
  await Promise.all([twilio, vonage, signedVonage, gateway].map((peer) => peer?.close()));
});

let phoneCounter = 100;
const nextPhone = () => `+49151${String(++phoneCounter).padStart(8, '0')}`;

type Provider = 'twilio' | 'vonage' | 'http';

/** A tenant with an sms type and its template, and the transports in the order given. */
async function tenantWith(name: string, providers: Provider[], options: { signatureSecret?: string } = {}) {
  const fx = await createTenantFixture(app, name);
  await insertNotificationType(app, fx.tenantId, { key: 'otp', channels: { sms: true } });
  await insertInboxTemplate(app, fx.tenantId, { type: 'otp', title: 'Acme', content: 'Your code is {{ code }}' });
  const callbacks: Partial<Record<Provider, string>> = {};
  for (const [priority, provider] of providers.entries()) {
    const body =
      provider === 'twilio'
        ? { account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006' }
        : provider === 'vonage'
          ? {
              api_key: vonage.apiKey,
              api_secret: vonage.apiSecret,
              from: 'Acme',
              ...(options.signatureSecret ? { signature_secret: options.signatureSecret } : {}),
            }
          : {
              url: `${gateway.url}/sms`,
              headers: { authorization: 'Bearer gw' },
              body: { to: '{{ to }}', text: '{{ text }}' },
              message_id_path: 'id',
            };
    const res = await app.request('PUT', `/v1/sms-transport/${provider}`, {
      token: fx.serviceKey,
      body: { ...body, priority },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    callbacks[provider] = res.body.callback_url;
  }
  return { fx, callbacks };
}

/** Triggers the sms type for a contact with this phone and waits until its event is final. */
async function send(fx: TenantFixture, phone: string, externalId = `c-${phone}`, code = '4711') {
  const res = await app.request('POST', '/v1/notifications', {
    token: fx.serviceKey,
    body: { type: 'otp', recipients: [{ external_id: externalId, phone }], variables: { code } },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const eventId = res.body.events[0].event_id as string;
  await waitForFinal(app, [eventId]);
  return { eventId, delivery: await smsDelivery(fx, eventId) };
}

async function smsDelivery(fx: TenantFixture, eventId: string) {
  const status = await app.request('GET', `/v1/notifications/${eventId}`, { token: fx.serviceKey });
  expect(status.status).toBe(200);
  return status.body.deliveries.find((d: { channel: string }) => d.channel === 'sms');
}

const messageSid = (sidOf: TwilioPeer, phone: string) => sidOf.received.findLast((m) => m.to === phone)!.sid;

describe('twilio', () => {
  it('sends the rendered text with a status callback, and records the sid and the trail', async () => {
    const { fx } = await tenantWith('T-ok', ['twilio', 'vonage']);
    const phone = nextPhone();
    const { delivery } = await send(fx, phone);
    expect(delivery).toMatchObject({ status: 'sent', provider: 'twilio', attempts: 1, last_error: null });
    expect(delivery.provider_attempts).toEqual([
      { at: expect.any(String), provider: 'twilio', outcome: 'sent', error: null },
    ]);
    const message = twilio.received.findLast((m) => m.to === phone)!;
    expect(message.body).toBe('Acme\nYour code is 4711');
    expect(message.statusCallback).toMatch(/\/callbacks\/twilio\//);
  });

  it('fails for good on a permanent error (21211) without asking the next provider', async () => {
    const { fx } = await tenantWith('T-perm', ['twilio', 'vonage']);
    const phone = nextPhone();
    twilio.invalidNumbers.add(phone);
    const before = vonage.received.length;
    const { delivery } = await send(fx, phone);
    expect(delivery).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: 'HTTP 400 code 21211',
      next_attempt_at: null,
    });
    expect(delivery.provider_attempts.map((a: { provider: string }) => a.provider)).toEqual(['twilio']);
    expect(vonage.received.length).toBe(before);
  });

  it('fails over to vonage on a 5xx within the same attempt', async () => {
    const { fx } = await tenantWith('T-5xx', ['twilio', 'vonage']);
    const phone = nextPhone();
    twilio.failNext(1, { status: 503, body: { code: 20503, message: 'Service unavailable' } });
    const { delivery } = await send(fx, phone);
    expect(delivery).toMatchObject({ status: 'sent', provider: 'vonage', attempts: 1 });
    expect(delivery.provider_attempts).toMatchObject([
      { provider: 'twilio', outcome: 'failed', error: 'HTTP 503 code 20503' },
      { provider: 'vonage', outcome: 'sent', error: null },
    ]);
    expect(vonage.received.findLast((m) => m.to === phone.slice(1))?.text).toBe('Acme\nYour code is 4711');
  });

  it('fails over on a refused credential, and fails for good when the only provider refuses it', async () => {
    const { fx } = await tenantWith('T-cred', ['twilio', 'vonage']);
    await app.request('PUT', '/v1/sms-transport/twilio', {
      token: fx.serviceKey,
      body: { account_sid: twilio.accountSid, auth_token: 'not-the-token', from: '+15005550006', priority: 0 },
    });
    const over = (await send(fx, nextPhone())).delivery;
    expect(over).toMatchObject({ status: 'sent', provider: 'vonage' });
    expect(over.provider_attempts[0]).toMatchObject({
      provider: 'twilio',
      outcome: 'failed',
      error: expect.stringMatching(/^HTTP 401/),
    });
    await app.request('DELETE', '/v1/sms-transport/vonage', { token: fx.serviceKey });
    const alone = (await send(fx, nextPhone())).delivery;
    expect(alone).toMatchObject({ status: 'failed', attempts: 1, next_attempt_at: null });
    expect(alone.last_error).toBe('HTTP 401 code 20003 (credentials refused)');
    expect(JSON.stringify(alone)).not.toContain('not-the-token');
  });
});

describe('failover and circuits', () => {
  it('fails over twilio -> vonage with twilio down, vonage -> twilio with vonage down, and back', async () => {
    const ab = await tenantWith('F-tv', ['twilio', 'vonage']);
    const ba = await tenantWith('F-vt', ['vonage', 'twilio']);
    await twilio.down();
    try {
      const { delivery } = await send(ab.fx, nextPhone());
      expect(delivery).toMatchObject({ status: 'sent', provider: 'vonage' });
      expect(delivery.provider_attempts).toMatchObject([
        { provider: 'twilio', outcome: 'failed' },
        { provider: 'vonage', outcome: 'sent' },
      ]);
      expect(delivery.provider_attempts[0].error).toMatch(/^http:\/\/127\.0\.0\.1:\d+: /);
    } finally {
      await twilio.up();
    }
    await vonage.down();
    try {
      const { delivery } = await send(ba.fx, nextPhone());
      expect(delivery).toMatchObject({ status: 'sent', provider: 'twilio' });
      expect(delivery.provider_attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['failed', 'sent']);
    } finally {
      await vonage.up();
    }
    expect((await send(ab.fx, nextPhone())).delivery).toMatchObject({ status: 'sent', provider: 'twilio' });
    expect((await send(ba.fx, nextPhone())).delivery).toMatchObject({ status: 'sent', provider: 'vonage' });
  });

  it('opens the circuit after 5 failures in a row, skips the provider for 30 s, then probes it', async () => {
    const { fx } = await tenantWith('F-circuit', ['twilio', 'vonage']);
    await twilio.down();
    try {
      for (let i = 0; i < 5; i++) {
        const { delivery } = await send(fx, nextPhone());
        expect(delivery.provider_attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['failed', 'sent']);
      }
      const open = (await send(fx, nextPhone())).delivery;
      expect(open).toMatchObject({ status: 'sent', provider: 'vonage' });
      expect(open.provider_attempts[0]).toMatchObject({
        provider: 'twilio',
        outcome: 'skipped',
        error: expect.stringMatching(/circuit open/),
      });
    } finally {
      await twilio.up();
    }
    // Up again, but the circuit stays open until its 30 s have passed.
    const stillOpen = (await send(fx, nextPhone())).delivery;
    expect(stillOpen.provider_attempts[0].outcome).toBe('skipped');
    clock.advance(30_001);
    const probe = (await send(fx, nextPhone())).delivery;
    expect(probe).toMatchObject({ status: 'sent', provider: 'twilio' });
    expect(probe.provider_attempts).toMatchObject([{ provider: 'twilio', outcome: 'sent' }]);
  });

  it("pauses a provider for its 429's Retry-After and asks the next one meanwhile", async () => {
    const { fx } = await tenantWith('F-429', ['twilio', 'vonage']);
    const other = await tenantWith('F-429-other', ['twilio', 'vonage']);
    twilio.failNext(1, {
      status: 429,
      body: { code: 20429, message: 'Too Many Requests' },
      headers: { 'retry-after': '60' },
    });
    const first = (await send(fx, nextPhone())).delivery;
    expect(first).toMatchObject({ status: 'sent', provider: 'vonage' });
    expect(first.provider_attempts[0]).toMatchObject({
      provider: 'twilio',
      outcome: 'failed',
      error: 'HTTP 429 code 20429',
    });
    const paused = (await send(fx, nextPhone())).delivery;
    expect(paused.provider_attempts[0]).toMatchObject({
      provider: 'twilio',
      outcome: 'skipped',
      error: 'paused by the provider for 60 s',
    });
    // Another tenant's twilio is not paused.
    expect((await send(other.fx, nextPhone())).delivery).toMatchObject({ provider: 'twilio' });
    clock.advance(61_000);
    expect((await send(fx, nextPhone())).delivery).toMatchObject({ status: 'sent', provider: 'twilio' });
  });

  it('fails over when vonage throttles (status 1), and vonage permanent errors (status 3) fail for good', async () => {
    const { fx } = await tenantWith('F-vonage', ['vonage', 'twilio']);
    vonage.statusNext(1, '1');
    const throttled = (await send(fx, nextPhone())).delivery;
    expect(throttled).toMatchObject({ status: 'sent', provider: 'twilio' });
    expect(throttled.provider_attempts[0]).toMatchObject({ provider: 'vonage', outcome: 'failed', error: 'status 1' });
    clock.advance(1_500);
    const phone = nextPhone();
    vonage.invalidNumbers.add(phone.slice(1));
    const invalid = (await send(fx, phone)).delivery;
    expect(invalid).toMatchObject({ status: 'failed', last_error: 'status 3', attempts: 1 });
    expect(invalid.provider_attempts.map((a: { provider: string }) => a.provider)).toEqual(['vonage']);
  });
});

describe('http gateway', () => {
  it('sends the template, retries a 5xx later, and fails for good on a 4xx', async () => {
    const { fx } = await tenantWith('H', ['http']);
    gateway.respondWith((request) => ({ status: 200, body: { id: `gw-${request.at}` } }));
    const phone = nextPhone();
    gateway.failNext(1, { status: 500, body: 'oops' });
    const { delivery } = await send(fx, phone);
    expect(delivery).toMatchObject({ status: 'sent', provider: 'http', attempts: 2 });
    expect(delivery.provider_attempts).toMatchObject([
      { provider: 'http', outcome: 'failed', error: 'HTTP 500' },
      { provider: 'http', outcome: 'sent' },
    ]);
    const got = gateway.received.findLast((r) => (r.json as { to?: string })?.to === phone)!;
    expect(got.json).toEqual({ to: phone, text: 'Acme\nYour code is 4711' });
    expect(got.headers.authorization).toBe('Bearer gw');
    const [row] = await sql<{ provider_message_id: string }>(
      app,
      `SELECT provider_message_id FROM deliveries WHERE tenant_id = $1 AND channel = 'sms'`,
      [fx.tenantId],
    );
    expect(row!.provider_message_id).toMatch(/^gw-\d+$/);
    gateway.respondWith({ status: 422, body: { error: `invalid ${phone}` } });
    const refused = (await send(fx, nextPhone())).delivery;
    expect(refused).toMatchObject({ status: 'failed', last_error: 'HTTP 422', attempts: 1 });
    gateway.respondWith({ status: 200, body: { ok: true } });
  });

  it('skips the delivery when the tenant has no transport', async () => {
    const fx = await createTenantFixture(app, 'None');
    await insertNotificationType(app, fx.tenantId, { key: 'otp', channels: { sms: true } });
    await insertInboxTemplate(app, fx.tenantId, { type: 'otp', title: 'Acme', content: 'Hi' });
    expect((await send(fx, nextPhone())).delivery).toMatchObject({ status: 'skipped', reason: 'no_transport' });
  });
});

describe('delivery receipts', () => {
  it('twilio: a signed "delivered" moves sent -> delivered; a forged one changes nothing (403)', async () => {
    const { fx } = await tenantWith('R-twilio', ['twilio']);
    const phone = nextPhone();
    const { eventId } = await send(fx, phone);
    const sid = messageSid(twilio, phone);
    const forged = await twilio.sendStatusCallback(sid, 'delivered', 'f'.repeat(32));
    expect(forged.status).toBe(403);
    const unsigned = await postForm(twilio.received.find((m) => m.sid === sid)!.statusCallback!, {
      MessageSid: sid,
      MessageStatus: 'delivered',
    });
    expect(unsigned.status).toBe(403);
    expect((await smsDelivery(fx, eventId)).status).toBe('sent');
    const ok = await twilio.sendStatusCallback(sid, 'delivered');
    expect(ok.status).toBe(204);
    expect((await smsDelivery(fx, eventId)).status).toBe('delivered');
    // Never backwards: a later "undelivered" for a delivered message changes nothing.
    await twilio.sendStatusCallback(sid, 'undelivered');
    expect((await smsDelivery(fx, eventId)).status).toBe('delivered');
  });

  it('twilio: "undelivered" fails the delivery with the error code only', async () => {
    const { fx } = await tenantWith('R-twilio-failed', ['twilio']);
    const phone = nextPhone();
    const { eventId } = await send(fx, phone);
    expect(
      (await twilio.sendStatusCallback(messageSid(twilio, phone), 'undelivered', undefined, { errorCode: '30005' }))
        .status,
    ).toBe(204);
    expect(await smsDelivery(fx, eventId)).toMatchObject({
      status: 'failed',
      last_error: 'twilio undelivered error 30005',
    });
  });

  it("a receipt through one tenant's URL never touches another tenant's delivery; unknown tokens are 404", async () => {
    const a = await tenantWith('R-a', ['twilio']);
    const b = await tenantWith('R-b', ['twilio']);
    const phone = nextPhone();
    const { eventId } = await send(b.fx, phone);
    const res = await twilio.sendStatusCallback(messageSid(twilio, phone), 'delivered', undefined, {
      url: a.callbacks.twilio!,
    });
    expect(res.status).toBe(204);
    expect((await smsDelivery(b.fx, eventId)).status).toBe('sent');
    const unknown = await twilio.sendStatusCallback(messageSid(twilio, phone), 'delivered', undefined, {
      url: `${app.url}/callbacks/twilio/${'x'.repeat(32)}`,
    });
    expect(unknown.status).toBe(404);
    expect(
      (await postJson(`${app.url}/callbacks/vonage/${'y'.repeat(32)}`, { messageId: 'm', status: 'delivered' })).status,
    ).toBe(404);
  });

  it('vonage: a signed receipt moves the delivery; a bad or missing signature is 403; malformed JSON 422', async () => {
    const { fx, callbacks } = await tenantWith('R-vonage-signed', ['vonage'], { signatureSecret: SIGNATURE_SECRET });
    const phone = nextPhone();
    const { eventId } = await send(fx, phone);
    const id = vonage.received.findLast((m) => m.to === phone.slice(1))!.messageId;
    const forged = await postJson(callbacks.vonage!, {
      messageId: id,
      status: 'delivered',
      timestamp: String(Math.floor(Date.now() / 1000)),
      sig: '0'.repeat(32),
    });
    expect(forged.status).toBe(403);
    expect((await postJson(callbacks.vonage!, { messageId: id, status: 'delivered' })).status).toBe(403);
    // Signed with another account's secret.
    expect((await vonage.sendDeliveryReceipt(callbacks.vonage!, { messageId: id, status: 'delivered' })).status).toBe(
      403,
    );
    expect((await smsDelivery(fx, eventId)).status).toBe('sent');
    const malformed = await fetch(callbacks.vonage!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    expect(malformed.status).toBe(422);
    // The account that holds the secret signs it (its peer: the same secret).
    const clientRef = vonage.received.findLast((m) => m.to === phone.slice(1))!.clientRef;
    const ok = await signedVonage.sendDeliveryReceipt(callbacks.vonage!, {
      messageId: id,
      status: 'delivered',
      clientRef,
    });
    expect(ok.status).toBe(204);
    expect((await smsDelivery(fx, eventId)).status).toBe('delivered');
  });

  it('vonage: an unsigned account is admitted by its token; "rejected" fails the delivery', async () => {
    const { fx, callbacks } = await tenantWith('R-vonage', ['vonage']);
    const phone = nextPhone();
    const { eventId } = await send(fx, phone);
    const id = vonage.received.findLast((m) => m.to === phone.slice(1))!.messageId;
    const res = await vonage.sendDeliveryReceipt(callbacks.vonage!, {
      messageId: id,
      status: 'rejected',
      errCode: '6',
      format: 'form',
    });
    expect(res.status).toBe(204);
    expect(await smsDelivery(fx, eventId)).toMatchObject({
      status: 'failed',
      last_error: 'vonage rejected err-code 6',
    });
  });
});

describe('vonage: a long text in several parts', () => {
  const LONG_CODE = 'x'.repeat(200);

  it("is known by its client-ref, so any part's receipt moves the delivery", async () => {
    const { fx, callbacks } = await tenantWith('P-vonage', ['vonage']);
    const phone = nextPhone();
    const { eventId, delivery } = await send(fx, phone, undefined, LONG_CODE);
    const message = vonage.received.findLast((m) => m.to === phone.slice(1))!;
    expect(message.parts).toBe(2);
    expect(message.clientRef).toMatch(/^[0-9a-f-]{36}$/);
    expect(delivery).toMatchObject({ status: 'sent', provider: 'vonage' });
    const [stored] = await sql<{ provider_message_id: string }>(
      app,
      `SELECT provider_message_id FROM deliveries WHERE event_id = $1 AND channel = 'sms'`,
      [eventId],
    );
    expect(stored!.provider_message_id).toBe(message.clientRef);
    // The second part's receipt comes first: it names the delivery all the same.
    const res = await vonage.sendDeliveryReceipt(callbacks.vonage!, {
      messageId: message.partIds[1]!,
      status: 'delivered',
    });
    expect(res.status).toBe(204);
    expect((await smsDelivery(fx, eventId)).status).toBe('delivered');
    const first = await vonage.sendDeliveryReceipt(callbacks.vonage!, {
      messageId: message.partIds[0]!,
      status: 'delivered',
    });
    expect(first.status).toBe(204);
    expect((await smsDelivery(fx, eventId)).status).toBe('delivered');
  });

  it('fails for good, without failover, when a later part is refused: a retry would resend the sent parts', async () => {
    const { fx } = await tenantWith('Q-vonage', ['vonage', 'twilio']);
    const phone = nextPhone();
    vonage.refuseLastPartNext('15');
    const before = twilio.received.length;
    const { delivery } = await send(fx, phone, undefined, LONG_CODE);
    expect(delivery).toMatchObject({ status: 'failed', provider: 'vonage', attempts: 1 });
    expect(delivery.last_error).toBe('part 2 of 2 refused: status 15 (the parts before it were sent)');
    expect(twilio.received.length).toBe(before);
  });
});

describe('receipts before their delivery is stored', () => {
  const kept = (fx: TenantFixture) =>
    sql<{ provider_message_id: string; status: string }>(
      app,
      `SELECT provider_message_id, status FROM early_receipts WHERE tenant_id = $1 ORDER BY provider_message_id`,
      [fx.tenantId],
    );

  it('twilio: a status callback that overtakes the answer to the send moves the delivery once it is stored', async () => {
    const { fx } = await tenantWith('E-twilio', ['twilio']);
    const phone = nextPhone();
    const callbacks: number[] = [];
    twilio.beforeAnswering(async (message) => {
      if (message.to === phone) callbacks.push((await twilio.sendStatusCallback(message.sid, 'delivered')).status);
    });
    try {
      const { eventId } = await send(fx, phone);
      expect(callbacks).toEqual([204]);
      expect((await smsDelivery(fx, eventId)).status).toBe('delivered');
    } finally {
      twilio.beforeAnswering(null);
    }
    expect(await kept(fx)).toEqual([]);
  });

  it('keeps only receipts no delivery names; the sweep applies one whose delivery appeared since, and prunes after a day', async () => {
    const { fx } = await tenantWith('E-sweep', ['twilio']);
    const phone = nextPhone();
    const { eventId } = await send(fx, phone);
    const sid = messageSid(twilio, phone);
    // A receipt kept while the store was still committing: its delivery did not name the id yet.
    await sql(app, `UPDATE deliveries SET provider_message_id = NULL WHERE event_id = $1`, [eventId]);
    expect((await twilio.sendStatusCallback(sid, 'undelivered', undefined, { errorCode: '30003' })).status).toBe(204);
    expect(await kept(fx)).toEqual([{ provider_message_id: sid, status: 'failed' }]);
    await sql(app, `UPDATE deliveries SET provider_message_id = $2 WHERE event_id = $1`, [eventId, sid]);
    // A receipt for a message no delivery will ever name, kept a day, and one kept an hour.
    await sql(
      app,
      `INSERT INTO early_receipts (tenant_id, channel, provider_message_id, status, received_at)
       VALUES ($1, 'sms', 'SM-old', 'delivered', now() - interval '25 hours'), ($1, 'sms', 'SM-new', 'delivered', now() - interval '1 hour')`,
      [fx.tenantId],
    );
    const swept = await sweepEarlyReceipts(app.runtime.orm.em.fork());
    expect(swept.applied).toBeGreaterThanOrEqual(1);
    expect(await smsDelivery(fx, eventId)).toMatchObject({
      status: 'failed',
      last_error: 'twilio undelivered error 30003',
    });
    expect(await kept(fx)).toEqual([{ provider_message_id: 'SM-new', status: 'delivered' }]);
    // A receipt for a delivery already final is not kept.
    expect((await twilio.sendStatusCallback(sid, 'delivered')).status).toBe(204);
    expect(await kept(fx)).toEqual([{ provider_message_id: 'SM-new', status: 'delivered' }]);
  });
});

describe('inbound STOP and START', () => {
  async function webhookEvents(fx: TenantFixture) {
    return sql<{ payload: { data: Record<string, unknown> } }>(
      app,
      `SELECT payload FROM webhook_deliveries WHERE tenant_id = $1 AND event_type = 'contact.unsubscribed' ORDER BY created_at`,
      [fx.tenantId],
    );
  }
  async function smsPreference(fx: TenantFixture, contactId: string) {
    const res = await app.request('GET', `/v1/contacts/${contactId}/preferences`, { token: fx.serviceKey });
    expect(res.status).toBe(200);
    return res.body.preferences.find((p: { type: string; channel: string }) => p.type === 'otp' && p.channel === 'sms');
  }

  it('twilio: STOP turns sms off for every type with contact.unsubscribed, START turns it back on; forged changes nothing', async () => {
    const { fx, callbacks } = await tenantWith('S-twilio', ['twilio']);
    await insertNotificationType(app, fx.tenantId, { key: 'alerts', channels: { sms: true } });
    const hook = await app.request('POST', '/v1/webhooks', {
      token: fx.serviceKey,
      body: { url: 'https://hooks.example.test/herald', event_types: ['contact.unsubscribed'] },
    });
    expect(hook.status).toBe(201);
    const phone = nextPhone();
    const { eventId } = await send(fx, phone, 'stopper');
    const contactId = (await app.request('GET', `/v1/notifications/${eventId}`, { token: fx.serviceKey })).body
      .contact_id;

    const forged = await twilio.sendInbound(
      callbacks.twilio!,
      { From: phone, To: '+15005550006', Body: 'STOP' },
      'e'.repeat(32),
    );
    expect(forged.status).toBe(403);
    expect((await smsPreference(fx, contactId)).enabled).toBe(true);

    const stop = await twilio.sendInbound(callbacks.twilio!, { From: phone, To: '+15005550006', Body: ' stop ' });
    expect(stop.status).toBe(200);
    expect(stop.headers.get('content-type')).toContain('text/xml');
    expect(await stop.text()).toContain('<Response/>');
    expect(await smsPreference(fx, contactId)).toMatchObject({ enabled: false, source: 'contact' });
    const events = await webhookEvents(fx);
    expect(events.map((e) => e.payload.data).sort((x, y) => String(x.type).localeCompare(String(y.type)))).toEqual([
      { contact_id: contactId, type: 'alerts', channel: 'sms', source: 'sms_reply' },
      { contact_id: contactId, type: 'otp', channel: 'sms', source: 'sms_reply' },
    ]);
    expect((await send(fx, phone, 'stopper')).delivery).toMatchObject({ status: 'skipped', reason: 'opted_out' });

    const start = await twilio.sendInbound(callbacks.twilio!, { From: phone, To: '+15005550006', Body: 'START' });
    expect(start.status).toBe(200);
    expect((await smsPreference(fx, contactId)).enabled).toBe(true);
    expect((await send(fx, phone, 'stopper')).delivery).toMatchObject({ status: 'sent' });

    // Any other text changes nothing.
    await twilio.sendInbound(callbacks.twilio!, { From: phone, To: '+15005550006', Body: 'please stop it' });
    expect((await smsPreference(fx, contactId)).enabled).toBe(true);
  });

  it('vonage: an inbound STOP (msisdn without +) opts the contact out', async () => {
    const { fx, callbacks } = await tenantWith('S-vonage', ['vonage']);
    const phone = nextPhone();
    const { eventId } = await send(fx, phone, 'v-stopper');
    const contactId = (await app.request('GET', `/v1/notifications/${eventId}`, { token: fx.serviceKey })).body
      .contact_id;
    const res = await vonage.sendInbound(callbacks.vonage!, { msisdn: phone, to: '447700900000', text: 'Stop' });
    expect(res.status).toBe(204);
    expect((await smsPreference(fx, contactId)).enabled).toBe(false);
  });

  it("twilio's callback takes only a form body (415 otherwise)", async () => {
    const { callbacks } = await tenantWith('S-415', ['twilio']);
    const res = await postJson(callbacks.twilio!, { Body: 'STOP' });
    expect(res.status).toBe(415);
  });
});

describe('secrets', () => {
  it('never reach the logs: auth token, api secret, callback tokens', async () => {
    const { callbacks } = await tenantWith('Logs', ['twilio', 'vonage']);
    await twilio.sendInbound(callbacks.twilio!, { From: nextPhone(), To: '+15005550006', Body: 'hello' });
    const logs = app.logs.join('\n');
    expect(logs).toContain('/callbacks/twilio/:token');
    for (const secret of [
      twilio.authToken,
      vonage.apiSecret,
      callbacks.twilio!.split('/').pop()!,
      callbacks.vonage!.split('/').pop()!,
    ])
      expect(logs).not.toContain(secret);
    const errors = await sql<{ last_error: string | null; provider_attempts: unknown }>(
      app,
      `SELECT last_error, provider_attempts FROM deliveries WHERE channel = 'sms'`,
    );
    const stored = JSON.stringify(errors);
    expect(stored).not.toContain(twilio.authToken);
    expect(stored).not.toMatch(/Invalid 'To'|Too Many Requests|Service unavailable/);
  });
});
