// The http channel end to end: a trigger through the real API, the real worker, one signed POST per
// recipient to a real receiver that verifies the Standard Webhooks signature with the standardwebhooks
// package. The default body (secret variables masked, or in clear with the opt-in), retries of 5xx
// under one webhook-id, permanent 4xx, 429 with Retry-After, the address guard at send time, and
// tenants that never reach each other's endpoint.
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
  startHttpGatewayPeer,
  verifyStandardWebhook,
  type GatewayRequest,
  type HttpGatewayPeer,
} from '../../support/provider-peers/index.ts';
import { execute } from '../../../server/base/db/sql.ts';
import { encryptSecret } from '../../../server/channels/http/transport-store.ts';
import { newWebhookSecret } from '../../../server/webhooks/signing.ts';

let app: TestApp;
let peer: HttpGatewayPeer;

interface Tenant {
  fx: TenantFixture;
  secret: string;
  path: string;
}

beforeAll(async () => {
  peer = await startHttpGatewayPeer();
  app = await startTestApp({ config: { allowPrivateWebhookUrls: true } });
});
afterAll(async () => {
  await app?.close();
  await peer?.close();
});

/** A tenant whose http transport posts to the peer under /hooks/<name>, with a type `alert` on http only. */
async function tenantWithTransport(
  target: TestApp,
  name: string,
  options: { includeSecretVariables?: boolean; template?: boolean; content?: string } = {},
): Promise<Tenant> {
  const fx = await createTenantFixture(target, name);
  const path = `/hooks/${name.toLowerCase()}`;
  const res = await target.request('PUT', '/v1/http-transport', {
    token: fx.serviceKey,
    body: {
      url: `${peer.url}${path}`,
      headers: { Authorization: `Bearer ${name}-token` },
      include_secret_variables: options.includeSecretVariables ?? false,
    },
  });
  expect(res.status).toBe(200);
  await insertNotificationType(target, fx.tenantId, { key: 'alert', channels: { http: true } });
  if (options.template !== false)
    await insertInboxTemplate(target, fx.tenantId, {
      type: 'alert',
      title: 'Order {{ order }} shipped',
      content: options.content ?? 'Your order {{ order }} is on its way',
      actionUrl: 'https://acme.test/orders/{{ order }}',
    });
  return { fx, secret: res.body.secret, path };
}

async function trigger(target: TestApp, fx: TenantFixture, body: Record<string, unknown>): Promise<string> {
  const res = await target.request('POST', '/v1/notifications', {
    token: fx.serviceKey,
    body: { type: 'alert', ...body },
  });
  expect(res.status).toBe(202);
  return res.body.events[0].event_id as string;
}

async function httpDelivery(target: TestApp, fx: TenantFixture, eventId: string) {
  const res = await target.request('GET', `/v1/notifications/${eventId}`, { token: fx.serviceKey });
  expect(res.status).toBe(200);
  return res.body.deliveries.find((d: { channel: string }) => d.channel === 'http');
}

async function deliveryRow(eventId: string) {
  const [row] = await sql<{ id: string; provider_message_id: string | null }>(
    app,
    `SELECT id::text, provider_message_id FROM deliveries WHERE event_id = $1 AND channel = 'http'`,
    [eventId],
  );
  return row!;
}

const at = (path: string) => (r: GatewayRequest) => r.path === path;

