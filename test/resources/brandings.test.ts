// Brands: the default brand (never deleted), values and sender settings, the plan's brand cap (402).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  addUser,
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  sql,
  type TenantFixture,
} from '../support/fixtures.ts';
import { startSmtpPeer } from '../support/smtp-peer.ts';
import { setTenantLimit } from '../../server/resources/tenant-limits.ts';
import { query } from '../../server/base/db/sql.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;
let acmeAdmin: string;

beforeAll(async () => {
  app = await startTestApp();
  [acme, globex] = await Promise.all([createTenantFixture(app, 'Acme'), createTenantFixture(app, 'Globex')]);
  acmeAdmin = (await addUser(app, acme.tenantId, 'admin', true)).token;
});
afterAll(async () => {
  await app?.close();
});

let counter = 0;
const uniqueKey = () => `brand-${++counter}`;

async function createBrand(fx: TenantFixture, body: Record<string, unknown> = {}) {
  const res = await app.request('POST', '/v1/brandings', { token: fx.serviceKey, body: { key: uniqueKey(), ...body } });
  expect(res.status).toBe(201);
  return res.body;
}

describe('POST /v1/brandings', () => {
  it('creates a brand with values (free keys too) and sender settings', async () => {
    const res = await app.request('POST', '/v1/brandings', {
      token: acmeAdmin,
      body: {
        key: 'premium',
        values: {
          name: 'Acme Premium',
          colour: '#AA3300',
          logo_url: 'https://cdn.acme.test/premium.png',
          support_email: 'help@acme.test',
          tier: 2,
        },
        sender: { from_name: 'Acme Premium', from_email: 'Premium@Acme.test', reply_to: 'help@acme.test' },
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      key: 'premium',
      values: {
        name: 'Acme Premium',
        colour: '#AA3300',
        logo_url: 'https://cdn.acme.test/premium.png',
        support_email: 'help@acme.test',
        tier: 2,
      },
      sender: { from_name: 'Acme Premium', from_email: 'premium@acme.test', reply_to: 'help@acme.test' },
      is_default: false,
      warnings: [],
    });
  });

  it('creates a bare brand with empty values and sender', async () => {
    const res = await app.request('POST', '/v1/brandings', { token: acme.serviceKey, body: { key: 'bare' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      key: 'bare',
      values: {},
      sender: { from_name: null, from_email: null, reply_to: null },
      is_default: false,
      warnings: [],
    });
  });

  it('answers 409 for a key the tenant already has (the default brand included)', async () => {
    const brand = await createBrand(acme);
    const dup = await app.request('POST', '/v1/brandings', { token: acme.serviceKey, body: { key: brand.key } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
    expect(
      (await app.request('POST', '/v1/brandings', { token: acme.serviceKey, body: { key: 'default' } })).status,
    ).toBe(409);
    // Another tenant may use the same key.
    expect(
      (await app.request('POST', '/v1/brandings', { token: globex.serviceKey, body: { key: brand.key } })).status,
    ).toBe(201);
  });

  it("answers 402 once the plan's cap is reached (the default brand counts), and again after it is raised", async () => {
    const fx = await createTenantFixture(app, 'Capped');
    const em = app.runtime.orm.em.fork();
    await setTenantLimit(em, fx.tenantId, 'brands', 3);
    await createBrand(fx);
    await createBrand(fx);
    const over = await app.request('POST', '/v1/brandings', { token: fx.serviceKey, body: { key: 'one-too-many' } });
    expect(over.status).toBe(402);
    expect(over.body).toEqual({ detail: expect.stringContaining('3 brand'), code: 'plan_limit_reached' });
    await setTenantLimit(em, fx.tenantId, 'brands', 4);
    expect(
      (await app.request('POST', '/v1/brandings', { token: fx.serviceKey, body: { key: 'one-too-many' } })).status,
    ).toBe(201);
  });

  it('keeps to the cap under concurrent creation', async () => {
    const fx = await createTenantFixture(app, 'Racing');
    await setTenantLimit(app.runtime.orm.em.fork(), fx.tenantId, 'brands', 3);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        app.request('POST', '/v1/brandings', { token: fx.serviceKey, body: { key: `race-${i}` } }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(2);
    expect(results.filter((r) => r.status === 402)).toHaveLength(4);
  });

  it('has a default cap of 10 brands', async () => {
    const fx = await createTenantFixture(app, 'Ten');
    for (let i = 0; i < 9; i++) await createBrand(fx);
    expect(
      (await app.request('POST', '/v1/brandings', { token: fx.serviceKey, body: { key: 'eleventh' } })).status,
    ).toBe(402);
  });

  it('answers 422 for a malformed key, colour, logo URL, value name, sender or body', async () => {
    const post = (body: unknown) => app.request('POST', '/v1/brandings', { token: acme.serviceKey, body });
    expectValidationError(await post({ key: 'Not OK' }), ['body', 'key']);
    expectValidationError(await post({}), ['body', 'key']);
    expectValidationError(await post({ key: 'x', values: { colour: 'red; background:url(x)' } }), [
      'body',
      'values',
      'colour',
    ]);
    expectValidationError(await post({ key: 'x', values: { logo_url: 'javascript:alert(1)' } }), [
      'body',
      'values',
      'logo_url',
    ]);
    expectValidationError(await post({ key: 'x', values: { 'bad-name': 1 } }), ['body', 'values', 'bad-name']);
    expectValidationError(await post({ key: 'x', values: { __secret: 1 } }), ['body', 'values', '__secret']);
    expectValidationError(await post({ key: 'x', values: { contact: 'x' } }), ['body', 'values', 'contact']);
    expectValidationError(await post({ key: 'x', sender: { from_email: 'not an email' } }), [
      'body',
      'sender',
      'from_email',
    ]);
    expectValidationError(await post({ key: 'x', sender: { from_name: 'Evil\r\nBcc: victim@example.test' } }), [
      'body',
      'sender',
      'from_name',
    ]);
    expectValidationError(await app.request('POST', '/v1/brandings', { token: acme.serviceKey, rawBody: '[' }), [
      'body',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', '/v1/brandings', { key: 'never' });
  });
});

describe('GET /v1/brandings', () => {
  it("lists the tenant's brands, the default one (created with the tenant) first", async () => {
    const fx = await createTenantFixture(app, 'Listing Co');
    const brand = await createBrand(fx, { values: { name: 'Second' } });
    const res = await app.request('GET', '/v1/brandings', { token: fx.ownerToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        key: 'default',
        values: { name: 'Listing Co' },
        sender: { from_name: null, from_email: null, reply_to: null },
        is_default: true,
        warnings: [],
      },
      brand,
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/brandings');
  });
});

describe('GET /v1/brandings/{key}', () => {
  it('answers the brand', async () => {
    const brand = await createBrand(acme, { values: { name: 'Got' } });
    const res = await app.request('GET', `/v1/brandings/${brand.key}`, { token: acme.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(brand);
  });

  it("answers 404 for an unknown key and another tenant's brand", async () => {
    expect((await app.request('GET', '/v1/brandings/nope', { token: acme.serviceKey })).status).toBe(404);
    const theirs = await createBrand(globex);
    const res = await app.request('GET', `/v1/brandings/${theirs.key}`, { token: acme.serviceKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Branding not found', code: 'not_found' });
  });

  it('answers 422 for a malformed key', async () => {
    expectValidationError(await app.request('GET', '/v1/brandings/%20x', { token: acme.serviceKey }), ['path', 'key']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/brandings/default');
  });
});

describe('DELETE /v1/brandings/{key}', () => {
  it('deletes a brand and its templates', async () => {
    const brand = await createBrand(acme);
    await app.request('POST', '/v1/notification-types', { token: acme.serviceKey, body: { key: 'brand_delete_type' } });
    const template = await app.request('POST', '/v1/email-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: 'brand_delete_type', brand_key: brand.key, subject: 's', content: 'c' },
    });
    expect(template.status).toBe(201);
    const res = await app.request('DELETE', `/v1/brandings/${brand.key}`, { token: acmeAdmin });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await app.request('GET', `/v1/brandings/${brand.key}`, { token: acme.serviceKey })).status).toBe(404);
    expect(
      (await app.request('GET', `/v1/email-templates/${template.body.id}`, { token: acme.serviceKey })).status,
    ).toBe(404);
  });

  it('answers 409 default_brand for the default brand, which stays', async () => {
    const res = await app.request('DELETE', '/v1/brandings/default', { token: acme.ownerToken });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: 'The default brand cannot be deleted', code: 'default_brand' });
    expect((await app.request('GET', '/v1/brandings/default', { token: acme.serviceKey })).status).toBe(200);
  });

  it("answers 404 for an unknown key and another tenant's brand, which stays", async () => {
    expect((await app.request('DELETE', '/v1/brandings/nope', { token: acme.serviceKey })).status).toBe(404);
    const theirs = await createBrand(globex);
    expect((await app.request('DELETE', `/v1/brandings/${theirs.key}`, { token: acme.serviceKey })).status).toBe(404);
    expect((await app.request('GET', `/v1/brandings/${theirs.key}`, { token: globex.serviceKey })).status).toBe(200);
  });

  it('answers 422 for a malformed key', async () => {
    expectValidationError(await app.request('DELETE', '/v1/brandings/UPPER', { token: acme.serviceKey }), [
      'path',
      'key',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    const brand = await createBrand(acme);
    await expectManagementOnly(app, acme, 'DELETE', `/v1/brandings/${brand.key}`);
    expect((await app.request('GET', `/v1/brandings/${brand.key}`, { token: acme.serviceKey })).status).toBe(200);
  });
});

describe('PUT /v1/brandings/{key}/values', () => {
  it('replaces the values, the default brand included', async () => {
    const brand = await createBrand(acme, { values: { name: 'Old', legacy: true } });
    const res = await app.request('PUT', `/v1/brandings/${brand.key}/values`, {
      token: acme.serviceKey,
      body: { values: { name: 'New', colour: '#123', address: { city: 'Springfield' } } },
    });
    expect(res.status).toBe(200);
    expect(res.body.values).toEqual({ name: 'New', colour: '#123', address: { city: 'Springfield' } });
    const def = await app.request('PUT', '/v1/brandings/default/values', {
      token: acme.ownerToken,
      body: { values: { name: 'Acme Inc' } },
    });
    expect(def.body).toMatchObject({ key: 'default', is_default: true, values: { name: 'Acme Inc' } });
  });

  it("answers 404 for an unknown key and another tenant's brand", async () => {
    expect(
      (await app.request('PUT', '/v1/brandings/nope/values', { token: acme.serviceKey, body: { values: {} } })).status,
    ).toBe(404);
    const theirs = await createBrand(globex, { values: { name: 'Theirs' } });
    expect(
      (
        await app.request('PUT', `/v1/brandings/${theirs.key}/values`, {
          token: acme.serviceKey,
          body: { values: { name: 'Mine' } },
        })
      ).status,
    ).toBe(404);
    expect(
      (await app.request('GET', `/v1/brandings/${theirs.key}`, { token: globex.serviceKey })).body.values.name,
    ).toBe('Theirs');
  });

  it('answers 422 for malformed values', async () => {
    expectValidationError(
      await app.request('PUT', '/v1/brandings/default/values', { token: acme.serviceKey, body: {} }),
      ['body', 'values'],
    );
    expectValidationError(
      await app.request('PUT', '/v1/brandings/default/values', {
        token: acme.serviceKey,
        body: { values: { colour: '#12345' } },
      }),
      ['body', 'values', 'colour'],
    );
    expectValidationError(
      await app.request('PUT', '/v1/brandings/default/values', { token: acme.serviceKey, body: { values: [] } }),
      ['body', 'values'],
    );
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'PUT', '/v1/brandings/default/values', { values: {} });
  });
});

describe('PUT /v1/brandings/{key}/sender', () => {
  it('replaces the sender settings', async () => {
    const brand = await createBrand(acme, {
      sender: { from_name: 'Old', from_email: 'old@acme.test', reply_to: 'old@acme.test' },
    });
    const res = await app.request('PUT', `/v1/brandings/${brand.key}/sender`, {
      token: acmeAdmin,
      body: { from_name: 'Acme', from_email: 'news@acme.test' },
    });
    expect(res.status).toBe(200);
    expect(res.body.sender).toEqual({ from_name: 'Acme', from_email: 'news@acme.test', reply_to: null });
    const [row] = await query<{ sender: unknown }>(
      app.runtime.orm.em.fork(),
      `SELECT sender FROM brands WHERE tenant_id = $1 AND key = $2`,
      [acme.tenantId, brand.key],
    );
    expect(row!.sender).toEqual({ from_name: 'Acme', from_email: 'news@acme.test', reply_to: null });
  });

  it("answers 404 for an unknown key and another tenant's brand", async () => {
    expect((await app.request('PUT', '/v1/brandings/nope/sender', { token: acme.serviceKey, body: {} })).status).toBe(
      404,
    );
    const theirs = await createBrand(globex);
    expect(
      (
        await app.request('PUT', `/v1/brandings/${theirs.key}/sender`, {
          token: acme.serviceKey,
          body: { from_name: 'x' },
        })
      ).status,
    ).toBe(404);
  });

  it('answers 422 for a malformed address or a header-breaking name', async () => {
    const put = (body: unknown) => app.request('PUT', '/v1/brandings/default/sender', { token: acme.serviceKey, body });
    expectValidationError(await put({ from_email: 'nope' }), ['body', 'from_email']);
    expectValidationError(await put({ reply_to: 'a@' }), ['body', 'reply_to']);
    expectValidationError(await put({ from_name: 'a\nb' }), ['body', 'from_name']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'PUT', '/v1/brandings/default/sender', { from_name: 'x' });
  });
});

describe("a brand's From address and the install's default SMTP", () => {
  it('warns on the brand when the install SMTP will send from its own address instead, as it does', async () => {
    const smtp = await startSmtpPeer();
    const install = await startTestApp({ config: { smtpUrl: smtp.url, mailFrom: 'Herald <herald@demo.test>' } });
    try {
      const fx = await createTenantFixture(install, 'Acme Shop');
      const api = async (method: string, path: string, body?: unknown) => {
        const res = await install.request(method, path, { token: fx.serviceKey, body });
        expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
        return res.body;
      };
      const created = await api('POST', '/v1/brandings', {
        key: 'shop',
        values: { name: 'Acme Shop' },
        sender: { from_name: 'Acme Shop', from_email: 'shop@mail.acme.example' },
      });
      const warning =
        "sender.from_email shop@mail.acme.example is not used: this tenant's email goes through the install's default SMTP, " +
        "which sends from a brand's address only on a verified sender domain of the tenant; its email comes from " +
        'herald@demo.test, with shop@mail.acme.example as Reply-To. Verify mail.acme.example as a sender domain, ' +
        "or set the tenant's own email transport";
      expect(created.warnings).toEqual([warning]);
      expect((await api('GET', '/v1/brandings/shop')).warnings).toEqual([warning]);
      expect((await api('GET', '/v1/brandings')).map((b: { warnings: string[] }) => b.warnings)).toEqual([
        [],
        [warning],
      ]);

      // What the warning says is what a send does.
      await api('POST', '/v1/notification-types', { key: 'receipt', channel_defaults: { email: true } });
      await api('POST', '/v1/email-templates', {
        notification_type_key: 'receipt',
        subject: 'Receipt',
        content: '<p>hi</p>',
      });
      await api('POST', '/v1/notifications', {
        type: 'receipt',
        brand: 'shop',
        recipients: [{ external_id: 'buyer', email: 'buyer@example.test' }],
      });
      const mail = await smtp.waitFor((m) => m.envelope.to.includes('buyer@example.test'), 20_000);
      expect(mail.parsed.from?.value[0]).toEqual({ address: 'herald@demo.test', name: 'Acme Shop' });
      expect(mail.parsed.replyTo?.value[0]?.address).toBe('shop@mail.acme.example');

      // A verified sender domain lets the brand's address through: no warning.
      await api('POST', '/v1/sender-domains', { domain: 'mail.acme.example' });
      await sql(install, `UPDATE sender_domains SET status = 'verified' WHERE tenant_id = $1`, [fx.tenantId]);
      expect((await api('GET', '/v1/brandings/shop')).warnings).toEqual([]);

      // The tenant's own transport sends from any address the brand sets: no warning either.
      const other = await api('PUT', '/v1/brandings/shop/sender', { from_email: 'shop@elsewhere.example' });
      expect(other.warnings).toHaveLength(1);
      await api('PUT', '/v1/email-transport', {
        host: smtp.host,
        port: smtp.port,
        secure: false,
        from_email: 'robot@acme.example',
      });
      expect((await api('GET', '/v1/brandings/shop')).warnings).toEqual([]);
    } finally {
      await install.close();
      await smtp.close();
    }
  });
});
