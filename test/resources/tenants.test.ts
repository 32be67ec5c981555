// Tenants and sessions of console users: the tenant switcher, creation, owner-only rename/archive/
// unarchive judged by membership in the tenant of the path, and switching tenant with POST /session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import { addMembership, addUser, expectValidationError, signUp, type SignedUp } from '../support/fixtures.ts';
import { queryOne } from '../../server/base/db/sql.ts';
import { issueApiKey } from '../../server/resources/api-keys.ts';

let app: TestApp;
let owner: SignedUp;
const NO_SUCH_TENANT = '0190f5e2-0000-7000-8000-000000000000';

beforeAll(async () => {
  app = await startTestApp({ config: { trustedProxies: ['127.0.0.1'] } });
  owner = await signUp(app, { tenantName: 'First' });
});
afterAll(async () => {
  await app?.close();
});

async function createTenant(token: string, name: string) {
  const res = await app.request('POST', '/v1/auth/tenants', { token, body: { name } });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

describe('GET /v1/auth/tenants', () => {
  it('lists every tenant the user belongs to, not only the token tenant, with role and default flag', async () => {
    const user = await signUp(app, { tenantName: 'Mine' });
    const admin = await addUser(app, owner.tenantId, 'admin');
    await addMembership(app, user.userId, owner.tenantId);
    const res = await app.request('GET', '/v1/auth/tenants', { token: user.token });
    expect(res.status).toBe(200);
    expect(res.body.map((t: any) => [t.name, t.role, t.is_default])).toEqual(
      expect.arrayContaining([
        ['Mine', 'owner', true],
        ['First', 'admin', false],
      ]),
    );
    expect(res.body).toHaveLength(2);
    const other = await app.request('GET', '/v1/auth/tenants', { token: admin.token });
    expect(other.body.map((t: any) => t.id)).toEqual([owner.tenantId]);
  });

  it('answers 401 without a credential and 422 for a malformed query', async () => {
    expect((await app.request('GET', '/v1/auth/tenants')).status).toBe(401);
    expect((await app.request('GET', '/v1/auth/tenants?include_archived=maybe', { token: owner.token })).status).toBe(
      422,
    );
  });
});

describe('POST /v1/auth/tenants', () => {
  it('creates the tenant, an owner membership that is not the default, and the default brand', async () => {
    const res = await app.request('POST', '/v1/auth/tenants', { token: owner.token, body: { name: '  Second  ' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Second',
      archived: false,
      role: 'owner',
      is_default: false,
      require_mfa: false,
      cors_origins: [],
      created_at: expect.any(String),
    });
    const brand = await queryOne(app.runtime.orm.em.fork(), `SELECT key, is_default FROM brands WHERE tenant_id = $1`, [
      res.body.id,
    ]);
    expect(brand).toEqual({ key: 'default', is_default: true });
    const login = await app.request('POST', '/v1/auth/login', {
      body: { email: owner.email, password: owner.password },
      headers: { 'x-forwarded-for': '10.9.9.1' },
    });
    expect(login.body.tenant_id).toBe(owner.tenantId);
  });

  it('answers 422 for a blank or over-long name and 401 without a credential', async () => {
    for (const name of ['', '   ', 'y'.repeat(101)]) {
      const res = await app.request('POST', '/v1/auth/tenants', { token: owner.token, body: { name } });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'name']);
    }
    expect((await app.request('POST', '/v1/auth/tenants', { body: { name: 'x' } })).status).toBe(401);
  });
});

