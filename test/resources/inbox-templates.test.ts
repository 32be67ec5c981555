// Inbox templates: CRUD over type + brand + language slots, like email templates.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  addUser,
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  type TenantFixture,
} from '../support/fixtures.ts';
import { renderInbox } from '../../server/channels/render.ts';
import { TemplateError } from '../../server/base/template-engine.ts';
import { findBrand, renderContext, resolveTemplate } from '../../server/channels/resolve.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;
let acmeAdmin: string;
const MISSING_ID = '0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6';

beforeAll(async () => {
  app = await startTestApp();
  [acme, globex] = await Promise.all([createTenantFixture(app, 'Acme'), createTenantFixture(app, 'Globex')]);
  acmeAdmin = (await addUser(app, acme.tenantId, 'admin', true)).token;
  expect(
    (
      await app.request('POST', '/v1/brandings', {
        token: acme.serviceKey,
        body: { key: 'shop', values: { name: 'Acme Shop' } },
      })
    ).status,
  ).toBe(201);
});
afterAll(async () => {
  await app?.close();
});

let counter = 0;
async function newType(fx: TenantFixture) {
  const key = `type_${++counter}`;
  expect(
    (
      await app.request('POST', '/v1/notification-types', {
        token: fx.serviceKey,
        body: { key, variables: [{ name: 'name' }] },
      })
    ).status,
  ).toBe(201);
  return key;
}

async function createTemplate(fx: TenantFixture, body: Record<string, unknown>) {
  const res = await app.request('POST', '/v1/inbox-templates', {
    token: fx.serviceKey,
    body: { title: 'Title', content: 'Body', ...body },
  });
  expect(res.status).toBe(201);
  return res.body;
}

