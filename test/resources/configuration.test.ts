// Configuration as code over HTTP: GET /v1/configuration (the document, no secrets) and
// POST /v1/configuration/apply (the plan, applied in one transaction; dry run; prune).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  sqlOne,
  type TenantFixture,
} from '../support/fixtures.ts';

let app: TestApp;
let acme: TenantFixture;

beforeAll(async () => {
  // Webhook endpoints of these tests point at loopback, which no delivery reaches.
  app = await startTestApp({ config: { allowPrivateWebhookUrls: true } });
  acme = await createTenantFixture(app, 'Acme');
});
afterAll(async () => {
  await app?.close();
});

const DOCUMENT = {
  version: 1,
  notification_types: [
    {
      key: 'order_shipped',
      name: 'Order shipped',
      description: 'An order left the warehouse',
      channel_defaults: { push: true },
      opt_out: false,
      variables: [{ name: 'order_id', required: true, description: 'Order number' }],
      workflow: {
        steps: [
          { kind: 'channel', channel: 'inbox' },
          { kind: 'delay', seconds: 600 },
          { kind: 'channel', channel: 'email', if: 'inbox.read == false' },
        ],
      },
    },
    { key: 'digest' },
  ],
  brands: [
    {
      key: 'default',
      values: { name: 'Acme', colour: '#112233' },
      sender: { from_name: 'Acme', from_email: 'news@acme.example' },
    },
    { key: 'shop', values: { name: 'Acme Shop', support_email: 'help@acme.example' } },
  ],
  email_templates: [
    {
      notification_type_key: 'order_shipped',
      brand_key: 'shop',
      language: 'en',
      subject: 'Order {{ order_id }}',
      content: '<p>Shipped {{ order_id }}</p>',
    },
    { notification_type_key: 'order_shipped', subject: 'Order {{ order_id }}', content: '<p>Default brand</p>' },
  ],
  inbox_templates: [
    {
      notification_type_key: 'order_shipped',
      title: 'Order {{ order_id }} shipped',
      content: 'Track it',
      action_url: 'https://acme.example/o/{{ order_id }}',
    },
  ],
  sender_domains: [{ domain: 'Mail.Acme.Example' }],
  topics: [
    { key: 'launches', name: 'Product launches' },
    { key: 'digest', name: 'Weekly digest' },
  ],
};

const apply = (fx: TenantFixture, document: unknown, options: { dry_run?: boolean; prune?: boolean } = {}) =>
  app.request('POST', '/v1/configuration/apply', { token: fx.serviceKey, body: { document, ...options } });
const exported = async (fx: TenantFixture) => {
  const res = await app.request('GET', '/v1/configuration', { token: fx.serviceKey });
  expect(res.status).toBe(200);
  return res.body;
};

