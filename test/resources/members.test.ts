// Members: list, change role, remove. Admin or higher; owners only by owners; never yourself; never to
// owner; a removed default membership hands the default to one of the user's remaining tenants.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { addMembership, addUser, requestAs, signUp, type SignedUp } from '../support/fixtures.ts';
import { query } from '../../server/base/db/sql.ts';

let app: TestApp;
let owner: SignedUp;
const NO_SUCH_TENANT = '0190f5e2-0000-7000-8000-000000000000';
const NO_SUCH_USER = '0190f5e2-0000-7000-8000-00000000abcd';

beforeAll(async () => {
  app = await startTestApp({ config: { trustedProxies: ['127.0.0.1'] } });
  owner = await signUp(app, { tenantName: 'Team' });
});
afterAll(async () => {
  await app?.close();
});

const members = (tenantId: string) => `/v1/auth/tenants/${tenantId}/members`;

describe('GET /v1/auth/tenants/{tenant_id}/members', () => {
  it('lists members with email and role for an admin', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    const res = await app.request('GET', members(owner.tenantId), { token: admin.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(
      expect.arrayContaining([
        { user_id: owner.userId, email: owner.email, role: 'owner' },
        { user_id: admin.userId, email: admin.email, role: 'admin' },
      ]),
    );
  });

  it('answers 403 for a non-member, 404 for no such tenant, 401 without a credential, 422 for a malformed id', async () => {
    const stranger = await signUp(app);
    expect((await app.request('GET', members(owner.tenantId), { token: stranger.token })).status).toBe(403);
    expect((await app.request('GET', members(NO_SUCH_TENANT), { token: owner.token })).status).toBe(404);
    expect((await app.request('GET', members(owner.tenantId))).status).toBe(401);
    expect((await app.request('GET', members('x'), { token: owner.token })).status).toBe(422);
  });
});

describe('PATCH /v1/auth/tenants/{tenant_id}/members/{user_id}', () => {
  it('lets an owner demote another owner to admin', async () => {
    const coOwner = await addUser(app, owner.tenantId, 'owner');
    const res = await app.request('PATCH', `${members(owner.tenantId)}/${coOwner.userId}`, {
      token: owner.token,
      body: { role: 'admin' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ user_id: coOwner.userId, email: coOwner.email, role: 'admin' });
  });

  it('lets an admin change another admin', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    const other = await addUser(app, owner.tenantId, 'admin');
    const res = await app.request('PATCH', `${members(owner.tenantId)}/${other.userId}`, {
      token: admin.token,
      body: { role: 'admin' },
    });
    expect(res.status).toBe(200);
  });

  it('answers 403 for an admin targeting an owner and for a non-member', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    const res = await app.request('PATCH', `${members(owner.tenantId)}/${owner.userId}`, {
      token: admin.token,
      body: { role: 'admin' },
    });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('insufficient_role');
    const stranger = await signUp(app);
    expect(
      (
        await app.request('PATCH', `${members(owner.tenantId)}/${admin.userId}`, {
          token: stranger.token,
          body: { role: 'admin' },
        })
      ).status,
    ).toBe(403);
  });

  it('answers 404 for a user who is not a member and for no such tenant', async () => {
    const outsider = await signUp(app);
    expect(
      (
        await app.request('PATCH', `${members(owner.tenantId)}/${outsider.userId}`, {
          token: owner.token,
          body: { role: 'admin' },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await app.request('PATCH', `${members(owner.tenantId)}/${NO_SUCH_USER}`, {
          token: owner.token,
          body: { role: 'admin' },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await app.request('PATCH', `${members(NO_SUCH_TENANT)}/${outsider.userId}`, {
          token: owner.token,
          body: { role: 'admin' },
        })
      ).status,
    ).toBe(404);
  });

  it('answers 409 own_membership for changing yourself', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    const res = await app.request('PATCH', `${members(owner.tenantId)}/${admin.userId}`, {
      token: admin.token,
      body: { role: 'admin' },
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('own_membership');
  });

  it('answers 422 for role owner, an unknown role and a malformed user id; 401 without a credential', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    const toOwner = await app.request('PATCH', `${members(owner.tenantId)}/${admin.userId}`, {
      token: owner.token,
      body: { role: 'owner' },
    });
    expect(toOwner.status).toBe(422);
    expect(toOwner.body.detail[0].loc).toEqual(['body', 'role']);
    expect(
      (
        await app.request('PATCH', `${members(owner.tenantId)}/${admin.userId}`, {
          token: owner.token,
          body: { role: 'viewer' },
        })
      ).status,
    ).toBe(422);
    expect(
      (await app.request('PATCH', `${members(owner.tenantId)}/nope`, { token: owner.token, body: { role: 'admin' } }))
        .status,
    ).toBe(422);
    expect(
      (await app.request('PATCH', `${members(owner.tenantId)}/${admin.userId}`, { body: { role: 'admin' } })).status,
    ).toBe(401);
  });
});

describe('DELETE /v1/auth/tenants/{tenant_id}/members/{user_id}', () => {
  it('removes an admin; an admin cannot remove an owner (403); nobody removes themselves (409)', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    const victim = await addUser(app, owner.tenantId, 'admin');
    const res = await app.request('DELETE', `${members(owner.tenantId)}/${victim.userId}`, { token: admin.token });
    expect(res.status).toBe(204);
    expect((await app.request('GET', '/v1/auth/tenants', { token: victim.token })).body).toEqual([]);
    const coOwner = await addUser(app, owner.tenantId, 'owner');
    expect(
      (await app.request('DELETE', `${members(owner.tenantId)}/${coOwner.userId}`, { token: admin.token })).status,
    ).toBe(403);
    expect(
      (await app.request('DELETE', `${members(owner.tenantId)}/${coOwner.userId}`, { token: owner.token })).status,
    ).toBe(204);
    const self = await app.request('DELETE', `${members(owner.tenantId)}/${admin.userId}`, { token: admin.token });
    expect(self.status).toBe(409);
    expect(self.body.code).toBe('own_membership');
  });

  it('answers 404 for a non-member, 403 for a stranger, 401 without a credential, 422 for a malformed id', async () => {
    const outsider = await signUp(app);
    expect(
      (await app.request('DELETE', `${members(owner.tenantId)}/${outsider.userId}`, { token: owner.token })).status,
    ).toBe(404);
    expect(
      (await app.request('DELETE', `${members(owner.tenantId)}/${owner.userId}`, { token: outsider.token })).status,
    ).toBe(403);
    expect((await app.request('DELETE', `${members(owner.tenantId)}/${outsider.userId}`)).status).toBe(401);
    expect((await app.request('DELETE', `${members(owner.tenantId)}/zzz`, { token: owner.token })).status).toBe(422);
  });

  it('reassigns the default tenant when the removed membership was the default', async () => {
    const user = await signUp(app, { tenantName: 'Own' });
    // the user joins the owner's tenant and makes it their default
    await addMembership(app, user.userId, owner.tenantId);
    const switched = await app.request('POST', '/v1/auth/session', {
      token: user.token,
      body: { tenant_id: owner.tenantId, remember: true },
    });
    expect(switched.status).toBe(200);
    const res = await app.request('DELETE', `${members(owner.tenantId)}/${user.userId}`, { token: owner.token });
    expect(res.status).toBe(204);
    const rows = await query<{ tenant_id: string; is_default: boolean }>(
      app.runtime.orm.em.fork(),
      `SELECT tenant_id, is_default FROM memberships WHERE user_id = $1`,
      [user.userId],
    );
    expect(rows).toEqual([{ tenant_id: user.tenantId, is_default: true }]);
    const login = await requestAs(app, 'POST', '/v1/auth/login', {
      body: { email: user.email, password: user.password },
    });
    expect(login.body.tenant_id).toBe(user.tenantId);
  });

  it('a user left without any membership can still prove their password but gets 403 not_a_member at login', async () => {
    const member = await addUser(app, owner.tenantId, 'admin', true);
    expect(
      (await app.request('DELETE', `${members(owner.tenantId)}/${member.userId}`, { token: owner.token })).status,
    ).toBe(204);
    const login = await requestAs(app, 'POST', '/v1/auth/login', {
      body: { email: member.email, password: member.password },
    });
    expect(login.status).toBe(403);
    expect(login.body.code).toBe('not_a_member');
    // a wrong password still answers 401, so the 403 reveals nothing to a guesser
    expect(
      (await requestAs(app, 'POST', '/v1/auth/login', { body: { email: member.email, password: 'wrong password' } }))
        .status,
    ).toBe(401);
  });
});
