// Push transports: GET /v1/push-transport, PUT/DELETE /v1/push-transport/{provider}, test sends, and
// sendPush (the delivery contract) against real local peers: an HTTP/2 TLS APNs server that verifies
// the ES256 JWT and topic, an FCM v1 server with its OAuth token endpoint (over TLS, offering HTTP/2
// and HTTP/1.1, as FCM does), and an Expo push server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { createTenantFixture, type TenantFixture } from '../../support/fixtures.ts';
import { startApnsPeer, type ApnsPeer } from '../../support/apns-peer.ts';
import { startFcmPeer, type FcmPeer } from '../../support/fcm-peer.ts';
import { startExpoPeer, type ExpoPeer } from '../../support/expo-peer.ts';
import { sendPush } from '../../../server/channels/push/providers.ts';
import { queryOne } from '../../../server/base/db/sql.ts';
import { ManualClock } from '../../../server/base/clock.ts';
import { describeAnswer, providerState } from '../../../server/channels/provider-http.ts';

const apnsKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const fcmKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const EXPO_TOKEN = 'expo-access-9c2d41aa';
const apnsSettings = {
  team_id: 'TEAM123456',
  key_id: 'KEYID12345',
  bundle_id: 'com.acme.app',
  environment: 'sandbox',
  private_key: apnsKey,
};
const serviceAccount = {
  type: 'service_account',
  project_id: 'acme-push',
  private_key_id: 'abc123',
  private_key: fcmKey,
  client_email: 'herald@acme-push.iam.gserviceaccount.com',
  token_uri: 'https://oauth2.googleapis.com/token',
};
const deviceToken = 'a'.repeat(64);

let app: TestApp;
let apns: ApnsPeer;
let fcm: FcmPeer;
let expo: ExpoPeer;
let a: TenantFixture;
let b: TenantFixture;
const clock = new ManualClock();

beforeAll(async () => {
  apns = await startApnsPeer({
    privateKeyPem: apnsKey,
    teamId: apnsSettings.team_id,
    keyId: apnsSettings.key_id,
    bundleId: apnsSettings.bundle_id,
  });
  fcm = await startFcmPeer({
    privateKeyPem: fcmKey,
    clientEmail: serviceAccount.client_email,
    projectId: serviceAccount.project_id,
    tls: true,
  });
  expo = await startExpoPeer({ accessToken: EXPO_TOKEN });
  app = await startTestApp({
    clock,
    config: {
      providers: {
        apnsSandboxUrl: apns.url,
        apnsProductionUrl: 'https://127.0.0.1:1',
        fcmUrl: fcm.url,
        fcmTokenUrl: fcm.tokenUrl,
        expoUrl: expo.url,
      },
    },
  });
  a = await createTenantFixture(app, 'Acme');
  b = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await app?.close();
  await Promise.all([apns?.close(), fcm?.close(), expo?.close()]);
});

