// The tenant's email transport: GET/PUT/DELETE /v1/email-transport, POST /v1/email-transport/test
// against a real SMTP server, and sendTenantEmail (the delivery contract): own transport, install
// default, no transport, brand sender, retryable and permanent failures.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer.ts';
import { createTenantFixture, type TenantFixture } from '../../support/fixtures.ts';
import { sendTenantEmail } from '../../../server/channels/email/transport.ts';
import { setDefaultSmtp, removeDefaultSmtp } from '../../../server/channels/email/email-transport.ts';
import { queryOne } from '../../../server/base/db/sql.ts';
import { newId } from '../../../server/base/ids.ts';

let app: TestApp;
let smtp: SmtpPeer;
let a: TenantFixture;
let b: TenantFixture;
/** Further SMTP servers some tests start: closed after the app, as `smtp` is. */
const peers: SmtpPeer[] = [];
const SMTP_USER = 'acme-mailer';
const SMTP_PASS = 'smtp-pass-4f1c9e7b';

const transport = () => ({
  host: '127.0.0.1',
  port: smtp.port,
  secure: false,
  username: SMTP_USER,
  password: SMTP_PASS,
  from_email: 'noreply@acme.test',
  from_name: 'Acme Alerts',
});

/** The install's default SMTP: the same server, as the operator's own account. */
const defaultSmtp = () => ({
  host: '127.0.0.1',
  port: smtp.port,
  secure: false,
  username: SMTP_USER,
  password: SMTP_PASS,
});

beforeAll(async () => {
  app = await startTestApp();
  smtp = await startSmtpPeer({ auth: { user: SMTP_USER, pass: SMTP_PASS }, rejectRecipients: ['bounce@example.test'] });
  a = await createTenantFixture(app, 'Acme');
  b = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  // The app first: its pooled SMTP connections must close before the server can.
  await app?.close();
  await smtp?.close();
  for (const peer of peers) await peer.close();
});

describe('PUT /v1/email-transport', () => {
  it('stores the transport and answers it without the password', async () => {
    const res = await app.request('PUT', '/v1/email-transport', { token: a.serviceKey, body: transport() });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      configured: true,
      host: '127.0.0.1',
      port: smtp.port,
      secure: false,
      username: SMTP_USER,
      from_email: 'noreply@acme.test',
      from_name: 'Acme Alerts',
      credentials_unreadable: false,
    });
    expect(res.text).not.toContain(SMTP_PASS);
  });

  it('encrypts the password at rest, bound to the tenant', async () => {
    const row = await queryOne<{ password_ciphertext: string }>(
      app.runtime.orm.em.fork(),
      `SELECT password_ciphertext FROM email_transports WHERE tenant_id = $1`,
      [a.tenantId],
    );
    expect(row!.password_ciphertext).toMatch(/^hv1\.test1\./);
    expect(row!.password_ciphertext).not.toContain(SMTP_PASS);
    expect(app.runtime.keyRing.decrypt(row!.password_ciphertext, `email_transports/${a.tenantId}/password`)).toBe(
      SMTP_PASS,
    );
    expect(() =>
      app.runtime.keyRing.decrypt(row!.password_ciphertext, `email_transports/${b.tenantId}/password`),
    ).toThrow();
  });

  it('keeps the stored password when a replacement omits it', async () => {
    const { password: _omit, ...withoutPassword } = transport();
    const res = await app.request('PUT', '/v1/email-transport', {
      token: a.ownerToken,
      body: { ...withoutPassword, from_name: 'Acme Ops' },
    });
    expect(res.status).toBe(200);
    expect(res.body.from_name).toBe('Acme Ops');
    const test = await app.request('POST', '/v1/email-transport/test', {
      token: a.serviceKey,
      body: { to: 'ops@example.test' },
    });
    expect(test.body.ok).toBe(true);
  });

  it('refuses to keep the stored password for another server: moving host, port, TLS or username needs it again', async () => {
    const { password: _omit, ...withoutPassword } = transport();
    for (const moved of [
      { host: 'localhost' },
      { port: smtp.port + 1 },
      { secure: true },
      { username: 'someone-else' },
    ]) {
      const res = await app.request('PUT', '/v1/email-transport', {
        token: a.serviceKey,
        body: { ...withoutPassword, ...moved },
      });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'password']);
    }
    // Unchanged: still the original server.
    expect((await app.request('GET', '/v1/email-transport', { token: a.serviceKey })).body).toMatchObject({
      host: '127.0.0.1',
      port: smtp.port,
    });
    const withPassword = await app.request('PUT', '/v1/email-transport', {
      token: a.serviceKey,
      body: { ...transport(), host: 'localhost' },
    });
    expect(withPassword.status).toBe(200);
    expect(
      (
        await app.request('PUT', '/v1/email-transport', {
          token: a.serviceKey,
          body: { ...transport(), from_name: 'Acme Ops' },
        })
      ).status,
    ).toBe(200);
  });

  it('answers 422 HTTPValidationError for malformed settings', async () => {
    for (const body of [
      { ...transport(), port: 70000 },
      { ...transport(), from_email: 'not-an-email' },
      { ...transport(), host: '' },
      { ...transport(), secure: 'yes' },
    ]) {
      const res = await app.request('PUT', '/v1/email-transport', { token: a.serviceKey, body });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc[0]).toBe('body');
    }
    const raw = await app.request('PUT', '/v1/email-transport', { token: a.serviceKey, rawBody: '{"host":' });
    expect(raw.status).toBe(422);
  });

  it('answers 401 without a credential and 403 for a contact token', async () => {
    expect((await app.request('PUT', '/v1/email-transport', { body: transport() })).status).toBe(401);
    const contact = await app.request('PUT', '/v1/email-transport', { token: a.contactToken, body: transport() });
    expect(contact.status).toBe(403);
    expect(contact.body.code).toBe('wrong_credential_kind');
  });
});

