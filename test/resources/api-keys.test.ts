// Service keys: issued once in full, stored as a hash, listed without the secret, revoked at once.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  addUser,
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  type TenantFixture,
} from '../support/fixtures.ts';
import { query } from '../../server/base/db/sql.ts';

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

describe('POST /v1/api-keys', () => {
  it('issues an sk_ key with 32 random bytes, shown once, usable at once', async () => {
    const res = await app.request('POST', '/v1/api-keys', { token: acmeAdmin, body: { name: '  billing backend ' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'billing backend',
      prefix: res.body.key.slice(0, 12),
      created_at: expect.any(String),
      last_used_at: null,
      key: expect.stringMatching(/^sk_[A-Za-z0-9_-]{43}$/),
    });
    expect(Buffer.from(res.body.key.slice(3), 'base64url')).toHaveLength(32);
    const use = await app.request('GET', '/v1/api-keys', { token: res.body.key });
    expect(use.status).toBe(200);
    expect(use.body.map((k: { id: string }) => k.id)).toContain(res.body.id);
  });

  it('stores only the SHA-256 of the key', async () => {
    const res = await app.request('POST', '/v1/api-keys', { token: acme.serviceKey, body: { name: 'hash check' } });
    const [row] = await query<Record<string, unknown>>(
      app.runtime.orm.em.fork(),
      `SELECT * FROM api_keys WHERE id = $1`,
      [res.body.id],
    );
    expect(row!.key_hash).toEqual(createHash('sha256').update(res.body.key).digest());
    expect(JSON.stringify(row)).not.toContain(res.body.key.slice(12));
  });

  it('is open to the owner, an admin and a service key', async () => {
    for (const token of [acme.ownerToken, acmeAdmin, acme.serviceKey]) {
      const res = await app.request('POST', '/v1/api-keys', { token, body: { name: 'k' } });
      expect(res.status).toBe(201);
    }
  });

  it('answers 422 for a missing, blank or over-long name and a malformed body', async () => {
    expectValidationError(await app.request('POST', '/v1/api-keys', { token: acme.serviceKey, body: {} }), [
      'body',
      'name',
    ]);
    expectValidationError(
      await app.request('POST', '/v1/api-keys', { token: acme.serviceKey, body: { name: '   ' } }),
      ['body', 'name'],
    );
    expectValidationError(
      await app.request('POST', '/v1/api-keys', { token: acme.serviceKey, body: { name: 'x'.repeat(101) } }),
      ['body', 'name'],
    );
    expectValidationError(await app.request('POST', '/v1/api-keys', { token: acme.serviceKey, rawBody: '{"name":' }), [
      'body',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', '/v1/api-keys', { name: 'x' });
  });
});

describe('GET /v1/api-keys', () => {
  it("lists the tenant's live keys without the secret, and records their last use", async () => {
    const issued = await app.request('POST', '/v1/api-keys', { token: globex.serviceKey, body: { name: 'listed' } });
    await app.request('GET', '/v1/api-keys', { token: issued.body.key });
    const res = await app.request('GET', '/v1/api-keys', { token: globexAdmin });
    expect(res.status).toBe(200);
    const listed = res.body.find((k: { id: string }) => k.id === issued.body.id);
    expect(listed).toEqual({
      id: issued.body.id,
      name: 'listed',
      prefix: issued.body.prefix,
      created_at: issued.body.created_at,
      last_used_at: expect.any(String),
    });
    expect(JSON.stringify(res.body)).not.toContain(issued.body.key);
    // Only this tenant's keys.
    const acmeKeys = await app.request('GET', '/v1/api-keys', { token: acme.serviceKey });
    expect(acmeKeys.body.map((k: { id: string }) => k.id)).not.toContain(issued.body.id);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/api-keys');
  });
});

describe('DELETE /v1/api-keys/{api_key_id}', () => {
  it('revokes a key: it stops working at once and leaves the list', async () => {
    const issued = await app.request('POST', '/v1/api-keys', { token: acme.serviceKey, body: { name: 'short-lived' } });
    expect((await app.request('GET', '/v1/api-keys', { token: issued.body.key })).status).toBe(200);
    const res = await app.request('DELETE', `/v1/api-keys/${issued.body.id}`, { token: acme.ownerToken });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const after = await app.request('GET', '/v1/api-keys', { token: issued.body.key });
    expect(after.status).toBe(401);
    const list = await app.request('GET', '/v1/api-keys', { token: acme.serviceKey });
    expect(list.body.map((k: { id: string }) => k.id)).not.toContain(issued.body.id);
  });

  it('lets a key revoke itself', async () => {
    const issued = await app.request('POST', '/v1/api-keys', { token: acme.serviceKey, body: { name: 'self' } });
    expect((await app.request('DELETE', `/v1/api-keys/${issued.body.id}`, { token: issued.body.key })).status).toBe(
      204,
    );
    expect((await app.request('GET', '/v1/api-keys', { token: issued.body.key })).status).toBe(401);
  });

  it('answers 404 for an unknown or already revoked key', async () => {
    const unknown = await app.request('DELETE', '/v1/api-keys/0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6', {
      token: acme.serviceKey,
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'API key not found', code: 'not_found' });
    const issued = await app.request('POST', '/v1/api-keys', { token: acme.serviceKey, body: { name: 'twice' } });
    expect((await app.request('DELETE', `/v1/api-keys/${issued.body.id}`, { token: acme.serviceKey })).status).toBe(
      204,
    );
    expect((await app.request('DELETE', `/v1/api-keys/${issued.body.id}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
  });

  it("answers 404 for another tenant's key and leaves it working", async () => {
    const res = await app.request('DELETE', `/v1/api-keys/${globex.apiKeyId}`, { token: acme.serviceKey });
    expect(res.status).toBe(404);
    expect((await app.request('GET', '/v1/api-keys', { token: globex.serviceKey })).status).toBe(200);
  });

  it('answers 422 for an id that is not a UUID', async () => {
    expectValidationError(await app.request('DELETE', '/v1/api-keys/not-an-id', { token: acme.serviceKey }), [
      'path',
      'api_key_id',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'DELETE', `/v1/api-keys/${acme.apiKeyId}`);
    expect((await app.request('GET', '/v1/api-keys', { token: acme.serviceKey })).status).toBe(200);
  });
});
