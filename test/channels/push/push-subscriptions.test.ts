// Push destinations: device tokens and browser subscriptions, one subscription per destination,
// moving between contacts of a tenant, listing and removal; credentials and scope.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { createTenantFixture, type TenantFixture } from '../../support/fixtures.ts';
import { newId } from '../../../server/base/ids.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  globex = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await app?.close();
});

const p256dh = () => Buffer.concat([Buffer.from([4]), randomBytes(64)]).toString('base64url');
const auth = () => randomBytes(16).toString('base64url');
const webpush = (endpoint = `https://push.example.net/send/${randomBytes(8).toString('hex')}`) => ({
  provider: 'webpush',
  subscription: { endpoint, keys: { p256dh: p256dh(), auth: auth() } },
});
const register = (contactId: string, body: unknown, token: string) =>
  app.request('POST', `/v1/contacts/${contactId}/push-subscriptions`, { body, token });

describe('POST /v1/contacts/{id}/push-subscriptions', () => {
  it('registers a device token (201) and answers 200 for the same token again', async () => {
    const id = await acme.contact('push-1');
    const first = await register(id, { provider: 'apns', token: 'a1b2c3' }, acme.tokenFor(id));
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ provider: 'apns', token: 'a1b2c3', endpoint: null, last_used_at: null });
    const again = await register(id, { provider: 'apns', token: 'a1b2c3' }, acme.serviceKey);
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
  });

  it('registers a browser subscription without ever returning its keys', async () => {
    const id = await acme.contact('push-2');
    const body = webpush();
    const res = await register(id, body, acme.tokenFor(id));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ provider: 'webpush', token: null, endpoint: body.subscription.endpoint });
    expect(res.text).not.toContain(body.subscription.keys.auth);
    // The same endpoint with refreshed keys is the same subscription.
    const refreshed = await register(id, webpush(body.subscription.endpoint), acme.tokenFor(id));
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.id).toBe(res.body.id);
  });

  it('accepts http endpoints on loopback hosts only (local push services)', async () => {
    const id = await acme.contact('push-3');
    expect((await register(id, webpush('http://localhost:8090/notify/abc'), acme.serviceKey)).status).toBe(201);
    const remote = await register(id, webpush('http://push.example.net/x'), acme.serviceKey);
    expect(remote.status).toBe(422);
  });

  it('refuses, at registration, browser endpoints on private and metadata addresses unless the install allows them', async () => {
    const strict = await startTestApp({
      database: app.database,
      config: { encryptionKeys: app.config.encryptionKeys, allowPrivatePushEndpoints: false },
    });
    try {
      const id = await acme.contact('push-private');
      for (const endpoint of [
        'https://169.254.169.254/latest/meta-data/',
        'https://10.1.2.3/push',
        'https://[::1]/push',
        'https://[fd00::1]/push',
        'http://localhost:8090/notify/abc',
        'http://127.0.0.1:8090/notify/abc',
      ]) {
        const res = await strict.request('POST', `/v1/contacts/${id}/push-subscriptions`, {
          body: webpush(endpoint),
          token: acme.serviceKey,
        });
        expect(res.status, endpoint).toBe(422);
        expect(res.body.detail[0].loc).toEqual(['body', 'subscription', 'endpoint']);
        expect(res.body.detail[0].msg).toContain('HERALD_ALLOW_PRIVATE_PUSH_ENDPOINTS');
      }
      // A name that does not resolve here is not known to be private: the send checks it again.
      const named = await strict.request('POST', `/v1/contacts/${id}/push-subscriptions`, {
        body: webpush(),
        token: acme.serviceKey,
      });
      expect(named.status).toBe(201);
    } finally {
      await strict.close();
    }
  });

  it('moves a destination registered by another contact of the tenant to this one', async () => {
    const a = await acme.contact('push-4a');
    const b = await acme.contact('push-4b');
    const first = await register(a, { provider: 'fcm', token: 'shared-device' }, acme.tokenFor(a));
    const moved = await register(b, { provider: 'fcm', token: 'shared-device' }, acme.tokenFor(b));
    expect(moved.status).toBe(201);
    expect(moved.body.id).toBe(first.body.id);
    expect(
      (await app.request('GET', `/v1/contacts/${a}/push-subscriptions`, { token: acme.tokenFor(a) })).body,
    ).toEqual([]);
    expect(
      (await app.request('GET', `/v1/contacts/${b}/push-subscriptions`, { token: acme.tokenFor(b) })).body,
    ).toHaveLength(1);
    // The same token in another tenant is another subscription, untouched.
    const g = await globex.contact('push-4g');
    expect((await register(g, { provider: 'fcm', token: 'shared-device' }, globex.serviceKey)).status).toBe(201);
    expect(
      (await app.request('GET', `/v1/contacts/${b}/push-subscriptions`, { token: acme.tokenFor(b) })).body,
    ).toHaveLength(1);
  });

  it('answers 422 for an unknown provider, a missing token, a non-https endpoint or malformed keys', async () => {
    const id = await acme.contact('push-5');
    const token = acme.tokenFor(id);
    const provider = await register(id, { provider: 'sms', token: 'x' }, token);
    expect(provider.status).toBe(422);
    expect((await register(id, { provider: 'expo' }, token)).status).toBe(422);
    expect((await register(id, { provider: 'webpush', token: 'x' }, token)).status).toBe(422);
    expect((await register(id, webpush('ftp://push.example.net/x'), token)).status).toBe(422);
    const badKeys = await register(
      id,
      {
        provider: 'webpush',
        subscription: { endpoint: 'https://push.example.net/x', keys: { p256dh: 'short', auth: auth() } },
      },
      token,
    );
    expect(badKeys.status).toBe(422);
    expect(badKeys.body.detail[0].loc).toEqual(['body', 'subscription', 'keys', 'p256dh']);
  });

  it("answers 404 for another contact's token and across tenants, 401 without credential", async () => {
    const id = await acme.contact('push-6');
    const other = await acme.contact('push-7');
    const body = { provider: 'expo', token: 'ExponentPushToken[x]' };
    expect((await register(id, body, acme.tokenFor(other))).status).toBe(404);
    expect((await register(id, body, globex.serviceKey)).status).toBe(404);
    expect((await app.request('POST', `/v1/contacts/${id}/push-subscriptions`, { body })).status).toBe(401);
  });
});

