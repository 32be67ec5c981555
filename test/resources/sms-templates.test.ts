// SMS templates: CRUD over type + brand + language slots like email templates, the preview with its
// encoding and segment count, and what a delivery renders (its own template first, else the inbox
// template's title and body).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  addUser,
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  type TenantFixture,
} from '../support/fixtures.ts';
import { findBrand } from '../../server/channels/resolve.ts';
import { newTemplateCache, renderMessageDelivery, smsText } from '../../server/channels/render-delivery.ts';
import type { ContactRow } from '../../server/base/db/contacts.ts';
import type { EventForDelivery } from '../../server/channels/types.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;
let acmeAdmin: string;
const MISSING_ID = '0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6';
const PATH = '/v1/sms-templates';

beforeAll(async () => {
  app = await startTestApp();
  [acme, globex] = await Promise.all([createTenantFixture(app, 'Acme'), createTenantFixture(app, 'Globex')]);
  acmeAdmin = (await addUser(app, acme.tenantId, 'admin', true)).token;
  const shop = await app.request('POST', '/v1/brandings', {
    token: acme.serviceKey,
    body: { key: 'shop', values: { name: 'Acme Shop' } },
  });
  expect(shop.status).toBe(201);
});
afterAll(async () => {
  await app?.close();
});

let counter = 0;
async function newType(fx: TenantFixture) {
  const key = `type_${++counter}`;
  const res = await app.request('POST', '/v1/notification-types', {
    token: fx.serviceKey,
    body: { key, variables: [{ name: 'name' }, { name: 'code' }] },
  });
  expect(res.status).toBe(201);
  return key;
}

async function createTemplate(fx: TenantFixture, body: Record<string, unknown>) {
  const res = await app.request('POST', PATH, { token: fx.serviceKey, body: { content: 'Body', ...body } });
  expect(res.status).toBe(201);
  return res.body;
}

describe('POST /v1/sms-templates', () => {
  it("creates a template in the default brand and the tenant's default language", async () => {
    const type = await newType(acme);
    const res = await app.request('POST', PATH, {
      token: acmeAdmin,
      body: { notification_type_key: type, content: 'Your code is {{ code }}' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      notification_type_key: type,
      brand_key: 'default',
      language: 'en',
      content: 'Your code is {{ code }}',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('answers 409 when the slot is taken', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type, brand_key: 'shop' });
    const dup = await app.request('POST', PATH, {
      token: acme.serviceKey,
      body: { notification_type_key: type, brand_key: 'shop', content: 'x' },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
    await createTemplate(acme, { notification_type_key: type, brand_key: 'shop', language: 'de' });
  });

  it('answers 422 for an unknown type, a missing brand, a syntax error, empty content and malformed input', async () => {
    const type = await newType(acme);
    const post = (body: Record<string, unknown>) =>
      app.request('POST', PATH, {
        token: acme.serviceKey,
        body: { notification_type_key: type, content: 'c', ...body },
      });
    expectValidationError(await post({ notification_type_key: 'nope' }), ['body', 'notification_type_key']);
    expectValidationError(await post({ brand_key: 'ghost' }), ['body', 'brand_key']);
    expectValidationError(await post({ content: 'Code {{ code ' }), ['body', 'content']);
    expectValidationError(await post({ content: "{% include 'package.json' %}" }), ['body', 'content']);
    expectValidationError(await post({ content: ' ' }), ['body', 'content']);
    expectValidationError(await post({ content: 7 }), ['body', 'content']);
    expectValidationError(await app.request('POST', PATH, { token: acme.serviceKey, rawBody: '{' }), ['body']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', PATH, { notification_type_key: 'x', content: 'c' });
  });
});

describe('GET /v1/sms-templates and /{template_id}', () => {
  it("lists and gets the tenant's templates only", async () => {
    const type = await newType(acme);
    const a = await createTemplate(acme, { notification_type_key: type });
    const b = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop' });
    const list = await app.request('GET', `${PATH}?notification_type_key=${type}`, { token: acme.ownerToken });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([a, b]);
    expect(
      (await app.request('GET', `${PATH}?brand_key=shop&notification_type_key=${type}`, { token: acme.serviceKey }))
        .body,
    ).toEqual([b]);
    const theirs = await app.request('GET', PATH, { token: globex.serviceKey });
    expect(theirs.body.map((t: { id: string }) => t.id)).not.toContain(a.id);
    const one = await app.request('GET', `${PATH}/${a.id}`, { token: acme.serviceKey });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(a);
  });

  it("answers 404 for an unknown id, another tenant's template and an inbox template's id", async () => {
    expect((await app.request('GET', `${PATH}/${MISSING_ID}`, { token: acme.serviceKey })).status).toBe(404);
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex) });
    const res = await app.request('GET', `${PATH}/${theirs.id}`, { token: acme.serviceKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'SMS template not found', code: 'not_found' });
    const inbox = await app.request('POST', '/v1/inbox-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: await newType(acme), content: 'c' },
    });
    expect((await app.request('GET', `${PATH}/${inbox.body.id}`, { token: acme.serviceKey })).status).toBe(404);
  });

  it('answers 422 for a malformed filter or id', async () => {
    expectValidationError(await app.request('GET', `${PATH}?language=x`, { token: acme.serviceKey }), [
      'query',
      'language',
    ]);
    expectValidationError(await app.request('GET', `${PATH}/123`, { token: acme.serviceKey }), ['path', 'template_id']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', PATH);
    await expectManagementOnly(app, acme, 'GET', `${PATH}/${MISSING_ID}`);
  });
});

describe('PUT /v1/sms-templates/{template_id}', () => {
  it('changes the fields given', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    const res = await app.request('PUT', `${PATH}/${template.id}`, { token: acmeAdmin, body: { content: 'New' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...template, content: 'New', updated_at: expect.any(String) });
  });

  it('answers 409 when another template occupies the target slot', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type });
    const other = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop' });
    const res = await app.request('PUT', `${PATH}/${other.id}`, {
      token: acme.serviceKey,
      body: { brand_key: 'default' },
    });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('already_exists');
  });

  it("answers 404 for an unknown id and another tenant's template, which stays", async () => {
    expect(
      (await app.request('PUT', `${PATH}/${MISSING_ID}`, { token: acme.serviceKey, body: { content: 'x' } })).status,
    ).toBe(404);
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex), content: 'Theirs' });
    expect(
      (await app.request('PUT', `${PATH}/${theirs.id}`, { token: acme.serviceKey, body: { content: 'Mine' } })).status,
    ).toBe(404);
    expect((await app.request('GET', `${PATH}/${theirs.id}`, { token: globex.serviceKey })).body.content).toBe(
      'Theirs',
    );
  });

  it('answers 422 for a syntax error, empty content, a missing brand or a bad id', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    const put = (body: unknown) => app.request('PUT', `${PATH}/${template.id}`, { token: acme.serviceKey, body });
    expectValidationError(await put({ content: '{% endif %}' }), ['body', 'content']);
    expectValidationError(await put({ content: '' }), ['body', 'content']);
    expectValidationError(await put({ brand_key: 'ghost' }), ['body', 'brand_key']);
    expectValidationError(await app.request('PUT', `${PATH}/zz`, { token: acme.serviceKey, body: {} }), [
      'path',
      'template_id',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'PUT', `${PATH}/${MISSING_ID}`, { content: 'x' });
  });
});

