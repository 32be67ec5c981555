// Contacts over HTTP: create, get, find by external_id, replace, delete, bulk create-or-update (with
// its rate limit) and the preferred language; credentials, tenants and contact scope.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';
import { ManualClock } from '../../server/base/clock.ts';
import { newId } from '../../server/base/ids.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;
const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));

beforeAll(async () => {
  app = await startTestApp({ clock });
  acme = await createTenantFixture(app, 'Acme');
  globex = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await app?.close();
});

const create = (body: unknown, token = acme.serviceKey) => app.request('POST', '/v1/contacts', { body, token });

describe('POST /v1/contacts', () => {
  it('creates a contact with its fields and answers 201', async () => {
    const res = await create({
      external_id: 'user-1',
      email: 'Ann@Example.org',
      name: 'Ann',
      phone: '+49 30 1234',
      language: 'de-at',
      properties: { plan: 'pro' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      external_id: 'user-1',
      email: 'ann@example.org',
      name: 'Ann',
      phone: '+49301234',
      language: 'de-AT',
      properties: { plan: 'pro' },
    });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('creates a bare contact with only an external_id', async () => {
    const res = await create({ external_id: 'bare-1' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ email: null, phone: null, name: null, language: null, properties: {} });
  });

  it('answers 409 when the external_id exists in the tenant', async () => {
    await create({ external_id: 'dup-1' });
    const res = await create({ external_id: 'dup-1', email: 'x@example.org' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('already_exists');
  });

  it('allows the same external_id in another tenant', async () => {
    await create({ external_id: 'shared-1' });
    const res = await create({ external_id: 'shared-1' }, globex.serviceKey);
    expect(res.status).toBe(201);
  });

  it('answers 422 for a malformed email, a bad language tag, a missing external_id or malformed JSON', async () => {
    const email = await create({ external_id: 'bad-1', email: 'not-an-email' });
    expect(email.status).toBe(422);
    expect(email.body.detail[0].loc).toEqual(['body', 'email']);
    const language = await create({ external_id: 'bad-2', language: 'not a tag!' });
    expect(language.status).toBe(422);
    expect(language.body.detail[0].loc).toEqual(['body', 'language']);
    const missing = await create({ email: 'a@example.org' });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0].loc).toEqual(['body', 'external_id']);
    const json = await app.request('POST', '/v1/contacts', { rawBody: '{"external_id":', token: acme.serviceKey });
    expect(json.status).toBe(422);
  });

  it('answers 403 for a console admin: writes take a service key', async () => {
    const res = await create({ external_id: 'console-1' }, acme.ownerToken);
    expect(res.status).toBe(403);
  });

  it('answers 401 without a credential and with a revoked-looking key', async () => {
    expect((await app.request('POST', '/v1/contacts', { body: { external_id: 'x' } })).status).toBe(401);
    const res = await create({ external_id: 'x' }, 'sk_not_a_real_key');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('answers 403 for a contact token', async () => {
    const id = await acme.contact('token-holder-1');
    const res = await create({ external_id: 'x' }, acme.tokenFor(id));
    expect(res.status).toBe(403);
  });
});

describe('GET /v1/contacts/{id}', () => {
  it('answers the contact', async () => {
    const created = await create({ external_id: 'get-1', name: 'Bo' });
    const res = await app.request('GET', `/v1/contacts/${created.body.id}`, { token: acme.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
  });

  it("answers 404 for another tenant's contact and for an unknown id", async () => {
    const created = await create({ external_id: 'get-2' });
    expect((await app.request('GET', `/v1/contacts/${created.body.id}`, { token: globex.serviceKey })).status).toBe(
      404,
    );
    expect((await app.request('GET', `/v1/contacts/${newId()}`, { token: acme.serviceKey })).status).toBe(404);
  });

  it('answers 422 for an id that is not a UUID, 401 without credential, 403 for a contact token', async () => {
    expect((await app.request('GET', '/v1/contacts/nope', { token: acme.serviceKey })).status).toBe(422);
    const created = await create({ external_id: 'get-3' });
    expect((await app.request('GET', `/v1/contacts/${created.body.id}`)).status).toBe(401);
    expect(
      (await app.request('GET', `/v1/contacts/${created.body.id}`, { token: acme.tokenFor(created.body.id) })).status,
    ).toBe(403);
  });
});

describe('GET /v1/contacts?external_id=', () => {
  it('finds the contact by external_id', async () => {
    const created = await create({ external_id: 'find-me' });
    const res = await app.request('GET', '/v1/contacts?external_id=find-me', { token: acme.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(created.body.id);
  });

  it("is readable by a console admin of the tenant, and not of another tenant's", async () => {
    const created = await create({ external_id: 'console-read' });
    expect(
      (await app.request('GET', '/v1/contacts?external_id=console-read', { token: acme.ownerToken })).body.id,
    ).toBe(created.body.id);
    expect((await app.request('GET', `/v1/contacts/${created.body.id}`, { token: acme.ownerToken })).status).toBe(200);
    expect((await app.request('GET', `/v1/contacts/${created.body.id}`, { token: globex.ownerToken })).status).toBe(
      404,
    );
  });

  it('answers 404 when none (also for an external_id of another tenant)', async () => {
    await create({ external_id: 'acme-only' });
    expect((await app.request('GET', '/v1/contacts?external_id=nobody', { token: acme.serviceKey })).status).toBe(404);
    expect((await app.request('GET', '/v1/contacts?external_id=acme-only', { token: globex.serviceKey })).status).toBe(
      404,
    );
  });

  it('answers 422, never a database error, for a field or an external_id holding U+0000', async () => {
    const created = await create({ external_id: 'nul-1', name: 'Ann\u0000' });
    expect(created.status).toBe(422);
    expect(created.body.detail[0].loc).toEqual(['body', 'name']);
    const found = await app.request('GET', '/v1/contacts?external_id=nul%00', { token: acme.serviceKey });
    expect(found.status).toBe(422);
    expect(found.body.detail[0].loc).toEqual(['query', 'external_id']);
  });

  it('answers 422 without external_id, 401 without credential', async () => {
    const res = await app.request('GET', '/v1/contacts', { token: acme.serviceKey });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['query', 'external_id']);
    expect((await app.request('GET', '/v1/contacts?external_id=x')).status).toBe(401);
  });
});

describe('PUT /v1/contacts/{id}', () => {
  it('replaces every mutable field: a field left out is cleared', async () => {
    const created = await create({ external_id: 'put-1', email: 'a@example.org', name: 'A', properties: { a: 1 } });
    const res = await app.request('PUT', `/v1/contacts/${created.body.id}`, {
      body: { name: 'B', properties: { b: 2 } },
      token: acme.serviceKey,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ external_id: 'put-1', email: null, name: 'B', properties: { b: 2 } });
  });

  it('answers 404 across tenants, 422 for a bad field, 401 and 403', async () => {
    const created = await create({ external_id: 'put-2' });
    const path = `/v1/contacts/${created.body.id}`;
    expect((await app.request('PUT', path, { body: { name: 'x' }, token: globex.serviceKey })).status).toBe(404);
    expect((await app.request('PUT', path, { body: { email: 'nope' }, token: acme.serviceKey })).status).toBe(422);
    expect((await app.request('PUT', path, { body: { name: 'x' } })).status).toBe(401);
    expect(
      (await app.request('PUT', path, { body: { name: 'x' }, token: acme.tokenFor(created.body.id) })).status,
    ).toBe(403);
  });
});

describe('DELETE /v1/contacts/{id}', () => {
  it('deletes the contact (204), then answers 404', async () => {
    const created = await create({ external_id: 'del-1' });
    const path = `/v1/contacts/${created.body.id}`;
    expect((await app.request('DELETE', path, { token: globex.serviceKey })).status).toBe(404);
    const res = await app.request('DELETE', path, { token: acme.serviceKey });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await app.request('GET', path, { token: acme.serviceKey })).status).toBe(404);
    expect((await app.request('DELETE', path, { token: acme.serviceKey })).status).toBe(404);
  });

  it('answers 401 and 403', async () => {
    const created = await create({ external_id: 'del-2' });
    const path = `/v1/contacts/${created.body.id}`;
    expect((await app.request('DELETE', path)).status).toBe(401);
    expect((await app.request('DELETE', path, { token: acme.tokenFor(created.body.id) })).status).toBe(403);
  });
});

describe('POST /v1/contacts/bulk', () => {
  it('creates and updates by external_id and reports invalid entries by index', async () => {
    await create({ external_id: 'bulk-existing', name: 'Old', email: 'old@example.org' });
    const res = await app.request('POST', '/v1/contacts/bulk', {
      token: acme.serviceKey,
      body: {
        contacts: [
          { external_id: 'bulk-new-1', email: 'n1@example.org' },
          { external_id: 'bulk-existing', name: 'New' },
          { external_id: 'bulk-bad', email: 'broken' },
          'not an object',
          { external_id: 'bulk-new-2', language: 'fr' },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.created).toBe(2);
    expect(res.body.updated).toBe(1);
    expect(res.body.errors.map((e: { index: number }) => e.index)).toEqual([2, 3]);
    expect(res.body.errors[0].detail).toContain('email');
    const existing = await app.request('GET', '/v1/contacts?external_id=bulk-existing', { token: acme.serviceKey });
    // A field left out keeps its stored value.
    expect(existing.body).toMatchObject({ name: 'New', email: 'old@example.org' });
    expect((await app.request('GET', '/v1/contacts?external_id=bulk-bad', { token: acme.serviceKey })).status).toBe(
      404,
    );
  });

  it('accepts 500 contacts and refuses 501 or none with 422', async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ external_id: `many-${n}-${i}` }));
    const ok = await app.request('POST', '/v1/contacts/bulk', {
      token: globex.serviceKey,
      body: { contacts: many(500) },
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ created: 500, updated: 0, errors: [] });
    const tooMany = await app.request('POST', '/v1/contacts/bulk', {
      token: globex.serviceKey,
      body: { contacts: many(501) },
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail[0].loc).toEqual(['body', 'contacts']);
    expect(
      (await app.request('POST', '/v1/contacts/bulk', { token: globex.serviceKey, body: { contacts: [] } })).status,
    ).toBe(422);
  });

  it('answers 401 and 403', async () => {
    expect(
      (await app.request('POST', '/v1/contacts/bulk', { body: { contacts: [{ external_id: 'x' }] } })).status,
    ).toBe(401);
    const id = await acme.contact('bulk-token-holder');
    expect(
      (
        await app.request('POST', '/v1/contacts/bulk', {
          token: acme.tokenFor(id),
          body: { contacts: [{ external_id: 'x' }] },
        })
      ).status,
    ).toBe(403);
  });

  it('is rate limited per account: 20 at once, then one every 3 s, and not per key', async () => {
    const tenant = await createTenantFixture(app, 'Bulky');
    const call = () =>
      app.request('POST', '/v1/contacts/bulk', {
        token: tenant.serviceKey,
        body: { contacts: [{ external_id: 'r' }] },
      });
    for (let i = 0; i < 20; i++) expect((await call()).status).toBe(200);
    const limited = await call();
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBe(3);
    // Another tenant has its own budget.
    expect(
      (
        await app.request('POST', '/v1/contacts/bulk', {
          token: acme.serviceKey,
          body: { contacts: [{ external_id: 'r' }] },
        })
      ).status,
    ).toBe(200);
    clock.advance(2900);
    expect((await call()).status).toBe(429);
    clock.advance(110); // 3.01 s: one token (20 per minute), with room for float rounding of 1/3 per second
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(429);
  });

  it('honours a raised per-tenant limit', async () => {
    const tenant = await createTenantFixture(app, 'Raised');
    const { query } = await import('../../server/base/db/sql.ts');
    await query(
      app.runtime.orm.em.fork(),
      `INSERT INTO tenant_limits (tenant_id, name, value) VALUES ($1, 'rate:contacts_bulk', 60), ($1, 'rate:contacts_bulk:burst', 25)`,
      [tenant.tenantId],
    );
    const call = () =>
      app.request('POST', '/v1/contacts/bulk', {
        token: tenant.serviceKey,
        body: { contacts: [{ external_id: 'r' }] },
      });
    for (let i = 0; i < 25; i++) expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(429);
  });
});

describe('PUT /v1/contacts/{id}/language', () => {
  it('sets the language with the contact token (canonical BCP 47) and with a service key', async () => {
    const id = await acme.contact('lang-1');
    const res = await app.request('PUT', `/v1/contacts/${id}/language`, {
      body: { language: 'PT-br' },
      token: acme.tokenFor(id),
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, language: 'pt-BR' });
    const bySk = await app.request('PUT', `/v1/contacts/${id}/language`, {
      body: { language: 'fr' },
      token: acme.serviceKey,
    });
    expect(bySk.status).toBe(200);
    expect(bySk.body.language).toBe('fr');
  });

  it("answers 404 for another contact's token and across tenants", async () => {
    const id = await acme.contact('lang-2');
    const other = await acme.contact('lang-3');
    expect(
      (
        await app.request('PUT', `/v1/contacts/${id}/language`, {
          body: { language: 'de' },
          token: acme.tokenFor(other),
        })
      ).status,
    ).toBe(404);
    expect(
      (await app.request('PUT', `/v1/contacts/${id}/language`, { body: { language: 'de' }, token: globex.serviceKey }))
        .status,
    ).toBe(404);
  });

  it('answers 422 for a malformed tag and 401 without credential', async () => {
    const id = await acme.contact('lang-4');
    const res = await app.request('PUT', `/v1/contacts/${id}/language`, {
      body: { language: 'x_y_z!' },
      token: acme.tokenFor(id),
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'language']);
    expect((await app.request('PUT', `/v1/contacts/${id}/language`, { body: { language: 'de' } })).status).toBe(401);
  });

  it('answers 401 for an expired contact token', async () => {
    const id = await acme.contact('lang-5');
    const token = acme.tokenFor(id, 60);
    clock.advance(61_000);
    expect((await app.request('PUT', `/v1/contacts/${id}/language`, { body: { language: 'de' }, token })).status).toBe(
      401,
    );
  });
});
