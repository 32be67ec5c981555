// Sign-up, email verification, resend-verification and login: statuses, the emails a real SMTP server
// receives and the links they carry, link expiry with an injected clock, and anti-enumeration.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { ManualClock } from '../../server/base/clock.ts';
import {
  PASSWORD,
  drainSystemEmails,
  linkTokenOf,
  mailsTo,
  requestAs,
  signUp,
  sql,
  uniqueEmail,
  waitForMail,
} from '../support/fixtures.ts';

let app: TestApp;
let smtp: SmtpPeer;
const clock = new ManualClock(Date.parse('2026-03-01T10:00:00Z'));

beforeAll(async () => {
  smtp = await startSmtpPeer();
  app = await startTestApp({
    clock,
    config: { smtpUrl: smtp.url, trustedProxies: ['127.0.0.1'], publicUrl: 'https://herald.example.test' },
  });
});
afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

const register = (body: unknown) => requestAs(app, 'POST', '/v1/auth/register', { body });

describe('POST /v1/auth/register', () => {
  it('creates an unverified user, their tenant with its default brand, and mails a verification link', async () => {
    const email = uniqueEmail('Reg');
    const res = await register({ email: email.toUpperCase(), password: PASSWORD, tenant_name: '  Acme Ltd  ' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      email: email.toLowerCase(),
      email_verified: false,
      created_at: expect.any(String),
    });
    const mail = await waitForMail(smtp, email.toLowerCase(), /Confirm your email/);
    expect(mail.parsed.text).toContain('https://herald.example.test/verify-email?token=');
    expect(typeof mail.parsed.html === 'string' && mail.parsed.html).toContain('Confirm email address');

    const login = await requestAs(app, 'POST', '/v1/auth/login', { body: { email, password: PASSWORD } });
    const tenants = await app.request('GET', '/v1/auth/tenants', { token: login.body.access_token });
    expect(tenants.body).toEqual([
      {
        id: login.body.tenant_id,
        name: 'Acme Ltd',
        archived: false,
        role: 'owner',
        is_default: true,
        require_mfa: false,
        cors_origins: [],
        created_at: expect.any(String),
      },
    ]);
    const brand = await sql(app, `SELECT key, "values", is_default FROM brands WHERE tenant_id = $1`, [
      login.body.tenant_id,
    ]);
    expect(brand).toEqual([{ key: 'default', values: { name: 'Acme Ltd' }, is_default: true }]);
  });

  it('answers 409 email_taken for an address already registered (any case), as ErrorResponse', async () => {
    const email = uniqueEmail();
    expect((await register({ email, password: PASSWORD, tenant_name: 'A' })).status).toBe(201);
    const again = await register({ email: email.toUpperCase(), password: PASSWORD, tenant_name: 'B' });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ detail: expect.any(String), code: 'email_taken' });
  });

  it.each([
    ['a malformed email', { email: 'not-an-email', password: PASSWORD, tenant_name: 'A' }, 'email'],
    ['a too-short password', { email: 'short@example.test', password: 'short', tenant_name: 'A' }, 'password'],
    ['a blank tenant name', { email: 'blank@example.test', password: PASSWORD, tenant_name: '   ' }, 'tenant_name'],
    [
      'an over-long tenant name',
      { email: 'long@example.test', password: PASSWORD, tenant_name: 'x'.repeat(101) },
      'tenant_name',
    ],
    ['a missing field', { email: 'missing@example.test', password: PASSWORD }, 'tenant_name'],
  ])('answers 422 HTTPValidationError for %s', async (_name, body, field) => {
    const res = await register(body);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', field]);
  });

  it('answers 422 for malformed JSON', async () => {
    const res = await requestAs(app, 'POST', '/v1/auth/register', { rawBody: '{"email":' });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body']);
  });
});