describe('DELETE /v1/sms-templates/{template_id}', () => {
  it('deletes the template', async () => {
    const template = await createTemplate(acme, { notification_type_key: await newType(acme) });
    expect((await app.request('DELETE', `${PATH}/${template.id}`, { token: acme.ownerToken })).status).toBe(204);
    expect((await app.request('GET', `${PATH}/${template.id}`, { token: acme.serviceKey })).status).toBe(404);
  });

  it("answers 404 for an unknown id and another tenant's template, which stays", async () => {
    expect((await app.request('DELETE', `${PATH}/${MISSING_ID}`, { token: acme.serviceKey })).status).toBe(404);
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex) });
    expect((await app.request('DELETE', `${PATH}/${theirs.id}`, { token: acme.serviceKey })).status).toBe(404);
    expect((await app.request('GET', `${PATH}/${theirs.id}`, { token: globex.serviceKey })).status).toBe(200);
  });

  it('answers 422 for a bad id, 401 without a credential and 403 for a contact token or a non-member', async () => {
    expectValidationError(await app.request('DELETE', `${PATH}/nope`, { token: acme.serviceKey }), [
      'path',
      'template_id',
    ]);
    await expectManagementOnly(app, acme, 'DELETE', `${PATH}/${MISSING_ID}`);
  });
});