describe('GET /v1/email-transport', () => {
  it('answers the tenant transport to a service key and a console admin', async () => {
    for (const token of [a.serviceKey, a.ownerToken]) {
      const res = await app.request('GET', '/v1/email-transport', { token });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ configured: true, host: '127.0.0.1', credentials_unreadable: false });
      expect(res.body).not.toHaveProperty('password');
    }
  });

  it("answers only {configured: false} for a tenant without one, never another tenant's transport", async () => {
    const res = await app.request('GET', '/v1/email-transport', { token: b.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ configured: false, install_default: null });
  });

  it("names the install's default SMTP that a tenant without one sends through: host and port, no credentials", async () => {
    const em = app.runtime.orm.em.fork();
    await setDefaultSmtp(app.runtime, em, { ...defaultSmtp(), from: 'Herald <herald@install.test>' });
    try {
      const res = await app.request('GET', '/v1/email-transport', { token: b.serviceKey });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        configured: false,
        install_default: {
          host: '127.0.0.1',
          port: smtp.port,
          secure: false,
          from: 'Herald <herald@install.test>',
          credentials_unreadable: false,
        },
      });
      expect(res.text).not.toContain(SMTP_USER);
      expect(res.text).not.toContain(SMTP_PASS);
    } finally {
      await removeDefaultSmtp(em);
    }
  });

  it('answers 401, and 403 for a contact token or a user of another tenant', async () => {
    expect((await app.request('GET', '/v1/email-transport')).status).toBe(401);
    expect((await app.request('GET', '/v1/email-transport', { token: 'sk_not_a_real_key' })).status).toBe(401);
    expect((await app.request('GET', '/v1/email-transport', { token: a.contactToken })).status).toBe(403);
    const stranger = app.runtime.tokens.sign('access', b.ownerId, a.tenantId, 3600, app.runtime.clock.now());
    expect((await app.request('GET', '/v1/email-transport', { token: stranger })).status).toBe(403);
  });
});

