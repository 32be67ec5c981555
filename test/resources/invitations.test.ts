// Invitations and invitation links: create (email with the accept link, after commit), list pending,
// revoke, preview (only pending and unexpired), accept as a new user, accept as an existing user.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { ManualClock } from '../../server/base/clock.ts';
import {
  addMembership,
  addUser,
  linkTokenOf,
  requestAs,
  signUp,
  uniqueEmail,
  waitForMail,
  type SignedUp,
} from '../support/fixtures.ts';
import { query } from '../../server/base/db/sql.ts';

let app: TestApp;
let smtp: SmtpPeer;
let owner: SignedUp;
const clock = new ManualClock(Date.parse('2026-05-01T09:00:00Z'));
const NO_SUCH_TENANT = '0190f5e2-0000-7000-8000-000000000000';
const NEW_PASSWORD = 'invited person passphrase';

beforeAll(async () => {
  smtp = await startSmtpPeer();
  app = await startTestApp({
    clock,
    config: { smtpUrl: smtp.url, trustedProxies: ['127.0.0.1'], publicUrl: 'https://console.example.test' },
  });
  owner = await signUp(app, { tenantName: 'Inviting Co' });
});
afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

/** The owner's token, signed at the test clock's now (the clock moves past token lifetimes). */
const ot = () => app.runtime.tokens.sign('access', owner.userId, owner.tenantId, 3600, clock.now());
const invitations = (tenantId: string) => `/v1/auth/tenants/${tenantId}/invitations`;

/** Invites an address and returns the invitation and the token from the email it received. */
async function invite(email = uniqueEmail('invitee'), token?: string, tenantId = owner.tenantId) {
  const before = smtp.messages.length;
  const res = await app.request('POST', invitations(tenantId), {
    token: token ?? ot(),
    body: { email, role: 'admin' },
  });
  expect(res.status).toBe(201);
  const mail = await waitForMail(smtp, email, /invited to join/, before);
  return { invitation: res.body, token: linkTokenOf(mail), mail, email };
}