describe('POST /v1/sms-templates/render', () => {
  const render = (body: Record<string, unknown>, token = acme.serviceKey) =>
    app.request('POST', `${PATH}/render`, { token, body });

  it('renders the text with its encoding and segment count', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type, content: 'Hi {{ name }}, code {{ code }}' });
    const res = await render({ notification_type_key: type, variables: { name: 'Ann', code: 42 } }, acmeAdmin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ text: 'Hi Ann, code 42', encoding: 'gsm7', segments: 1 });
    const long = await render({ notification_type_key: type, variables: { name: 'a'.repeat(200), code: 1 } });
    expect(long.body).toMatchObject({ encoding: 'gsm7', segments: 2 });
    const cyrillic = await render({ notification_type_key: type, variables: { name: 'Аня', code: '€' } });
    expect(cyrillic.body).toEqual({ text: 'Hi Аня, code €', encoding: 'ucs2', segments: 1 });
  });

  it("picks the brand's template, else the default brand's, by language", async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type, content: 'default {{ brand.name }}' });
    await createTemplate(acme, { notification_type_key: type, brand_key: 'shop', language: 'de', content: 'shop de' });
    expect((await render({ notification_type_key: type, brand_key: 'shop', language: 'de-AT' })).body.text).toBe(
      'shop de',
    );
    expect((await render({ notification_type_key: type, brand_key: 'shop' })).body.text).toBe('default Acme Shop');
  });

  it("falls back to the inbox template's title and body without an SMS template", async () => {
    const type = await newType(acme);
    const inbox = await app.request('POST', '/v1/inbox-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: type, title: 'Hello {{ contact.name }}', content: 'Code {{ code }}' },
    });
    expect(inbox.status).toBe(201);
    const res = await render({ notification_type_key: type, variables: { code: 7 }, contact: { name: 'Ann' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ text: 'Hello Ann\nCode 7', encoding: 'gsm7', segments: 1 });
    await createTemplate(acme, { notification_type_key: type, content: 'Own {{ code }}' });
    expect((await render({ notification_type_key: type, variables: { code: 7 } })).body.text).toBe('Own 7');
  });

  it('answers 422 naming an unfilled slot, for no template, a missing brand and malformed input', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type, content: 'Hi {{ contact.name }} {{ code }}' });
    expectValidationError(await render({ notification_type_key: type, contact: { name: 'A' } }), [
      'body',
      'variables',
      'code',
    ]);
    expectValidationError(await render({ notification_type_key: type, variables: { code: 1 } }), [
      'body',
      'contact',
      'name',
    ]);
    expectValidationError(await render({ notification_type_key: await newType(acme) }), [
      'body',
      'notification_type_key',
    ]);
    // Another tenant's templates never resolve.
    expectValidationError(await render({ notification_type_key: type }, globex.serviceKey), [
      'body',
      'notification_type_key',
    ]);
    expectValidationError(await render({ notification_type_key: type, brand_key: 'ghost' }), ['body', 'brand_key']);
    expectValidationError(await render({ notification_type_key: type, variables: 'x' }), ['body', 'variables']);
    expectValidationError(await render({}), ['body', 'notification_type_key']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', `${PATH}/render`, { notification_type_key: 'x' });
  });
});

describe('renderMessageDelivery for sms', () => {
  async function eventOf(fx: TenantFixture, typeKey: string): Promise<EventForDelivery> {
    const brand = (await findBrand(app.runtime.orm.em.fork(), fx.tenantId, null))!;
    return {
      id: randomUUID(),
      tenant_id: fx.tenantId,
      type_key: typeKey,
      brand_key: null,
      external_id: 'evt',
      variables: {},
      brand,
      default_brand_key: brand.key,
      default_language: 'en',
    };
  }
  const contact = (fx: TenantFixture): ContactRow => ({
    id: randomUUID(),
    tenant_id: fx.tenantId,
    external_id: 'ann',
    email: null,
    phone: '+4915112345678',
    name: 'Ann',
    language: 'de',
    properties: {},
    timezone: null,
    quiet_hours: null,
    created_at: new Date(),
    updated_at: new Date(),
  });

  it("renders the SMS template's content as the text, else the inbox template's title and body; null without either", async () => {
    const type = await newType(acme);
    const event = await eventOf(acme, type);
    const em = app.runtime.orm.em.fork();
    expect(await renderMessageDelivery(em, 'sms', event, contact(acme), {}, newTemplateCache())).toBeNull();
    await app.request('POST', '/v1/inbox-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: type, title: 'Hi {{ contact.name }}', content: 'Code {{ code }}' },
    });
    const fallback = await renderMessageDelivery(em, 'sms', event, contact(acme), { code: 5 }, newTemplateCache());
    expect(fallback).toEqual({ title: 'Hi Ann', body: 'Code 5', action_url: null });
    expect(smsText(fallback!)).toBe('Hi Ann\nCode 5');
    const own = await createTemplate(acme, { notification_type_key: type, content: '{{ contact.name }}: {{ code }}' });
    const message = await renderMessageDelivery(em, 'sms', event, contact(acme), { code: 5 }, newTemplateCache());
    expect(message).toEqual({ title: '', body: 'Ann: 5', action_url: null, text: 'Ann: 5' });
    expect(smsText(message!)).toBe('Ann: 5');
    // Found once per run: the run's cache still has it after it is deleted.
    const cache = newTemplateCache();
    await renderMessageDelivery(em, 'sms', event, contact(acme), { code: 1 }, cache);
    await app.request('DELETE', `${PATH}/${own.id}`, { token: acme.serviceKey });
    expect((await renderMessageDelivery(em, 'sms', event, contact(acme), { code: 2 }, cache))!.text).toBe('Ann: 2');
    expect(
      (await renderMessageDelivery(em, 'sms', event, contact(acme), { code: 2 }, newTemplateCache()))!.text,
    ).toBeUndefined();
  });
});
