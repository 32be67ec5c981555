// Password reset: request (always 202, cooldown, mail only for an account), token check (a boolean that
// hides why), confirm (single use, expiry, weak passwords), and stateless tokens that survive a reset.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { ManualClock } from '../../server/base/clock.ts';
import {
  drainSystemEmails,
  linkTokenOf,
  mailsTo,
  requestAs,
  signUp,
  uniqueEmail,
  waitForMail,
} from '../support/fixtures.ts';

let app: TestApp;
let smtp: SmtpPeer;
const clock = new ManualClock(Date.parse('2026-04-01T08:00:00Z'));
const NEW_PASSWORD = 'a brand new passphrase';

beforeAll(async () => {
  smtp = await startSmtpPeer();
  app = await startTestApp({ clock, config: { smtpUrl: smtp.url, trustedProxies: ['127.0.0.1'] } });
});
afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

async function requestReset(email: string): Promise<string> {
  const before = smtp.messages.length;
  const res = await requestAs(app, 'POST', '/v1/auth/password-reset', { body: { email } });
  expect(res.status).toBe(202);
  return linkTokenOf(await waitForMail(smtp, email, /Reset your password/, before));
}

describe('POST /v1/auth/password-reset', () => {
  it('answers 202 {} and mails a reset link to an existing account', async () => {
    const user = await signUp(app);
    const token = await requestReset(user.email);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const mail = mailsTo(smtp, user.email, /Reset your password/)[0]!;
    expect(mail.parsed.text).toContain(`/reset-password?token=${token}`);
  });

  it('answers the same 202 body for a missing account and sends nothing', async () => {
    const user = await signUp(app);
    const missing = uniqueEmail('nobody');
    const a = await requestAs(app, 'POST', '/v1/auth/password-reset', { body: { email: missing } });
    const b = await requestAs(app, 'POST', '/v1/auth/password-reset', { body: { email: user.email } });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(a.text).toBe(b.text);
    expect(a.headers.get('content-type')).toBe(b.headers.get('content-type'));
    await drainSystemEmails(app);
    expect(mailsTo(smtp, missing)).toHaveLength(0);
    expect(mailsTo(smtp, user.email, /Reset/)).toHaveLength(1);
  });

  it('is a silent no-op inside the 60 s cooldown; after it a new link replaces the old one', async () => {
    const user = await signUp(app);
    const first = await requestReset(user.email);
    const again = await requestAs(app, 'POST', '/v1/auth/password-reset', { body: { email: user.email } });
    expect(again.status).toBe(202);
    await drainSystemEmails(app);
    expect(mailsTo(smtp, user.email, /Reset/)).toHaveLength(1);
    clock.advance(61_000);
    const second = await requestReset(user.email);
    expect(second).not.toBe(first);
    expect((await requestAs(app, 'GET', `/v1/auth/password-reset/${first}`)).body).toEqual({ valid: false });
    expect((await requestAs(app, 'GET', `/v1/auth/password-reset/${second}`)).body).toEqual({ valid: true });
  });

  it('answers 422 for a malformed email', async () => {
    const res = await requestAs(app, 'POST', '/v1/auth/password-reset', { body: { email: 'x@' } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'email']);
  });
});

describe('GET /v1/auth/password-reset/{token}', () => {
  it('answers {valid: true} for a live link and {valid: false} alike for unknown, expired and used ones', async () => {
    const user = await signUp(app);
    const token = await requestReset(user.email);
    expect((await requestAs(app, 'GET', `/v1/auth/password-reset/${token}`)).body).toEqual({ valid: true });
    const unknown = await requestAs(app, 'GET', `/v1/auth/password-reset/${'B'.repeat(43)}`);
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual({ valid: false });
    clock.advance(3600 * 1000 + 1000);
    const expired = await requestAs(app, 'GET', `/v1/auth/password-reset/${token}`);
    expect(expired.status).toBe(200);
    expect(expired.text).toBe(unknown.text);
  });

  it('answers 422 for a token path that is too long', async () => {
    const res = await requestAs(app, 'GET', `/v1/auth/password-reset/${'x'.repeat(300)}`);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['path', 'token']);
  });
});

describe('POST /v1/auth/password-reset/confirm', () => {
  it('sets the new password once (second use 422); old access tokens stay valid until they expire', async () => {
    const user = await signUp(app);
    const token = await requestReset(user.email);
    const res = await requestAs(app, 'POST', '/v1/auth/password-reset/confirm', {
      body: { token, password: NEW_PASSWORD },
    });
    expect(res.status).toBe(204);
    expect(
      (await requestAs(app, 'POST', '/v1/auth/login', { body: { email: user.email, password: user.password } })).status,
    ).toBe(401);
    expect(
      (await requestAs(app, 'POST', '/v1/auth/login', { body: { email: user.email, password: NEW_PASSWORD } })).status,
    ).toBe(200);
    expect((await app.request('GET', '/v1/auth/tenants', { token: user.token })).status).toBe(200);
    // A used link previews exactly like an unknown one.
    const used = await requestAs(app, 'GET', `/v1/auth/password-reset/${token}`);
    expect(used.status).toBe(200);
    expect(used.body).toEqual({ valid: false });
    const second = await requestAs(app, 'POST', '/v1/auth/password-reset/confirm', {
      body: { token, password: 'another good passphrase' },
    });
    expect(second.status).toBe(422);
    expect(second.body.code).toBe('invalid_link');
  });

  it('answers 422 link_expired after the 1 h lifetime', async () => {
    const user = await signUp(app);
    const token = await requestReset(user.email);
    clock.advance(3600 * 1000 + 1000);
    const res = await requestAs(app, 'POST', '/v1/auth/password-reset/confirm', {
      body: { token, password: NEW_PASSWORD },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('link_expired');
  });

  it('answers 422 weak_password for a password containing the email local part, and keeps the link usable', async () => {
    const user = await signUp(app, { email: `alexandra.${Date.now()}@example.test` });
    const token = await requestReset(user.email);
    const local = user.email.split('@')[0]!;
    const weak = await requestAs(app, 'POST', '/v1/auth/password-reset/confirm', {
      body: { token, password: `${local.toUpperCase()}!2026` },
    });
    expect(weak.status).toBe(422);
    expect(weak.body.code).toBe('weak_password');
    expect(
      (await requestAs(app, 'POST', '/v1/auth/password-reset/confirm', { body: { token, password: NEW_PASSWORD } }))
        .status,
    ).toBe(204);
  });

  it('answers 422 for a too-short password, an unknown token and malformed input', async () => {
    const short = await requestAs(app, 'POST', '/v1/auth/password-reset/confirm', {
      body: { token: 'C'.repeat(43), password: 'short' },
    });
    expect(short.status).toBe(422);
    expect(short.body.detail[0].loc).toEqual(['body', 'password']);
    const unknown = await requestAs(app, 'POST', '/v1/auth/password-reset/confirm', {
      body: { token: 'C'.repeat(43), password: NEW_PASSWORD },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe('invalid_link');
    expect((await requestAs(app, 'POST', '/v1/auth/password-reset/confirm', { body: [] })).status).toBe(422);
  });

  it('a verification link cannot be used as a reset link', async () => {
    const user = await signUp(app);
    const verifyToken = linkTokenOf(await waitForMail(smtp, user.email, /Confirm your email/));
    const res = await requestAs(app, 'POST', '/v1/auth/password-reset/confirm', {
      body: { token: verifyToken, password: NEW_PASSWORD },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('invalid_link');
  });
});
