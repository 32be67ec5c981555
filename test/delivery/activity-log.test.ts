// GET /v1/notifications: the activity log, newest first, filters, cursor paging, secrets masked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  insertInboxTemplate,
  createTenantFixture,
  insertNotificationType,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';

let app: TestApp;
let acme: TenantFixture;
let other: TenantFixture;
const triggered: string[] = [];

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  other = await createTenantFixture(app, 'Other');
  for (const key of ['alpha', 'beta']) {
    await insertNotificationType(app, acme.tenantId, { key });
    await insertInboxTemplate(app, acme.tenantId, { type: key, title: key, content: 'pin {{ pin }}' });
  }
  await insertNotificationType(app, other.tenantId, { key: 'alpha' });
  for (const [type, recipient] of [
    ['alpha', 'u1'],
    ['beta', 'u2'],
    ['alpha', 'u2'],
    ['beta', 'u1'],
    ['alpha', 'u3'],
  ] as const) {
    const res = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type, recipients: [recipient], variables: { visible: 'yes' }, secret_variables: { pin: 'pin-9931' } },
    });
    expect(res.status).toBe(202);
    triggered.push(res.body.events[0].event_id);
  }
  await app.request('POST', '/v1/notifications', {
    token: other.serviceKey,
    body: { type: 'alpha', recipients: ['u1'] },
  });
  await waitForFinal(app, triggered);
});
afterAll(async () => {
  await app?.close();
});

const list = (query = '', token = acme.serviceKey) => app.request('GET', `/v1/notifications${query}`, { token });

describe('GET /v1/notifications', () => {
  it("lists the tenant's events newest first, secrets masked", async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body.items.map((e: { event_id: string }) => e.event_id)).toEqual([...triggered].reverse());
    expect(res.body.next_cursor).toBeNull();
    for (const item of res.body.items) {
      expect(item.variables).toEqual({ visible: 'yes', pin: '********' });
      expect(item.status).toBe('delivered');
      expect(item.deliveries).toHaveLength(1);
    }
    expect(res.text).not.toContain('pin-9931');
    expect(app.logs.join('\n')).not.toContain('pin-9931');
  });

  it('filters by type, status and external_id', async () => {
    expect((await list('?type=alpha')).body.items).toHaveLength(3);
    expect((await list('?type=beta&external_id=u1')).body.items.map((e: { event_id: string }) => e.event_id)).toEqual([
      triggered[3],
    ]);
    expect((await list('?status=delivered')).body.items).toHaveLength(5);
    expect((await list('?status=failed')).body.items).toHaveLength(0);
  });

  it('pages with a cursor', async () => {
    const first = await list('?limit=2');
    expect(first.body.items).toHaveLength(2);
    const second = await list(`?limit=2&cursor=${first.body.next_cursor}`);
    const third = await list(`?limit=2&cursor=${second.body.next_cursor}`);
    expect(third.body.next_cursor).toBeNull();
    const all = [...first.body.items, ...second.body.items, ...third.body.items].map(
      (e: { event_id: string }) => e.event_id,
    );
    expect(all).toEqual([...triggered].reverse());
  });

  it("never shows another tenant's events", async () => {
    const res = await list('', other.serviceKey);
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(1);
    expect(triggered).not.toContain(res.body.items[0].event_id);
  });

  it('answers 401 without a credential and 403 for a contact token', async () => {
    expect((await app.request('GET', '/v1/notifications')).status).toBe(401);
    const event = (await list()).body.items[0];
    const token = acme.tokenFor(event.contact_id);
    expect((await list('', token)).status).toBe(403);
  });

  it.each([['?limit=0'], ['?limit=500'], ['?status=bogus'], ['?cursor=not-a-cursor'], ['?type=NOT%20A%20KEY']])(
    'answers 422 for %s',
    async (query) => {
      const res = await list(query);
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc[0]).toBe('query');
    },
  );
});
