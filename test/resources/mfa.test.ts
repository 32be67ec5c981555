// Console users' second factor over HTTP, with an injected clock and codes computed from the otpauth
// URI by test/support/totp.ts (RFC 6238 by hand, not by the server's library): enrolment and its confirmation, the
// sign-in's second step (a wrong code, a replayed code, a recovery code used twice, an expired or spent
// mfa_token, its rate limit), removing one's own factor, an owner requiring a factor of every member,
// and `herald users mfa reset` on the host. Secrets never reach the audit log or the database in clear.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { totpCode, totpSecret } from '../support/totp.ts';
import {
  addMembership,
  addUser,
  createTenantFixture,
  freshIp,
  requestAs,
  type SignedUp,
  type TenantFixture,
} from '../support/fixtures.ts';
import { ManualClock } from '../../server/base/clock.ts';
import { query, queryOne } from '../../server/base/db/sql.ts';
import { newLinkToken } from '../../server/base/auth/link-tokens.ts';
import { newId } from '../../server/base/ids.ts';

let app: TestApp;
let acme: TenantFixture;
// A step boundary plus one second: a code computed now is the current step's.
const clock = new ManualClock(Date.parse('2026-06-01T12:00:01Z'));
const NO_SUCH_TENANT = '0190f5e2-0000-7000-8000-000000000000';

beforeAll(async () => {
  app = await startTestApp({ clock, config: { trustedProxies: ['127.0.0.1'], publicUrl: 'https://herald.acme.test' } });
  acme = await createTenantFixture(app, 'Acme');
});
afterAll(async () => {
  await app?.close();
});

/** The code at the test clock, `steps` from now. */
const totp = (secret: Uint8Array, steps = 0) => totpCode(secret, clock.now(), steps);
const secretOf = totpSecret;
const nextStep = () => clock.advance(30_000);
const sql = <T>(text: string, params: unknown[] = []) => query<T>(app.runtime.orm.em.fork(), text, params);

const login = (user: { email: string; password: string }, ip = freshIp()) =>
  requestAs(app, 'POST', '/v1/auth/login', { body: { email: user.email, password: user.password } }, ip);
const verify = (body: unknown, ip = freshIp()) => requestAs(app, 'POST', '/v1/auth/mfa/verify', { body }, ip);

interface Enrolled {
  user: SignedUp;
  secret: Uint8Array;
  recoveryCodes: string[];
}

/** A member of `tenantId` (their default tenant) with a confirmed factor; the confirming code's step is past. */
async function enrolled(tenantId = acme.tenantId): Promise<Enrolled> {
  const user = await addUser(app, tenantId, 'admin', true);
  const started = await app.request('POST', '/v1/auth/mfa/totp', { token: user.token });
  expect(started.status, started.text).toBe(201);
  const secret = secretOf(started.body.otpauth_uri);
  const confirmed = await app.request('POST', '/v1/auth/mfa/totp/confirm', {
    token: user.token,
    body: { code: totp(secret) },
  });
  expect(confirmed.status, confirmed.text).toBe(200);
  nextStep();
  return { user, secret, recoveryCodes: confirmed.body.recovery_codes };
}

/** The mfa_token a password sign-in answers. */
async function challenge(user: SignedUp): Promise<string> {
  const res = await login(user);
  expect(res.status, res.text).toBe(200);
  expect(res.body).toEqual({ mfa_required: true, mfa_token: expect.any(String), expires_in: 300 });
  return res.body.mfa_token;
}

function expectError(res: TestResponse, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.body.code).toBe(code);
}

