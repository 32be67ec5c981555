// Chat templates: CRUD like email templates, with Markdown content and optional provider blocks
// (JSON whose string leaves are templates), the preview, and what a chat delivery renders (its own
// template first, else the inbox template's title and body).
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
import { chatText, newTemplateCache, renderMessageDelivery } from '../../server/channels/render-delivery.ts';
import type { ContactRow } from '../../server/base/db/contacts.ts';
import type { EventForDelivery } from '../../server/channels/types.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;
let acmeAdmin: string;
const MISSING_ID = '0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6';
const PATH = '/v1/chat-templates';

const BLOCKS = {
  slack: [
    { type: 'header', text: { type: 'plain_text', text: 'Order {{ order }}' } },
    { type: 'section', text: { type: 'mrkdwn', text: '*{{ name }}*, it shipped' } },
  ],
  teams: {
    type: 'AdaptiveCard',
    version: '1.5',
    body: [{ type: 'TextBlock', text: 'Order {{ order }}', wrap: true }],
  },
  discord: [{ title: 'Order {{ order }}', description: '{{ name }}', color: 16737792 }],
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
    body: { key, variables: [{ name: 'name' }, { name: 'order' }] },
  });
  expect(res.status).toBe(201);
  return key;
}

async function createTemplate(fx: TenantFixture, body: Record<string, unknown>) {
  const res = await app.request('POST', PATH, { token: fx.serviceKey, body: { content: '**Body**', ...body } });
  expect(res.status).toBe(201);
  return res.body;
}