describe('a delivery over the http channel', () => {
  it('POSTs the default body, signed, with the secret variables masked', async () => {
    const t = await tenantWithTransport(app, 'Acme', { content: 'Hi {{ contact.name }}, code {{ code }}' });
    peer.respondWith({ status: 200, body: { id: 'rcv-1' } });
    const eventId = await trigger(app, t.fx, {
      recipients: [
        {
          external_id: 'u1',
          email: 'u1@example.test',
          phone: '+4915112345678',
          name: 'Ada',
          language: 'en',
          properties: { plan: 'pro' },
        },
      ],
      variables: { order: 'A-1' },
      secret_variables: { code: '913455' },
    });
    const [event] = await waitForFinal(app, [eventId]);
    expect(event!.status).toBe('delivered');
    const delivery = await httpDelivery(app, t.fx, eventId);
    expect(delivery, JSON.stringify(delivery)).toMatchObject({
      status: 'sent',
      provider: 'http',
      attempts: 1,
      provider_attempts: [{ provider: 'http', outcome: 'sent', error: null }],
    });
    const row = await deliveryRow(eventId);
    expect(row.provider_message_id).toBe('rcv-1');
    const received = peer.received.filter(at(t.path));
    expect(received).toHaveLength(1);
    const request = received[0]!;
    expect(request.method).toBe('POST');
    expect(request.headers['webhook-id']).toBe(row.id);
    expect(request.headers.authorization).toBe('Bearer Acme-token');
    expect(request.headers['content-type']).toBe('application/json');
    const contactId = (
      await sql<{ id: string }>(app, `SELECT id::text FROM contacts WHERE tenant_id = $1`, [t.fx.tenantId])
    )[0]!.id;
    expect(verifyStandardWebhook(t.secret, request)).toEqual({
      event_id: eventId,
      type: 'alert',
      contact: {
        id: contactId,
        external_id: 'u1',
        email: 'u1@example.test',
        phone: '+4915112345678',
        name: 'Ada',
        language: 'en',
        timezone: null,
        properties: { plan: 'pro' },
      },
      variables: { order: 'A-1', code: '********' },
      rendered: {
        title: 'Order A-1 shipped',
        body: 'Hi Ada, code 913455',
        action_url: 'https://acme.test/orders/A-1',
      },
    });
    // Signed with another secret, the receiver refuses it: the check above is a real one.
    expect(() => verifyStandardWebhook(newWebhookSecret(), request)).toThrow();
    peer.respondWith({ status: 200, body: { ok: true } });
  });

  it('sends the secret variables in clear when the transport opts in', async () => {
    const t = await tenantWithTransport(app, 'Initech', { includeSecretVariables: true });
    const eventId = await trigger(app, t.fx, {
      recipients: ['u2'],
      variables: { order: 'B-2' },
      secret_variables: { code: '555111' },
    });
    await waitForFinal(app, [eventId]);
    const [request] = peer.received.filter(at(t.path));
    expect((verifyStandardWebhook(t.secret, request!) as { variables: unknown }).variables).toEqual({
      order: 'B-2',
      code: '555111',
    });
  });

  it('sends the body with rendered null when the type has no template', async () => {
    const t = await tenantWithTransport(app, 'Plain', { template: false });
    const eventId = await trigger(app, t.fx, { recipients: ['u3'], variables: { order: 'C-3' } });
    await waitForFinal(app, [eventId]);
    expect((await httpDelivery(app, t.fx, eventId)).status).toBe('sent');
    const [request] = peer.received.filter(at(t.path));
    expect(verifyStandardWebhook(t.secret, request!)).toMatchObject({ variables: { order: 'C-3' }, rendered: null });
  });

  it('retries a 5xx and sends again under the same webhook-id', async () => {
    const t = await tenantWithTransport(app, 'Retry');
    peer.failNext(1, { status: 503, body: 'busy' });
    const eventId = await trigger(app, t.fx, { recipients: ['u4'], variables: { order: 'D-4' } });
    await waitForFinal(app, [eventId]);
    const delivery = await httpDelivery(app, t.fx, eventId);
    expect(delivery).toMatchObject({ status: 'sent', attempts: 2 });
    expect(delivery.provider_attempts).toMatchObject([
      { provider: 'http', outcome: 'failed', error: 'HTTP 503' },
      { provider: 'http', outcome: 'sent', error: null },
    ]);
    const requests = peer.requests.filter((r) => r.path === t.path);
    expect(requests).toHaveLength(2);
    const id = (await deliveryRow(eventId)).id;
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual([id, id]);
    for (const r of requests) expect(() => verifyStandardWebhook(t.secret, r)).not.toThrow();
  });

  it('fails at once on a permanent 4xx (400, 410), with one request each', async () => {
    for (const status of [400, 410]) {
      const t = await tenantWithTransport(app, `Refuse${status}`);
      peer.failNext(1, { status, body: { error: 'invalid_payload' } });
      const eventId = await trigger(app, t.fx, { recipients: ['u5'], variables: { order: 'E-5' } });
      const [event] = await waitForFinal(app, [eventId]);
      expect(event!.status).toBe('failed');
      const delivery = await httpDelivery(app, t.fx, eventId);
      expect(delivery).toMatchObject({
        status: 'failed',
        attempts: 1,
        next_attempt_at: null,
        last_error: `HTTP ${status} invalid_payload`,
      });
      expect(peer.requests.filter((r) => r.path === t.path)).toHaveLength(1);
    }
  });

  it('waits out a 429 for as long as its Retry-After says', async () => {
    const t = await tenantWithTransport(app, 'Limited');
    peer.failNext(1, { status: 429, headers: { 'retry-after': '2' }, body: 'slow down' });
    const eventId = await trigger(app, t.fx, { recipients: ['u6'], variables: { order: 'F-6' } });
    await waitForFinal(app, [eventId]);
    const delivery = await httpDelivery(app, t.fx, eventId);
    expect(delivery.status).toBe('sent');
    expect(delivery.provider_attempts[0]).toMatchObject({ outcome: 'failed', error: 'HTTP 429' });
    expect(delivery.provider_attempts.at(-1)).toMatchObject({ outcome: 'sent' });
    // The retry schedule's first wait (1 s) is shorter than the Retry-After: the attempt then is
    // passed over (paused), and the endpoint hears nothing until the two seconds are up.
    const requests = peer.requests.filter((r) => r.path === t.path);
    expect(requests).toHaveLength(2);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(1900);
    expect(requests[1]!.headers['webhook-id']).toBe(requests[0]!.headers['webhook-id']);
  });

  it("never posts one tenant's message to another's URL; without a transport it is skipped", async () => {
    const acme = await tenantWithTransport(app, 'Umbrella');
    const globex = await tenantWithTransport(app, 'Globex');
    const bare = await createTenantFixture(app, 'Bare');
    await insertNotificationType(app, bare.tenantId, { key: 'alert', channels: { http: true } });
    await insertInboxTemplate(app, bare.tenantId, { type: 'alert', title: 'T', content: 'B' });
    const before = peer.requests.length;
    const globexEvent = await trigger(app, globex.fx, { recipients: ['g1'], variables: { order: 'G' } });
    const bareEvent = await trigger(app, bare, { recipients: ['b1'], variables: { order: 'H' } });
    await waitForFinal(app, [globexEvent, bareEvent]);
    const arrived = peer.requests.slice(before);
    expect(arrived.map((r) => r.path)).toEqual([globex.path]);
    expect(() => verifyStandardWebhook(globex.secret, arrived[0]!)).not.toThrow();
    expect(() => verifyStandardWebhook(acme.secret, arrived[0]!)).toThrow();
    expect(arrived[0]!.headers.authorization).toBe('Bearer Globex-token');
    expect(await httpDelivery(app, bare, bareEvent)).toMatchObject({ status: 'skipped', reason: 'no_transport' });
  });
});

