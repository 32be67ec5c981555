// No secret ever leaves Herald: a full transport configuration (email with password, APNs .p8, FCM
// service account, Expo access token, VAPID private key, the install default SMTP), every read, test
// sends that succeed and fail, and malformed requests carrying secrets; then every response body and
// every captured log line is scanned for the secret values.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import webpush from 'web-push';
import { startTestApp, type TestApp, type RequestOptions } from '../support/app.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { startApnsPeer, type ApnsPeer } from '../support/apns-peer.ts';
import { startFcmPeer, type FcmPeer } from '../support/fcm-peer.ts';
import { startExpoPeer, type ExpoPeer } from '../support/expo-peer.ts';
import { startWebPushService, type WebPushService } from '../support/web-push-service.ts';
import { setDefaultSmtp } from '../../server/channels/email/email-transport.ts';
import { sendTenantEmail } from '../../server/channels/email/transport.ts';
import { sendPush } from '../../server/channels/push/providers.ts';

const pem = (type: 'ec' | 'rsa') =>
  (type === 'ec'
    ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    : generateKeyPairSync('rsa', { modulusLength: 2048 })
  ).privateKey
    .export({ type: 'pkcs8', format: 'pem' })
    .toString();
const apnsKey = pem('ec');
const fcmKey = pem('rsa');
const vapid = webpush.generateVAPIDKeys();
const SMTP_PASS = 'smtp-Secret-0xC0FFEE-pass';
const DEFAULT_PASS = 'default-Smtp-Secret-9911';
const EXPO_TOKEN = 'expo-Secret-access-token-31337';
/** The body line of a PEM (its base64) is what would leak; any 40-character slice of it is enough to find. */
const pemSlices = (key: string) =>
  key
    .split('\n')
    .filter((l) => l.length >= 40 && !l.startsWith('-----'))
    .map((l) => l.slice(0, 40));
const SECRETS = [SMTP_PASS, DEFAULT_PASS, EXPO_TOKEN, vapid.privateKey, ...pemSlices(apnsKey), ...pemSlices(fcmKey)];

let app: TestApp;
let smtp: SmtpPeer;
let apns: ApnsPeer;
let fcm: FcmPeer;
let expo: ExpoPeer;
let push: WebPushService;
let t: TenantFixture;
const transcript: string[] = [];

async function call(method: string, path: string, options: RequestOptions = {}) {
  const res = await app.request(method, path, { token: t.serviceKey, ...options });
  transcript.push(`${method} ${path} ${res.status} ${JSON.stringify([...res.headers])} ${res.text}`);
  expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(500);
  return res;
}

beforeAll(async () => {
  smtp = await startSmtpPeer({ auth: { user: 'mailer', pass: SMTP_PASS } });
  apns = await startApnsPeer({
    privateKeyPem: apnsKey,
    teamId: 'TEAM123456',
    keyId: 'KEYID12345',
    bundleId: 'com.acme.app',
  });
  fcm = await startFcmPeer({
    privateKeyPem: fcmKey,
    clientEmail: 'h@acme-push.iam.gserviceaccount.com',
    projectId: 'acme-push',
  });
  expo = await startExpoPeer({ accessToken: EXPO_TOKEN });
  push = await startWebPushService();
  app = await startTestApp({
    config: { providers: { apnsSandboxUrl: apns.url, fcmUrl: fcm.url, fcmTokenUrl: fcm.tokenUrl, expoUrl: expo.url } },
  });
  t = await createTenantFixture(app, 'Secretive');
});
afterAll(async () => {
  await app?.close();
  await Promise.all([smtp?.close(), apns?.close(), fcm?.close(), expo?.close(), push?.close()]);
});