describe('TOTP enrolment', () => {
  it('answers an otpauth URI and its QR code, keeps the secret encrypted, and counts only once confirmed', async () => {
    const user = await addUser(app, acme.tenantId, 'admin', true);
    const started = await app.request('POST', '/v1/auth/mfa/totp', { token: user.token });
    expect(started.status).toBe(201);
    const uri = new URL(started.body.otpauth_uri);
    expect(started.body.otpauth_uri).toMatch(/^otpauth:\/\/totp\//);
    expect(decodeURIComponent(started.body.otpauth_uri)).toContain(`Herald herald.acme.test:${user.email}`);
    expect(Object.fromEntries(uri.searchParams)).toMatchObject({ algorithm: 'SHA1', digits: '6', period: '30' });
    const secret = secretOf(started.body.otpauth_uri);
    expect(secret.length).toBe(20);
    expect(started.body.qr_svg).toMatch(/^<svg [^>]*viewBox="0 0 \d+ \d+"/);
    const [row] = await sql<{ secret_ciphertext: string; confirmed_at: Date | null }>(
      `SELECT secret_ciphertext, confirmed_at FROM mfa_factors WHERE user_id = $1`,
      [user.userId],
    );
    expect(row!.confirmed_at).toBeNull();
    expect(row!.secret_ciphertext).toMatch(/^hv1\./);
    expect(row!.secret_ciphertext).not.toContain(uri.searchParams.get('secret'));
    expect(row!.secret_ciphertext).not.toContain(Buffer.from(secret).toString('base64'));
    const pending = await app.request('GET', '/v1/auth/mfa', { token: user.token });
    expect(pending.body).toEqual({
      totp_enabled: false,
      enabled_at: null,
      enrolment_pending: true,
      recovery_codes_remaining: 0,
      required: false,
    });
    // Unconfirmed, it asks nothing at sign-in.
    expect((await login(user)).body.access_token).toEqual(expect.any(String));

    const wrong = await app.request('POST', '/v1/auth/mfa/totp/confirm', {
      token: user.token,
      body: { code: totp(secret, 3) },
    });
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail[0]).toMatchObject({ loc: ['body', 'code'], type: 'code_invalid' });
    const confirmed = await app.request('POST', '/v1/auth/mfa/totp/confirm', {
      token: user.token,
      body: { code: totp(secret, -1).replace(/^(\d{3})/, '$1 ') },
    });
    expect(confirmed.status, confirmed.text).toBe(200);
    const codes: string[] = confirmed.body.recovery_codes;
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-9]{4}(-[a-z2-9]{4}){3}$/);
    const stored = await sql<{ code_hash: Buffer }>(`SELECT code_hash FROM mfa_recovery_codes WHERE user_id = $1`, [
      user.userId,
    ]);
    expect(stored).toHaveLength(10);
    const dump = JSON.stringify(await sql(`SELECT * FROM mfa_recovery_codes WHERE user_id = $1`, [user.userId]));
    for (const code of codes) expect(dump).not.toContain(code.replace(/-/g, ''));
    const status = await app.request('GET', '/v1/auth/mfa', { token: user.token });
    expect(status.body).toMatchObject({ totp_enabled: true, enrolment_pending: false, recovery_codes_remaining: 10 });
    expect(status.body.enabled_at).toBe(new Date(clock.now()).toISOString());

    expectError(
      await app.request('POST', '/v1/auth/mfa/totp/confirm', { token: user.token, body: { code: totp(secret) } }),
      409,
      'mfa_already_enabled',
    );
    expectError(await app.request('POST', '/v1/auth/mfa/totp', { token: user.token }), 409, 'mfa_already_enabled');
  });

  it('restarting a pending enrolment replaces its secret', async () => {
    const user = await addUser(app, acme.tenantId, 'admin', true);
    const first = await app.request('POST', '/v1/auth/mfa/totp', { token: user.token });
    const second = await app.request('POST', '/v1/auth/mfa/totp', { token: user.token });
    expect(second.status).toBe(201);
    const stale = await app.request('POST', '/v1/auth/mfa/totp/confirm', {
      token: user.token,
      body: { code: totp(secretOf(first.body.otpauth_uri)) },
    });
    expect(stale.status).toBe(422);
    const fresh = await app.request('POST', '/v1/auth/mfa/totp/confirm', {
      token: user.token,
      body: { code: totp(secretOf(second.body.otpauth_uri)) },
    });
    expect(fresh.status).toBe(200);
    expect(await sql(`SELECT count(*)::int AS n FROM mfa_factors WHERE user_id = $1`, [user.userId])).toEqual([
      { n: 1 },
    ]);
  });

  it('answers 422 to confirm without an enrolment or with a malformed code, and 401 without a credential', async () => {
    const user = await addUser(app, acme.tenantId, 'admin', true);
    expectError(
      await app.request('POST', '/v1/auth/mfa/totp/confirm', { token: user.token, body: { code: '123456' } }),
      422,
      'mfa_enrolment_not_started',
    );
    for (const body of [{}, { code: 'abcdef' }, { code: '12345' }, { code: 1234567 }, { code: '1'.repeat(40) }]) {
      const res = await app.request('POST', '/v1/auth/mfa/totp/confirm', { token: user.token, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'code']);
    }
    expect((await app.request('POST', '/v1/auth/mfa/totp/confirm', { rawBody: '{', token: user.token })).status).toBe(
      422,
    );
    for (const [method, path] of [
      ['GET', '/v1/auth/mfa'],
      ['POST', '/v1/auth/mfa/totp'],
      ['POST', '/v1/auth/mfa/totp/confirm'],
      ['POST', '/v1/auth/mfa/totp/disable'],
    ] as const) {
      const body = method === 'POST' ? { code: '123456' } : undefined;
      expect((await app.request(method, path, { body })).status, path).toBe(401);
      expect((await app.request(method, path, { token: 'not.a.token', body })).status).toBe(401);
      // A service key is no console user.
      expectError(await app.request(method, path, { token: acme.serviceKey, body }), 403, 'wrong_credential_kind');
    }
  });
});

