// HTTP templates: CRUD like email templates, the body a JSON template (string leaves are templates,
// a lone placeholder takes its value), the preview, what an http delivery renders, and the new
// template kinds in configuration as code.
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
import { newTemplateCache, renderMessageDelivery } from '../../server/channels/render-delivery.ts';
import type { ContactRow } from '../../server/base/db/contacts.ts';
import type { EventForDelivery } from '../../server/channels/types.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;
let acmeAdmin: string;
const MISSING_ID = '0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6';
const PATH = '/v1/http-templates';

const BODY = {
  text: 'Order {{ order.id }} for {{ name }}',
  order: '{{ order }}',
  count: '{{ count }}',
  items: ['{{ name }}', 3, true, null],
  '{{ name }}': 'keys are literal',
};

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
    body: { key, variables: [{ name: 'name' }, { name: 'order' }, { name: 'count' }] },
  });
  expect(res.status).toBe(201);
  return key;
}

async function createTemplate(fx: TenantFixture, body: Record<string, unknown>) {
  const res = await app.request('POST', PATH, { token: fx.serviceKey, body: { body: { text: 'x' }, ...body } });
  expect(res.status).toBe(201);
  return res.body;
}

describe('POST /v1/http-templates', () => {
  it('creates a template whose body is JSON, an object or a list', async () => {
    const type = await newType(acme);
    const res = await app.request('POST', PATH, {
      token: acmeAdmin,
      body: { notification_type_key: type, body: BODY },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      notification_type_key: type,
      brand_key: 'default',
      language: 'en',
      body: BODY,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const list = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop', body: ['{{ name }}'] });
    expect(list.body).toEqual(['{{ name }}']);
  });

  it('answers 409 when the slot is taken', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type });
    const dup = await app.request('POST', PATH, {
      token: acme.serviceKey,
      body: { notification_type_key: type, body: {} },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
  });

  it('answers 422 for a body that is no object or list, a syntax error in a leaf, and the slot rules', async () => {
    const type = await newType(acme);
    const post = (body: Record<string, unknown>) =>
      app.request('POST', PATH, { token: acme.serviceKey, body: { notification_type_key: type, body: {}, ...body } });
    expectValidationError(await post({ body: '{"text": "{{ name }}"}' }), ['body', 'body']);
    expectValidationError(await post({ body: 5 }), ['body', 'body']);
    expectValidationError(await post({ body: null }), ['body', 'body']);
    expectValidationError(await post({ body: undefined }), ['body', 'body']);
    expectValidationError(await post({ body: { a: { b: ['ok', '{{ name '] } } }), ['body', 'body', 'a', 'b', 1]);
    expectValidationError(await post({ body: ["{% render 'x' %}"] }), ['body', 'body', 0]);
    expectValidationError(await post({ body: { big: 'x'.repeat(100_001) } }), ['body', 'body']);
    expectValidationError(await post({ notification_type_key: 'nope' }), ['body', 'notification_type_key']);
    expectValidationError(await post({ brand_key: 'ghost' }), ['body', 'brand_key']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', PATH, { notification_type_key: 'x', body: {} });
  });
});

describe('GET, PUT and DELETE /v1/http-templates', () => {
  it('lists, gets, changes and deletes', async () => {
    const type = await newType(acme);
    const template = await createTemplate(acme, { notification_type_key: type, body: BODY });
    const list = await app.request('GET', `${PATH}?notification_type_key=${type}`, { token: acme.ownerToken });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([template]);
    expect((await app.request('GET', `${PATH}/${template.id}`, { token: acme.serviceKey })).body).toEqual(template);
    const changed = await app.request('PUT', `${PATH}/${template.id}`, {
      token: acmeAdmin,
      body: { body: [1, '{{ name }}'] },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ ...template, body: [1, '{{ name }}'], updated_at: expect.any(String) });
    const moved = await app.request('PUT', `${PATH}/${template.id}`, { token: acmeAdmin, body: { language: 'fr' } });
    expect(moved.body).toMatchObject({ language: 'fr', body: [1, '{{ name }}'] });
    expect((await app.request('DELETE', `${PATH}/${template.id}`, { token: acme.serviceKey })).status).toBe(204);
    expect((await app.request('GET', `${PATH}/${template.id}`, { token: acme.serviceKey })).status).toBe(404);
  });

  it('answers 409 when another template occupies the target slot, 422 for a malformed body', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type });
    const other = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop' });
    const moved = await app.request('PUT', `${PATH}/${other.id}`, {
      token: acme.serviceKey,
      body: { brand_key: 'default' },
    });
    expect(moved.status).toBe(409);
    const put = (body: unknown) => app.request('PUT', `${PATH}/${other.id}`, { token: acme.serviceKey, body });
    expectValidationError(await put({ body: 'text' }), ['body', 'body']);
    expectValidationError(await put({ body: { t: '{% for %}' } }), ['body', 'body', 't']);
    expectValidationError(await app.request('PUT', `${PATH}/zz`, { token: acme.serviceKey, body: {} }), [
      'path',
      'template_id',
    ]);
  });

  it("answers 404 for an unknown id and another tenant's template on every route, which stays", async () => {
    const theirs = await createTemplate(globex, {
      notification_type_key: await newType(globex),
      body: { who: 'theirs' },
    });
    for (const id of [MISSING_ID, theirs.id]) {
      for (const [method, body] of [['GET'], ['PUT', { body: {} }], ['DELETE']] as const) {
        const res = await app.request(method, `${PATH}/${id}`, { token: acme.serviceKey, body });
        expect(res.status, method).toBe(404);
        expect(res.body).toEqual({ detail: 'HTTP template not found', code: 'not_found' });
      }
    }
    expect((await app.request('GET', `${PATH}/${theirs.id}`, { token: globex.serviceKey })).body.body).toEqual({
      who: 'theirs',
    });
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', PATH);
    await expectManagementOnly(app, acme, 'GET', `${PATH}/${MISSING_ID}`);
    await expectManagementOnly(app, acme, 'PUT', `${PATH}/${MISSING_ID}`, { body: {} });
    await expectManagementOnly(app, acme, 'DELETE', `${PATH}/${MISSING_ID}`);
  });
});