describe('configuration as code over HTTP', () => {
  it('applies a document as a plan, then plans nothing the second time', async () => {
    const first = await apply(acme, DOCUMENT);
    expect(first.status).toBe(200);
    expect(first.body.applied).toBe(true);
    expect(first.body.changes).toEqual([
      { kind: 'notification_types', action: 'create', id: 'order_shipped', fields: [] },
      { kind: 'notification_types', action: 'create', id: 'digest', fields: [] },
      { kind: 'brands', action: 'update', id: 'default', fields: ['values', 'sender'] },
      { kind: 'brands', action: 'create', id: 'shop', fields: [] },
      { kind: 'email_templates', action: 'create', id: 'order_shipped/shop/en', fields: [] },
      { kind: 'email_templates', action: 'create', id: 'order_shipped/default/en', fields: [] },
      { kind: 'inbox_templates', action: 'create', id: 'order_shipped/default/en', fields: [] },
      { kind: 'sender_domains', action: 'create', id: 'mail.acme.example', fields: [] },
      { kind: 'topics', action: 'create', id: 'launches', fields: [] },
      { kind: 'topics', action: 'create', id: 'digest', fields: [] },
    ]);
    const second = await apply(acme, DOCUMENT);
    expect(second.body).toEqual({ changes: [], applied: false });

    const document = await exported(acme);
    expect(document.notification_types.map((t: { key: string }) => t.key)).toEqual(['digest', 'order_shipped']);
    expect(document.notification_types[1]).toEqual({
      key: 'order_shipped',
      name: 'Order shipped',
      description: 'An order left the warehouse',
      channel_defaults: { inbox: true, email: true, push: true, web_push: false, sms: false, chat: false, http: false },
      opt_out: false,
      variables: [{ name: 'order_id', required: true, description: 'Order number' }],
      bypass_quiet_hours: false,
      workflow: DOCUMENT.notification_types[0]!.workflow,
    });
    expect(document.notification_types[0]).not.toHaveProperty('workflow');
    expect(document.sender_domains).toEqual([{ domain: 'mail.acme.example' }]);
    expect(document.topics).toEqual([
      { key: 'digest', name: 'Weekly digest' },
      { key: 'launches', name: 'Product launches' },
    ]);
    // Never a secret: no DKIM key, no ids, no timestamps.
    const text = JSON.stringify(document);
    expect(text).not.toMatch(/PRIVATE|dkim|created_at|"id"/i);
    // The exported document applies with nothing to change.
    expect((await apply(acme, document)).body.changes).toEqual([]);
  });

  it('export -> apply on a fresh tenant -> export again is identical', async () => {
    const beta = await createTenantFixture(app, 'Beta');
    const source = await exported(acme);
    const res = await apply(beta, source);
    expect(res.status).toBe(200);
    expect(res.body.changes.length).toBeGreaterThan(0);
    expect(await exported(beta)).toEqual(source);
    expect((await apply(beta, source)).body.changes).toEqual([]);
  });

  it('updates only what differs, and a dry run changes nothing', async () => {
    const changed = structuredClone(DOCUMENT);
    changed.notification_types[1] = { key: 'digest', name: 'Daily digest' } as never;
    changed.inbox_templates[0]!.content = 'Track it now';
    changed.topics[0]!.name = 'Launches';
    // Subscriptions are data: an update keeps them, and the document never shows them.
    const subscribed = await app.request('POST', '/v1/topics/launches/subscribers', {
      token: acme.serviceKey,
      body: { external_ids: ['fan-1', 'fan-2'] },
    });
    expect(subscribed.status).toBe(200);
    delete (changed.notification_types[0] as { workflow?: unknown }).workflow;
    const before = await exported(acme);
    const dry = await apply(acme, changed, { dry_run: true });
    expect(dry.body).toEqual({
      changes: [
        { kind: 'notification_types', action: 'update', id: 'order_shipped', fields: ['workflow'] },
        { kind: 'notification_types', action: 'update', id: 'digest', fields: ['name'] },
        { kind: 'inbox_templates', action: 'update', id: 'order_shipped/default/en', fields: ['content'] },
        { kind: 'topics', action: 'update', id: 'launches', fields: ['name'] },
      ],
      applied: false,
    });
    expect(await exported(acme)).toEqual(before);
    const real = await apply(acme, changed);
    expect(real.body.applied).toBe(true);
    const after = await exported(acme);
    expect(after.notification_types[0].name).toBe('Daily digest');
    expect(after.notification_types[1]).not.toHaveProperty('workflow');
    expect(
      (await app.request('GET', '/v1/notification-types/order_shipped', { token: acme.serviceKey })).body.workflow,
    ).toBeNull();
    expect(after.inbox_templates[0].content).toBe('Track it now');
    expect(after.topics).toEqual([
      { key: 'digest', name: 'Weekly digest' },
      { key: 'launches', name: 'Launches' },
    ]);
    const topic = await app.request('GET', '/v1/topics/launches', { token: acme.serviceKey });
    expect(topic.body).toMatchObject({ name: 'Launches', subscriber_count: 2 });
    await apply(acme, DOCUMENT);
  });

  it('prunes what the document leaves out (never the default brand), deletions first', async () => {
    const kept = { version: 1, notification_types: [DOCUMENT.notification_types[1]], brands: [DOCUMENT.brands[0]] };
    const withoutPrune = await apply(acme, kept);
    expect(withoutPrune.body.changes).toEqual([]);
    const pruned = await apply(acme, { ...kept, brands: [] }, { prune: true });
    expect(pruned.status).toBe(200);
    expect(pruned.body.changes).toEqual([
      { kind: 'topics', action: 'delete', id: 'digest', fields: [] },
      { kind: 'topics', action: 'delete', id: 'launches', fields: [] },
      { kind: 'sender_domains', action: 'delete', id: 'mail.acme.example', fields: [] },
      { kind: 'inbox_templates', action: 'delete', id: 'order_shipped/default/en', fields: [] },
      { kind: 'email_templates', action: 'delete', id: 'order_shipped/default/en', fields: [] },
      { kind: 'email_templates', action: 'delete', id: 'order_shipped/shop/en', fields: [] },
      { kind: 'brands', action: 'delete', id: 'shop', fields: [] },
      { kind: 'notification_types', action: 'delete', id: 'order_shipped', fields: [] },
    ]);
    const document = await exported(acme);
    expect(document.notification_types.map((t: { key: string }) => t.key)).toEqual(['digest']);
    expect(document.brands.map((b: { key: string }) => b.key)).toEqual(['default']);
    expect(document.email_templates).toEqual([]);
    expect(document.sender_domains).toEqual([]);
    expect(document.topics).toEqual([]);
    expect((await app.request('GET', '/v1/topics/launches', { token: acme.serviceKey })).status).toBe(404);
    await apply(acme, DOCUMENT);
  });

  it('refuses a malformed document with the path of the bad value, and changes nothing', async () => {
    const before = await exported(acme);
    const bad = structuredClone(DOCUMENT);
    (bad.brands[1]!.values as Record<string, unknown>).colour = 'orange';
    expectValidationError(await apply(acme, bad), ['body', 'document', 'brands', 1, 'values', 'colour']);
    expectValidationError(await apply(acme, { ...DOCUMENT, brand: [] }), ['body', 'document']);
    expectValidationError(await apply(acme, { ...DOCUMENT, notification_types: [{ key: 'x', colour: 'red' }] }), [
      'body',
      'document',
      'notification_types',
      0,
    ]);
    const badWorkflow = {
      ...DOCUMENT,
      notification_types: [{ key: 'w', workflow: { steps: [{ kind: 'delay', seconds: 0 }] } }],
    };
    expectValidationError(await apply(acme, badWorkflow), [
      'body',
      'document',
      'notification_types',
      0,
      'workflow',
      'steps',
      0,
      'seconds',
    ]);
    const twice = { ...DOCUMENT, notification_types: [...DOCUMENT.notification_types, { key: 'digest' }] };
    expectValidationError(await apply(acme, twice), ['body', 'document', 'notification_types', 2]);
    // A write the service refuses (a template of a type the document does not create) names its entry; the
    // types created before it in the same apply are rolled back.
    const orphan = {
      ...DOCUMENT,
      notification_types: [{ key: 'brand_new' }],
      email_templates: [{ notification_type_key: 'nope', subject: 's', content: 'c' }],
    };
    expectValidationError(await apply(acme, orphan), [
      'body',
      'document',
      'email_templates',
      0,
      'notification_type_key',
    ]);
    const syntax = {
      ...DOCUMENT,
      inbox_templates: [{ notification_type_key: 'order_shipped', content: '{{ unclosed' }],
    };
    expectValidationError(await apply(acme, syntax), ['body', 'document', 'inbox_templates', 0, 'content']);
    expect(await exported(acme)).toEqual(before);
    expect(
      await sqlOne(app, `SELECT 1 FROM notification_types WHERE tenant_id = $1 AND key = 'brand_new'`, [acme.tenantId]),
    ).toBeUndefined();
  });

  it('answers 402 past the brand cap and applies nothing', async () => {
    const gamma = await createTenantFixture(app, 'Gamma');
    const brands = Array.from({ length: 11 }, (_, i) => ({ key: `b${i}` }));
    const res = await apply(gamma, { version: 1, notification_types: [{ key: 'one' }], brands });
    expect(res.status).toBe(402);
    expect(res.body.detail).toMatch(/^brands b9 \(create\)/);
    expect((await exported(gamma)).notification_types).toEqual([]);
  });

  it('names webhook endpoints by URL: event type order is no change; two endpoints at one URL are a 409', async () => {
    const zeta = await createTenantFixture(app, 'Zeta');
    const url = 'http://127.0.0.1:9/herald';
    const hook = (event_types: string[]) => ({ url, event_types });
    const create = (body: unknown) => app.request('POST', '/v1/webhooks', { token: zeta.serviceKey, body });
    expect((await create(hook(['inbox.read', 'delivery.failed']))).status).toBe(201);
    for (const order of [
      ['inbox.read', 'delivery.failed'],
      ['delivery.failed', 'inbox.read'],
    ]) {
      const res = await apply(zeta, { version: 1, webhooks: [hook(order)] });
      expect(res.status).toBe(200);
      expect(res.body.changes).toEqual([]);
    }
    expect((await exported(zeta)).webhooks).toEqual([
      { url, event_types: ['delivery.failed', 'inbox.read'], description: '' },
    ]);

    expect((await create(hook(['email.bounced']))).status).toBe(201);
    const twice = await apply(zeta, { version: 1, webhooks: [hook(['email.bounced'])] });
    expect(twice.status).toBe(409);
    expect(twice.body.detail).toMatch(/^webhooks http:\/\/127\.0\.0\.1:9\/herald: the tenant has more than one/);
    const listed = await app.request('GET', '/v1/webhooks', { token: zeta.serviceKey });
    const eventTypes = listed.body.items.map((w: { event_types: string[] }) => [...w.event_types].sort().join());
    expect(eventTypes.sort()).toEqual(['delivery.failed,inbox.read', 'email.bounced']);
  });

  it('is a management route', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/configuration');
    await expectManagementOnly(app, acme, 'POST', '/v1/configuration/apply', { document: {} });
    const owner = await app.request('GET', '/v1/configuration', { token: acme.ownerToken });
    expect(owner.status).toBe(200);
    expectValidationError(
      await app.request('POST', '/v1/configuration/apply', { token: acme.serviceKey, rawBody: '{' }),
      ['body'],
    );
    expectValidationError(
      await app.request('POST', '/v1/configuration/apply', {
        token: acme.serviceKey,
        body: { document: { version: 2 } },
      }),
      ['body', 'document', 'version'],
    );
  });
});