describe('signing in with a second factor', () => {
  it('asks for the code after the password, and answers the access token for the right code, once', async () => {
    const { user, secret } = await enrolled();
    const mfaToken = await challenge(user);
    expectError(await verify({ mfa_token: mfaToken, code: totp(secret, 5) }), 401, 'invalid_mfa_code');
    const signedIn = await verify({ mfa_token: mfaToken, code: totp(secret) });
    expect(signedIn.status, signedIn.text).toBe(200);
    expect(signedIn.body).toEqual({
      access_token: expect.any(String),
      token_type: 'bearer',
      expires_in: 12 * 3600,
      tenant_id: acme.tenantId,
    });
    const tenants = await app.request('GET', '/v1/auth/tenants', { token: signedIn.body.access_token });
    expect(tenants.body.map((t: { id: string }) => t.id)).toEqual([acme.tenantId]);
    // The mfa_token is spent.
    nextStep();
    expectError(await verify({ mfa_token: mfaToken, code: totp(secret) }), 401, 'invalid_mfa_token');
  });

  it('refuses a code used already, in its own window and after it, and the confirming code', async () => {
    const user = await addUser(app, acme.tenantId, 'admin', true);
    const started = await app.request('POST', '/v1/auth/mfa/totp', { token: user.token });
    const secret = secretOf(started.body.otpauth_uri);
    const confirmCode = totp(secret);
    expect(
      (await app.request('POST', '/v1/auth/mfa/totp/confirm', { token: user.token, body: { code: confirmCode } }))
        .status,
    ).toBe(200);
    expectError(await verify({ mfa_token: await challenge(user), code: confirmCode }), 401, 'invalid_mfa_code');
    nextStep();
    const code = totp(secret);
    expect((await verify({ mfa_token: await challenge(user), code })).status).toBe(200);
    // A second sign-in with the same code, while it is still the current one (an eavesdropper's replay).
    const replayToken = await challenge(user);
    expectError(await verify({ mfa_token: replayToken, code }), 401, 'invalid_mfa_code');
    // Still refused in the next step, where the drift window would otherwise take it.
    nextStep();
    expectError(await verify({ mfa_token: replayToken, code }), 401, 'invalid_mfa_code');
    expect((await verify({ mfa_token: replayToken, code: totp(secret) })).status).toBe(200);
  });

  it('takes one code of two concurrent sign-ins with it, never both', async () => {
    const { user, secret } = await enrolled();
    const [a, b] = [await challenge(user), await challenge(user)];
    const code = totp(secret);
    const answers = await Promise.all([verify({ mfa_token: a, code }), verify({ mfa_token: b, code })]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 401]);
  });

  it('accepts each recovery code once', async () => {
    const { user, recoveryCodes } = await enrolled();
    const [first, second] = recoveryCodes;
    const signedIn = await verify({ mfa_token: await challenge(user), recovery_code: first!.toUpperCase() });
    expect(signedIn.status, signedIn.text).toBe(200);
    expect(signedIn.body.access_token).toEqual(expect.any(String));
    const again = await verify({ mfa_token: await challenge(user), recovery_code: first });
    expectError(again, 401, 'invalid_mfa_code');
    expect((await verify({ mfa_token: await challenge(user), recovery_code: second!.replace(/-/g, ' ') })).status).toBe(
      200,
    );
    const status = await app.request('GET', '/v1/auth/mfa', { token: signedIn.body.access_token });
    expect(status.body.recovery_codes_remaining).toBe(8);
    // Another user's recovery code is not one of this user's.
    const other = await enrolled();
    expectError(
      await verify({ mfa_token: await challenge(user), recovery_code: other.recoveryCodes[0] }),
      401,
      'invalid_mfa_code',
    );
  });

  it('lets an mfa_token live five minutes, and spends it after five wrong codes', async () => {
    const { user, secret } = await enrolled();
    const expiring = await challenge(user);
    clock.advance(301_000);
    expectError(await verify({ mfa_token: expiring, code: totp(secret) }), 401, 'invalid_mfa_token');

    const other = await enrolled();
    const mfaToken = await challenge(other.user);
    for (let i = 0; i < 5; i++)
      expectError(await verify({ mfa_token: mfaToken, code: totp(other.secret, 4) }), 401, 'invalid_mfa_code');
    expect(
      await sql(`SELECT 1 FROM mfa_challenges WHERE user_id = $1`, [other.user.userId]),
      'the challenge is spent',
    ).toEqual([]);
    clock.advance(15 * 60_000);
    expectError(await verify({ mfa_token: mfaToken, code: totp(other.secret) }), 401, 'invalid_mfa_token');
  });

  it('limits codes to 5 per 15 minutes per user, from any address, with Retry-After', async () => {
    const { user, secret } = await enrolled();
    const tokens = [];
    for (let i = 0; i < 2; i++) tokens.push(await challenge(user));
    for (let i = 0; i < 5; i++)
      expect((await verify({ mfa_token: tokens[i % 2], code: totp(secret, 7) })).status).toBe(401);
    const limited = await verify({ mfa_token: tokens[1], code: totp(secret) });
    expectError(limited, 429, 'rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBe(180);
    clock.advance(180_000);
    expect((await verify({ mfa_token: await challenge(user), code: totp(secret) })).status).toBe(200);
  });

  it('counts wrong codes only: a user who signs in again and again is never stopped by the limit', async () => {
    const { user, secret } = await enrolled();
    for (let i = 0; i < 7; i++) {
      expect((await verify({ mfa_token: await challenge(user), code: totp(secret) })).status).toBe(200);
      nextStep();
    }
    const mfaToken = await challenge(user);
    for (let i = 0; i < 4; i++) expect((await verify({ mfa_token: mfaToken, code: totp(secret, 7) })).status).toBe(401);
    expect((await verify({ mfa_token: await challenge(user), code: totp(secret, 7) })).status).toBe(401);
    expectError(await verify({ mfa_token: await challenge(user), code: totp(secret) }), 429, 'rate_limited');
  });

  it('answers 422 for malformed input and never a 5xx', async () => {
    const { user } = await enrolled();
    const mfaToken = await challenge(user);
    const bodies: unknown[] = [
      {},
      { mfa_token: mfaToken },
      { mfa_token: mfaToken, code: '123456', recovery_code: 'aaaa-bbbb-cccc-dddd' },
      { mfa_token: mfaToken, code: 'abcdef' },
      { mfa_token: mfaToken, recovery_code: 'short' },
      { mfa_token: mfaToken, recovery_code: 'llll-oooo-1111-0000' },
      { mfa_token: 'no spaces allowed here!', code: '123456' },
      { mfa_token: 42, code: '123456' },
      { mfa_token: mfaToken, code: { $gt: '' } },
      [],
    ];
    for (const body of bodies) expect((await verify(body)).status, JSON.stringify(body)).toBe(422);
    expect((await requestAs(app, 'POST', '/v1/auth/mfa/verify', { rawBody: 'nope' })).status).toBe(422);
    expectError(await verify({ mfa_token: 'A'.repeat(43), code: '123456' }), 401, 'invalid_mfa_token');
  });
});