describe('POST /v1/chat-templates', () => {
  it('creates a template with Markdown content and provider blocks, stored as given', async () => {
    const type = await newType(acme);
    const res = await app.request('POST', PATH, {
      token: acmeAdmin,
      body: { notification_type_key: type, content: '**Order {{ order }}** shipped', blocks: BLOCKS },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      notification_type_key: type,
      brand_key: 'default',
      language: 'en',
      content: '**Order {{ order }}** shipped',
      blocks: BLOCKS,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const plain = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop' });
    expect(plain.blocks).toBeNull();
  });

  it('answers 409 when the slot is taken', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type });
    const dup = await app.request('POST', PATH, {
      token: acme.serviceKey,
      body: { notification_type_key: type, content: 'x' },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
  });

  it('answers 422 for malformed blocks, a syntax error in a block, and the slot and content rules', async () => {
    const type = await newType(acme);
    const post = (body: Record<string, unknown>) =>
      app.request('POST', PATH, {
        token: acme.serviceKey,
        body: { notification_type_key: type, content: 'c', ...body },
      });
    expectValidationError(await post({ blocks: [] }), ['body', 'blocks']);
    expectValidationError(await post({ blocks: 'x' }), ['body', 'blocks']);
    expectValidationError(await post({ blocks: { whatsapp: [] } }), ['body', 'blocks']);
    expectValidationError(await post({ blocks: { slack: { type: 'section' } } }), ['body', 'blocks', 'slack']);
    expectValidationError(await post({ blocks: { slack: [] } }), ['body', 'blocks', 'slack']);
    expectValidationError(await post({ blocks: { slack: ['text'] } }), ['body', 'blocks', 'slack', 0]);
    expectValidationError(await post({ blocks: { teams: [] } }), ['body', 'blocks', 'teams']);
    expectValidationError(await post({ blocks: { discord: Array(11).fill({ title: 't' }) } }), [
      'body',
      'blocks',
      'discord',
    ]);
    let deep: unknown = 'x';
    for (let i = 0; i < 40; i++) deep = { a: deep };
    const tooDeep = await post({ blocks: { teams: deep } });
    expect(tooDeep.status).toBe(422);
    expect(tooDeep.body.detail[0].loc.slice(0, 3)).toEqual(['body', 'blocks', 'teams']);
    expectValidationError(
      await post({ blocks: { slack: [{ type: 'section', text: { type: 'mrkdwn', text: '{{ name ' } }] } }),
      ['body', 'blocks', 'slack', 0, 'text', 'text'],
    );
    expectValidationError(await post({ blocks: { discord: [{ title: "{% include 'x' %}" }] } }), [
      'body',
      'blocks',
      'discord',
      0,
      'title',
    ]);
    expectValidationError(await post({ content: '{% if %}' }), ['body', 'content']);
    expectValidationError(await post({ content: '' }), ['body', 'content']);
    expectValidationError(await post({ brand_key: 'ghost' }), ['body', 'brand_key']);
    expectValidationError(await post({ notification_type_key: 'nope' }), ['body', 'notification_type_key']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', PATH, { notification_type_key: 'x', content: 'c' });
  });
});

describe('GET, PUT and DELETE /v1/chat-templates', () => {
  it('lists, gets, changes (null removes the blocks) and deletes', async () => {
    const type = await newType(acme);
    const template = await createTemplate(acme, { notification_type_key: type, blocks: BLOCKS });
    const list = await app.request('GET', `${PATH}?notification_type_key=${type}`, { token: acme.ownerToken });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([template]);
    expect((await app.request('GET', `${PATH}/${template.id}`, { token: acme.serviceKey })).body).toEqual(template);
    const changed = await app.request('PUT', `${PATH}/${template.id}`, {
      token: acmeAdmin,
      body: { blocks: { discord: BLOCKS.discord } },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ ...template, blocks: { discord: BLOCKS.discord }, updated_at: expect.any(String) });
    const content = await app.request('PUT', `${PATH}/${template.id}`, { token: acmeAdmin, body: { content: 'New' } });
    expect(content.body.blocks).toEqual({ discord: BLOCKS.discord });
    const cleared = await app.request('PUT', `${PATH}/${template.id}`, { token: acmeAdmin, body: { blocks: null } });
    expect(cleared.body).toMatchObject({ content: 'New', blocks: null });
    expect((await app.request('DELETE', `${PATH}/${template.id}`, { token: acme.serviceKey })).status).toBe(204);
    expect((await app.request('GET', `${PATH}/${template.id}`, { token: acme.serviceKey })).status).toBe(404);
  });

  it('answers 409 when another template occupies the target slot, 422 for malformed blocks', async () => {
    const type = await newType(acme);
    await createTemplate(acme, { notification_type_key: type });
    const other = await createTemplate(acme, { notification_type_key: type, brand_key: 'shop' });
    const moved = await app.request('PUT', `${PATH}/${other.id}`, {
      token: acme.serviceKey,
      body: { brand_key: 'default' },
    });
    expect(moved.status).toBe(409);
    const put = (body: unknown) => app.request('PUT', `${PATH}/${other.id}`, { token: acme.serviceKey, body });
    expectValidationError(await put({ blocks: { slack: 'x' } }), ['body', 'blocks', 'slack']);
    expectValidationError(await put({ blocks: { teams: { text: '{% endfor %}' } } }), [
      'body',
      'blocks',
      'teams',
      'text',
    ]);
    expectValidationError(await app.request('PUT', `${PATH}/zz`, { token: acme.serviceKey, body: {} }), [
      'path',
      'template_id',
    ]);
  });

  it("answers 404 for another tenant's template on every route, which stays", async () => {
    const theirs = await createTemplate(globex, { notification_type_key: await newType(globex), content: 'Theirs' });
    for (const [method, body] of [['GET'], ['PUT', { content: 'Mine' }], ['DELETE']] as const) {
      const res = await app.request(method, `${PATH}/${theirs.id}`, { token: acme.serviceKey, body });
      expect(res.status, method).toBe(404);
      expect(res.body).toEqual({ detail: 'Chat template not found', code: 'not_found' });
    }
    expect((await app.request('GET', `${PATH}/${theirs.id}`, { token: globex.serviceKey })).body.content).toBe(
      'Theirs',
    );
    const mine = await app.request('GET', PATH, { token: acme.serviceKey });
    expect(mine.body.map((t: { id: string }) => t.id)).not.toContain(theirs.id);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', PATH);
    await expectManagementOnly(app, acme, 'GET', `${PATH}/${MISSING_ID}`);
    await expectManagementOnly(app, acme, 'PUT', `${PATH}/${MISSING_ID}`, { content: 'x' });
    await expectManagementOnly(app, acme, 'DELETE', `${PATH}/${MISSING_ID}`);
  });
});

describe('POST /v1/chat-templates/render', () => {
  const render = (body: Record<string, unknown>, token = acme.serviceKey) =>
    app.request('POST', `${PATH}/render`, { token, body });

  it('renders the Markdown and every string leaf of the blocks, values staying strings', async () => {
    const type = await newType(acme);
    await createTemplate(acme, {
      notification_type_key: type,
      content: '**Order {{ order }}** for {{ name }}',
      blocks: BLOCKS,
    });
    const name = 'Ann "the <b>" \\ }';
    const res = await render({ notification_type_key: type, variables: { name, order: 17 } }, acmeAdmin);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      text: `**Order 17** for ${name}`,
      blocks: {
        slack: [
          { type: 'header', text: { type: 'plain_text', text: 'Order 17' } },
          { type: 'section', text: { type: 'mrkdwn', text: `*${name}*, it shipped` } },
        ],
        teams: { type: 'AdaptiveCard', version: '1.5', body: [{ type: 'TextBlock', text: 'Order 17', wrap: true }] },
        discord: [{ title: 'Order 17', description: name, color: 16737792 }],
      },
    });
  });

  it("falls back to the inbox template's title and body (no blocks) without a chat template", async () => {
    const type = await newType(acme);
    await app.request('POST', '/v1/inbox-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: type, title: 'Order {{ order }}', content: 'For {{ name }}' },
    });
    const res = await render({ notification_type_key: type, variables: { name: 'Bo', order: 3 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ text: 'Order 3\nFor Bo', blocks: null });
  });

  it('answers 422 naming an unfilled slot (in a block too), for no template and a missing brand', async () => {
    const type = await newType(acme);
    await createTemplate(acme, {
      notification_type_key: type,
      content: 'x',
      blocks: { discord: [{ title: '{{ order }}' }] },
    });
    expectValidationError(await render({ notification_type_key: type }), ['body', 'variables', 'order']);
    expectValidationError(await render({ notification_type_key: await newType(acme) }), [
      'body',
      'notification_type_key',
    ]);
    expectValidationError(await render({ notification_type_key: type }, globex.serviceKey), [
      'body',
      'notification_type_key',
    ]);
    expectValidationError(await render({ notification_type_key: type, brand_key: 'ghost' }), ['body', 'brand_key']);
    expectValidationError(await render({ notification_type_key: 'BAD' }), ['body', 'notification_type_key']);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', `${PATH}/render`, { notification_type_key: 'x' });
  });
});