describe('POST /v1/http-templates/render', () => {
  const render = (body: Record<string, unknown>, token = acme.serviceKey) =>
    app.request('POST', `${PATH}/render`, { token, body });

  it('renders string leaves as strings (valid JSON whatever the values), a lone placeholder as its value', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type, body: BODY });
    const name = 'Ann", "admin": true, "x": "\n\\';
    const order = { id: 'A-1', lines: [{ sku: 'S', qty: 2 }] };
    const res = await render({ notification_type_key: type, variables: { name, order, count: 4 } }, acmeAdmin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      body: {
        text: `Order A-1 for ${name}`,
        order,
        count: 4,
        items: [name, 3, true, null],
        '{{ name }}': 'keys are literal',
      },
    });
    expect(res.body.body).not.toHaveProperty('admin');
  });

  it("needs an http template: the inbox template does not stand in (the channel's default body needs an event)", async () => {
    const type = await newType(acme);
    await app.request('POST', '/v1/inbox-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: type, title: 'T', content: 'B' },
    });
    expectValidationError(await render({ notification_type_key: type }), ['body', 'notification_type_key']);
  });

  it('answers 422 naming an unfilled slot, for another tenant, a missing brand and malformed input', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type, body: { a: '{{ count }}', b: 'n {{ contact.name }}' } });
    expectValidationError(await render({ notification_type_key: type, contact: { name: 'A' } }), [
      'body',
      'variables',
      'count',
    ]);
    expectValidationError(await render({ notification_type_key: type, variables: { count: 1 } }), [
      'body',
      'contact',
      'name',
    ]);
    expectValidationError(await render({ notification_type_key: type }, globex.serviceKey), [
      'body',
      'notification_type_key',
    ]);
    expectValidationError(await render({ notification_type_key: type, brand_key: 'ghost' }), ['body', 'brand_key']);
    expectValidationError(await render({ notification_type_key: type, contact: [] }), ['body', 'contact']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', `${PATH}/render`, { notification_type_key: 'x' });
  });
});

describe('renderMessageDelivery for http', () => {
  it('gives the rendered body, else the inbox title and body with no body; null without either', async () => {
    const type = await newType(acme);
    const brand = (await findBrand(app.runtime.orm.em.fork(), acme.tenantId, null))!;
    const event: EventForDelivery = {
      id: randomUUID(),
      tenant_id: acme.tenantId,
      type_key: type,
      brand_key: null,
      external_id: 'evt',
      variables: {},
      brand,
      default_brand_key: brand.key,
      default_language: 'en',
    };
    const contact: ContactRow = {
      id: randomUUID(),
      tenant_id: acme.tenantId,
      external_id: 'ann',
      email: 'ann@example.test',
      phone: null,
      name: null,
      language: 'fr',
      properties: { tier: 'gold' },
      timezone: null,
      quiet_hours: null,
      created_at: new Date(),
      updated_at: new Date(),
    };
    const em = app.runtime.orm.em.fork();
    expect(await renderMessageDelivery(em, 'http', event, contact, {}, newTemplateCache())).toBeNull();
    await app.request('POST', '/v1/inbox-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: type, title: 'T', content: 'B {{ count }}' },
    });
    expect(await renderMessageDelivery(em, 'http', event, contact, { count: 1 }, newTemplateCache())).toEqual({
      title: 'T',
      body: 'B 1',
      action_url: null,
      http_body: null,
    });
    await createTemplate(acme, {
      notification_type_key: type,
      body: { to: '{{ contact.email }}', props: '{{ contact.properties }}', n: '{{ count }}' },
    });
    expect(await renderMessageDelivery(em, 'http', event, contact, { count: 2 }, newTemplateCache())).toEqual({
      title: '',
      body: '',
      action_url: null,
      http_body: { to: 'ann@example.test', props: { tier: 'gold' }, n: 2 },
    });
  });
});

