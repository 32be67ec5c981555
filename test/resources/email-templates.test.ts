// Email templates: CRUD over type + brand + language slots, the branded preview (escaping, brand
// colour and logo, fallback to the default brand's template) and the variable-change report.
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
const MISSING_ID = '0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6';

beforeAll(async () => {
  app = await startTestApp();
  [acme, globex] = await Promise.all([createTenantFixture(app, 'Acme'), createTenantFixture(app, 'Globex')]);
  acmeAdmin = (await addUser(app, acme.tenantId, 'admin', true)).token;
  for (const fx of [acme, globex]) {
    for (const key of ['order_shipped', 'welcome', 'digest']) {
      const res = await app.request('POST', '/v1/notification-types', {
        token: fx.serviceKey,
        body: { key, variables: [{ name: 'name' }, { name: 'order_id' }] },
      });
      expect(res.status).toBe(201);
    }
  }
  const shop = await app.request('POST', '/v1/brandings', {
    token: acme.serviceKey,
    body: {
      key: 'shop',
      values: {
        name: 'Acme Shop',
        colour: '#ff6600',
        logo_url: 'https://cdn.acme.test/shop.png?v=2&size=big',
        tagline: 'Shop brand tagline',
      },
    },
  });
  expect(shop.status).toBe(201);
  const plain = await app.request('POST', '/v1/brandings', {
    token: acme.serviceKey,
    body: { key: 'plain', values: { name: 'Acme Plain', colour: '#00aa55', tagline: 'Plain tagline' } },
  });
  expect(plain.status).toBe(201);
  await app.request('PUT', '/v1/brandings/default/values', {
    token: acme.serviceKey,
    body: { values: { name: 'Acme', colour: '#111111', tagline: 'Default tagline' } },
  });
});
afterAll(async () => {
  await app?.close();
});

let counter = 0;
async function newType(fx: TenantFixture, variables: Array<{ name: string }> = [{ name: 'name' }]) {
  const key = `type_${++counter}`;
  const res = await app.request('POST', '/v1/notification-types', { token: fx.serviceKey, body: { key, variables } });
  expect(res.status).toBe(201);
  return key;
}

async function createTemplate(fx: TenantFixture, body: Record<string, unknown>) {
  const res = await app.request('POST', '/v1/email-templates', {
    token: fx.serviceKey,
    body: { subject: 'Subject', content: '<p>Body</p>', ...body },
  });
  expect(res.status).toBe(201);
  return res.body;
}

