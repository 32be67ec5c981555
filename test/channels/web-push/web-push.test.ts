// Web push: the VAPID key pair of the webpush transport, GET /v1/web-push/public-key, sends decrypted by
// an independent push service (web-push-testing), dead subscriptions, and the RFC 8291 Appendix A vector.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createECDH, createDecipheriv, hkdfSync } from 'node:crypto';
import webpush from 'web-push';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { createTenantFixture, type TenantFixture } from '../../support/fixtures.ts';
import { startWebPushService, type WebPushService } from '../../support/web-push-service.ts';
import { sendPush } from '../../../server/channels/push/providers.ts';
import { vapidAuthorization, vapidPublicKeyOf } from '../../../server/channels/web-push/provider.ts';
import { encryptWebPushPayload } from '../../../server/channels/web-push/encryption.ts';

let app: TestApp;
let service: WebPushService;
let a: TenantFixture;
let b: TenantFixture;

beforeAll(async () => {
  service = await startWebPushService();
  app = await startTestApp();
  a = await createTenantFixture(app, 'Acme');
  b = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await app?.close();
  await service?.close();
});

describe('GET /v1/web-push/public-key', () => {
  it('answers 404 (never an empty string) while the tenant has no webpush transport', async () => {
    const res = await app.request('GET', '/v1/web-push/public-key', { token: a.contactToken });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it('answers the generated VAPID public key to a contact token, a service key and a console user', async () => {
    const put = await app.request('PUT', '/v1/push-transport/webpush', {
      token: a.serviceKey,
      body: { subject: 'mailto:ops@acme.test' },
    });
    expect(put.status).toBe(200);
    const publicKey = put.body.settings.public_key as string;
    expect(Buffer.from(publicKey, 'base64url')).toHaveLength(65);
    expect(put.body.settings).toEqual({ subject: 'mailto:ops@acme.test', public_key: publicKey });
    for (const token of [a.contactToken, a.serviceKey, a.ownerToken]) {
      const res = await app.request('GET', '/v1/web-push/public-key', { token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ public_key: publicKey });
    }
  });

  it("keeps the key pair when only the subject changes, and never answers another tenant's key", async () => {
    const before = (await app.request('GET', '/v1/web-push/public-key', { token: a.serviceKey })).body.public_key;
    const put = await app.request('PUT', '/v1/push-transport/webpush', {
      token: a.serviceKey,
      body: { subject: 'https://acme.test/contact' },
    });
    expect(put.body.settings.public_key).toBe(before);
    expect((await app.request('GET', '/v1/web-push/public-key', { token: b.contactToken })).status).toBe(404);
  });

  it('accepts a given key pair and checks it matches', async () => {
    const keys = webpush.generateVAPIDKeys();
    const ok = await app.request('PUT', '/v1/push-transport/webpush', {
      token: b.serviceKey,
      body: { subject: 'mailto:ops@globex.test', public_key: keys.publicKey, private_key: keys.privateKey },
    });
    expect(ok.status).toBe(200);
    expect(ok.text).not.toContain(keys.privateKey);
    expect((await app.request('GET', '/v1/web-push/public-key', { token: b.contactToken })).body.public_key).toBe(
      keys.publicKey,
    );
    const other = webpush.generateVAPIDKeys();
    const mismatch = await app.request('PUT', '/v1/push-transport/webpush', {
      token: b.serviceKey,
      body: { subject: 'mailto:ops@globex.test', public_key: other.publicKey, private_key: keys.privateKey },
    });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.detail[0].loc).toEqual(['body', 'public_key']);
    expect(vapidPublicKeyOf(keys.privateKey)).toBe(keys.publicKey);
  });

  it('answers 401 without a credential or with a bad one, and 403 for a user outside the tenant', async () => {
    expect((await app.request('GET', '/v1/web-push/public-key')).status).toBe(401);
    expect((await app.request('GET', '/v1/web-push/public-key', { token: 'garbage' })).status).toBe(401);
    const stranger = app.runtime.tokens.sign('access', b.ownerId, a.tenantId, 3600, app.runtime.clock.now());
    expect((await app.request('GET', '/v1/web-push/public-key', { token: stranger })).status).toBe(403);
  });
});

describe('web push delivery through an independent push service', () => {
  it('a test send arrives and the service decrypts it (RFC 8291 aes128gcm, VAPID checked)', async () => {
    const publicKey = (await app.request('GET', '/v1/web-push/public-key', { token: a.contactToken })).body.public_key;
    const sub = await service.subscribe(publicKey);
    const res = await app.request('POST', '/v1/push-transport/webpush/test', {
      token: a.serviceKey,
      body: { subscription: { endpoint: sub.endpoint, keys: sub.keys }, title: 'Hello', body: 'From Herald' },
    });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    const messages = await service.messages(sub.clientHash);
    expect(messages).toHaveLength(1);
    expect(JSON.parse(messages[0]!)).toEqual({
      title: 'Hello',
      body: 'From Herald',
      data: { herald_test: true },
      action_url: null,
    });
  });

  it('sendPush delivers the message and reports an expired subscription as dead', async () => {
    const publicKey = (await app.request('GET', '/v1/web-push/public-key', { token: a.contactToken })).body.public_key;
    const sub = await service.subscribe(publicKey);
    const destination = { provider: 'webpush' as const, subscription: { endpoint: sub.endpoint, keys: sub.keys } };
    const message = {
      title: 'Order shipped',
      body: 'On its way',
      data: { order: 7 },
      action_url: 'https://acme.test/o/7',
    };
    const em = app.runtime.orm.em.fork();
    expect(await sendPush(app.runtime, em, a.tenantId, destination, message)).toMatchObject({ status: 'sent' });
    expect(JSON.parse((await service.messages(sub.clientHash))[0]!)).toEqual({ ...message });
    await service.expire(sub.clientHash);
    expect(await sendPush(app.runtime, em, a.tenantId, destination, message)).toMatchObject({
      status: 'dead',
      error: expect.stringContaining('410'),
    });
  });

  it('the push service refuses a message signed with another VAPID key (our VAPID header is really checked)', async () => {
    const sub = await service.subscribe(webpush.generateVAPIDKeys().publicKey);
    const outcome = await sendPush(
      app.runtime,
      app.runtime.orm.em.fork(),
      a.tenantId,
      { provider: 'webpush', subscription: { endpoint: sub.endpoint, keys: sub.keys } },
      { title: 't', body: 'b' },
    );
    expect(outcome).toMatchObject({ status: 'failed', retryable: false });
    expect(await service.messages(sub.clientHash)).toEqual([]);
  });

  it('signs one VAPID token per push service and key pair, reused until an hour before it expires (12 h)', () => {
    const keys = webpush.generateVAPIDKeys();
    const creds = { subject: 'mailto:ops@acme.test', public_key: keys.publicKey, private_key: keys.privateKey };
    // web-push refuses an expiry more than 24 h past the wall clock: the times start now.
    const t0 = Math.floor(Date.now() / 1000) * 1000;
    const claims = (authorization: string) =>
      JSON.parse(Buffer.from(/^vapid t=([^,]+),/.exec(authorization)![1]!.split('.')[1]!, 'base64url').toString());
    const first = vapidAuthorization(creds, 'https://push.one.test', t0);
    expect(claims(first)).toEqual({
      aud: 'https://push.one.test',
      exp: t0 / 1000 + 12 * 3600,
      sub: 'mailto:ops@acme.test',
    });
    expect(first).toContain(`k=${keys.publicKey}`);
    expect(vapidAuthorization(creds, 'https://push.one.test', t0 + 10 * 3600_000)).toBe(first);
    // Another service, another key pair: their own tokens.
    expect(claims(vapidAuthorization(creds, 'https://push.two.test', t0)).aud).toBe('https://push.two.test');
    const other = webpush.generateVAPIDKeys();
    expect(
      vapidAuthorization(
        { ...creds, public_key: other.publicKey, private_key: other.privateKey },
        'https://push.one.test',
        t0,
      ),
    ).toContain(`k=${other.publicKey}`);
    // Within the last hour of its life a token is replaced.
    const renewed = vapidAuthorization(creds, 'https://push.one.test', t0 + 11.5 * 3600_000);
    expect(renewed).not.toBe(first);
    expect(claims(renewed).exp).toBe(t0 / 1000 + 11.5 * 3600 + 12 * 3600);
  });

  it('answers 422 for a test without a subscription or with a non-https endpoint', async () => {
    const missing = await app.request('POST', '/v1/push-transport/webpush/test', {
      token: a.serviceKey,
      body: { token: 'x' },
    });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0].loc).toEqual(['body', 'subscription']);
    const http = await app.request('POST', '/v1/push-transport/webpush/test', {
      token: a.serviceKey,
      body: {
        subscription: {
          endpoint: 'http://169.254.169.254/latest',
          keys: { p256dh: 'B'.repeat(87), auth: 'A'.repeat(22) },
        },
      },
    });
    expect(http.status).toBe(422);
  });

  it('sendPush never calls a non-https endpoint (the subscription is marked dead)', async () => {
    const outcome = await sendPush(
      app.runtime,
      app.runtime.orm.em.fork(),
      a.tenantId,
      {
        provider: 'webpush',
        subscription: { endpoint: 'http://127.0.0.1:9/x', keys: { p256dh: 'B'.repeat(87), auth: 'A'.repeat(22) } },
      },
      { title: 't', body: 'b' },
    );
    expect(outcome).toEqual({ status: 'dead', error: 'the subscription endpoint is not https' });
  });
});