describe('PATCH /v1/auth/tenants/{tenant_id}', () => {
  it('renames a tenant the caller owns, even when the token is scoped to another tenant', async () => {
    const second = await createTenant(owner.token, 'Old name');
    const res = await app.request('PATCH', `/v1/auth/tenants/${second.id}`, {
      token: owner.token,
      body: { name: 'New name' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: second.id, name: 'New name', role: 'owner' });
  });

  it('answers 403 for an admin (not owner) and for a non-member, 404 for no such tenant', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    const stranger = await signUp(app);
    const asAdmin = await app.request('PATCH', `/v1/auth/tenants/${owner.tenantId}`, {
      token: admin.token,
      body: { name: 'Nope' },
    });
    expect(asAdmin.status).toBe(403);
    expect(asAdmin.body.code).toBe('insufficient_role');
    const asStranger = await app.request('PATCH', `/v1/auth/tenants/${owner.tenantId}`, {
      token: stranger.token,
      body: { name: 'Nope' },
    });
    expect(asStranger.status).toBe(403);
    expect(asStranger.body.code).toBe('not_a_member');
    const missing = await app.request('PATCH', `/v1/auth/tenants/${NO_SUCH_TENANT}`, {
      token: owner.token,
      body: { name: 'Nope' },
    });
    expect(missing.status).toBe(404);
  });

  it('answers 422 for a blank name or a malformed tenant id, 401 without a credential', async () => {
    expect(
      (await app.request('PATCH', `/v1/auth/tenants/${owner.tenantId}`, { token: owner.token, body: { name: ' ' } }))
        .status,
    ).toBe(422);
    const bad = await app.request('PATCH', `/v1/auth/tenants/not-a-uuid`, { token: owner.token, body: { name: 'A' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['path', 'tenant_id']);
    expect((await app.request('PATCH', `/v1/auth/tenants/${owner.tenantId}`, { body: { name: 'A' } })).status).toBe(
      401,
    );
  });
});

describe('PATCH /v1/auth/tenants/{tenant_id} cors_origins', () => {
  const patch = (token: string, body: unknown, tenantId = owner.tenantId) =>
    app.request('PATCH', `/v1/auth/tenants/${tenantId}`, { token, body });

  it('sets the origins as browsers send them (lowercase, no default port, each once); [] clears them', async () => {
    const res = await patch(owner.token, {
      cors_origins: [
        'HTTPS://App.Acme.Example:443',
        'https://app.acme.example',
        'http://localhost:3000',
        ' https://bücher.example ',
      ],
    });
    expect(res.status, res.text).toBe(200);
    const origins = ['https://app.acme.example', 'http://localhost:3000', 'https://xn--bcher-kva.example'];
    expect(res.body).toMatchObject({ id: owner.tenantId, name: 'First', cors_origins: origins });
    const listed = await app.request('GET', '/v1/auth/tenants', { token: owner.token });
    expect(listed.body.find((t: { id: string }) => t.id === owner.tenantId).cors_origins).toEqual(origins);
    const audit = await queryOne<{ changes: unknown }>(
      app.runtime.orm.em.fork(),
      `SELECT changes FROM audit_log WHERE tenant_id = $1 ORDER BY at DESC, id DESC LIMIT 1`,
      [owner.tenantId],
    );
    expect(audit?.changes).toEqual({ cors_origins: origins });
    const renamed = await patch(owner.token, { name: 'First' });
    expect(renamed.body.cors_origins).toEqual(origins);
    const cleared = await patch(owner.token, { cors_origins: [] });
    expect(cleared.status).toBe(200);
    expect(cleared.body.cors_origins).toEqual([]);
  });

  it('answers 422 on the entry for anything but an origin, and for more than 50', async () => {
    for (const bad of [
      'https://app.example/',
      'https://app.example/path',
      'https://app.example?x=1',
      '*',
      'https://*.acme.example',
      'null',
      'app.example',
      'ftp://app.example',
      'https://user:pw@app.example',
      'https://app.example:99999',
      'https://',
      `https://${'a'.repeat(300)}.example`,
    ]) {
      const res = await patch(owner.token, { cors_origins: ['https://fine.example', bad] });
      expectValidationError(res, ['body', 'cors_origins', 1]);
    }
    for (const body of [{ cors_origins: 'https://app.example' }, { cors_origins: [42] }, { cors_origins: null }])
      expect((await patch(owner.token, body)).status, JSON.stringify(body)).toBe(422);
    const many = Array.from({ length: 51 }, (_, i) => `https://app${i}.example`);
    expectValidationError(await patch(owner.token, { cors_origins: many }), ['body', 'cors_origins']);
    expect((await patch(owner.token, { cors_origins: many.slice(0, 50) })).status).toBe(200);
    expect((await patch(owner.token, { cors_origins: [] })).status).toBe(200);
  });

  it('answers 403 for an admin or a non-member, 404 for no tenant, 401 without a credential', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    const stranger = await signUp(app);
    const body = { cors_origins: ['https://app.example'] };
    const asAdmin = await patch(admin.token, body);
    expect([asAdmin.status, asAdmin.body.code]).toEqual([403, 'insufficient_role']);
    const asStranger = await patch(stranger.token, body);
    expect([asStranger.status, asStranger.body.code]).toEqual([403, 'not_a_member']);
    expect((await patch(owner.token, body, NO_SUCH_TENANT)).status).toBe(404);
    expect((await app.request('PATCH', `/v1/auth/tenants/${owner.tenantId}`, { body })).status).toBe(401);
    const key = await issueApiKey(app.runtime.orm.em.fork(), owner.tenantId, 'server');
    expect((await patch(key.key, body)).status).toBe(403);
    const unchanged = await app.request('GET', '/v1/auth/tenants', { token: owner.token });
    expect(unchanged.body.find((t: { id: string }) => t.id === owner.tenantId).cors_origins).toEqual([]);
  });
});

describe('POST /v1/auth/tenants/{tenant_id}/archive and /unarchive', () => {
  it('archives (hidden from the switcher, data retained) and unarchives', async () => {
    const t = await createTenant(owner.token, 'Seasonal');
    const archived = await app.request('POST', `/v1/auth/tenants/${t.id}/archive`, { token: owner.token });
    expect(archived.status).toBe(200);
    expect(archived.body).toMatchObject({ id: t.id, archived: true });
    const switcher = await app.request('GET', '/v1/auth/tenants', { token: owner.token });
    expect(switcher.body.map((x: any) => x.id)).not.toContain(t.id);
    const all = await app.request('GET', '/v1/auth/tenants?include_archived=true', { token: owner.token });
    expect(all.body.find((x: any) => x.id === t.id)).toMatchObject({ archived: true });
    expect(
      await queryOne(app.runtime.orm.em.fork(), `SELECT 1 AS one FROM brands WHERE tenant_id = $1`, [t.id]),
    ).toEqual({ one: 1 });
    const again = await app.request('POST', `/v1/auth/tenants/${t.id}/archive`, { token: owner.token });
    expect(again.status).toBe(200);
    const back = await app.request('POST', `/v1/auth/tenants/${t.id}/unarchive`, { token: owner.token });
    expect(back.status).toBe(200);
    expect(back.body.archived).toBe(false);
    expect((await app.request('GET', '/v1/auth/tenants', { token: owner.token })).body.map((x: any) => x.id)).toContain(
      t.id,
    );
  });

  it.each(['archive', 'unarchive'])(
    '%s answers 403 for an admin and a stranger, 404 for no such tenant, 401 without a credential',
    async (action) => {
      const admin = await addUser(app, owner.tenantId, 'admin');
      const stranger = await addUser(app, null);
      const strangerToken = app.runtime.tokens.sign('access', stranger.userId, NO_SUCH_TENANT, 600, Date.now());
      expect(
        (await app.request('POST', `/v1/auth/tenants/${owner.tenantId}/${action}`, { token: admin.token })).status,
      ).toBe(403);
      expect(
        (await app.request('POST', `/v1/auth/tenants/${owner.tenantId}/${action}`, { token: strangerToken })).status,
      ).toBe(403);
      expect(
        (await app.request('POST', `/v1/auth/tenants/${NO_SUCH_TENANT}/${action}`, { token: owner.token })).status,
      ).toBe(404);
      expect((await app.request('POST', `/v1/auth/tenants/${owner.tenantId}/${action}`)).status).toBe(401);
      expect((await app.request('POST', `/v1/auth/tenants/nope/${action}`, { token: owner.token })).status).toBe(422);
    },
  );
});

describe('POST /v1/auth/session', () => {
  it('mints a token scoped to another tenant of the user; remember=true makes it the default', async () => {
    const t = await createTenant(owner.token, 'Switch target');
    const res = await app.request('POST', '/v1/auth/session', { token: owner.token, body: { tenant_id: t.id } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'bearer', tenant_id: t.id, expires_in: 43200 });
    const claims = app.runtime.tokens.verify(res.body.access_token, Date.now());
    expect(claims).toMatchObject({ sub: owner.userId, tid: t.id });
    let list = await app.request('GET', '/v1/auth/tenants', { token: owner.token });
    expect(list.body.find((x: any) => x.id === t.id).is_default).toBe(false);

    const remembered = await app.request('POST', '/v1/auth/session', {
      token: owner.token,
      body: { tenant_id: t.id, remember: true },
    });
    expect(remembered.status).toBe(200);
    list = await app.request('GET', '/v1/auth/tenants', { token: owner.token });
    expect(list.body.filter((x: any) => x.is_default).map((x: any) => x.id)).toEqual([t.id]);
    const login = await app.request('POST', '/v1/auth/login', {
      body: { email: owner.email, password: owner.password },
      headers: { 'x-forwarded-for': '10.9.9.2' },
    });
    expect(login.body.tenant_id).toBe(t.id);
    // back to the first tenant as default, for the other tests
    await app.request('POST', '/v1/auth/session', {
      token: owner.token,
      body: { tenant_id: owner.tenantId, remember: true },
    });
  });

  it('answers 403 for a tenant the user is not a member of (existing or not)', async () => {
    const stranger = await signUp(app);
    const res = await app.request('POST', '/v1/auth/session', {
      token: stranger.token,
      body: { tenant_id: owner.tenantId },
    });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('not_a_member');
    expect(
      (await app.request('POST', '/v1/auth/session', { token: stranger.token, body: { tenant_id: NO_SUCH_TENANT } }))
        .status,
    ).toBe(403);
  });

  it('answers 401 without a credential and 422 for malformed input', async () => {
    expect((await app.request('POST', '/v1/auth/session', { body: { tenant_id: owner.tenantId } })).status).toBe(401);
    expect(
      (await app.request('POST', '/v1/auth/session', { token: owner.token, body: { tenant_id: 'x' } })).status,
    ).toBe(422);
    expect(
      (
        await app.request('POST', '/v1/auth/session', {
          token: owner.token,
          body: { tenant_id: owner.tenantId, remember: 'yes' },
        })
      ).status,
    ).toBe(422);
  });

  it('refuses a service key on console routes with 403', async () => {
    const { key } = await issueApiKey(app.runtime.orm.em.fork(), owner.tenantId, 'ci');
    const res = await app.request('POST', '/v1/auth/session', { token: key, body: { tenant_id: owner.tenantId } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('wrong_credential_kind');
  });
});

describe('system emails without an install SMTP', () => {
  it('logs a warning (never the link) and completes the job', async () => {
    await signUp(app);
    const line = await eventually(() => app.logs.find((l) => l.includes('system email not sent')) ?? false, {
      timeoutMs: 5000,
    });
    expect(JSON.parse(line!)).toMatchObject({ level: 'warn', kind: 'verify' });
    expect(line).not.toMatch(/token=|[A-Za-z0-9_-]{43}/);
  });
});
