// A tenant's relay whose STARTTLS certificate Herald cannot accept: the delivery's error and the test
// send name the server, STARTTLS and the setting that trusts a private CA. Real SMTP peers, each
// presenting a real certificate: an expired one (its file trusted, so expiry is the only fault) and a
// self-signed one Herald does not trust.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { eventually } from '../../support/eventually.ts';
import { createTenantFixture } from '../../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer.ts';
import { expiredCertificate, testCertificate, untrustedCertificate } from '../../support/tls.ts';
import { runTempDir } from '../../support/tmp.ts';

let app: TestApp;
let expired: SmtpPeer;
let untrusted: SmtpPeer;

beforeAll(async () => {
  const old = expiredCertificate();
  expired = await startSmtpPeer({ auth: { user: 'relay', pass: 'relay-pass' }, certificate: old });
  untrusted = await startSmtpPeer({ auth: { user: 'relay', pass: 'relay-pass' }, certificate: untrustedCertificate() });
  const caFile = join(runTempDir('herald-smtp-tls-'), 'ca.pem');
  writeFileSync(caFile, testCertificate().cert + old.cert);
  app = await startTestApp({ config: { providers: { caFile } as never } });
});

afterAll(async () => {
  await app?.close();
  await expired?.close();
  await untrusted?.close();
});

describe('a relay whose STARTTLS certificate fails', () => {
  it.each([
    ['expired', () => expired, 'certificate has expired'],
    ['untrusted', () => untrusted, 'self-signed certificate'],
  ])(
    'names the server, STARTTLS and providers.caFile (%s certificate), in the delivery and the test send',
    async (name, peer, reason) => {
      const fx = await createTenantFixture(app, `Tls ${name}`);
      const api = async (method: string, path: string, body?: unknown) => {
        const res = await app.request(method, path, { token: fx.serviceKey, body });
        expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
        return res.body;
      };
      const { port } = peer();
      await api('PUT', '/v1/email-transport', {
        host: '127.0.0.1',
        port,
        secure: false,
        username: 'relay',
        password: 'relay-pass',
        from_email: 'robot@tls.test',
      });
      const expected = `STARTTLS with 127.0.0.1:${port} failed: ${reason} (trust a private CA with providers.caFile)`;
      const test = await api('POST', '/v1/email-transport/test', { to: 'ops@example.test' });
      expect(test).toMatchObject({ ok: false, error: expected });

      await api('POST', '/v1/notification-types', { key: 'tls', channel_defaults: { email: true } });
      await api('POST', '/v1/email-templates', { notification_type_key: 'tls', subject: 'hi', content: '<p>hi</p>' });
      const triggered = await api('POST', '/v1/notifications', {
        type: 'tls',
        recipients: [{ external_id: `tls-${name}`, email: `tls-${name}@example.test` }],
      });
      const delivery = await eventually(
        async () => {
          const view = await api('GET', `/v1/notifications/${triggered.events[0].event_id}`);
          const email = view.deliveries.find((d: { channel: string }) => d.channel === 'email');
          return email?.last_error ? email : false;
        },
        { timeoutMs: 20_000, message: 'the email delivery never recorded an error' },
      );
      expect(delivery.last_error).toBe(expected);
      expect(delivery.last_error).not.toContain('relay-pass');
      expect(peer().messages).toHaveLength(0);
      expect(peer().authAttempts).toBe(0);
    },
  );
});