describe('POST /v1/email-transport/test', () => {
  it('sends through the tenant transport (authenticated) and answers the message id', async () => {
    const res = await app.request('POST', '/v1/email-transport/test', {
      token: a.serviceKey,
      body: { to: 'Ops@Example.test' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, message_id: expect.any(String), transport: 'tenant' });
    const mail = await smtp.waitFor((m) => m.parsed.messageId === res.body.message_id);
    expect(mail.user).toBe(SMTP_USER);
    expect(mail.secure).toBe(true); // upgraded with STARTTLS before authenticating
    expect(mail.envelope.to).toEqual(['ops@example.test']);
    expect(mail.parsed.from?.value[0]).toMatchObject({ address: 'noreply@acme.test', name: 'Acme Ops' });
  });

  it("answers ok: false with the server's error when the SMTP server refuses", async () => {
    const res = await app.request('POST', '/v1/email-transport/test', {
      token: a.serviceKey,
      body: { to: 'bounce@example.test' },
    });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(false);
    expect(res.body.error).toMatch(/Mailbox unavailable|rejected/);
  });

  it('never sends the password of an authenticating transport unencrypted: no STARTTLS offered, no AUTH and no mail', async () => {
    // A server that does not offer STARTTLS, as an attacker stripping the offer from the EHLO reply would make it look.
    const plain = await startSmtpPeer({ auth: { user: SMTP_USER, pass: SMTP_PASS }, starttls: false });
    peers.push(plain);
    const t = await createTenantFixture(app, 'Plaintext');
    const put = await app.request('PUT', '/v1/email-transport', {
      token: t.serviceKey,
      body: { ...transport(), port: plain.port },
    });
    expect(put.status).toBe(200);
    const res = await app.request('POST', '/v1/email-transport/test', {
      token: t.serviceKey,
      body: { to: 'ops@example.test' },
    });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(false);
    expect(res.body.error).toMatch(/STARTTLS/i);
    expect(res.body.error).not.toContain(SMTP_PASS);
    expect(plain.authAttempts).toBe(0);
    expect(plain.messages).toHaveLength(0);
  });

  it('still sends through a transport without credentials when the server offers no STARTTLS (a local relay)', async () => {
    const relay = await startSmtpPeer({ starttls: false });
    peers.push(relay);
    const t = await createTenantFixture(app, 'Relay');
    const { username: _u, password: _p, ...open } = transport();
    const put = await app.request('PUT', '/v1/email-transport', {
      token: t.serviceKey,
      body: { ...open, port: relay.port },
    });
    expect(put.status).toBe(200);
    const res = await app.request('POST', '/v1/email-transport/test', {
      token: t.serviceKey,
      body: { to: 'ops@example.test' },
    });
    expect(res.body).toEqual({ ok: true, message_id: expect.any(String), transport: 'tenant' });
    const mail = await relay.waitFor((m) => m.parsed.messageId === res.body.message_id);
    expect(mail.secure).toBe(false);
    expect(mail.user).toBeUndefined();
  });

  it('answers 422 not_configured for a tenant without a transport on an install without a default SMTP', async () => {
    const res = await app.request('POST', '/v1/email-transport/test', {
      token: b.serviceKey,
      body: { to: 'ops@example.test' },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('not_configured');
  });

  it("sends through the install's default SMTP for a tenant without a transport, as its email goes", async () => {
    const em = app.runtime.orm.em.fork();
    await setDefaultSmtp(app.runtime, em, { ...defaultSmtp(), from: 'Herald <herald@install.test>' });
    try {
      const res = await app.request('POST', '/v1/email-transport/test', {
        token: b.serviceKey,
        body: { to: 'via-default@example.test' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ok: true, message_id: expect.any(String), transport: 'install_default' });
      const mail = await smtp.waitFor((m) => m.parsed.messageId === res.body.message_id);
      expect(mail.user).toBe(SMTP_USER);
      expect(mail.parsed.from?.value[0]).toMatchObject({ address: 'herald@install.test' });
    } finally {
      await removeDefaultSmtp(em);
    }
  });

  it('answers 422 for a malformed address, 401 and 403', async () => {
    const bad = await app.request('POST', '/v1/email-transport/test', { token: a.serviceKey, body: { to: 'nope' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'to']);
    expect((await app.request('POST', '/v1/email-transport/test', { body: { to: 'ops@example.test' } })).status).toBe(
      401,
    );
    expect(
      (
        await app.request('POST', '/v1/email-transport/test', {
          token: a.contactToken,
          body: { to: 'ops@example.test' },
        })
      ).status,
    ).toBe(403);
  });
});

describe('sendTenantEmail', () => {
  const mail = {
    to: 'ann@example.test',
    subject: 'Shipped',
    html: '<p>Your order shipped</p>',
    text: 'Your order shipped',
  };

  it("uses the tenant's transport and its From, or the brand's sender when given", async () => {
    const em = app.runtime.orm.em.fork();
    const own = await sendTenantEmail(app.runtime, em, a.tenantId, mail);
    expect(own).toEqual({ status: 'sent', messageId: expect.any(String) });
    const first = await smtp.waitFor((m) => m.parsed.messageId === (own as { messageId: string }).messageId);
    expect(first.parsed.from?.value[0]?.address).toBe('noreply@acme.test');
    const branded = await sendTenantEmail(app.runtime, em, a.tenantId, {
      ...mail,
      fromEmail: 'hello@brand.test',
      fromName: 'Brand "Quoted"',
      replyTo: 'support@brand.test',
    });
    expect(branded.status).toBe('sent');
    const second = await smtp.waitFor((m) => m.parsed.messageId === (branded as { messageId: string }).messageId);
    expect(second.parsed.from?.value[0]).toMatchObject({ address: 'hello@brand.test', name: 'Brand "Quoted"' });
    expect(second.parsed.replyTo?.value[0]?.address).toBe('support@brand.test');
    expect(second.parsed.text?.trim()).toBe('Your order shipped');
  });

  it('falls back to the install default SMTP, else skips with no_transport', async () => {
    const em = app.runtime.orm.em.fork();
    expect(await sendTenantEmail(app.runtime, em, b.tenantId, mail)).toEqual({
      status: 'skipped',
      reason: 'no_transport',
    });
    await setDefaultSmtp(app.runtime, em, { ...defaultSmtp(), from: 'Herald <herald@install.test>' });
    const sent = await sendTenantEmail(app.runtime, em, b.tenantId, mail);
    expect(sent.status).toBe('sent');
    const received = await smtp.waitFor((m) => m.parsed.messageId === (sent as { messageId: string }).messageId);
    expect(received.parsed.from?.value[0]).toMatchObject({ address: 'herald@install.test', name: 'Herald' });
    // On the shared install SMTP a brand cannot claim an address outside its verified sender domains:
    // the mail comes from the install, with the brand's address as Reply-To.
    const branded = await sendTenantEmail(app.runtime, em, b.tenantId, {
      ...mail,
      fromEmail: 'ceo@other-company.test',
      fromName: 'Brand',
      sign: async () => null,
    });
    const spoofAttempt = await smtp.waitFor((m) => m.parsed.messageId === (branded as { messageId: string }).messageId);
    expect(spoofAttempt.parsed.from?.value[0]).toMatchObject({ address: 'herald@install.test', name: 'Brand' });
    expect(spoofAttempt.parsed.replyTo?.value[0]?.address).toBe('ceo@other-company.test');
    await removeDefaultSmtp(em);
  });

  it('reports a 5xx rejection as not retryable and a refused connection as retryable', async () => {
    const em = app.runtime.orm.em.fork();
    const rejected = await sendTenantEmail(app.runtime, em, a.tenantId, { ...mail, to: 'bounce@example.test' });
    expect(rejected).toMatchObject({ status: 'failed', retryable: false });
    const tenant = await createTenantFixture(app, 'Down');
    const put = await app.request('PUT', '/v1/email-transport', {
      token: tenant.serviceKey,
      body: { ...transport(), port: 1 },
    });
    expect(put.status).toBe(200);
    const refused = await sendTenantEmail(app.runtime, em, tenant.tenantId, mail);
    expect(refused).toMatchObject({ status: 'failed', retryable: true });
    expect(JSON.stringify(refused)).not.toContain(SMTP_PASS);
  });

  it('skips an unknown tenant with no_transport', async () => {
    expect(await sendTenantEmail(app.runtime, app.runtime.orm.em.fork(), newId(), mail)).toEqual({
      status: 'skipped',
      reason: 'no_transport',
    });
  });
});

describe('DELETE /v1/email-transport', () => {
  it('answers 401 and 403 for the wrong credential', async () => {
    expect((await app.request('DELETE', '/v1/email-transport')).status).toBe(401);
    expect((await app.request('DELETE', '/v1/email-transport', { token: a.contactToken })).status).toBe(403);
  });

  it("removes only the caller's transport and answers 204 (also when there is none)", async () => {
    const other = await createTenantFixture(app, 'Initech');
    await app.request('PUT', '/v1/email-transport', { token: other.serviceKey, body: transport() });
    const res = await app.request('DELETE', '/v1/email-transport', { token: a.serviceKey });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await app.request('GET', '/v1/email-transport', { token: a.serviceKey })).body).toEqual({
      configured: false,
      install_default: null,
    });
    expect((await app.request('GET', '/v1/email-transport', { token: other.serviceKey })).body.configured).toBe(true);
    expect((await app.request('DELETE', '/v1/email-transport', { token: a.serviceKey })).status).toBe(204);
  });
});