describe('removing one own factor', () => {
  it('takes a current code or an unused recovery code; afterwards the password alone signs in', async () => {
    const { user, secret, recoveryCodes } = await enrolled();
    const disable = (body: unknown) => requestAs(app, 'POST', '/v1/auth/mfa/totp/disable', { token: user.token, body });
    const wrong = await disable({ code: totp(secret, 6) });
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail[0].loc).toEqual(['body', 'code']);
    const spent = await verify({ mfa_token: await challenge(user), recovery_code: recoveryCodes[0] });
    expect(spent.status).toBe(200);
    const spentAgain = await disable({ recovery_code: recoveryCodes[0] });
    expect(spentAgain.status).toBe(422);
    expect(spentAgain.body.detail[0].loc).toEqual(['body', 'recovery_code']);
    for (const body of [{}, { code: '123456', recovery_code: recoveryCodes[1] }, { code: 'x' }])
      expect((await disable(body)).status, JSON.stringify(body)).toBe(422);
    const pending = await challenge(user);

    expect((await disable({ code: totp(secret) })).status).toBe(204);
    expect(await sql(`SELECT 1 FROM mfa_factors WHERE user_id = $1`, [user.userId])).toEqual([]);
    expect(await sql(`SELECT 1 FROM mfa_recovery_codes WHERE user_id = $1`, [user.userId])).toEqual([]);
    // A sign-in waiting for the removed factor starts again.
    expectError(await verify({ mfa_token: pending, recovery_code: recoveryCodes[2] }), 401, 'invalid_mfa_token');
    const plain = await login(user);
    expect(plain.body).toMatchObject({ access_token: expect.any(String), tenant_id: acme.tenantId });
    expectError(await disable({ code: totp(secret) }), 422, 'mfa_not_enabled');

    const other = await enrolled();
    const byRecovery = await requestAs(app, 'POST', '/v1/auth/mfa/totp/disable', {
      token: other.user.token,
      body: { recovery_code: other.recoveryCodes[9] },
    });
    expect(byRecovery.status).toBe(204);
  });

  it('is audited with who and how, and no code or secret in any entry', async () => {
    const { user, recoveryCodes, secret } = await enrolled();
    const code = totp(secret);
    const res = await requestAs(app, 'POST', '/v1/auth/mfa/totp/disable', { token: user.token, body: { code } });
    expect(res.status).toBe(204);
    const rows = await sql<{ action: string; actor_id: string; target_kind: string; target_id: string; changes: any }>(
      `SELECT action, actor_id, target_kind, target_id, changes FROM audit_log WHERE actor_id = $1 ORDER BY id`,
      [user.userId],
    );
    expect(rows.map((r) => r.action)).toEqual(['mfa.totp.enrol', 'mfa.totp.confirm', 'mfa.totp.disable']);
    for (const row of rows) expect(row).toMatchObject({ target_kind: 'user', target_id: user.userId });
    expect(rows[2]!.changes).toEqual({ proven_with: 'code' });
    const text = JSON.stringify(rows);
    expect(text).not.toContain(code);
    for (const recovery of recoveryCodes) expect(text).not.toContain(recovery);
    expect(text).not.toContain(Buffer.from(secret).toString('base64'));
  });
});