describe('sms, chat and http templates in configuration as code', () => {
  const DOCUMENT = {
    version: 1,
    notification_types: [{ key: 'order_shipped', variables: [{ name: 'order_id' }] }],
    sms_templates: [{ notification_type_key: 'order_shipped', content: 'Order {{ order_id }} shipped' }],
    chat_templates: [
      {
        notification_type_key: 'order_shipped',
        language: 'de',
        content: '**Bestellung {{ order_id }}**',
        blocks: { slack: [{ type: 'section', text: { type: 'mrkdwn', text: '*{{ order_id }}*' } }] },
      },
      { notification_type_key: 'order_shipped', content: '**Order {{ order_id }}**' },
    ],
    http_templates: [{ notification_type_key: 'order_shipped', body: { order: '{{ order_id }}', kind: 'shipped' } }],
  };
  const apply = (fx: TenantFixture, document: unknown, options: { dry_run?: boolean; prune?: boolean } = {}) =>
    app.request('POST', '/v1/configuration/apply', { token: fx.serviceKey, body: { document, ...options } });
  const exported = async (fx: TenantFixture) => {
    const res = await app.request('GET', '/v1/configuration', { token: fx.serviceKey });
    expect(res.status).toBe(200);
    return res.body;
  };

  it('applies, exports, re-applies with nothing to change, and copies to another tenant', async () => {
    const alpha = await createTenantFixture(app, 'Alpha');
    const first = await apply(alpha, DOCUMENT);
    expect(first.status).toBe(200);
    expect(first.body.changes).toEqual([
      { kind: 'notification_types', action: 'create', id: 'order_shipped', fields: [] },
      { kind: 'sms_templates', action: 'create', id: 'order_shipped/default/en', fields: [] },
      { kind: 'chat_templates', action: 'create', id: 'order_shipped/default/de', fields: [] },
      { kind: 'chat_templates', action: 'create', id: 'order_shipped/default/en', fields: [] },
      { kind: 'http_templates', action: 'create', id: 'order_shipped/default/en', fields: [] },
    ]);
    const document = await exported(alpha);
    expect(document.sms_templates).toEqual([
      {
        notification_type_key: 'order_shipped',
        brand_key: 'default',
        language: 'en',
        content: 'Order {{ order_id }} shipped',
      },
    ]);
    expect(document.chat_templates).toEqual([
      { ...DOCUMENT.chat_templates[0], brand_key: 'default' },
      { ...DOCUMENT.chat_templates[1], brand_key: 'default', language: 'en', blocks: null },
    ]);
    expect(document.http_templates).toEqual([{ ...DOCUMENT.http_templates[0], brand_key: 'default', language: 'en' }]);
    expect((await apply(alpha, DOCUMENT)).body.changes).toEqual([]);
    expect((await apply(alpha, document)).body.changes).toEqual([]);
    const beta = await createTenantFixture(app, 'Beta');
    expect((await apply(beta, document)).status).toBe(200);
    expect(await exported(beta)).toEqual(document);
  });

  it('updates the fields that differ and prunes what the document leaves out', async () => {
    const gamma = await createTenantFixture(app, 'Gamma');
    await apply(gamma, DOCUMENT);
    const changed = structuredClone(DOCUMENT);
    changed.chat_templates[0]!.blocks = { slack: [{ type: 'divider' }] } as never;
    changed.http_templates[0]!.body = { kind: 'shipped', order: '{{ order_id }}' };
    const res = await apply(gamma, { ...changed, sms_templates: [] }, { prune: true });
    expect(res.status).toBe(200);
    expect(res.body.changes).toEqual([
      { kind: 'sms_templates', action: 'delete', id: 'order_shipped/default/en', fields: [] },
      { kind: 'chat_templates', action: 'update', id: 'order_shipped/default/de', fields: ['blocks'] },
    ]);
    const after = await exported(gamma);
    expect(after.sms_templates).toEqual([]);
    expect(after.chat_templates[0].blocks).toEqual({ slack: [{ type: 'divider' }] });
  });

  it('answers 422 naming the entry for a syntax error or malformed blocks', async () => {
    const delta = await createTenantFixture(app, 'Delta');
    const bad = structuredClone(DOCUMENT);
    bad.http_templates[0]!.body = { order: '{{ order_id ' } as never;
    expectValidationError(await apply(delta, bad), ['body', 'document', 'http_templates', 0, 'body', 'order']);
    const blocks = structuredClone(DOCUMENT);
    (blocks.chat_templates[1] as Record<string, unknown>).blocks = { irc: [] };
    expectValidationError(await apply(delta, blocks), ['body', 'document', 'chat_templates', 1, 'blocks']);
    expect((await exported(delta)).notification_types).toEqual([]);
  });
});