describe('PUT /v1/push-transport/{provider}', () => {
  it('stores apns settings and never answers the .p8 key', async () => {
    const res = await app.request('PUT', '/v1/push-transport/apns', { token: a.serviceKey, body: apnsSettings });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider: 'apns',
      settings: { team_id: 'TEAM123456', key_id: 'KEYID12345', bundle_id: 'com.acme.app', environment: 'sandbox' },
      credentials_unreadable: false,
      updated_at: expect.any(String),
    });
    expect(res.text).not.toContain('PRIVATE KEY');
  });

  it('stores fcm from a service account, keeping its private key secret', async () => {
    const res = await app.request('PUT', '/v1/push-transport/fcm', {
      token: a.ownerToken,
      body: { service_account: serviceAccount },
    });
    expect(res.status).toBe(200);
    expect(res.body.settings).toMatchObject({ project_id: 'acme-push', client_email: serviceAccount.client_email });
    expect(res.text).not.toContain('PRIVATE KEY');
  });

  it('stores expo with an optional access token, encrypted', async () => {
    const res = await app.request('PUT', '/v1/push-transport/expo', {
      token: a.serviceKey,
      body: { access_token: EXPO_TOKEN },
    });
    expect(res.status).toBe(200);
    expect(res.body.settings).toEqual({});
    expect(res.text).not.toContain(EXPO_TOKEN);
    const row = await queryOne<{ secrets_ciphertext: string }>(
      app.runtime.orm.em.fork(),
      `SELECT secrets_ciphertext FROM push_transports WHERE tenant_id = $1 AND provider = 'expo'`,
      [a.tenantId],
    );
    expect(row!.secrets_ciphertext).not.toContain(EXPO_TOKEN);
    expect(
      JSON.parse(app.runtime.keyRing.decrypt(row!.secrets_ciphertext, `push_transports/${a.tenantId}/expo/secrets`)),
    ).toEqual({ access_token: EXPO_TOKEN });
  });

  it('replaces only that provider and answers 422 for an unknown provider', async () => {
    const before = (await app.request('GET', '/v1/push-transport', { token: a.serviceKey })).body as Array<{
      provider: string;
      settings: unknown;
      updated_at: string;
    }>;
    await app.request('PUT', '/v1/push-transport/apns', {
      token: a.serviceKey,
      body: { ...apnsSettings, environment: 'production' },
    });
    const after = (await app.request('GET', '/v1/push-transport', { token: a.serviceKey })).body as typeof before;
    expect(after.find((t) => t.provider === 'apns')!.settings).toMatchObject({ environment: 'production' });
    expect(before.length).toBeGreaterThan(1);
    for (const other of before.filter((t) => t.provider !== 'apns'))
      expect(after.find((t) => t.provider === other.provider)).toEqual(other);
    await app.request('PUT', '/v1/push-transport/apns', { token: a.serviceKey, body: apnsSettings });
    const res = await app.request('PUT', '/v1/push-transport/pigeon', { token: a.serviceKey, body: {} });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['path', 'provider']);
  });

  it('answers 422 with the field for malformed settings', async () => {
    const cases: Array<[string, unknown, Array<string | number>]> = [
      ['apns', { ...apnsSettings, team_id: 'x' }, ['body', 'team_id']],
      ['apns', { ...apnsSettings, environment: 'staging' }, ['body', 'environment']],
      ['apns', { ...apnsSettings, private_key: 'not a key' }, ['body', 'private_key']],
      ['apns', { ...apnsSettings, private_key: fcmKey }, ['body', 'private_key']],
      [
        'fcm',
        { service_account: { ...serviceAccount, private_key: apnsKey } },
        ['body', 'service_account', 'private_key'],
      ],
      ['fcm', {}, ['body', 'service_account']],
      [
        'fcm',
        { service_account: { ...serviceAccount, token_uri: 'https://169.254.169.254/token' } },
        ['body', 'service_account', 'token_uri'],
      ],
      ['webpush', { subject: 'ftp://acme.test' }, ['body', 'subject']],
      ['webpush', { subject: 'mailto:ops@acme.test', public_key: 'B'.repeat(87) }, ['body', 'private_key']],
    ];
    for (const [provider, body, loc] of cases) {
      const res = await app.request('PUT', `/v1/push-transport/${provider}`, { token: a.serviceKey, body });
      expect(res.status, `${provider} ${JSON.stringify(loc)}`).toBe(422);
      expect(res.body.detail[0].loc).toEqual(loc);
    }
    expect((await app.request('PUT', '/v1/push-transport/apns', { token: a.serviceKey, rawBody: 'nope' })).status).toBe(
      422,
    );
  });

  it('answers 401 and 403 for the wrong credential', async () => {
    expect((await app.request('PUT', '/v1/push-transport/expo', { body: {} })).status).toBe(401);
    expect((await app.request('PUT', '/v1/push-transport/expo', { token: a.contactToken, body: {} })).status).toBe(403);
  });
});