describe('POST /v1/auth/verify-email', () => {
  it('verifies the address with the emailed token; a second use gives 422', async () => {
    const user = await signUp(app);
    const token = linkTokenOf(await waitForMail(smtp, user.email, /Confirm your email/));
    const first = await requestAs(app, 'POST', '/v1/auth/verify-email', { body: { token } });
    expect(first.status).toBe(204);
    expect(first.text).toBe('');
    const second = await requestAs(app, 'POST', '/v1/auth/verify-email', { body: { token } });
    expect(second.status).toBe(422);
    expect(second.body.code).toBe('invalid_link');
    const row = await sql<{ email_verified_at: Date | null }>(
      app,
      `SELECT email_verified_at FROM users WHERE id = $1`,
      [user.userId],
    );
    expect(row[0]!.email_verified_at).not.toBeNull();
  });

  it('two concurrent uses of one link: exactly one succeeds', async () => {
    const user = await signUp(app);
    const token = linkTokenOf(await waitForMail(smtp, user.email, /Confirm your email/));
    const results = await Promise.all(
      [1, 2, 3].map(() => requestAs(app, 'POST', '/v1/auth/verify-email', { body: { token } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([204, 422, 422]);
  });

  it('answers 422 link_expired once the 48 h lifetime has passed', async () => {
    const user = await signUp(app);
    const token = linkTokenOf(await waitForMail(smtp, user.email, /Confirm your email/));
    clock.advance(48 * 3600 * 1000 + 1000);
    const res = await requestAs(app, 'POST', '/v1/auth/verify-email', { body: { token } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('link_expired');
  });

  it('answers 422 invalid_link for an unknown token and HTTPValidationError for a malformed one', async () => {
    const unknown = await requestAs(app, 'POST', '/v1/auth/verify-email', { body: { token: 'A'.repeat(43) } });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toEqual({ detail: expect.any(String), code: 'invalid_link' });
    const malformed = await requestAs(app, 'POST', '/v1/auth/verify-email', { body: { token: 'has spaces!' } });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0].loc).toEqual(['body', 'token']);
  });
});

describe('POST /v1/auth/resend-verification', () => {
  it('mails a fresh link to an unverified user, and the new link verifies', async () => {
    const user = await signUp(app);
    await waitForMail(smtp, user.email, /Confirm your email/);
    clock.advance(61_000); // past the re-request cooldown
    const before = smtp.messages.length;
    const res = await requestAs(app, 'POST', '/v1/auth/resend-verification', { body: { email: user.email } });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({});
    const token = linkTokenOf(await waitForMail(smtp, user.email, /Confirm your email/, before));
    expect((await requestAs(app, 'POST', '/v1/auth/verify-email', { body: { token } })).status).toBe(204);
  });

  it('answers the same 202 for a missing and a verified address and sends them nothing', async () => {
    const user = await signUp(app);
    const token = linkTokenOf(await waitForMail(smtp, user.email, /Confirm your email/));
    await requestAs(app, 'POST', '/v1/auth/verify-email', { body: { token } });
    clock.advance(61_000);
    const missing = uniqueEmail('nobody');
    const a = await requestAs(app, 'POST', '/v1/auth/resend-verification', { body: { email: missing } });
    const b = await requestAs(app, 'POST', '/v1/auth/resend-verification', { body: { email: user.email } });
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.text).toBe(b.text);
    await drainSystemEmails(app);
    expect(mailsTo(smtp, missing)).toHaveLength(0);
    expect(mailsTo(smtp, user.email)).toHaveLength(1);
  });

  it('is a silent no-op inside the cooldown', async () => {
    const user = await signUp(app);
    await waitForMail(smtp, user.email, /Confirm your email/);
    const res = await requestAs(app, 'POST', '/v1/auth/resend-verification', { body: { email: user.email } });
    expect(res.status).toBe(202);
    await drainSystemEmails(app);
    expect(mailsTo(smtp, user.email)).toHaveLength(1);
  });

  it('answers 422 for a malformed email', async () => {
    const res = await requestAs(app, 'POST', '/v1/auth/resend-verification', { body: { email: 'nope' } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'email']);
  });
});

describe('POST /v1/auth/login', () => {
  it('answers an access token for the default tenant, usable on console routes, before verification', async () => {
    const user = await signUp(app);
    const res = await requestAs(app, 'POST', '/v1/auth/login', {
      body: { email: user.email.toUpperCase(), password: PASSWORD },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      access_token: expect.any(String),
      token_type: 'bearer',
      expires_in: 12 * 3600,
      tenant_id: user.tenantId,
    });
    expect((await app.request('GET', '/v1/auth/tenants', { token: res.body.access_token })).status).toBe(200);
  });

  it('answers 401 invalid_credentials with the same body for a wrong password and a missing account', async () => {
    const user = await signUp(app);
    const wrong = await requestAs(app, 'POST', '/v1/auth/login', {
      body: { email: user.email, password: 'wrong password!' },
    });
    const missing = await requestAs(app, 'POST', '/v1/auth/login', {
      body: { email: uniqueEmail('ghost'), password: 'wrong password!' },
    });
    expect(wrong.status).toBe(401);
    expect(missing.status).toBe(401);
    expect(wrong.body).toEqual({ detail: 'Invalid email or password', code: 'invalid_credentials' });
    expect(missing.body).toEqual(wrong.body);
  });

  it('answers 422 for a malformed email or a missing password', async () => {
    expect((await requestAs(app, 'POST', '/v1/auth/login', { body: { email: 'x', password: 'y' } })).status).toBe(422);
    const res = await requestAs(app, 'POST', '/v1/auth/login', { body: { email: 'a@example.test' } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'password']);
  });

  it('expired access tokens are refused with 401', async () => {
    const user = await signUp(app);
    clock.advance(12 * 3600 * 1000 + 1000);
    const res = await app.request('GET', '/v1/auth/tenants', { token: user.token });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('Bearer');
  });

  it('never writes a link token or a password into the logs', async () => {
    const user = await signUp(app);
    const token = linkTokenOf(await waitForMail(smtp, user.email, /Confirm your email/));
    const logs = app.logs.join('\n');
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(PASSWORD);
  });
});