describe('GET /v1/contacts/{id}/push-subscriptions', () => {
  it("lists the contact's destinations", async () => {
    const id = await acme.contact('push-list');
    await register(id, { provider: 'apns', token: 'list-1' }, acme.tokenFor(id));
    await register(id, webpush(), acme.tokenFor(id));
    const res = await app.request('GET', `/v1/contacts/${id}/push-subscriptions`, { token: acme.tokenFor(id) });
    expect(res.status).toBe(200);
    expect(res.body.map((s: { provider: string }) => s.provider).sort()).toEqual(['apns', 'webpush']);
  });

  it('answers 404 across contacts and tenants, 401 without credential', async () => {
    const id = await acme.contact('push-list-2');
    const other = await acme.contact('push-list-3');
    expect(
      (await app.request('GET', `/v1/contacts/${id}/push-subscriptions`, { token: acme.tokenFor(other) })).status,
    ).toBe(404);
    expect(
      (await app.request('GET', `/v1/contacts/${id}/push-subscriptions`, { token: globex.serviceKey })).status,
    ).toBe(404);
    expect((await app.request('GET', `/v1/contacts/${id}/push-subscriptions`)).status).toBe(401);
  });
});

describe('DELETE /v1/contacts/{id}/push-subscriptions/{subscription_id}', () => {
  it('removes the destination (204), then answers 404', async () => {
    const id = await acme.contact('push-del');
    const created = await register(id, { provider: 'apns', token: 'del-1' }, acme.tokenFor(id));
    const path = `/v1/contacts/${id}/push-subscriptions/${created.body.id}`;
    const res = await app.request('DELETE', path, { token: acme.tokenFor(id) });
    expect(res.status).toBe(204);
    expect((await app.request('DELETE', path, { token: acme.tokenFor(id) })).status).toBe(404);
  });

  it("answers 404 for another contact's subscription id, across tenants and for an unknown id", async () => {
    const a = await acme.contact('push-del-a');
    const b = await acme.contact('push-del-b');
    const sub = await register(a, { provider: 'apns', token: 'del-2' }, acme.tokenFor(a));
    // b's own path with a's subscription id: not b's subscription.
    expect(
      (await app.request('DELETE', `/v1/contacts/${b}/push-subscriptions/${sub.body.id}`, { token: acme.tokenFor(b) }))
        .status,
    ).toBe(404);
    expect(
      (await app.request('DELETE', `/v1/contacts/${a}/push-subscriptions/${sub.body.id}`, { token: acme.tokenFor(b) }))
        .status,
    ).toBe(404);
    expect(
      (await app.request('DELETE', `/v1/contacts/${a}/push-subscriptions/${sub.body.id}`, { token: globex.serviceKey }))
        .status,
    ).toBe(404);
    expect(
      (await app.request('DELETE', `/v1/contacts/${a}/push-subscriptions/${newId()}`, { token: acme.tokenFor(a) }))
        .status,
    ).toBe(404);
    expect(
      (await app.request('GET', `/v1/contacts/${a}/push-subscriptions`, { token: acme.tokenFor(a) })).body,
    ).toHaveLength(1);
  });

  it('answers 422 for a malformed id and 401 without credential', async () => {
    const id = await acme.contact('push-del-c');
    expect(
      (await app.request('DELETE', `/v1/contacts/${id}/push-subscriptions/xyz`, { token: acme.tokenFor(id) })).status,
    ).toBe(422);
    expect((await app.request('DELETE', `/v1/contacts/${id}/push-subscriptions/${newId()}`)).status).toBe(401);
  });
});