describe('GET /v1/push-transport', () => {
  it("lists the tenant's transports without secrets", async () => {
    const res = await app.request('GET', '/v1/push-transport', { token: a.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body.map((t: { provider: string }) => t.provider)).toEqual(['apns', 'expo', 'fcm']);
    expect(res.body.every((t: { credentials_unreadable: boolean }) => t.credentials_unreadable === false)).toBe(true);
    expect(res.text).not.toMatch(/PRIVATE KEY|private_key"|access_token/);
  });

  it('answers an empty list for another tenant (no platform default)', async () => {
    const res = await app.request('GET', '/v1/push-transport', { token: b.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('answers 401 and 403', async () => {
    expect((await app.request('GET', '/v1/push-transport')).status).toBe(401);
    expect((await app.request('GET', '/v1/push-transport', { token: a.contactToken })).status).toBe(403);
  });
});

describe('POST /v1/push-transport/{provider}/test', () => {
  it('delivers to the APNs peer with a verified ES256 token and the bundle id as topic', async () => {
    const res = await app.request('POST', '/v1/push-transport/apns/test', {
      token: a.serviceKey,
      body: { token: deviceToken },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, message_id: expect.any(String) });
    const got = apns.received.at(-1)!;
    expect(got.token).toBe(deviceToken);
    expect(got.topic).toBe('com.acme.app');
    expect(got.payload.aps.alert.title).toBe('Herald test notification');
  });

  it("reports APNs's refusal of a bad device token", async () => {
    const res = await app.request('POST', '/v1/push-transport/apns/test', {
      token: a.serviceKey,
      body: { token: 'ab'.repeat(20) },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: false, error: 'APNs 400 BadDeviceToken' });
  });

  it('delivers through FCM v1 after the OAuth exchange, and reuses the access token', async () => {
    const before = fcm.tokenExchanges;
    for (const token of ['fcm-token-1', 'fcm-token-2']) {
      const res = await app.request('POST', '/v1/push-transport/fcm/test', { token: a.serviceKey, body: { token } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ok: true, message_id: expect.stringMatching(/^projects\/acme-push\/messages\//) });
    }
    expect(fcm.tokenExchanges - before).toBe(1);
    expect(fcm.received.map((m) => m.token)).toEqual(['fcm-token-1', 'fcm-token-2']);
    expect(fcm.received[0]!.data).toEqual({ herald_test: 'true' });
  });

  it('delivers to Expo with the access token', async () => {
    const res = await app.request('POST', '/v1/push-transport/expo/test', {
      token: a.serviceKey,
      body: { token: 'ExponentPushToken[abc]' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, message_id: expect.any(String) });
    expect(expo.received.at(-1)).toMatchObject({ to: 'ExponentPushToken[abc]', title: 'Herald test notification' });
  });

  it('answers 422 when the provider is not configured, the destination is missing, or the provider unknown', async () => {
    const none = await app.request('POST', '/v1/push-transport/apns/test', {
      token: b.serviceKey,
      body: { token: deviceToken },
    });
    expect(none.status).toBe(422);
    expect(none.body.code).toBe('not_configured');
    const noToken = await app.request('POST', '/v1/push-transport/apns/test', { token: a.serviceKey, body: {} });
    expect(noToken.status).toBe(422);
    expect(noToken.body.detail[0].loc).toEqual(['body', 'token']);
    expect(
      (await app.request('POST', '/v1/push-transport/sms/test', { token: a.serviceKey, body: { token: 'x' } })).status,
    ).toBe(422);
  });

  it('answers 401 and 403', async () => {
    expect((await app.request('POST', '/v1/push-transport/apns/test', { body: { token: deviceToken } })).status).toBe(
      401,
    );
    expect(
      (
        await app.request('POST', '/v1/push-transport/apns/test', {
          token: a.contactToken,
          body: { token: deviceToken },
        })
      ).status,
    ).toBe(403);
  });
});

describe('sendPush', () => {
  const message = {
    title: 'Order shipped',
    body: 'Your order is on its way',
    data: { order: 42 },
    action_url: 'https://acme.test/o/42',
  };

  it('sends through each provider and reuses one HTTP/2 session for APNs', async () => {
    const em = app.runtime.orm.em.fork();
    const sessionsBefore = apns.sessions;
    const first = await sendPush(app.runtime, em, a.tenantId, { provider: 'apns', token: deviceToken }, message);
    const second = await sendPush(app.runtime, em, a.tenantId, { provider: 'apns', token: deviceToken }, message);
    expect(first).toEqual({ status: 'sent', providerMessageId: expect.any(String) });
    expect(second.status).toBe('sent');
    expect(apns.sessions - sessionsBefore).toBeLessThanOrEqual(1);
    expect(apns.received.at(-1)!.payload).toMatchObject({
      aps: { alert: { title: 'Order shipped', body: 'Your order is on its way' } },
      data: { order: 42 },
    });
    expect(
      await sendPush(app.runtime, em, a.tenantId, { provider: 'fcm', token: 'fcm-token-3' }, message),
    ).toMatchObject({ status: 'sent' });
    expect(fcm.received.at(-1)!.data).toEqual({ order: '42', action_url: 'https://acme.test/o/42' });
    expect(
      await sendPush(app.runtime, em, a.tenantId, { provider: 'expo', token: 'ExponentPushToken[xyz]' }, message),
    ).toMatchObject({ status: 'sent' });
  });

  it('sends a burst to FCM over one HTTP/2 connection, which FCM offers in its TLS handshake', async () => {
    const em = app.runtime.orm.em.fork();
    await sendPush(app.runtime, em, a.tenantId, { provider: 'fcm', token: 'fcm-h2-warm' }, message); // token exchanged, session open
    const connections = fcm.connections;
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        sendPush(app.runtime, em, a.tenantId, { provider: 'fcm', token: `fcm-h2-${i}` }, message),
      ),
    );
    expect(outcomes.every((o) => o.status === 'sent')).toBe(true);
    expect(fcm.received.filter((m) => m.token.startsWith('fcm-h2-') && m.token !== 'fcm-h2-warm')).toHaveLength(30);
    expect(fcm.connections).toBe(connections);
    expect([...fcm.httpVersions]).toEqual(['2.0']);
  });

  it('reports dead destinations: APNs 410 Unregistered, FCM UNREGISTERED, Expo DeviceNotRegistered', async () => {
    const em = app.runtime.orm.em.fork();
    const gone = 'b'.repeat(64);
    apns.unregistered.add(gone);
    fcm.deadTokens.add('fcm-dead');
    expo.deadTokens.add('ExponentPushToken[dead]');
    expect(await sendPush(app.runtime, em, a.tenantId, { provider: 'apns', token: gone }, message)).toEqual({
      status: 'dead',
      error: 'APNs 410 Unregistered',
    });
    // Errors are summaries, the status and the provider's codes, never the provider's body.
    expect(await sendPush(app.runtime, em, a.tenantId, { provider: 'fcm', token: 'fcm-dead' }, message)).toEqual({
      status: 'dead',
      error: 'FCM HTTP 404 NOT_FOUND UNREGISTERED',
    });
    expect(
      await sendPush(app.runtime, em, a.tenantId, { provider: 'expo', token: 'ExponentPushToken[dead]' }, message),
    ).toEqual({ status: 'dead', error: 'Expo DeviceNotRegistered' });
    // Expo's message for a malformed token quotes the token: it stays out of the error.
    expect(
      await sendPush(app.runtime, em, a.tenantId, { provider: 'expo', token: 'not-an-expo-token' }, message),
    ).toEqual({ status: 'dead', error: 'Expo DeviceNotRegistered' });
  });

  it('summarises a provider error answer as its status and codes, whatever its body says', () => {
    const answer = (status: number, text: string) => describeAnswer({ status, headers: {}, text });
    expect(answer(400, JSON.stringify({ reason: 'BadDeviceToken' }))).toBe('HTTP 400 BadDeviceToken');
    expect(
      answer(
        401,
        JSON.stringify({ error: 'invalid_grant', error_description: 'Invalid JWT Signature for key abc123' }),
      ),
    ).toBe('HTTP 401 invalid_grant');
    expect(
      answer(
        429,
        JSON.stringify({ errors: [{ code: 'TOO_MANY_REQUESTS', message: 'slow down for ExponentPushToken[x]' }] }),
      ),
    ).toBe('HTTP 429 TOO_MANY_REQUESTS');
    expect(
      answer(
        410,
        JSON.stringify({ code: 410, errno: 106, error: 'Gone', message: 'https://push.example/secret-endpoint' }),
      ),
    ).toBe('HTTP 410 Gone errno-106');
    expect(answer(502, '<html>upstream https://internal.example/token=abc</html>')).toBe('HTTP 502');
    expect(answer(400, JSON.stringify({ error: 'a free-text error that names fcm-token-123' }))).toBe('HTTP 400');
  });

  it('reuses the APNs JWT and the FCM access token until shortly before they expire', async () => {
    const em = app.runtime.orm.em.fork();
    const send = (provider: 'apns' | 'fcm', token: string) =>
      sendPush(app.runtime, em, a.tenantId, { provider, token }, message);
    await send('apns', deviceToken);
    const jwt = apns.received.at(-1)!.jwt;
    await send('apns', deviceToken);
    expect(apns.received.at(-1)!.jwt).toBe(jwt);
    await send('fcm', 'fcm-cache-1');
    const exchanges = fcm.tokenExchanges;
    // 59 minutes later: Apple wants a JWT younger than an hour, Google's token (3599 s) is about to expire.
    clock.advance(59 * 60 * 1000);
    await send('apns', deviceToken);
    expect(apns.received.at(-1)!.jwt).not.toBe(jwt);
    expect(JSON.parse(Buffer.from(apns.received.at(-1)!.jwt.split('.')[1]!, 'base64url').toString()).iat).toBe(
      Math.floor(clock.now() / 1000),
    );
    expect((await send('fcm', 'fcm-cache-2')).status).toBe('sent');
    expect(fcm.tokenExchanges).toBe(exchanges + 1);
  });

  it('exchanges one FCM token for a burst of sends that find none cached', async () => {
    const em = app.runtime.orm.em.fork();
    providerState(app.runtime).tokens.clear(); // the token cached by the tests before
    const exchanges = fcm.tokenExchanges;
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        sendPush(app.runtime, em, a.tenantId, { provider: 'fcm', token: `fcm-burst-${i}` }, message),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(Array.from({ length: 20 }, () => 'sent'));
    expect(fcm.tokenExchanges).toBe(exchanges + 1);
  });

  it('drops a cached FCM token that FCM refuses (401, retryable), and exchanges a new one for the next send', async () => {
    const em = app.runtime.orm.em.fork();
    const send = (token: string) => sendPush(app.runtime, em, a.tenantId, { provider: 'fcm', token }, message);
    expect((await send('fcm-revoked-1')).status).toBe('sent');
    const exchanges = fcm.tokenExchanges;
    fcm.revokeAccessTokens();
    expect(await send('fcm-revoked-2')).toMatchObject({
      status: 'failed',
      retryable: true,
      error: expect.stringContaining('401'),
    });
    expect((await send('fcm-revoked-3')).status).toBe('sent');
    expect(fcm.tokenExchanges).toBe(exchanges + 1);
  });

  it('skips with no_transport for a provider the tenant has not configured', async () => {
    const em = app.runtime.orm.em.fork();
    expect(await sendPush(app.runtime, em, b.tenantId, { provider: 'fcm', token: 'x' }, message)).toEqual({
      status: 'skipped',
      reason: 'no_transport',
    });
  });

  it('reports an unreachable provider as a retryable failure', async () => {
    const tenant = await createTenantFixture(app, 'Prod');
    await app.request('PUT', '/v1/push-transport/apns', {
      token: tenant.serviceKey,
      body: { ...apnsSettings, environment: 'production' },
    });
    const outcome = await sendPush(
      app.runtime,
      app.runtime.orm.em.fork(),
      tenant.tenantId,
      { provider: 'apns', token: deviceToken },
      message,
    );
    expect(outcome).toMatchObject({ status: 'failed', retryable: true });
  });

  it('rejects a token the provider refuses as a non-retryable failure (wrong project credentials)', async () => {
    const tenant = await createTenantFixture(app, 'Wrong');
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    await app.request('PUT', '/v1/push-transport/fcm', {
      token: tenant.serviceKey,
      body: { service_account: { ...serviceAccount, private_key: otherKey } },
    });
    const outcome = await sendPush(
      app.runtime,
      app.runtime.orm.em.fork(),
      tenant.tenantId,
      { provider: 'fcm', token: 'fcm-token-9' },
      message,
    );
    expect(outcome).toMatchObject({ status: 'failed', retryable: false });
  });
});

describe('DELETE /v1/push-transport/{provider}', () => {
  it("removes only that provider of the caller's tenant", async () => {
    await app.request('PUT', '/v1/push-transport/expo', { token: b.serviceKey, body: {} });
    const res = await app.request('DELETE', '/v1/push-transport/expo', { token: a.serviceKey });
    expect(res.status).toBe(204);
    const left = await app.request('GET', '/v1/push-transport', { token: a.serviceKey });
    expect(left.body.map((t: { provider: string }) => t.provider)).toEqual(['apns', 'fcm']);
    expect(
      (await app.request('GET', '/v1/push-transport', { token: b.serviceKey })).body.map(
        (t: { provider: string }) => t.provider,
      ),
    ).toEqual(['expo']);
  });

  it('answers 422 for an unknown provider, 401 and 403', async () => {
    expect((await app.request('DELETE', '/v1/push-transport/pigeon', { token: a.serviceKey })).status).toBe(422);
    expect((await app.request('DELETE', '/v1/push-transport/apns')).status).toBe(401);
    expect((await app.request('DELETE', '/v1/push-transport/apns', { token: a.contactToken })).status).toBe(403);
  });
});