describe('POST /v1/email-templates', () => {
  it("creates a template in the default brand and the tenant's default language when none are named", async () => {
    const type = await newType(acme);
    const res = await app.request('POST', '/v1/email-templates', {
      token: acmeAdmin,
      body: { notification_type_key: type, subject: 'Hi {{ name }}', content: '<p>Hello {{ name }}</p>' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      notification_type_key: type,
      brand_key: 'default',
      language: 'en',
      subject: 'Hi {{ name }}',
      content: '<p>Hello {{ name }}</p>',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('takes a named brand and a language (canonicalised)', async () => {
    const type = await newType(acme);
    const template = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop', language: 'DE-at' });
    expect(template).toMatchObject({ brand_key: 'shop', language: 'de-AT' });
  });

  it('answers 409 when the type + brand + language slot is taken; another language is another slot', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type, brand_key: 'shop', language: 'en' });
    const dup = await app.request('POST', '/v1/email-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: type, brand_key: 'shop', subject: 's', content: 'c' },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
    await createTemplate(acme, { notification_type_key: type, brand_key: 'shop', language: 'fr' });
  });

  it('answers 422 for a type that is unknown or deleted, and accepts it again once restored', async () => {
    const unknown = await app.request('POST', '/v1/email-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: 'no_such_type', subject: 's', content: 'c' },
    });
    expectValidationError(unknown, ['body', 'notification_type_key']);
    const type = await newType(acme);
    await app.request('DELETE', `/v1/notification-types/${type}`, { token: acme.serviceKey });
    const deleted = await app.request('POST', '/v1/email-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: type, subject: 's', content: 'c' },
    });
    expectValidationError(deleted, ['body', 'notification_type_key']);
    expect(deleted.body.detail[0].msg).toContain('deleted');
    await app.request('POST', `/v1/notification-types/${type}/restore`, { token: acme.serviceKey });
    await createTemplate(acme, { notification_type_key: type });
  });

  it("answers 422 for a brand that does not exist (another tenant's included), naming every problem", async () => {
    await app.request('POST', '/v1/brandings', { token: globex.serviceKey, body: { key: 'globex-only' } });
    const res = await app.request('POST', '/v1/email-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: 'no_such_type', brand_key: 'globex-only', subject: 's', content: 'c' },
    });
    expectValidationError(res, ['body', 'brand_key']);
    expectValidationError(res, ['body', 'notification_type_key']);
  });

  it('answers 422 for empty content, a bad subject, template syntax errors and malformed keys', async () => {
    const post = (body: Record<string, unknown>) =>
      app.request('POST', '/v1/email-templates', {
        token: acme.serviceKey,
        body: { notification_type_key: 'welcome', subject: 's', content: 'c', ...body },
      });
    expectValidationError(await post({ content: '' }), ['body', 'content']);
    expectValidationError(await post({ content: '  \n ' }), ['body', 'content']);
    expectValidationError(await post({ subject: '' }), ['body', 'subject']);
    expectValidationError(await post({ subject: 'a\r\nBcc: x@example.test' }), ['body', 'subject']);
    expectValidationError(await post({ content: '<p>{{ name </p>' }), ['body', 'content']);
    expectValidationError(await post({ subject: '{{ name | no_such_filter }}' }), ['body', 'subject']);
    expectValidationError(await post({ content: '{% if name %}unclosed' }), ['body', 'content']);
    expectValidationError(await post({ notification_type_key: 'Bad Key' }), ['body', 'notification_type_key']);
    expectValidationError(await post({ brand_key: '-x' }), ['body', 'brand_key']);
    expectValidationError(await post({ language: 'english please' }), ['body', 'language']);
    expectValidationError(
      await app.request('POST', '/v1/email-templates', { token: acme.serviceKey, rawBody: '{"a"' }),
      ['body'],
    );
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', '/v1/email-templates', {
      notification_type_key: 'welcome',
      subject: 's',
      content: 'c',
    });
  });
});

