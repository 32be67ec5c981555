// SMS transports over HTTP: GET /v1/sms-transport, PUT/DELETE /v1/sms-transport/{provider}, test
// sends against the Twilio, Vonage and HTTP gateway peers (success, permanent and retryable errors),
// secrets never answered, logged or audited, the gateway's private URL refused, and the contact phone
// validated as E.164 on every write.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  sql,
  type TenantFixture,
} from '../../support/fixtures.ts';
import {
  parseForm,
  startHttpGatewayPeer,
  startTwilioPeer,
  startVonagePeer,
  type HttpGatewayPeer,
  type TwilioPeer,
  type VonagePeer,
} from '../../support/provider-peers/index.ts';

let app: TestApp;
let strict: TestApp;
let twilio: TwilioPeer;
let vonage: VonagePeer;
let gateway: HttpGatewayPeer;
let acme: TenantFixture;
let globex: TenantFixture;
const GATEWAY_KEY = 'gw-key-7f3a9c';

const twilioBody = () => ({ account_sid: twilio.accountSid, auth_token: twilio.authToken, from: '+15005550006' });
const vonageBody = () => ({ api_key: vonage.apiKey, api_secret: vonage.apiSecret, from: 'Herald', priority: 1 });
const gatewayBody = () => ({
  url: `${gateway.url}/send`,
  headers: { 'X-Api-Key': GATEWAY_KEY },
  body: { recipient: '{{ to }}', message: '{{ text }}', meta: { channel: 'sms' } },
  message_id_path: 'data.id',
  priority: 2,
});

beforeAll(async () => {
  [twilio, vonage, gateway] = await Promise.all([startTwilioPeer(), startVonagePeer(), startHttpGatewayPeer()]);
  const providers = { twilioUrl: twilio.url, vonageUrl: vonage.url };
  [app, strict] = await Promise.all([
    startTestApp({ config: { providers, allowPrivateWebhookUrls: true, publicUrl: 'https://herald.example.test' } }),
    startTestApp({ config: { providers } }),
  ]);
  acme = await createTenantFixture(app, 'Acme');
  globex = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await Promise.all([app?.close(), strict?.close()]);
  await Promise.all([twilio?.close(), vonage?.close(), gateway?.close()]);
});

const put = (provider: string, body: unknown, token = acme.serviceKey, on = app) =>
  on.request('PUT', `/v1/sms-transport/${provider}`, { token, body });