describe('a tenant that requires a second factor', () => {
  it('is switched by its owner, once the owner has a factor; admins and strangers may not', async () => {
    const tenant = await createTenantFixture(app, 'Strict');
    const patch = (token: string, body: unknown, id = tenant.tenantId) =>
      app.request('PATCH', `/v1/auth/tenants/${id}`, { token, body });
    expectError(await patch(tenant.ownerToken, { require_mfa: true }), 422, 'mfa_not_enabled');
    const admin = await addUser(app, tenant.tenantId, 'admin');
    expectError(await patch(admin.token, { require_mfa: true }), 403, 'insufficient_role');
    expectError(await patch(acme.ownerToken, { require_mfa: true }), 403, 'not_a_member');
    expectError(await patch(tenant.ownerToken, { require_mfa: true }, NO_SUCH_TENANT), 404, 'not_found');
    for (const body of [{}, { require_mfa: 'yes' }, { name: '' }])
      expect((await patch(tenant.ownerToken, body)).status, JSON.stringify(body)).toBe(422);
    expect((await patch(tenant.ownerToken, { require_mfa: true }, 'not-a-uuid')).status).toBe(422);
    expect(
      (await app.request('PATCH', `/v1/auth/tenants/${tenant.tenantId}`, { body: { require_mfa: true } })).status,
    ).toBe(401);

    const started = await app.request('POST', '/v1/auth/mfa/totp', { token: tenant.ownerToken });
    await app.request('POST', '/v1/auth/mfa/totp/confirm', {
      token: tenant.ownerToken,
      body: { code: totp(secretOf(started.body.otpauth_uri)) },
    });
    const on = await patch(tenant.ownerToken, { require_mfa: true });
    expect(on.status, on.text).toBe(200);
    expect(on.body).toMatchObject({ id: tenant.tenantId, name: 'Strict', require_mfa: true, role: 'owner' });
    // The owner, signed in with their factor, is not held back.
    expect((await app.request('GET', '/v1/api-keys', { token: tenant.ownerToken })).status).toBe(200);
    const renamed = await patch(tenant.ownerToken, { name: 'Strict Ltd' });
    expect(renamed.body).toMatchObject({ name: 'Strict Ltd', require_mfa: true });
    const audit = await sql<{ changes: unknown }>(
      `SELECT changes FROM audit_log WHERE action = 'tenant.update' AND target_id = $1 ORDER BY id`,
      [tenant.tenantId],
    );
    expect(audit.map((r) => r.changes)).toEqual([{ require_mfa: true }, { name: 'Strict Ltd' }]);
  });

  it('holds a member without a factor to the enrolment routes until they set one up', async () => {
    const tenant = await createTenantFixture(app, 'Guarded');
    const owner = { token: tenant.ownerToken };
    const started = await app.request('POST', '/v1/auth/mfa/totp', owner);
    await app.request('POST', '/v1/auth/mfa/totp/confirm', {
      ...owner,
      body: { code: totp(secretOf(started.body.otpauth_uri)) },
    });
    nextStep();
    const member = await addUser(app, tenant.tenantId, 'admin', true);
    // A tenant of the member's own that requires nothing.
    const relaxed = await createTenantFixture(app, 'Relaxed');
    await addMembership(app, member.userId, relaxed.tenantId, 'admin');
    const earlierToken = member.token;
    expect((await app.request('GET', '/v1/api-keys', { token: earlierToken })).status).toBe(200);
    expect(
      (await app.request('PATCH', `/v1/auth/tenants/${tenant.tenantId}`, { ...owner, body: { require_mfa: true } }))
        .status,
    ).toBe(200);

    // A token issued before the switch is held back from the next request on.
    expectError(await app.request('GET', '/v1/api-keys', { token: earlierToken }), 403, 'mfa_enrolment_required');
    const signedIn = await login(member);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body).toMatchObject({ tenant_id: tenant.tenantId, mfa_enrolment_required: true });
    const token = signedIn.body.access_token as string;
    for (const [method, path] of [
      ['GET', '/v1/api-keys'],
      ['GET', '/v1/notification-types'],
      ['POST', '/v1/api-keys'],
      ['GET', `/v1/auth/tenants/${tenant.tenantId}/members`],
    ] as const) {
      const body = method === 'POST' ? { name: 'k' } : undefined;
      expectError(await app.request(method, path, { token, body }), 403, 'mfa_enrolment_required');
    }
    // What it needs to enrol, and to go to a tenant that does not require it, stays open.
    expect((await app.request('GET', '/v1/auth/mfa', { token })).body).toMatchObject({
      totp_enabled: false,
      required: true,
    });
    const tenants = await app.request('GET', '/v1/auth/tenants', { token });
    expect(tenants.body.find((t: { id: string }) => t.id === tenant.tenantId).require_mfa).toBe(true);
    const away = await app.request('POST', '/v1/auth/session', { token, body: { tenant_id: relaxed.tenantId } });
    expect(away.status).toBe(200);
    expect(away.body.mfa_enrolment_required).toBeUndefined();
    expect((await app.request('GET', '/v1/api-keys', { token: away.body.access_token })).status).toBe(200);
    const back = await app.request('POST', '/v1/auth/session', {
      token: away.body.access_token,
      body: { tenant_id: tenant.tenantId },
    });
    expect(back.body.mfa_enrolment_required).toBe(true);
    // The tenant's service key is no console user: not affected.
    expect((await app.request('GET', '/v1/api-keys', { token: tenant.serviceKey })).status).toBe(200);

    const enrol = await app.request('POST', '/v1/auth/mfa/totp', { token });
    expect(enrol.status).toBe(201);
    const confirmed = await app.request('POST', '/v1/auth/mfa/totp/confirm', {
      token,
      body: { code: totp(secretOf(enrol.body.otpauth_uri)) },
    });
    expect(confirmed.status).toBe(200);
    // The same token now opens everything its role allows.
    expect((await app.request('GET', '/v1/api-keys', { token })).status).toBe(200);
    expect((await app.request('GET', '/v1/api-keys', { token: earlierToken })).status).toBe(200);
    nextStep();
    expect((await login(member)).body.mfa_required).toBe(true);
  });

  it('holds a new member who joins by invitation, and lets everyone go when switched off', async () => {
    const tenant = await createTenantFixture(app, 'Invites');
    const started = await app.request('POST', '/v1/auth/mfa/totp', { token: tenant.ownerToken });
    await app.request('POST', '/v1/auth/mfa/totp/confirm', {
      token: tenant.ownerToken,
      body: { code: totp(secretOf(started.body.otpauth_uri)) },
    });
    await app.request('PATCH', `/v1/auth/tenants/${tenant.tenantId}`, {
      token: tenant.ownerToken,
      body: { require_mfa: true },
    });
    // An invitation whose token only this test knows (the emailed one is never stored).
    const link = newLinkToken();
    await sql(
      `INSERT INTO invitations (id, tenant_id, email, role, token_hash, expires_at, created_at)
       VALUES ($1, $2, $3, 'admin', $4, $5, $6)`,
      [
        newId(),
        tenant.tenantId,
        'joiner@example.test',
        link.hash,
        new Date(clock.now() + 86_400_000),
        new Date(clock.now()),
      ],
    );
    clock.advance(1000);
    const joined = await requestAs(app, 'POST', `/v1/auth/invitations/${link.token}/accept`, {
      body: { password: 'a long enough passphrase' },
    });
    expect(joined.status, joined.text).toBe(200);
    expect(joined.body).toMatchObject({ tenant_id: tenant.tenantId, mfa_enrolment_required: true });
    const token = joined.body.access_token as string;
    expectError(await app.request('GET', '/v1/api-keys', { token }), 403, 'mfa_enrolment_required');

    const off = await app.request('PATCH', `/v1/auth/tenants/${tenant.tenantId}`, {
      token: tenant.ownerToken,
      body: { require_mfa: false },
    });
    expect(off.body.require_mfa).toBe(false);
    expect((await app.request('GET', '/v1/api-keys', { token })).status).toBe(200);
    const again = await login({ email: 'joiner@example.test', password: 'a long enough passphrase' });
    expect(again.status).toBe(200);
    expect(again.body.mfa_enrolment_required).toBeUndefined();
  });
});