describe('the address guard at send time', () => {
  it('refuses to post to a private address without allowPrivateWebhookUrls, even one stored before', async () => {
    const strict = await startTestApp({ config: { allowPrivateWebhookUrls: false } });
    try {
      const fx = await createTenantFixture(strict, 'Strict');
      // Stored behind the API's back (as by an install that allowed private URLs then): the send checks again.
      await execute(
        strict.runtime.orm.em.fork(),
        `INSERT INTO http_transports (tenant_id, url, secret_ciphertext) VALUES ($1, $2, $3)`,
        [fx.tenantId, `${peer.url}/hooks/strict`, encryptSecret(strict.runtime, fx.tenantId, newWebhookSecret())],
      );
      await insertNotificationType(strict, fx.tenantId, { key: 'alert', channels: { http: true } });
      const eventId = await trigger(strict, fx, { recipients: ['s1'], variables: { order: 'S' } });
      const [event] = await waitForFinal(strict, [eventId]);
      expect(event!.status).toBe('failed');
      const delivery = await httpDelivery(strict, fx, eventId);
      expect(delivery).toMatchObject({ status: 'failed', attempts: 1, last_error: expect.stringMatching(/public/) });
      expect(peer.requests.filter((r) => r.path === '/hooks/strict')).toHaveLength(0);
    } finally {
      await strict.close();
    }
  });
});