describe('POST /v1/inbox-templates', () => {
  it('creates a template with title, content and action URL; default brand and language when not named', async () => {
    const type = await newType(acme);
    const res = await app.request('POST', '/v1/inbox-templates', {
      token: acmeAdmin,
      body: {
        notification_type_key: type,
        title: 'Shipped: {{ name }}',
        content: 'Your order is on its way, {{ name }}',
        action_url: 'https://acme.test/orders/{{ name }}',
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      notification_type_key: type,
      brand_key: 'default',
      language: 'en',
      title: 'Shipped: {{ name }}',
      content: 'Your order is on its way, {{ name }}',
      action_url: 'https://acme.test/orders/{{ name }}',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('is what the delivery side resolves and renders', async () => {
    const type = await newType(acme);
    await createTemplate(acme, {
      notification_type_key: type,
      brand_key: 'shop',
      title: '{{ brand.name }} for {{ name }}',
      content: 'Hi {{ name }} & co',
    });
    const em = app.runtime.orm.em.fork();
    const brand = (await findBrand(em, acme.tenantId, 'shop'))!;
    const resolved = await resolveTemplate(em, 'inbox', {
      tenantId: acme.tenantId,
      typeKey: type,
      brand,
      language: 'en',
    });
    expect(renderInbox(resolved!.template, renderContext(brand, { name: 'Ann' }, null))).toEqual({
      title: 'Acme Shop for Ann',
      body: 'Hi Ann & co',
      action_url: null,
    });
  });

  it('never renders a file into a template stored before the file tags were refused', async () => {
    // Written straight to the table, as a template saved by an earlier version could be.
    const stored = {
      id: 'a1b2c3d4-0000-7000-8000-000000000001',
      notification_type_key: 'welcome',
      brand_key: 'default',
      language: 'en',
      title: 't',
      content: "{% include 'package.json' %}",
      action_url: null,
    };
    expect(() => renderInbox(stored, {})).toThrow(TemplateError);
    expect(() => renderInbox({ ...stored, content: "{% assign f = 'package.json' %}{% include f %}" }, {})).toThrow(
      /include.*not available/,
    );
  });

  it('answers 409 when the type + brand + language slot is taken', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type, brand_key: 'shop' });
    const dup = await app.request('POST', '/v1/inbox-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: type, brand_key: 'shop', content: 'x' },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
    await createTemplate(acme, { notification_type_key: type, brand_key: 'shop', language: 'pt-BR' });
  });

  it('answers 422 for an unknown or deleted type and a missing brand', async () => {
    expectValidationError(
      await app.request('POST', '/v1/inbox-templates', {
        token: acme.serviceKey,
        body: { notification_type_key: 'nope', content: 'x' },
      }),
      ['body', 'notification_type_key'],
    );
    const type = await newType(acme);
    await app.request('DELETE', `/v1/notification-types/${type}`, { token: acme.serviceKey });
    expectValidationError(
      await app.request('POST', '/v1/inbox-templates', {
        token: acme.serviceKey,
        body: { notification_type_key: type, content: 'x' },
      }),
      ['body', 'notification_type_key'],
    );
    const live = await newType(acme);
    expectValidationError(
      await app.request('POST', '/v1/inbox-templates', {
        token: acme.serviceKey,
        body: { notification_type_key: live, brand_key: 'ghost', content: 'x' },
      }),
      ['body', 'brand_key'],
    );
  });

  it('answers 422 for empty content, syntax errors, a script URL and malformed input', async () => {
    const post = (body: Record<string, unknown>) =>
      app.request('POST', '/v1/inbox-templates', {
        token: acme.serviceKey,
        body: { notification_type_key: 'welcome', content: 'c', ...body },
      });
    expectValidationError(await post({ content: '' }), ['body', 'content']);
    expectValidationError(await post({ content: undefined }), ['body', 'content']);
    expectValidationError(await post({ title: '{{ x ' }), ['body', 'title']);
    expectValidationError(await post({ action_url: '{% for %}' }), ['body', 'action_url']);
    expectValidationError(await post({ action_url: 'javascript:alert(1)' }), ['body', 'action_url']);
    expectValidationError(await post({ notification_type_key: 'UPPER' }), ['body', 'notification_type_key']);
    expectValidationError(await app.request('POST', '/v1/inbox-templates', { token: acme.serviceKey, rawBody: 'x' }), [
      'body',
    ]);
  });

  it('answers 422 for the tags that would read a file (include, render, layout)', async () => {
    const post = (body: Record<string, unknown>) =>
      app.request('POST', '/v1/inbox-templates', {
        token: acme.serviceKey,
        body: { notification_type_key: 'welcome', content: 'c', ...body },
      });
    expectValidationError(await post({ content: "{% include 'package.json' %}" }), ['body', 'content']);
    expectValidationError(await post({ title: "{% render 'package.json' %}" }), ['body', 'title']);
    expectValidationError(await post({ content: "{% layout 'package.json' %}x" }), ['body', 'content']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', '/v1/inbox-templates', {
      notification_type_key: 'welcome',
      content: 'c',
    });
  });
});

describe('GET /v1/inbox-templates', () => {
  it("lists the tenant's templates only, filterable", async () => {
    const type = await newType(acme);
    const a = await createTemplate(acme, { notification_type_key: type });
    const b = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop' });
    const res = await app.request('GET', `/v1/inbox-templates?notification_type_key=${type}`, {
      token: acme.ownerToken,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([a, b]);
    const all = await app.request('GET', '/v1/inbox-templates', { token: acme.serviceKey });
    expect(all.body).toEqual(expect.arrayContaining([a, b]));
    const theirs = await app.request('GET', '/v1/inbox-templates', { token: globex.serviceKey });
    expect(theirs.body.map((t: { id: string }) => t.id)).not.toContain(a.id);
  });

  it('answers 422 for a malformed filter', async () => {
    expectValidationError(await app.request('GET', '/v1/inbox-templates?language=x', { token: acme.serviceKey }), [
      'query',
      'language',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/inbox-templates');
  });
});

describe('GET /v1/inbox-templates/{template_id}', () => {
  it('answers the template', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    const res = await app.request('GET', `/v1/inbox-templates/${template.id}`, { token: acme.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(template);
  });

  it("answers 404 for an unknown id, another tenant's template, and an email template's id", async () => {
    expect((await app.request('GET', `/v1/inbox-templates/${MISSING_ID}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex) });
    const res = await app.request('GET', `/v1/inbox-templates/${theirs.id}`, { token: acme.serviceKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Inbox template not found', code: 'not_found' });
    const email = await app.request('POST', '/v1/email-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: await newType(acme), subject: 's', content: 'c' },
    });
    expect((await app.request('GET', `/v1/inbox-templates/${email.body.id}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
  });

  it('answers 422 for an id that is not a UUID', async () => {
    expectValidationError(await app.request('GET', '/v1/inbox-templates/123', { token: acme.serviceKey }), [
      'path',
      'template_id',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', `/v1/inbox-templates/${MISSING_ID}`);
  });
});

describe('PUT /v1/inbox-templates/{template_id}', () => {
  it('changes the fields given, and clears the action URL with null', async () => {
    const template = await createTemplate(acme, {
      notification_type_key: await newType(acme),
      action_url: 'https://acme.test',
    });
    const res = await app.request('PUT', `/v1/inbox-templates/${template.id}`, {
      token: acmeAdmin,
      body: { title: 'New title', action_url: null },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...template, title: 'New title', action_url: null, updated_at: expect.any(String) });
  });

  it('answers 409 when another template occupies the target slot', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type });
    const other = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop' });
    const res = await app.request('PUT', `/v1/inbox-templates/${other.id}`, {
      token: acme.serviceKey,
      body: { brand_key: 'default' },
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('already_exists');
  });

  it('answers 422 for empty content, a syntax error or a missing brand', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    const put = (body: unknown) =>
      app.request('PUT', `/v1/inbox-templates/${template.id}`, { token: acme.serviceKey, body });
    expectValidationError(await put({ content: '' }), ['body', 'content']);
    expectValidationError(await put({ title: '{% endif %}' }), ['body', 'title']);
    expectValidationError(await put({ brand_key: 'ghost' }), ['body', 'brand_key']);
  });

  it("answers 404 for an unknown id and another tenant's template", async () => {
    expect(
      (await app.request('PUT', `/v1/inbox-templates/${MISSING_ID}`, { token: acme.serviceKey, body: { title: 'x' } }))
        .status,
    ).toBe(404);
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex), title: 'Theirs' });
    expect(
      (
        await app.request('PUT', `/v1/inbox-templates/${theirs.id}`, {
          token: acme.serviceKey,
          body: { title: 'Mine' },
        })
      ).status,
    ).toBe(404);
    expect(
      (await app.request('GET', `/v1/inbox-templates/${theirs.id}`, { token: globex.serviceKey })).body.title,
    ).toBe('Theirs');
  });

  it('answers 422 for an id that is not a UUID', async () => {
    expectValidationError(await app.request('PUT', '/v1/inbox-templates/zz', { token: acme.serviceKey, body: {} }), [
      'path',
      'template_id',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'PUT', `/v1/inbox-templates/${MISSING_ID}`, { title: 'x' });
  });
});

describe('DELETE /v1/inbox-templates/{template_id}', () => {
  it('deletes the template', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    expect((await app.request('DELETE', `/v1/inbox-templates/${template.id}`, { token: acme.ownerToken })).status).toBe(
      204,
    );
    expect((await app.request('GET', `/v1/inbox-templates/${template.id}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
  });

  it("answers 404 for an unknown id and another tenant's template, which stays", async () => {
    expect((await app.request('DELETE', `/v1/inbox-templates/${MISSING_ID}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex) });
    expect((await app.request('DELETE', `/v1/inbox-templates/${theirs.id}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
    expect((await app.request('GET', `/v1/inbox-templates/${theirs.id}`, { token: globex.serviceKey })).status).toBe(
      200,
    );
  });

  it('answers 422 for an id that is not a UUID', async () => {
    expectValidationError(await app.request('DELETE', '/v1/inbox-templates/nope', { token: acme.serviceKey }), [
      'path',
      'template_id',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'DELETE', `/v1/inbox-templates/${MISSING_ID}`);
  });
});