describe('POST /v1/auth/tenants/{tenant_id}/invitations', () => {
  it('creates a pending invitation and emails the accept link (UserInvited)', async () => {
    const { invitation, mail, token, email } = await invite();
    expect(invitation).toEqual({
      id: expect.any(String),
      email,
      role: 'admin',
      status: 'pending',
      expires_at: new Date(clock.now() + 7 * 86400 * 1000).toISOString().replace(/\.\d+Z$/, (m) => m),
      created_at: expect.any(String),
    });
    expect(mail.parsed.subject).toBe('You are invited to join Inviting Co on Herald');
    expect(mail.parsed.text).toContain(`https://console.example.test/invitations/${token}`);
    expect(mail.parsed.text).toContain(owner.email);
    const stored = await query<{ token_hash: Buffer }>(
      app.runtime.orm.em.fork(),
      `SELECT token_hash FROM invitations WHERE id = $1`,
      [invitation.id],
    );
    expect(stored[0]!.token_hash.toString('base64url')).not.toBe(token);
  });

  it('answers 409 for a live pending invite of the address and for an existing member', async () => {
    const { email } = await invite();
    const again = await app.request('POST', invitations(owner.tenantId), {
      token: ot(),
      body: { email: email.toUpperCase(), role: 'admin' },
    });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('invitation_pending');
    const member = await addUser(app, owner.tenantId, 'admin');
    const dup = await app.request('POST', invitations(owner.tenantId), {
      token: ot(),
      body: { email: member.email, role: 'admin' },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_member');
  });

  it('answers 422 for role owner and a malformed email', async () => {
    const asOwner = await app.request('POST', invitations(owner.tenantId), {
      token: ot(),
      body: { email: uniqueEmail(), role: 'owner' },
    });
    expect(asOwner.status).toBe(422);
    expect(asOwner.body.detail[0].loc).toEqual(['body', 'role']);
    const bad = await app.request('POST', invitations(owner.tenantId), {
      token: ot(),
      body: { email: 'no', role: 'admin' },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'email']);
  });

  it('answers 403 for a non-member, 404 for no such tenant, 401 without a credential', async () => {
    const stranger = await signUp(app);
    expect(
      (
        await app.request('POST', invitations(owner.tenantId), {
          token: stranger.token,
          body: { email: uniqueEmail(), role: 'admin' },
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await app.request('POST', invitations(NO_SUCH_TENANT), {
          token: ot(),
          body: { email: uniqueEmail(), role: 'admin' },
        })
      ).status,
    ).toBe(404);
    expect(
      (await app.request('POST', invitations(owner.tenantId), { body: { email: uniqueEmail(), role: 'admin' } }))
        .status,
    ).toBe(401);
  });

  it('lets an admin invite', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    await invite(uniqueEmail('by-admin'), admin.token);
  });
});

describe('GET /v1/auth/tenants/{tenant_id}/invitations', () => {
  it('lists pending invitations only', async () => {
    const t = await app.request('POST', '/v1/auth/tenants', { token: ot(), body: { name: 'Listing' } });
    const a = await invite(uniqueEmail(), ot(), t.body.id);
    const b = await invite(uniqueEmail(), ot(), t.body.id);
    expect((await app.request('DELETE', `${invitations(t.body.id)}/${b.invitation.id}`, { token: ot() })).status).toBe(
      204,
    );
    const res = await app.request('GET', invitations(t.body.id), { token: ot() });
    expect(res.status).toBe(200);
    expect(res.body.map((i: any) => [i.id, i.status])).toEqual([[a.invitation.id, 'pending']]);
  });

  it('answers 403 for a non-member, 404 for no such tenant, 401 without a credential, 422 for a malformed id', async () => {
    const stranger = await signUp(app);
    expect((await app.request('GET', invitations(owner.tenantId), { token: stranger.token })).status).toBe(403);
    expect((await app.request('GET', invitations(NO_SUCH_TENANT), { token: ot() })).status).toBe(404);
    expect((await app.request('GET', invitations(owner.tenantId))).status).toBe(401);
    expect((await app.request('GET', invitations('bad'), { token: ot() })).status).toBe(422);
  });
});

describe('DELETE /v1/auth/tenants/{tenant_id}/invitations/{invitation_id}', () => {
  it('revokes a pending invitation; its link then previews as 404 and a second revoke is 409', async () => {
    const { invitation, token } = await invite();
    expect(
      (await app.request('DELETE', `${invitations(owner.tenantId)}/${invitation.id}`, { token: ot() })).status,
    ).toBe(204);
    expect((await requestAs(app, 'GET', `/v1/auth/invitations/${token}`)).status).toBe(404);
    const again = await app.request('DELETE', `${invitations(owner.tenantId)}/${invitation.id}`, { token: ot() });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('invitation_not_pending');
    const accept = await requestAs(app, 'POST', `/v1/auth/invitations/${token}/accept`, {
      body: { password: NEW_PASSWORD },
    });
    expect(accept.status).toBe(409);
  });

  it("answers 404 for no such invitation and for another tenant's invitation, 403 for a stranger, 401, 422", async () => {
    const { invitation } = await invite();
    const other = await signUp(app);
    expect(
      (await app.request('DELETE', `${invitations(other.tenantId)}/${invitation.id}`, { token: other.token })).status,
    ).toBe(404);
    expect(
      (await app.request('DELETE', `${invitations(owner.tenantId)}/${invitation.id}`, { token: other.token })).status,
    ).toBe(403);
    expect(
      (
        await app.request('DELETE', `${invitations(owner.tenantId)}/0190f5e2-0000-7000-8000-0000000000ff`, {
          token: ot(),
        })
      ).status,
    ).toBe(404);
    expect((await app.request('DELETE', `${invitations(owner.tenantId)}/${invitation.id}`)).status).toBe(401);
    expect((await app.request('DELETE', `${invitations(owner.tenantId)}/xyz`, { token: ot() })).status).toBe(422);
  });
});

describe('GET /v1/auth/invitations/{token}', () => {
  it('previews a pending invitation with user_exists false for a new address and true for a known one', async () => {
    const fresh = await invite();
    const res = await requestAs(app, 'GET', `/v1/auth/invitations/${fresh.token}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ email: fresh.email, role: 'admin', tenant_name: 'Inviting Co', user_exists: false });
    const known = await signUp(app);
    const existing = await invite(known.email);
    expect((await requestAs(app, 'GET', `/v1/auth/invitations/${existing.token}`)).body.user_exists).toBe(true);
  });

  it('answers 404 for an unknown token, an expired one and an accepted one; 422 for a malformed one', async () => {
    expect((await requestAs(app, 'GET', `/v1/auth/invitations/${'D'.repeat(43)}`)).status).toBe(404);
    const { token } = await invite();
    clock.advance(7 * 86400 * 1000 + 1000);
    expect((await requestAs(app, 'GET', `/v1/auth/invitations/${token}`)).status).toBe(404);
    expect((await requestAs(app, 'GET', `/v1/auth/invitations/${'x'.repeat(300)}`)).status).toBe(422);
  });
});

describe('POST /v1/auth/invitations/{token}/accept', () => {
  it('creates a verified user with the membership as default and signs them in to the tenant; a second use is 409', async () => {
    const { token, email } = await invite();
    const res = await requestAs(app, 'POST', `/v1/auth/invitations/${token}/accept`, {
      body: { password: NEW_PASSWORD },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'bearer', tenant_id: owner.tenantId });
    const tenants = await app.request('GET', '/v1/auth/tenants', { token: res.body.access_token });
    expect(tenants.body).toEqual([expect.objectContaining({ id: owner.tenantId, role: 'admin', is_default: true })]);
    const user = await query<{ email_verified_at: Date | null }>(
      app.runtime.orm.em.fork(),
      `SELECT email_verified_at FROM users WHERE email = $1`,
      [email],
    );
    expect(user[0]!.email_verified_at).not.toBeNull();
    const login = await requestAs(app, 'POST', '/v1/auth/login', { body: { email, password: NEW_PASSWORD } });
    expect(login.body.tenant_id).toBe(owner.tenantId);
    const again = await requestAs(app, 'POST', `/v1/auth/invitations/${token}/accept`, {
      body: { password: NEW_PASSWORD },
    });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('invitation_not_pending');
    expect((await requestAs(app, 'GET', `/v1/auth/invitations/${token}`)).status).toBe(404);
  });

  it('answers 409 user_exists when an account exists for the address', async () => {
    const known = await signUp(app);
    const { token } = await invite(known.email);
    const res = await requestAs(app, 'POST', `/v1/auth/invitations/${token}/accept`, {
      body: { password: NEW_PASSWORD },
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('user_exists');
  });

  it('answers 422 for an expired invitation and for a too-short password, 404 for an unknown token', async () => {
    const { token } = await invite();
    const short = await requestAs(app, 'POST', `/v1/auth/invitations/${token}/accept`, { body: { password: 'short' } });
    expect(short.status).toBe(422);
    expect(short.body.detail[0].loc).toEqual(['body', 'password']);
    clock.advance(7 * 86400 * 1000 + 1000);
    const expired = await requestAs(app, 'POST', `/v1/auth/invitations/${token}/accept`, {
      body: { password: NEW_PASSWORD },
    });
    expect(expired.status).toBe(422);
    expect(expired.body.code).toBe('link_expired');
    expect(
      (
        await requestAs(app, 'POST', `/v1/auth/invitations/${'E'.repeat(43)}/accept`, {
          body: { password: NEW_PASSWORD },
        })
      ).status,
    ).toBe(404);
  });

  it('a re-invite after expiry is allowed (an expired invite is not live)', async () => {
    const email = uniqueEmail();
    await invite(email);
    clock.advance(7 * 86400 * 1000 + 1000);
    await invite(email);
  });
});

describe('POST /v1/auth/invitations/{token}/accept-existing', () => {
  it('adds the membership (not default) and answers a token switched into the joined tenant', async () => {
    const known = await signUp(app, { tenantName: 'Home' });
    const { token } = await invite(known.email);
    const res = await app.request('POST', `/v1/auth/invitations/${token}/accept-existing`, { token: known.token });
    expect(res.status).toBe(200);
    expect(res.body.tenant_id).toBe(owner.tenantId);
    expect(app.runtime.tokens.verify(res.body.access_token, clock.now())).toMatchObject({
      sub: known.userId,
      tid: owner.tenantId,
    });
    const list = await app.request('GET', '/v1/auth/tenants', { token: known.token });
    expect(list.body.map((t: any) => [t.id, t.is_default])).toEqual(
      expect.arrayContaining([
        [known.tenantId, true],
        [owner.tenantId, false],
      ]),
    );
    const again = await app.request('POST', `/v1/auth/invitations/${token}/accept-existing`, { token: known.token });
    expect(again.status).toBe(409);
    // holding the emailed token proves the mailbox: the (unverified) user is now verified
    const rows = await query<{ email_verified_at: Date | null }>(
      app.runtime.orm.em.fork(),
      `SELECT email_verified_at FROM users WHERE id = $1`,
      [known.userId],
    );
    expect(rows[0]!.email_verified_at).not.toBeNull();
  });

  it('answers 403 when signed in as a different address', async () => {
    const { token } = await invite();
    const other = await signUp(app);
    const res = await app.request('POST', `/v1/auth/invitations/${token}/accept-existing`, { token: other.token });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('invitation_email_mismatch');
  });

  it('answers 409 when already a member (invited before joining by another path)', async () => {
    const known = await signUp(app);
    const { token } = await invite(known.email);
    await addMembership(app, known.userId, owner.tenantId);
    const res = await app.request('POST', `/v1/auth/invitations/${token}/accept-existing`, { token: known.token });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('already_member');
  });

  it('answers 409 for a revoked invitation, 422 for an expired one, 404 for an unknown one, 401 without a credential', async () => {
    const known = await signUp(app);
    const revoked = await invite(known.email);
    await app.request('DELETE', `${invitations(owner.tenantId)}/${revoked.invitation.id}`, { token: ot() });
    expect(
      (await app.request('POST', `/v1/auth/invitations/${revoked.token}/accept-existing`, { token: known.token }))
        .status,
    ).toBe(409);
    const expiring = await invite(known.email);
    clock.advance(7 * 86400 * 1000 + 1000);
    const fresh = app.runtime.tokens.sign('access', known.userId, known.tenantId, 3600, clock.now());
    const expired = await app.request('POST', `/v1/auth/invitations/${expiring.token}/accept-existing`, {
      token: fresh,
    });
    expect(expired.status).toBe(422);
    expect(
      (await app.request('POST', `/v1/auth/invitations/${'F'.repeat(43)}/accept-existing`, { token: fresh })).status,
    ).toBe(404);
    expect((await app.request('POST', `/v1/auth/invitations/${expiring.token}/accept-existing`)).status).toBe(401);
  });
});