describe('herald users mfa reset', { timeout: 120_000 }, () => {
  it('removes a user their factor on the host, audited; the password alone then signs in', async () => {
    const { user, secret } = await enrolled();
    const pending = await challenge(user);
    const herald = (args: string[]) =>
      runCli([...args, '--data-dir', app.dataDir], {
        env: {
          DATABASE_URL: app.database.url,
          HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys,
          HERALD_MODE: 'multi',
          HERALD_LOG_LEVEL: 'warn',
          HERALD_URL: undefined,
          HERALD_API_KEY: undefined,
        },
      });
    const refused = await herald(['users', 'mfa', 'reset', user.email]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('--yes');
    expect(await sql(`SELECT 1 FROM mfa_factors WHERE user_id = $1`, [user.userId])).toHaveLength(1);

    const reset = await herald(['users', 'mfa', 'reset', user.email.toUpperCase(), '--yes', '--json']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(JSON.parse(reset.stdout)).toMatchObject({ id: user.userId, email: user.email, second_factor_removed: true });
    expect(await sql(`SELECT 1 FROM mfa_factors WHERE user_id = $1`, [user.userId])).toEqual([]);
    expect(await sql(`SELECT 1 FROM mfa_recovery_codes WHERE user_id = $1`, [user.userId])).toEqual([]);
    expectError(await verify({ mfa_token: pending, code: totp(secret) }), 401, 'invalid_mfa_token');
    const plain = await login(user);
    expect(plain.body.access_token).toEqual(expect.any(String));
    const entry = await queryOne<{ actor_kind: string; target_id: string; changes: unknown }>(
      app.runtime.orm.em.fork(),
      `SELECT actor_kind, target_id, changes FROM audit_log WHERE action = 'user.mfa.reset'`,
    );
    expect(entry).toEqual({ actor_kind: 'cli', target_id: user.userId, changes: { email: user.email } });

    const again = await herald(['users', 'mfa', 'reset', user.email, '--yes']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('had no second factor');
    const missing = await herald(['users', 'mfa', 'reset', 'nobody@example.test', '--yes']);
    expect(missing.code).toBe(1);
    expect((await herald(['users', 'mfa', 'reset', 'not-an-email', '--yes'])).code).toBe(2);
  });
});