describe('renderMessageDelivery for chat', () => {
  it('gives the Markdown and the rendered blocks, else the inbox title and body with neither', async () => {
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
      email: null,
      phone: null,
      name: 'Ann',
      language: null,
      properties: {},
      timezone: null,
      quiet_hours: null,
      created_at: new Date(),
      updated_at: new Date(),
    };
    const em = app.runtime.orm.em.fork();
    await app.request('POST', '/v1/inbox-templates', {
      token: acme.serviceKey,
      body: { notification_type_key: type, title: 'T {{ order }}', content: 'B', action_url: '/orders/{{ order }}' },
    });
    const fallback = await renderMessageDelivery(em, 'chat', event, contact, { order: 1 }, newTemplateCache());
    expect(fallback).toEqual({ title: 'T 1', body: 'B', action_url: '/orders/1', markdown: null, blocks: null });
    expect(chatText(fallback!)).toBe('T 1\nB');
    await createTemplate(acme, {
      notification_type_key: type,
      content: '_{{ contact.name }}_ {{ order }}',
      blocks: { slack: [{ type: 'section', text: { type: 'mrkdwn', text: '{{ order }}' } }] },
    });
    const own = await renderMessageDelivery(em, 'chat', event, contact, { order: 2 }, newTemplateCache());
    expect(own).toEqual({
      title: '',
      body: '_Ann_ 2',
      action_url: null,
      markdown: '_Ann_ 2',
      blocks: { slack: [{ type: 'section', text: { type: 'mrkdwn', text: '2' } }] },
    });
    expect(chatText(own!)).toBe('_Ann_ 2');
  });
});