describe('PUT /v1/sms-transport/{provider}', () => {
  it('stores each provider and answers its entry without a secret, with the callback URL', async () => {
    const t = await put('twilio', twilioBody());
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({
      provider: 'twilio',
      priority: 0,
      enabled: true,
      settings: { account_sid: twilio.accountSid, from: '+15005550006', messaging_service_sid: null },
      credentials_unreadable: false,
    });
    expect(t.body.callback_url).toMatch(/^https:\/\/herald\.example\.test\/callbacks\/twilio\/[A-Za-z0-9_-]{20,}$/);
    const v = await put('vonage', vonageBody());
    expect(v.status).toBe(200);
    expect(v.body).toMatchObject({
      provider: 'vonage',
      priority: 1,
      settings: { api_key: vonage.apiKey, from: 'Herald', signed_callbacks: false },
    });
    expect(v.body.callback_url).toMatch(/\/callbacks\/vonage\//);
    const h = await put('http', gatewayBody());
    expect(h.status).toBe(200);
    expect(h.body).toMatchObject({
      provider: 'http',
      priority: 2,
      callback_url: null,
      settings: { url: `${gateway.url}/send`, method: 'POST', header_names: ['X-Api-Key'] },
    });
    for (const res of [t, v, h]) {
      expect(res.text).not.toContain(twilio.authToken);
      expect(res.text).not.toContain(vonage.apiSecret);
      expect(res.text).not.toContain(GATEWAY_KEY);
    }
  });

  it('rotates the callback URL when asked: the old one is 404 from then on, the new one answers', async () => {
    const fx = await createTenantFixture(app, 'Rotating');
    const before = (await put('vonage', vonageBody(), fx.serviceKey)).body;
    const receipt = { messageId: 'not-ours', status: 'delivered' };
    const post = (url: string) =>
      fetch(url.replace('https://herald.example.test', app.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(receipt),
      });
    expect((await post(before.callback_url)).status).toBe(204);
    const rotated = await put('vonage', { ...vonageBody(), rotate_callback_url: true }, fx.serviceKey);
    expect(rotated.status).toBe(200);
    expect(rotated.body.callback_url).not.toBe(before.callback_url);
    expect((await post(before.callback_url)).status).toBe(404);
    expect((await post(rotated.body.callback_url)).status).toBe(204);
    // Without the flag it stays.
    expect((await put('vonage', vonageBody(), fx.serviceKey)).body.callback_url).toBe(rotated.body.callback_url);
    expectValidationError(await put('vonage', { ...vonageBody(), rotate_callback_url: 'yes' }, fx.serviceKey), [
      'body',
      'rotate_callback_url',
    ]);
  });

  it('keeps stored secrets and the callback URL when a later PUT leaves the secret out', async () => {
    const before = (await put('twilio', twilioBody())).body;
    const res = await put('twilio', {
      account_sid: twilio.accountSid,
      from: '+15005550006',
      enabled: false,
      priority: 5,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ enabled: false, priority: 5 });
    expect(res.body.callback_url).toBe(before.callback_url);
    const sent = await app.request('POST', '/v1/sms-transport/twilio/test', {
      token: acme.serviceKey,
      body: { to: '+4915100000001' },
    });
    expect(sent.body.ok).toBe(true);
    expect((await put('twilio', { ...twilioBody(), priority: 0 })).body).toMatchObject({ enabled: false, priority: 0 });
    await put('twilio', { ...twilioBody(), enabled: true });
  });

  it('stores secrets encrypted and keeps them out of the audit log and the logs', async () => {
    const [row] = await sql<{ secrets_ciphertext: string; settings: unknown }>(
      app,
      `SELECT secrets_ciphertext, settings FROM sms_transports WHERE tenant_id = $1 AND provider = 'http'`,
      [acme.tenantId],
    );
    expect(row!.secrets_ciphertext).not.toContain(GATEWAY_KEY);
    expect(JSON.stringify(row!.settings)).not.toContain(GATEWAY_KEY);
    const audit = await sql<{ action: string; changes: unknown }>(
      app,
      `SELECT action, changes FROM audit_log WHERE tenant_id = $1 AND target_kind = 'sms_transport' ORDER BY at`,
      [acme.tenantId],
    );
    expect(audit.map((a) => a.action)).toContain('sms_transport.update');
    const everything = JSON.stringify(audit) + app.logs.join('\n');
    for (const secret of [twilio.authToken, vonage.apiSecret, GATEWAY_KEY]) expect(everything).not.toContain(secret);
    expect(everything).not.toMatch(/callbacks\/twilio\/[A-Za-z0-9_-]{20,}/);
  });

  it('answers 422 naming the field: a bad SID, a missing secret, no sender, an unknown placeholder', async () => {
    expectValidationError(await put('twilio', { ...twilioBody(), account_sid: 'AC123' }), ['body', 'account_sid']);
    expectValidationError(
      await put('twilio', { account_sid: twilio.accountSid, from: '+15005550006' }, globex.serviceKey),
      ['body', 'auth_token'],
    );
    expectValidationError(await put('twilio', { account_sid: twilio.accountSid, auth_token: 'x' }), ['body', 'from']);
    expectValidationError(await put('twilio', { ...twilioBody(), from: '0301234' }), ['body', 'from']);
    expectValidationError(await put('vonage', { ...vonageBody(), from: undefined }), ['body', 'from']);
    expectValidationError(await put('http', { ...gatewayBody(), body: { m: '{{ contact.email }}' } }), [
      'body',
      'body',
    ]);
    expectValidationError(await put('http', { ...gatewayBody(), url: 'ftp://x' }), ['body', 'url']);
    expectValidationError(await put('http', { ...gatewayBody(), url: 'https://key:secret@sms.example.net/send' }), [
      'body',
      'url',
    ]);
    expectValidationError(await put('http', { ...gatewayBody(), headers: { 'Content-Length': '1' } }), [
      'body',
      'headers',
      'Content-Length',
    ]);
    expectValidationError(await put('http', { ...gatewayBody(), priority: -1 }), ['body', 'priority']);
    expectValidationError(await put('mms', twilioBody()), ['path', 'provider']);
    const malformed = await app.request('PUT', '/v1/sms-transport/twilio', { token: acme.serviceKey, rawBody: '{' });
    expect(malformed.status).toBe(422);
  });

  it('refuses a gateway URL on a private address unless allowPrivateWebhookUrls', async () => {
    const fx = await createTenantFixture(strict, 'Strict');
    for (const url of ['http://127.0.0.1:9/send', 'http://10.0.0.8/send', 'http://localhost/send'])
      expectValidationError(await put('http', { ...gatewayBody(), url }, fx.serviceKey, strict), ['body', 'url']);
  });

  it('refuses callers without a management credential', async () => {
    await expectManagementOnly(app, acme, 'PUT', '/v1/sms-transport/twilio', twilioBody());
    await expectManagementOnly(app, acme, 'GET', '/v1/sms-transport');
    await expectManagementOnly(app, acme, 'DELETE', '/v1/sms-transport/twilio');
    await expectManagementOnly(app, acme, 'POST', '/v1/sms-transport/twilio/test', { to: '+4915100000001' });
  });
});

describe('GET /v1/sms-transport', () => {
  it("lists the tenant's transports by priority, and nothing of another tenant's", async () => {
    const res = await app.request('GET', '/v1/sms-transport', { token: acme.ownerToken });
    expect(res.status).toBe(200);
    expect(res.body.map((t: { provider: string }) => t.provider)).toEqual(['twilio', 'vonage', 'http']);
    const other = await app.request('GET', '/v1/sms-transport', { token: globex.serviceKey });
    expect(other.body).toEqual([]);
  });
});

describe('POST /v1/sms-transport/{provider}/test', () => {
  const test = (provider: string, body: unknown, token = acme.serviceKey) =>
    app.request('POST', `/v1/sms-transport/${provider}/test`, { token, body });

  it("sends through Twilio with basic auth and a form body, and answers the message's sid", async () => {
    const res = await test('twilio', { to: '+49 151 00000002', text: 'Hello from the test' });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    const message = twilio.received.find((m) => m.sid === res.body.message_id)!;
    expect(message).toMatchObject({ to: '+4915100000002', from: '+15005550006', body: 'Hello from the test' });
    expect(message.statusCallback).toMatch(/^https:\/\/herald\.example\.test\/callbacks\/twilio\//);
    const raw = twilio.requests.at(-1)!;
    expect(raw.headers['content-type']).toContain('application/x-www-form-urlencoded');
    expect(parseForm(raw.body).Body).toBe('Hello from the test');
  });

  it("reports Twilio's permanent errors by code (21211 invalid number, 21610 unsubscribed), never its body", async () => {
    twilio.invalidNumbers.add('+4915100000003');
    const invalid = await test('twilio', { to: '+4915100000003' });
    expect(invalid.body).toEqual({ ok: false, error: 'HTTP 400 code 21211' });
    twilio.unsubscribed.add('+4915100000004');
    const unsubscribed = await test('twilio', { to: '+4915100000004' });
    expect(unsubscribed.body).toEqual({ ok: false, error: 'HTTP 400 code 21610' });
  });

  it('reports a refused Twilio credential and a 5xx', async () => {
    const fx = await createTenantFixture(app, 'Badcreds');
    await put('twilio', { ...twilioBody(), auth_token: 'wrong-token' }, fx.serviceKey);
    const refused = await test('twilio', { to: '+4915100000005' }, fx.serviceKey);
    expect(refused.body).toEqual({ ok: false, error: 'HTTP 401 code 20003 (credentials refused)' });
    expect(refused.text).not.toContain('wrong-token');
    twilio.failNext(1, { status: 503, body: { code: 20500, message: 'down' } });
    expect((await test('twilio', { to: '+4915100000005' })).body).toEqual({ ok: false, error: 'HTTP 503 code 20500' });
  });

  it('sends through Vonage and maps its statuses: 3 invalid, 1 throttled, 4 bad credentials', async () => {
    const ok = await test('vonage', { to: '+4915100000006', text: 'Grüße' });
    expect(ok.body.ok).toBe(true);
    const message = vonage.received.find((m) => m.messageId === ok.body.message_id)!;
    expect(message).toMatchObject({ to: '4915100000006', from: 'Herald', text: 'Grüße' });
    expect(message.callback).toMatch(/\/callbacks\/vonage\//);
    vonage.invalidNumbers.add('4915100000007');
    expect((await test('vonage', { to: '+4915100000007' })).body).toEqual({ ok: false, error: 'status 3' });
    vonage.statusNext(1, '1');
    expect((await test('vonage', { to: '+4915100000006' })).body).toEqual({ ok: false, error: 'status 1' });
    const fx = await createTenantFixture(app, 'Vbad');
    await put('vonage', { ...vonageBody(), api_secret: 'nope' }, fx.serviceKey);
    expect((await test('vonage', { to: '+4915100000006' }, fx.serviceKey)).body).toEqual({
      ok: false,
      error: 'status 4 (credentials refused)',
    });
  });

  it('sends through the http gateway: secret headers, the template filled JSON-escaped, the id read from the answer', async () => {
    gateway.respondWith({ status: 200, body: { data: { id: 'gw-42' } } });
    const text = 'He said "hi"\nand left {{ to }}';
    const res = await test('http', { to: '+4915100000008', text });
    expect(res.body).toEqual({ ok: true, message_id: 'gw-42' });
    const got = gateway.received.at(-1)!;
    expect(got.method).toBe('POST');
    expect(got.path).toBe('/send');
    expect(got.headers['x-api-key']).toBe(GATEWAY_KEY);
    expect(got.json).toEqual({ recipient: '+4915100000008', message: text, meta: { channel: 'sms' } });
    gateway.respondWith({ status: 400, body: { error: 'bad number +4915100000008' } });
    expect((await test('http', { to: '+4915100000008' })).body).toEqual({ ok: false, error: 'HTTP 400' });
    gateway.respondWith({ status: 200, body: { ok: true } });
  });

  it('answers 404 for a provider the tenant has not configured, and another tenant never reaches it', async () => {
    expect((await test('twilio', { to: '+4915100000001' }, globex.serviceKey)).status).toBe(404);
    expect((await app.request('DELETE', '/v1/sms-transport/twilio', { token: globex.serviceKey })).status).toBe(404);
    expect((await app.request('GET', '/v1/sms-transport', { token: acme.serviceKey })).body).toHaveLength(3);
  });

  it('answers 422 for a number that is not E.164 and an unknown provider', async () => {
    expectValidationError(await test('twilio', { to: '015112345678' }), ['body', 'to']);
    expectValidationError(await test('twilio', {}), ['body', 'to']);
    expectValidationError(await test('fax', { to: '+4915100000001' }), ['path', 'provider']);
  });
});

describe('DELETE /v1/sms-transport/{provider}', () => {
  it('removes one provider and answers 204, then 404', async () => {
    const fx = await createTenantFixture(app, 'Deleter');
    await put('vonage', vonageBody(), fx.serviceKey);
    const res = await app.request('DELETE', '/v1/sms-transport/vonage', { token: fx.ownerToken });
    expect(res.status).toBe(204);
    expect((await app.request('GET', '/v1/sms-transport', { token: fx.serviceKey })).body).toEqual([]);
    expect((await app.request('DELETE', '/v1/sms-transport/vonage', { token: fx.serviceKey })).status).toBe(404);
    expectValidationError(await app.request('DELETE', '/v1/sms-transport/pager', { token: fx.serviceKey }), [
      'path',
      'provider',
    ]);
  });
});

describe('contact phone numbers', () => {
  const phoneOf = async (externalId: string) =>
    (
      await sql<{ phone: string | null }>(app, `SELECT phone FROM contacts WHERE tenant_id = $1 AND external_id = $2`, [
        acme.tenantId,
        externalId,
      ])
    )[0]?.phone;

  it('are stored as E.164 on create, replace, bulk and import', async () => {
    const created = await app.request('POST', '/v1/contacts', {
      token: acme.serviceKey,
      body: { external_id: 'p-1', phone: '+49 (151) 1234-5678' },
    });
    expect(created.status).toBe(201);
    expect(created.body.phone).toBe('+4915112345678');
    const replaced = await app.request('PUT', `/v1/contacts/${created.body.id}`, {
      token: acme.serviceKey,
      body: { phone: '+1 202 555 0143' },
    });
    expect(replaced.body.phone).toBe('+12025550143');
    const bulk = await app.request('POST', '/v1/contacts/bulk', {
      token: acme.serviceKey,
      body: {
        contacts: [
          { external_id: 'p-2', phone: '+33 6 12 34 56 78' },
          { external_id: 'p-3', phone: '0612345678' },
        ],
      },
    });
    expect(bulk.body).toMatchObject({ created: 1, errors: [{ index: 1 }] });
    expect(await phoneOf('p-2')).toBe('+33612345678');
    expect(await phoneOf('p-3')).toBeUndefined();
    const imported = await app.request('POST', '/v1/contacts/import', {
      token: acme.serviceKey,
      headers: { 'content-type': 'application/x-ndjson' },
      rawBody: `${JSON.stringify({ external_id: 'p-4', phone: '+44 20 7946 0958' })}\n${JSON.stringify({ external_id: 'p-5', phone: '+999' })}\n`,
    });
    expect(imported.status).toBeLessThan(300);
    expect(await phoneOf('p-4')).toBe('+442079460958');
    expect(await phoneOf('p-5')).toBeUndefined();
  });

  it('answer 422 naming the field for a number without +, too short, or with an extension', async () => {
    for (const phone of ['015112345678', '+49 30 1', '+1 202 555 0143 ext. 12', 'call me'])
      expectValidationError(
        await app.request('POST', '/v1/contacts', { token: acme.serviceKey, body: { external_id: 'p-bad', phone } }),
        ['body', 'phone'],
      );
    const trigger = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'anything', recipients: [{ external_id: 'p-bad', phone: '12345' }] },
    });
    expectValidationError(trigger, ['body', 'recipients', 0, 'phone']);
  });
});