describe('GET /v1/email-templates', () => {
  it("lists the tenant's templates, filtered by type, brand or language", async () => {
    const type = await newType(acme);
    const a = await createTemplate(acme, { notification_type_key: type, language: 'en' });
    const b = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop', language: 'de' });
    const all = await app.request('GET', '/v1/email-templates', { token: acme.ownerToken });
    expect(all.status).toBe(200);
    expect(all.body).toEqual(expect.arrayContaining([a, b]));
    const byType = await app.request('GET', `/v1/email-templates?notification_type_key=${type}`, {
      token: acme.serviceKey,
    });
    expect(byType.body).toEqual([a, b]);
    const byBrand = await app.request('GET', `/v1/email-templates?notification_type_key=${type}&brand_key=shop`, {
      token: acme.serviceKey,
    });
    expect(byBrand.body).toEqual([b]);
    const byLanguage = await app.request('GET', `/v1/email-templates?notification_type_key=${type}&language=EN`, {
      token: acme.serviceKey,
    });
    expect(byLanguage.body).toEqual([a]);
    const theirs = await app.request('GET', '/v1/email-templates', { token: globex.serviceKey });
    expect(theirs.body.map((t: { id: string }) => t.id)).not.toContain(a.id);
  });

  it('answers 422 for a malformed filter', async () => {
    expectValidationError(await app.request('GET', '/v1/email-templates?brand_key=NOPE', { token: acme.serviceKey }), [
      'query',
      'brand_key',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/email-templates');
  });
});

describe('GET /v1/email-templates/{template_id}', () => {
  it('answers the template', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    const res = await app.request('GET', `/v1/email-templates/${template.id}`, { token: acme.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(template);
  });

  it("answers 404 for an unknown id and another tenant's template", async () => {
    expect((await app.request('GET', `/v1/email-templates/${MISSING_ID}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex) });
    const res = await app.request('GET', `/v1/email-templates/${theirs.id}`, { token: acme.serviceKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Email template not found', code: 'not_found' });
  });

  it('answers 422 for an id that is not a UUID', async () => {
    expectValidationError(await app.request('GET', '/v1/email-templates/abc', { token: acme.serviceKey }), [
      'path',
      'template_id',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', `/v1/email-templates/${MISSING_ID}`);
  });
});

describe('PUT /v1/email-templates/{template_id}', () => {
  it('changes the fields given and keeps the rest', async () => {
    const template = await createTemplate(acme, {
      notification_type_key: await newType(acme),
      subject: 'Old',
      content: '<p>Old</p>',
    });
    const res = await app.request('PUT', `/v1/email-templates/${template.id}`, {
      token: acmeAdmin,
      body: { content: '<p>New {{ name }}</p>', language: 'fr' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...template,
      content: '<p>New {{ name }}</p>',
      language: 'fr',
      updated_at: expect.any(String),
    });
    expect((await app.request('GET', `/v1/email-templates/${template.id}`, { token: acme.serviceKey })).body).toEqual(
      res.body,
    );
  });

  it('moves a template to a free slot of another live type and brand', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    const target = await newType(acme);
    const res = await app.request('PUT', `/v1/email-templates/${template.id}`, {
      token: acme.serviceKey,
      body: { notification_type_key: target, brand_key: 'plain' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ notification_type_key: target, brand_key: 'plain' });
  });

  it('answers 409 when another template occupies the target slot', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type, language: 'en' });
    const other = await createTemplate(acme, { notification_type_key: type, language: 'es' });
    const res = await app.request('PUT', `/v1/email-templates/${other.id}`, {
      token: acme.serviceKey,
      body: { language: 'en' },
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('already_exists');
    expect(
      (await app.request('GET', `/v1/email-templates/${other.id}`, { token: acme.serviceKey })).body.language,
    ).toBe('es');
  });

  it('answers 422 for empty content, a syntax error, a deleted type or a missing brand', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    const put = (body: unknown) =>
      app.request('PUT', `/v1/email-templates/${template.id}`, { token: acme.serviceKey, body });
    expectValidationError(await put({ content: '' }), ['body', 'content']);
    expectValidationError(await put({ content: '{{ oops ' }), ['body', 'content']);
    const deleted = await newType(acme);
    await app.request('DELETE', `/v1/notification-types/${deleted}`, { token: acme.serviceKey });
    expectValidationError(await put({ notification_type_key: deleted }), ['body', 'notification_type_key']);
    expectValidationError(await put({ brand_key: 'no-such-brand' }), ['body', 'brand_key']);
    expectValidationError(await put({ subject: 42 }), ['body', 'subject']);
  });

  it("answers 404 for an unknown id and another tenant's template, which stays unchanged", async () => {
    expect(
      (
        await app.request('PUT', `/v1/email-templates/${MISSING_ID}`, {
          token: acme.serviceKey,
          body: { subject: 'x' },
        })
      ).status,
    ).toBe(404);
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex), subject: 'Theirs' });
    expect(
      (
        await app.request('PUT', `/v1/email-templates/${theirs.id}`, {
          token: acme.serviceKey,
          body: { subject: 'Mine' },
        })
      ).status,
    ).toBe(404);
    expect(
      (await app.request('GET', `/v1/email-templates/${theirs.id}`, { token: globex.serviceKey })).body.subject,
    ).toBe('Theirs');
  });

  it('answers 422 for an id that is not a UUID', async () => {
    expectValidationError(await app.request('PUT', '/v1/email-templates/1', { token: acme.serviceKey, body: {} }), [
      'path',
      'template_id',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'PUT', `/v1/email-templates/${MISSING_ID}`, { subject: 'x' });
  });
});

describe('DELETE /v1/email-templates/{template_id}', () => {
  it('deletes the template', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    const res = await app.request('DELETE', `/v1/email-templates/${template.id}`, { token: acme.ownerToken });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await app.request('GET', `/v1/email-templates/${template.id}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
  });

  it("answers 404 for an unknown id and another tenant's template, which stays", async () => {
    expect((await app.request('DELETE', `/v1/email-templates/${MISSING_ID}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex) });
    expect((await app.request('DELETE', `/v1/email-templates/${theirs.id}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
    expect((await app.request('GET', `/v1/email-templates/${theirs.id}`, { token: globex.serviceKey })).status).toBe(
      200,
    );
  });

  it('answers 422 for an id that is not a UUID', async () => {
    expectValidationError(await app.request('DELETE', '/v1/email-templates/x', { token: acme.serviceKey }), [
      'path',
      'template_id',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'DELETE', `/v1/email-templates/${MISSING_ID}`);
  });
});

describe('POST /v1/email-templates/render', () => {
  let type: string;
  beforeAll(async () => {
    type = await newType(acme, [{ name: 'name' }, { name: 'order_id' }]);
    await createTemplate(acme, {
      notification_type_key: type,
      brand_key: 'shop',
      subject: 'Order {{ order_id }} for {{ name }}',
      content: '<h1>Hello {{ name }}</h1><p>{{ tagline }}</p><p>{{ brand.name }} order {{ order_id }}</p>',
    });
    await createTemplate(acme, {
      notification_type_key: type,
      subject: 'Default: {{ name }}',
      content: '<p>Default template for {{ name }}; {{ tagline }}</p>',
    });
    await createTemplate(acme, {
      notification_type_key: type,
      language: 'de',
      subject: 'Hallo {{ name }}',
      content: '<p>Deutsch {{ name }}</p>',
    });
  });

  const render = (body: Record<string, unknown>, token = acme.serviceKey) =>
    app.request('POST', '/v1/email-templates/render', { token, body: { notification_type_key: type, ...body } });

  it("renders the brand's template in its layout, escaping variables, with the brand's colour and logo", async () => {
    const res = await render(
      { brand_key: 'shop', variables: { name: '<script>alert("x")</script>', order_id: 'A-1' } },
      acmeAdmin,
    );
    expect(res.status).toBe(200);
    expect(res.body.subject).toBe('Order A-1 for <script>alert("x")</script>');
    const html: string = res.body.html;
    expect(html).toContain('<h1>Hello &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</h1>');
    expect(html).not.toContain('<script>');
    expect(html).toContain('background-color:#ff6600');
    expect(html).toContain('src="https://cdn.acme.test/shop.png?v=2&amp;size=big"');
    expect(html).toContain('Shop brand tagline');
    expect(html).toContain('Acme Shop order A-1');
    expect(html).toMatch(/^<!DOCTYPE html/);
    expect(res.body.text).toContain('Hello <script>alert("x")</script>');
    expect(res.body.text).not.toContain('<h1>');
  });

  it("falls back to the default brand's template, rendered with the named brand's values", async () => {
    const res = await render({ brand_key: 'plain', variables: { name: 'Ann' } });
    expect(res.status).toBe(200);
    expect(res.body.subject).toBe('Default: Ann');
    expect(res.body.html).toContain('Default template for Ann; Plain tagline');
    expect(res.body.html).toContain('background-color:#00aa55');
    expect(res.body.html).toContain('Acme Plain');
  });

  it('uses the default brand when none is named, and variables win over brand values', async () => {
    const res = await render({ variables: { name: 'Bo', tagline: 'from the event' } });
    expect(res.status).toBe(200);
    expect(res.body.html).toContain('Default template for Bo; from the event');
    expect(res.body.html).toContain('background-color:#111111');
  });

  it("picks the requested language's template, else the tenant default language's", async () => {
    expect((await render({ language: 'de', variables: { name: 'Udo' } })).body.subject).toBe('Hallo Udo');
    expect((await render({ language: 'de-CH', variables: { name: 'Udo' } })).body.subject).toBe('Hallo Udo');
    expect((await render({ language: 'ja', variables: { name: 'Aiko' } })).body.subject).toBe('Default: Aiko');
  });

  it('fills {{ contact.* }} from the sample contact', async () => {
    const contactType = await newType(acme);
    await createTemplate(acme, {
      notification_type_key: contactType,
      subject: 'For {{ contact.name }}',
      content: '<p>{{ contact.email }}</p>',
    });
    const res = await app.request('POST', '/v1/email-templates/render', {
      token: acme.serviceKey,
      body: { notification_type_key: contactType, contact: { name: 'Ann', email: 'ann@example.test' } },
    });
    expect(res.status).toBe(200);
    expect(res.body.subject).toBe('For Ann');
    expect(res.body.html).toContain('ann@example.test');
  });

  it('answers 422 naming the unfilled slot', async () => {
    const res = await render({ brand_key: 'shop', variables: { name: 'Ann' } });
    expectValidationError(res, ['body', 'variables', 'order_id']);
    expect(res.body.detail[0].msg).toContain('order_id');
  });

  it('answers 422 for a brand that does not exist', async () => {
    expectValidationError(await render({ brand_key: 'no-such-brand', variables: { name: 'x' } }), [
      'body',
      'brand_key',
    ]);
    expectValidationError(
      await app.request('POST', '/v1/email-templates/render', {
        token: globex.serviceKey,
        body: { notification_type_key: type, brand_key: 'shop' },
      }),
      ['body', 'brand_key'],
    );
  });

  it('answers 422 when no template resolves', async () => {
    const bare = await newType(acme);
    expectValidationError(await render({ notification_type_key: bare }), ['body', 'notification_type_key']);
    // Another tenant's templates never resolve.
    expectValidationError(
      await app.request('POST', '/v1/email-templates/render', {
        token: globex.serviceKey,
        body: { notification_type_key: type },
      }),
      ['body', 'notification_type_key'],
    );
  });

  it('answers 422 for malformed input', async () => {
    expectValidationError(await render({ variables: 'name=Ann' }), ['body', 'variables']);
    expectValidationError(await render({ notification_type_key: 'NO' }), ['body', 'notification_type_key']);
    expectValidationError(await render({ language: '12' }), ['body', 'language']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', '/v1/email-templates/render', {
      notification_type_key: type,
      variables: { name: 'x', order_id: 1 },
    });
  });
});

describe('GET /v1/email-templates/affected-by/{notification_type_key}', () => {
  it('lists templates that refer to variables the type no longer declares', async () => {
    const type = await newType(acme, [{ name: 'order_id' }, { name: 'total' }]);
    const fine = await createTemplate(acme, {
      notification_type_key: type,
      brand_key: 'shop',
      subject: '{{ order_id }} {{ brand.name }}',
      content: '{{ total }} {{ tagline }} {{ contact.name }} {% for i in (1..2) %}{{ i }}{% endfor %}',
    });
    const stale = await createTemplate(acme, {
      notification_type_key: type,
      subject: '{{ order_id }}',
      content: '{{ tracking_url }} {{ carrier.name }}',
    });
    const first = await app.request('GET', `/v1/email-templates/affected-by/${type}`, { token: acmeAdmin });
    expect(first.status).toBe(200);
    expect(first.body).toEqual([
      { template_id: stale.id, brand_key: 'default', language: 'en', missing_variables: ['carrier', 'tracking_url'] },
    ]);
    await app.request('PUT', `/v1/notification-types/${type}/variables`, {
      token: acme.serviceKey,
      body: { variables: [{ name: 'total' }] },
    });
    const after = await app.request('GET', `/v1/email-templates/affected-by/${type}`, { token: acme.serviceKey });
    expect(after.body).toEqual([
      {
        template_id: stale.id,
        brand_key: 'default',
        language: 'en',
        missing_variables: ['carrier', 'order_id', 'tracking_url'],
      },
      { template_id: fine.id, brand_key: 'shop', language: 'en', missing_variables: ['order_id'] },
    ]);
  });

  it('answers an empty list for a type whose templates are all covered', async () => {
    const type = await newType(acme, [{ name: 'name' }]);
    await createTemplate(acme, { notification_type_key: type, subject: '{{ name }}', content: '<p>{{ name }}</p>' });
    const res = await app.request('GET', `/v1/email-templates/affected-by/${type}`, { token: acme.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it("answers 422 for a key that is malformed or not a notification type (another tenant's included)", async () => {
    expectValidationError(
      await app.request('GET', '/v1/email-templates/affected-by/Not-OK', { token: acme.serviceKey }),
      ['path', 'notification_type_key'],
    );
    expectValidationError(
      await app.request('GET', '/v1/email-templates/affected-by/no_such_type', { token: acme.serviceKey }),
      ['path', 'notification_type_key'],
    );
    const theirs = await newType(globex);
    expectValidationError(
      await app.request('GET', `/v1/email-templates/affected-by/${theirs}`, { token: acme.serviceKey }),
      ['path', 'notification_type_key'],
    );
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/email-templates/affected-by/welcome');
  });
});