// RFC 8291 Appendix A. The same plaintext, keys and salt must give exactly the RFC's message, and a
// message produced by our path (encryptWebPushPayload, as sendWebPush calls it) must decrypt with an
// independent RFC 8291 decryption written here with node:crypto (ECDH + HKDF + AES-128-GCM).
describe('RFC 8291 Appendix A test vector', () => {
  const v = {
    plaintext: 'When I grow up, I want to be a watermelon',
    asPrivate: 'yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw',
    uaPrivate: 'q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94',
    uaPublic: 'BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4',
    authSecret: 'BTBZMqHH6r4Tts7J_aSIgg',
    salt: 'DGv6ra1nlYgDCS1FRnbzlw',
    message:
      'DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN',
  };

  function rfc8291Decrypt(message: Buffer, uaPrivate: Buffer, authSecret: Buffer): string {
    const salt = message.subarray(0, 16);
    const rs = message.readUInt32BE(16);
    const idlen = message[20]!;
    const asPublic = message.subarray(21, 21 + idlen);
    const ciphertext = message.subarray(21 + idlen);
    expect(ciphertext.length).toBeLessThanOrEqual(rs);
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(uaPrivate);
    const uaPublic = ecdh.getPublicKey();
    const shared = ecdh.computeSecret(asPublic);
    const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic]);
    const ikm = Buffer.from(hkdfSync('sha256', shared, authSecret, keyInfo, 32));
    const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
    const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
    const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
    decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
    const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
    let end = padded.length - 1;
    while (end >= 0 && padded[end] === 0) end--;
    expect(padded[end]).toBe(2); // last-record delimiter
    return padded.subarray(0, end).toString('utf8');
  }

  const b64 = (s: string) => Buffer.from(s, 'base64url');

  it('the independent decryption recovers the RFC plaintext from the RFC message', () => {
    expect(rfc8291Decrypt(b64(v.message), b64(v.uaPrivate), b64(v.authSecret))).toBe(v.plaintext);
  });

  it("our encryption, given the RFC's keys and salt, produces exactly the RFC message", () => {
    const sender = createECDH('prime256v1');
    sender.setPrivateKey(b64(v.asPrivate));
    const out = encryptWebPushPayload({ p256dh: v.uaPublic, auth: v.authSecret }, v.plaintext, {
      salt: b64(v.salt),
      senderKey: sender,
    });
    expect(out.toString('base64url')).toBe(v.message);
  });

  it('what our send path encrypts (a new key pair and salt each time) decrypts with the RFC receiver keys', () => {
    const first = encryptWebPushPayload({ p256dh: v.uaPublic, auth: v.authSecret }, v.plaintext);
    const second = encryptWebPushPayload({ p256dh: v.uaPublic, auth: v.authSecret }, v.plaintext);
    expect(rfc8291Decrypt(first, b64(v.uaPrivate), b64(v.authSecret))).toBe(v.plaintext);
    expect(rfc8291Decrypt(second, b64(v.uaPrivate), b64(v.authSecret))).toBe(v.plaintext);
    // salt and sender key (the header's first 16 and its 65 octets after the record size) differ
    expect(first.subarray(0, 16).equals(second.subarray(0, 16))).toBe(false);
    expect(first.subarray(21, 86).equals(second.subarray(21, 86))).toBe(false);
  });

  it('a payload longer than one 4096-octet record stays one record (RFC 8291: one record per message)', () => {
    const long = 'x'.repeat(5000);
    const out = encryptWebPushPayload({ p256dh: v.uaPublic, auth: v.authSecret }, long);
    expect(out.readUInt32BE(16)).toBe(long.length + 17);
    expect(rfc8291Decrypt(out, b64(v.uaPrivate), b64(v.authSecret))).toBe(long);
  });

  it('refuses keys a browser would not give: a short key, a point off the curve, a short auth secret', () => {
    expect(() =>
      encryptWebPushPayload({ p256dh: b64(v.uaPublic).subarray(0, 64).toString('base64url'), auth: v.authSecret }, 'x'),
    ).toThrow(/65 octets/);
    const offCurve = Buffer.from(b64(v.uaPublic));
    offCurve[64] = offCurve[64]! ^ 1;
    expect(() => encryptWebPushPayload({ p256dh: offCurve.toString('base64url'), auth: v.authSecret }, 'x')).toThrow();
    expect(() =>
      encryptWebPushPayload({ p256dh: v.uaPublic, auth: b64(v.authSecret).subarray(0, 15).toString('base64url') }, 'x'),
    ).toThrow(/16 octets/);
  });
});
