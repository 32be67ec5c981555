// Notification types: create, list (include_deleted), get, soft delete, restore, and the setters.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  addUser,
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  type TenantFixture,
} from '../support/fixtures.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;
let acmeAdmin: string;
let globexAdmin: string;

beforeAll(async () => {
  app = await startTestApp();
  [acme, globex] = await Promise.all([createTenantFixture(app, 'Acme'), createTenantFixture(app, 'Globex')]);
  acmeAdmin = (await addUser(app, acme.tenantId, 'admin', true)).token;
  globexAdmin = (await addUser(app, globex.tenantId, 'admin', true)).token;
});
afterAll(async () => {
  await app?.close();
});

let counter = 0;
const uniqueKey = (base = 'type') => `${base}_${++counter}`;

async function createType(fx: TenantFixture, body: Record<string, unknown> = {}) {
  const res = await app.request('POST', '/v1/notification-types', {
    token: fx.serviceKey,
    body: { key: uniqueKey(), ...body },
  });
  expect(res.status).toBe(201);
  return res.body;
}

describe('POST /v1/notification-types', () => {
  it('creates a type with every field', async () => {
    const res = await app.request('POST', '/v1/notification-types', {
      token: acmeAdmin,
      body: {
        key: 'order.shipped',
        name: 'Order shipped',
        description: 'Sent when a parcel leaves',
        channel_defaults: { inbox: true, email: false, push: true, web_push: true },
        opt_out: false,
        variables: [{ name: 'order_id', required: true, description: 'The order number' }, { name: 'carrier' }],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      key: 'order.shipped',
      name: 'Order shipped',
      description: 'Sent when a parcel leaves',
      channel_defaults: { inbox: true, email: false, push: true, web_push: true, sms: false, chat: false, http: false },
      opt_out: false,
      variables: [
        { name: 'order_id', required: true, description: 'The order number' },
        { name: 'carrier', required: false, description: '' },
      ],
      workflow: null,
      bypass_quiet_hours: false,
      deleted: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('fills defaults: name from the key, inbox and email on, opt-out on, no variables', async () => {
    const res = await app.request('POST', '/v1/notification-types', {
      token: acme.serviceKey,
      body: { key: 'welcome', channel_defaults: { push: true } },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      key: 'welcome',
      name: 'welcome',
      description: '',
      channel_defaults: { inbox: true, email: true, push: true, web_push: false, sms: false, chat: false, http: false },
      opt_out: true,
      variables: [],
    });
  });

  it('answers 409 when a live type has the key, and lets another tenant use it', async () => {
    const type = await createType(acme);
    const dup = await app.request('POST', '/v1/notification-types', {
      token: acme.serviceKey,
      body: { key: type.key },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
    expect(
      (await app.request('POST', '/v1/notification-types', { token: globex.serviceKey, body: { key: type.key } }))
        .status,
    ).toBe(201);
  });

  it('allows a deleted key to be created again', async () => {
    const type = await createType(acme);
    expect((await app.request('DELETE', `/v1/notification-types/${type.key}`, { token: acme.serviceKey })).status).toBe(
      204,
    );
    expect(
      (await app.request('POST', '/v1/notification-types', { token: acme.serviceKey, body: { key: type.key } })).status,
    ).toBe(201);
  });

  it('answers 422 for a malformed key, channel, variable or body', async () => {
    const post = (body: unknown) => app.request('POST', '/v1/notification-types', { token: acme.serviceKey, body });
    expectValidationError(await post({ key: 'Bad Key' }), ['body', 'key']);
    expectValidationError(await post({}), ['body', 'key']);
    expectValidationError(await post({ key: 'x', channel_defaults: { fax: true } }), ['body', 'channel_defaults']);
    expectValidationError(await post({ key: 'x', channel_defaults: { email: 'yes' } }), [
      'body',
      'channel_defaults',
      'email',
    ]);
    expectValidationError(await post({ key: 'x', opt_out: 'no' }), ['body', 'opt_out']);
    expectValidationError(await post({ key: 'x', variables: [{ name: '1st' }] }), ['body', 'variables', 0, 'name']);
    expectValidationError(await post({ key: 'x', variables: [{ name: 'contact' }] }), ['body', 'variables', 0, 'name']);
    expectValidationError(await post({ key: 'x', variables: [{ name: '__proto__' }] }), [
      'body',
      'variables',
      0,
      'name',
    ]);
    expectValidationError(await post({ key: 'x', variables: [{ name: 'a' }, { name: 'a' }] }), [
      'body',
      'variables',
      1,
      'name',
    ]);
    expectValidationError(
      await app.request('POST', '/v1/notification-types', { token: acme.serviceKey, rawBody: 'nope' }),
      ['body'],
    );
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', '/v1/notification-types', { key: 'never' });
  });
});

describe('GET /v1/notification-types', () => {
  it('lists live types, and deleted ones only with include_deleted=true', async () => {
    const live = await createType(globex);
    const gone = await createType(globex);
    await app.request('DELETE', `/v1/notification-types/${gone.key}`, { token: globex.serviceKey });
    const res = await app.request('GET', '/v1/notification-types', { token: globexAdmin });
    expect(res.status).toBe(200);
    const keys = res.body.map((t: { key: string }) => t.key);
    expect(keys).toContain(live.key);
    expect(keys).not.toContain(gone.key);
    const all = await app.request('GET', '/v1/notification-types?include_deleted=true', { token: globex.serviceKey });
    expect(all.body.find((t: { key: string }) => t.key === gone.key)).toMatchObject({ deleted: true });
    expect(all.body.find((t: { key: string }) => t.key === live.key)).toMatchObject({ deleted: false });
    const explicitFalse = await app.request('GET', '/v1/notification-types?include_deleted=false', {
      token: globex.serviceKey,
    });
    expect(explicitFalse.body.map((t: { key: string }) => t.key)).not.toContain(gone.key);
  });

  it("never lists another tenant's types", async () => {
    const mine = await createType(acme);
    const theirs = await app.request('GET', '/v1/notification-types?include_deleted=true', {
      token: globex.serviceKey,
    });
    expect(theirs.body.map((t: { key: string }) => t.key)).not.toContain(mine.key);
  });

  it('answers 422 for a malformed include_deleted', async () => {
    expectValidationError(
      await app.request('GET', '/v1/notification-types?include_deleted=maybe', { token: acme.serviceKey }),
      ['query', 'include_deleted'],
    );
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/notification-types');
  });
});

describe('GET /v1/notification-types/{key}', () => {
  it('answers the live type, and a deleted one marked deleted', async () => {
    const type = await createType(acme, { name: 'Shown' });
    const res = await app.request('GET', `/v1/notification-types/${type.key}`, { token: acme.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(type);
    await app.request('DELETE', `/v1/notification-types/${type.key}`, { token: acme.serviceKey });
    const deleted = await app.request('GET', `/v1/notification-types/${type.key}`, { token: acme.serviceKey });
    expect(deleted.status).toBe(200);
    expect(deleted.body.deleted).toBe(true);
  });

  it("answers 404 for an unknown key and another tenant's type", async () => {
    expect((await app.request('GET', '/v1/notification-types/nope', { token: acme.serviceKey })).status).toBe(404);
    const theirs = await createType(globex);
    const res = await app.request('GET', `/v1/notification-types/${theirs.key}`, { token: acme.serviceKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Notification type not found', code: 'not_found' });
  });

  it('answers 422 for a malformed key', async () => {
    expectValidationError(await app.request('GET', '/v1/notification-types/NOT%20OK', { token: acme.serviceKey }), [
      'path',
      'key',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/notification-types/welcome');
  });
});

describe('DELETE /v1/notification-types/{key}', () => {
  it('soft-deletes: the type leaves the list and can be restored', async () => {
    const type = await createType(acme);
    const res = await app.request('DELETE', `/v1/notification-types/${type.key}`, { token: acme.ownerToken });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const list = await app.request('GET', '/v1/notification-types', { token: acme.serviceKey });
    expect(list.body.map((t: { key: string }) => t.key)).not.toContain(type.key);
  });

  it("answers 404 for an unknown, an already deleted and another tenant's type", async () => {
    expect((await app.request('DELETE', '/v1/notification-types/nope', { token: acme.serviceKey })).status).toBe(404);
    const type = await createType(acme);
    await app.request('DELETE', `/v1/notification-types/${type.key}`, { token: acme.serviceKey });
    expect((await app.request('DELETE', `/v1/notification-types/${type.key}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
    const theirs = await createType(globex);
    expect(
      (await app.request('DELETE', `/v1/notification-types/${theirs.key}`, { token: acme.serviceKey })).status,
    ).toBe(404);
    expect(
      (await app.request('GET', `/v1/notification-types/${theirs.key}`, { token: globex.serviceKey })).body.deleted,
    ).toBe(false);
  });

  it('answers 422 for a malformed key', async () => {
    expectValidationError(await app.request('DELETE', '/v1/notification-types/-bad', { token: acme.serviceKey }), [
      'path',
      'key',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    const type = await createType(acme);
    await expectManagementOnly(app, acme, 'DELETE', `/v1/notification-types/${type.key}`);
    expect(
      (await app.request('GET', `/v1/notification-types/${type.key}`, { token: acme.serviceKey })).body.deleted,
    ).toBe(false);
  });
});

describe('PATCH /v1/notification-types/{key}/channel-defaults', () => {
  it('changes only the channels named', async () => {
    const type = await createType(acme);
    const res = await app.request('PATCH', `/v1/notification-types/${type.key}/channel-defaults`, {
      token: acmeAdmin,
      body: { channel_defaults: { email: false, web_push: true } },
    });
    expect(res.status).toBe(200);
    expect(res.body.channel_defaults).toEqual({
      inbox: true,
      email: false,
      push: false,
      web_push: true,
      sms: false,
      chat: false,
      http: false,
    });
    expect(res.body.updated_at >= type.updated_at).toBe(true);
  });

  it("answers 404 for an unknown, a deleted and another tenant's type", async () => {
    const path = (key: string) => `/v1/notification-types/${key}/channel-defaults`;
    const body = { channel_defaults: { push: true } };
    expect((await app.request('PATCH', path('nope'), { token: acme.serviceKey, body })).status).toBe(404);
    const type = await createType(acme);
    await app.request('DELETE', `/v1/notification-types/${type.key}`, { token: acme.serviceKey });
    expect((await app.request('PATCH', path(type.key), { token: acme.serviceKey, body })).status).toBe(404);
    const theirs = await createType(globex);
    expect((await app.request('PATCH', path(theirs.key), { token: acme.serviceKey, body })).status).toBe(404);
  });

  it('answers 422 for an unknown channel or a non-boolean', async () => {
    const type = await createType(acme);
    const path = `/v1/notification-types/${type.key}/channel-defaults`;
    expectValidationError(
      await app.request('PATCH', path, { token: acme.serviceKey, body: { channel_defaults: { fax: true } } }),
      ['body', 'channel_defaults'],
    );
    expectValidationError(
      await app.request('PATCH', path, { token: acme.serviceKey, body: { channel_defaults: { push: 1 } } }),
      ['body', 'channel_defaults', 'push'],
    );
    expectValidationError(await app.request('PATCH', path, { token: acme.serviceKey, body: {} }), [
      'body',
      'channel_defaults',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'PATCH', '/v1/notification-types/welcome/channel-defaults', {
      channel_defaults: { push: true },
    });
  });
});

describe('PATCH /v1/notification-types/{key}/opt-out-policy', () => {
  it('turns opting out off and on again', async () => {
    const type = await createType(acme);
    const path = `/v1/notification-types/${type.key}/opt-out-policy`;
    const off = await app.request('PATCH', path, { token: acme.serviceKey, body: { opt_out: false } });
    expect(off.status).toBe(200);
    expect(off.body.opt_out).toBe(false);
    const on = await app.request('PATCH', path, { token: acme.ownerToken, body: { opt_out: true } });
    expect(on.body.opt_out).toBe(true);
  });

  it("answers 404 for an unknown or another tenant's type", async () => {
    expect(
      (
        await app.request('PATCH', '/v1/notification-types/nope/opt-out-policy', {
          token: acme.serviceKey,
          body: { opt_out: false },
        })
      ).status,
    ).toBe(404);
    const theirs = await createType(globex);
    const res = await app.request('PATCH', `/v1/notification-types/${theirs.key}/opt-out-policy`, {
      token: acme.serviceKey,
      body: { opt_out: false },
    });
    expect(res.status).toBe(404);
  });

  it('answers 422 for a missing or non-boolean opt_out', async () => {
    const type = await createType(acme);
    const path = `/v1/notification-types/${type.key}/opt-out-policy`;
    expectValidationError(await app.request('PATCH', path, { token: acme.serviceKey, body: {} }), ['body', 'opt_out']);
    expectValidationError(await app.request('PATCH', path, { token: acme.serviceKey, body: { opt_out: 'off' } }), [
      'body',
      'opt_out',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'PATCH', '/v1/notification-types/welcome/opt-out-policy', { opt_out: false });
  });
});

describe('PUT /v1/notification-types/{key}/variables', () => {
  it('replaces the declared variables', async () => {
    const type = await createType(acme, { variables: [{ name: 'old' }] });
    const res = await app.request('PUT', `/v1/notification-types/${type.key}/variables`, {
      token: acme.serviceKey,
      body: {
        variables: [
          { name: 'order_id', required: true },
          { name: 'total', description: 'in cents' },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.variables).toEqual([
      { name: 'order_id', required: true, description: '' },
      { name: 'total', required: false, description: 'in cents' },
    ]);
    const cleared = await app.request('PUT', `/v1/notification-types/${type.key}/variables`, {
      token: acme.serviceKey,
      body: { variables: [] },
    });
    expect(cleared.body.variables).toEqual([]);
  });

  it("answers 404 for an unknown or another tenant's type", async () => {
    expect(
      (
        await app.request('PUT', '/v1/notification-types/nope/variables', {
          token: acme.serviceKey,
          body: { variables: [] },
        })
      ).status,
    ).toBe(404);
    const theirs = await createType(globex);
    expect(
      (
        await app.request('PUT', `/v1/notification-types/${theirs.key}/variables`, {
          token: acme.serviceKey,
          body: { variables: [] },
        })
      ).status,
    ).toBe(404);
  });

  it('answers 422 for malformed or duplicate variables', async () => {
    const type = await createType(acme);
    const path = `/v1/notification-types/${type.key}/variables`;
    expectValidationError(await app.request('PUT', path, { token: acme.serviceKey, body: {} }), ['body', 'variables']);
    expectValidationError(
      await app.request('PUT', path, { token: acme.serviceKey, body: { variables: [{ name: 'a-b' }] } }),
      ['body', 'variables', 0, 'name'],
    );
    expectValidationError(
      await app.request('PUT', path, { token: acme.serviceKey, body: { variables: [{ name: 'x' }, { name: 'x' }] } }),
      ['body', 'variables', 1, 'name'],
    );
    expectValidationError(
      await app.request('PUT', path, { token: acme.serviceKey, body: { variables: [{ name: 'x', required: 'yes' }] } }),
      ['body', 'variables', 0, 'required'],
    );
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'PUT', '/v1/notification-types/welcome/variables', { variables: [] });
  });
});

describe('POST /v1/notification-types/{key}/restore', () => {
  it('brings a deleted type back live, with its settings', async () => {
    const type = await createType(acme, { variables: [{ name: 'kept' }], opt_out: false });
    await app.request('DELETE', `/v1/notification-types/${type.key}`, { token: acme.serviceKey });
    const res = await app.request('POST', `/v1/notification-types/${type.key}/restore`, { token: acmeAdmin });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      key: type.key,
      deleted: false,
      opt_out: false,
      variables: [{ name: 'kept', required: false, description: '' }],
    });
    const list = await app.request('GET', '/v1/notification-types', { token: acme.serviceKey });
    expect(list.body.map((t: { key: string }) => t.key)).toContain(type.key);
  });

  it('is a no-op for a live type with nothing deleted (a retried restore)', async () => {
    const type = await createType(acme);
    const res = await app.request('POST', `/v1/notification-types/${type.key}/restore`, { token: acme.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(type);
  });

  it('answers 409 when another live type took the key after the deletion', async () => {
    const type = await createType(acme, { name: 'first' });
    await app.request('DELETE', `/v1/notification-types/${type.key}`, { token: acme.serviceKey });
    await app.request('POST', '/v1/notification-types', {
      token: acme.serviceKey,
      body: { key: type.key, name: 'second' },
    });
    const res = await app.request('POST', `/v1/notification-types/${type.key}/restore`, { token: acme.serviceKey });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('already_exists');
    expect((await app.request('GET', `/v1/notification-types/${type.key}`, { token: acme.serviceKey })).body.name).toBe(
      'second',
    );
  });

  it("answers 404 for an unknown or another tenant's type", async () => {
    expect((await app.request('POST', '/v1/notification-types/nope/restore', { token: acme.serviceKey })).status).toBe(
      404,
    );
    const theirs = await createType(globex);
    await app.request('DELETE', `/v1/notification-types/${theirs.key}`, { token: globex.serviceKey });
    expect(
      (await app.request('POST', `/v1/notification-types/${theirs.key}/restore`, { token: acme.serviceKey })).status,
    ).toBe(404);
    expect(
      (await app.request('GET', `/v1/notification-types/${theirs.key}`, { token: globex.serviceKey })).body.deleted,
    ).toBe(true);
  });

  it('answers 422 for a malformed key', async () => {
    expectValidationError(
      await app.request('POST', '/v1/notification-types/Caps/restore', { token: acme.serviceKey }),
      ['path', 'key'],
    );
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', '/v1/notification-types/welcome/restore');
  });
});