describe('secrets of a full transport configuration', () => {
  it('appear in no response and no log line', async () => {
    const email = {
      host: '127.0.0.1',
      port: smtp.port,
      secure: false,
      username: 'mailer',
      password: SMTP_PASS,
      from_email: 'n@acme.test',
      from_name: 'Acme',
    };
    const apnsBody = {
      team_id: 'TEAM123456',
      key_id: 'KEYID12345',
      bundle_id: 'com.acme.app',
      environment: 'sandbox',
      private_key: apnsKey,
    };
    const sa = {
      type: 'service_account',
      project_id: 'acme-push',
      private_key_id: 'k1',
      private_key: fcmKey,
      client_email: 'h@acme-push.iam.gserviceaccount.com',
    };
    await call('PUT', '/v1/email-transport', { body: email });
    await call('PUT', '/v1/push-transport/apns', { body: apnsBody });
    await call('PUT', '/v1/push-transport/fcm', { body: { service_account: sa } });
    await call('PUT', '/v1/push-transport/expo', { body: { access_token: EXPO_TOKEN } });
    await call('PUT', '/v1/push-transport/webpush', {
      body: { subject: 'mailto:ops@acme.test', public_key: vapid.publicKey, private_key: vapid.privateKey },
    });
    await setDefaultSmtp(app.runtime, app.runtime.orm.em.fork(), {
      host: '127.0.0.1',
      port: smtp.port,
      secure: false,
      username: 'mailer',
      password: DEFAULT_PASS,
    });

    // Reads.
    await call('GET', '/v1/email-transport');
    await call('GET', '/v1/push-transport');
    await call('GET', '/v1/web-push/public-key', { token: t.contactToken });
    const openapi = await call('GET', '/v1/openapi.json');
    // The documented response shapes have no place for a secret.
    const schemas = openapi.body.components.schemas;
    expect(Object.keys(schemas.EmailTransportResponse.properties)).not.toContain('password');
    expect(Object.keys(schemas.PushTransportResponse.properties).sort()).toEqual([
      'credentials_unreadable',
      'provider',
      'settings',
      'updated_at',
    ]);

    // Test sends that work, and ones that fail at the provider.
    expect((await call('POST', '/v1/email-transport/test', { body: { to: 'ops@example.test' } })).body.ok).toBe(true);
    expect((await call('POST', '/v1/push-transport/apns/test', { body: { token: 'c'.repeat(64) } })).body.ok).toBe(
      true,
    );
    expect((await call('POST', '/v1/push-transport/fcm/test', { body: { token: 'fcm-1' } })).body.ok).toBe(true);
    expect(
      (await call('POST', '/v1/push-transport/expo/test', { body: { token: 'ExponentPushToken[s]' } })).body.ok,
    ).toBe(true);
    const sub = await push.subscribe(vapid.publicKey);
    expect(
      (
        await call('POST', '/v1/push-transport/webpush/test', {
          body: { subscription: { endpoint: sub.endpoint, keys: sub.keys } },
        })
      ).body.ok,
    ).toBe(true);
    expect((await call('POST', '/v1/push-transport/apns/test', { body: { token: 'nothex' } })).body.ok).toBe(false);
    fcm.deadTokens.add('fcm-dead');
    expect((await call('POST', '/v1/push-transport/fcm/test', { body: { token: 'fcm-dead' } })).body.ok).toBe(false);

    // A wrong SMTP password: the server's refusal is reported, the password is not.
    await call('PUT', '/v1/email-transport', { body: { ...email, password: `${SMTP_PASS}-wrong` } });
    const refused = await call('POST', '/v1/email-transport/test', { body: { to: 'ops@example.test' } });
    expect(refused.body.ok).toBe(false);
    await call('PUT', '/v1/email-transport', { body: email });

    // Malformed requests that carry secrets.
    await call('PUT', '/v1/email-transport', { body: { ...email, port: 'x' } });
    await call('PUT', '/v1/push-transport/apns', { body: { ...apnsBody, team_id: 'bad' } });
    await call('PUT', '/v1/push-transport/apns', { body: { ...apnsBody, private_key: `${apnsKey}garbage` } });
    await call('PUT', '/v1/push-transport/fcm', { body: { service_account: { ...sa, project_id: 'BAD PROJECT' } } });
    await call('PUT', '/v1/push-transport/webpush', { body: { subject: 'nope', private_key: vapid.privateKey } });
    await call('PUT', '/v1/email-transport', { rawBody: `{"password": "${SMTP_PASS}"` });

    // Sends through the delivery contract.
    const em = app.runtime.orm.em.fork();
    expect(
      (await sendTenantEmail(app.runtime, em, t.tenantId, { to: 'a@example.test', subject: 's', html: 'h', text: 'h' }))
        .status,
    ).toBe('sent');
    expect(
      (
        await sendPush(
          app.runtime,
          em,
          t.tenantId,
          { provider: 'expo', token: 'ExponentPushToken[z]' },
          { title: 't', body: 'b' },
        )
      ).status,
    ).toBe('sent');

    expect(transcript.length).toBeGreaterThan(20);
    expect(app.logs.length).toBeGreaterThan(20);
    const everything = [...transcript, ...app.logs].join('\n');
    for (const secret of SECRETS)
      expect(everything.includes(secret), `secret leaked: ${secret.slice(0, 6)}...`).toBe(false);
    // The peers did receive what they needed: the scan is not vacuous.
    expect(smtp.messages.some((m) => m.user === 'mailer')).toBe(true);
    expect(expo.received.length).toBeGreaterThan(0);
  });
});
