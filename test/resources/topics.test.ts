// Topics: CRUD by key, bulk subscribe (unknown external ids created bare) and unsubscribe, the paged
// subscriber list, a contact's topics; every route's statuses, credentials and tenant isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  addUser,
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  sqlOne,
  type TenantFixture,
} from '../support/fixtures.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;

beforeAll(async () => {
  app = await startTestApp();
  [acme, globex] = await Promise.all([createTenantFixture(app, 'Acme'), createTenantFixture(app, 'Globex')]);
});
afterAll(async () => {
  await app?.close();
});

let counter = 0;
const uniqueKey = () => `topic-${++counter}`;

async function createTopic(fx: TenantFixture, key = uniqueKey()): Promise<string> {
  const res = await app.request('POST', '/v1/topics', { token: fx.serviceKey, body: { key, name: `Topic ${key}` } });
  expect(res.status).toBe(201);
  return key;
}

describe('topics', () => {
  it('creates (201), gets, lists and deletes (204) a topic; a console admin may too', async () => {
    const admin = (await addUser(app, acme.tenantId, 'admin', true)).token;
    const created = await app.request('POST', '/v1/topics', {
      token: admin,
      body: { key: 'releases', name: ' Release notes ' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      key: 'releases',
      name: 'Release notes',
      subscriber_count: 0,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const got = await app.request('GET', '/v1/topics/releases', { token: acme.serviceKey });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);
    const list = await app.request('GET', '/v1/topics', { token: acme.serviceKey });
    expect(list.status).toBe(200);
    expect(list.body.map((t: { key: string }) => t.key)).toContain('releases');
    const removed = await app.request('DELETE', '/v1/topics/releases', { token: acme.serviceKey });
    expect(removed.status).toBe(204);
    expect((await app.request('GET', '/v1/topics/releases', { token: acme.serviceKey })).status).toBe(404);
    expect((await app.request('DELETE', '/v1/topics/releases', { token: acme.serviceKey })).status).toBe(404);
  });

  it('answers 409 for a duplicate key and 422 for a malformed key or name', async () => {
    const key = await createTopic(acme);
    const dup = await app.request('POST', '/v1/topics', { token: acme.serviceKey, body: { key, name: 'again' } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
    // The same key in another tenant is fine.
    await createTopic(globex, key);
    expectValidationError(
      await app.request('POST', '/v1/topics', { token: acme.serviceKey, body: { key: 'Bad Key', name: 'x' } }),
      ['body', 'key'],
    );
    expectValidationError(
      await app.request('POST', '/v1/topics', { token: acme.serviceKey, body: { key: 'ok', name: '' } }),
      ['body', 'name'],
    );
    expectValidationError(await app.request('GET', '/v1/topics/NOT_A_KEY', { token: acme.serviceKey }), [
      'path',
      'key',
    ]);
  });

  it("keeps tenants apart: another tenant's topic is 404 on every route", async () => {
    const key = await createTopic(globex, 'globex-only');
    for (const [method, path, body] of [
      ['GET', `/v1/topics/${key}`, undefined],
      ['DELETE', `/v1/topics/${key}`, undefined],
      ['POST', `/v1/topics/${key}/subscribers`, { external_ids: ['a'] }],
      ['DELETE', `/v1/topics/${key}/subscribers`, { external_ids: ['a'] }],
      ['GET', `/v1/topics/${key}/subscribers`, undefined],
    ] as const) {
      const res = await app.request(method, path, { token: acme.serviceKey, body });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const list = await app.request('GET', '/v1/topics', { token: acme.serviceKey });
    expect(list.body.map((t: { key: string }) => t.key)).not.toContain('globex-only');
    const contact = await globex.contact('globex-contact');
    expect((await app.request('GET', `/v1/contacts/${contact}/topics`, { token: acme.serviceKey })).status).toBe(404);
  });

  it('refuses a missing credential (401), a contact token and a non-member (403) on every route', async () => {
    const key = await createTopic(acme);
    const contact = await acme.contact('cred-check');
    await expectManagementOnly(app, acme, 'POST', '/v1/topics', { key: 'x1', name: 'x' });
    await expectManagementOnly(app, acme, 'GET', '/v1/topics');
    await expectManagementOnly(app, acme, 'GET', `/v1/topics/${key}`);
    await expectManagementOnly(app, acme, 'DELETE', `/v1/topics/${key}`);
    await expectManagementOnly(app, acme, 'POST', `/v1/topics/${key}/subscribers`, { external_ids: ['a'] });
    await expectManagementOnly(app, acme, 'DELETE', `/v1/topics/${key}/subscribers`, { external_ids: ['a'] });
    await expectManagementOnly(app, acme, 'GET', `/v1/topics/${key}/subscribers`);
    await expectManagementOnly(app, acme, 'GET', `/v1/contacts/${contact}/topics`);
    // Even the contact's own token cannot list its topics (a management route).
    expect((await app.request('GET', `/v1/contacts/${contact}/topics`, { token: acme.tokenFor(contact) })).status).toBe(
      403,
    );
  });
});

describe('subscribers', () => {
  it('subscribes by external id, creating unknown contacts bare, and counts only new subscriptions', async () => {
    const key = await createTopic(acme);
    const existing = await acme.contact('sub-existing', { email: 'ann@example.test' });
    const first = await app.request('POST', `/v1/topics/${key}/subscribers`, {
      token: acme.serviceKey,
      body: { external_ids: ['sub-existing', 'sub-new', 'sub-new'] },
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ added: 2 });
    const again = await app.request('POST', `/v1/topics/${key}/subscribers`, {
      token: acme.serviceKey,
      body: { external_ids: ['sub-existing', 'sub-third'] },
    });
    expect(again.body).toEqual({ added: 1 });
    // The existing contact keeps its fields; the new one is bare.
    expect(await sqlOne(app, `SELECT email FROM contacts WHERE id = $1`, [existing])).toEqual({
      email: 'ann@example.test',
    });
    expect(
      await sqlOne(app, `SELECT email, name FROM contacts WHERE tenant_id = $1 AND external_id = 'sub-new'`, [
        acme.tenantId,
      ]),
    ).toEqual({ email: null, name: null });
    expect((await app.request('GET', `/v1/topics/${key}`, { token: acme.serviceKey })).body.subscriber_count).toBe(3);
    const topics = await app.request('GET', `/v1/contacts/${existing}/topics`, { token: acme.serviceKey });
    expect(topics.status).toBe(200);
    expect(topics.body).toEqual([{ key, name: `Topic ${key}`, subscribed_at: expect.any(String) }]);

    const removed = await app.request('DELETE', `/v1/topics/${key}/subscribers`, {
      token: acme.serviceKey,
      body: { external_ids: ['sub-new', 'nobody', 'sub-new'] },
    });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ removed: 1 });
    expect((await app.request('GET', `/v1/topics/${key}`, { token: acme.serviceKey })).body.subscriber_count).toBe(2);
    // Unsubscribing never creates contacts.
    expect(
      await sqlOne(app, `SELECT count(*)::int AS n FROM contacts WHERE tenant_id = $1 AND external_id = 'nobody'`, [
        acme.tenantId,
      ]),
    ).toEqual({ n: 0 });
  });

  it('pages the subscriber list with a cursor, each subscriber once', async () => {
    const key = await createTopic(acme);
    const ids = Array.from({ length: 45 }, (_, i) => `page-${i}`);
    await app.request('POST', `/v1/topics/${key}/subscribers`, { token: acme.serviceKey, body: { external_ids: ids } });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { status: number; body: { items: Array<{ external_id: string }>; next_cursor: string | null } } =
        await app.request('GET', `/v1/topics/${key}/subscribers?limit=20${cursor ? `&cursor=${cursor}` : ''}`, {
          token: acme.serviceKey,
        });
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((i) => i.external_id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen.sort()).toEqual([...ids].sort());
    expectValidationError(
      await app.request('GET', `/v1/topics/${key}/subscribers?cursor=nonsense`, { token: acme.serviceKey }),
      ['query', 'cursor'],
    );
    expectValidationError(
      await app.request('GET', `/v1/topics/${key}/subscribers?limit=0`, { token: acme.serviceKey }),
      ['query', 'limit'],
    );
  });

  it('answers 50 subscribers a page by default, takes a limit up to 200 and refuses 201', async () => {
    const key = await createTopic(acme);
    const ids = Array.from({ length: 210 }, (_, i) => `big-${i}`);
    await app.request('POST', `/v1/topics/${key}/subscribers`, { token: acme.serviceKey, body: { external_ids: ids } });
    const page = (query: string) =>
      app.request('GET', `/v1/topics/${key}/subscribers${query}`, { token: acme.serviceKey });
    const first = await page('');
    expect(first.status).toBe(200);
    expect(first.body.items).toHaveLength(50);
    const most = await page('?limit=200');
    expect(most.status).toBe(200);
    expect(most.body.items).toHaveLength(200);
    expect(most.body.next_cursor).not.toBeNull();
    expectValidationError(await page('?limit=201'), ['query', 'limit']);
  });

  it('refuses an empty or oversized list and bad external ids (422)', async () => {
    const key = await createTopic(acme);
    const post = (body: unknown) =>
      app.request('POST', `/v1/topics/${key}/subscribers`, { token: acme.serviceKey, body });
    expectValidationError(await post({ external_ids: [] }), ['body', 'external_ids']);
    expectValidationError(await post({ external_ids: Array.from({ length: 1001 }, (_, i) => `x${i}`) }), [
      'body',
      'external_ids',
    ]);
    expectValidationError(await post({ external_ids: [''] }), ['body', 'external_ids', 0]);
    expectValidationError(await post({}), ['body', 'external_ids']);
  });

  it('deleting a topic removes its subscriptions, not its contacts; deleting a contact removes its subscriptions', async () => {
    const key = await createTopic(acme);
    await app.request('POST', `/v1/topics/${key}/subscribers`, {
      token: acme.serviceKey,
      body: { external_ids: ['gone-1', 'gone-2'] },
    });
    const contact = (await sqlOne<{ id: string }>(
      app,
      `SELECT id FROM contacts WHERE tenant_id = $1 AND external_id = 'gone-1'`,
      [acme.tenantId],
    ))!.id;
    expect((await app.request('DELETE', `/v1/contacts/${contact}`, { token: acme.serviceKey })).status).toBe(204);
    expect((await app.request('GET', `/v1/topics/${key}`, { token: acme.serviceKey })).body.subscriber_count).toBe(1);
    expect((await app.request('DELETE', `/v1/topics/${key}`, { token: acme.serviceKey })).status).toBe(204);
    expect(
      await sqlOne(app, `SELECT count(*)::int AS n FROM contacts WHERE tenant_id = $1 AND external_id = 'gone-2'`, [
        acme.tenantId,
      ]),
    ).toEqual({ n: 1 });
    expect((await app.request('GET', `/v1/contacts/${contact}/topics`, { token: acme.serviceKey })).status).toBe(404);
  });
});
