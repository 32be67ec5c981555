// The spec's States table and cross-cutting rules, driven through their own routes (not by editing
// rows): archiving a tenant stops triggers and unarchiving restores them; the opt-out policy makes
// contact preferences dormant and active again; plan caps never reject a send; bulk contacts of one
// tenant never touch another's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  createTenantFixture,
  insertInboxTemplate,
  sqlOne,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;

async function ok(method: string, path: string, token: string, body?: unknown) {
  const res = await app.request(method, path, { token, body });
  expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
  return res.body;
}

const trigger = (fx: TenantFixture, recipient: string) =>
  app.request('POST', '/v1/notifications', { token: fx.serviceKey, body: { type: 'news', recipients: [recipient] } });

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  globex = await createTenantFixture(app, 'Globex');
  await ok('POST', '/v1/notification-types', acme.serviceKey, {
    key: 'news',
    name: 'News',
    channel_defaults: { inbox: true, email: false, push: false, web_push: false },
    opt_out: true,
    variables: [],
  });
  await insertInboxTemplate(app, acme.tenantId, { type: 'news', title: 'News', content: 'Hello' });
});
afterAll(async () => {
  await app?.close();
});

describe('tenant archive and unarchive (through the routes)', () => {
  it('an archived tenant cannot trigger (409 tenant_archived); unarchived, it can again', async () => {
    expect((await trigger(acme, 'arch-1')).status).toBe(202);
    const archived = await ok('POST', `/v1/auth/tenants/${acme.tenantId}/archive`, acme.ownerToken);
    expect(archived.archived).toBe(true);
    const refused = await trigger(acme, 'arch-1');
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('tenant_archived');
    const restored = await ok('POST', `/v1/auth/tenants/${acme.tenantId}/unarchive`, acme.ownerToken);
    expect(restored.archived).toBe(false);
    expect((await trigger(acme, 'arch-1')).status).toBe(202);
  });
});

describe('opt-out policy (PATCH /v1/notification-types/{key}/opt-out-policy)', () => {
  it('turned off, existing opt-outs stay but are dormant; turned on, they take effect again', async () => {
    const contactId = await acme.contact('pref-1');
    const token = acme.tokenFor(contactId);
    await ok('PUT', `/v1/contacts/${contactId}/preferences`, token, { type: 'news', channel: 'inbox', enabled: false });
    const inboxDelivery = async () => {
      const res = await trigger(acme, 'pref-1');
      expect(res.status).toBe(202);
      const eventId = res.body.events[0].event_id;
      await waitForFinal(app, [eventId]);
      return sqlOne<{ status: string; reason: string | null }>(
        app,
        `SELECT status, reason FROM deliveries WHERE event_id = $1 AND channel = 'inbox'`,
        [eventId],
      );
    };
    expect(await inboxDelivery()).toEqual({ status: 'skipped', reason: 'opted_out' });

    expect(
      (await ok('PATCH', '/v1/notification-types/news/opt-out-policy', acme.serviceKey, { opt_out: false })).opt_out,
    ).toBe(false);
    expect(await inboxDelivery()).toEqual({ status: 'delivered', reason: null });
    // The choice is kept while dormant.
    const matrix = await ok('GET', `/v1/contacts/${contactId}/preferences`, token);
    expect(
      await sqlOne(
        app,
        `SELECT enabled FROM contact_preferences WHERE contact_id = $1 AND type_key = 'news' AND channel = 'inbox'`,
        [contactId],
      ),
    ).toEqual({ enabled: false });
    expect(
      matrix.preferences.find((p: { type: string; channel: string }) => p.type === 'news' && p.channel === 'inbox'),
    ).toMatchObject({ enabled: true, source: 'default' });

    expect(
      (await ok('PATCH', '/v1/notification-types/news/opt-out-policy', acme.serviceKey, { opt_out: true })).opt_out,
    ).toBe(true);
    expect(await inboxDelivery()).toEqual({ status: 'skipped', reason: 'opted_out' });
  });
});

describe('plan limits never reject a send', () => {
  it('a tenant at its brand cap still triggers (202) and delivers', async () => {
    await ok('POST', '/v1/brandings', acme.serviceKey, { key: 'second', values: { name: 'Second' }, sender: {} });
    const { setTenantLimit } = await import('../../server/resources/tenant-limits.ts');
    await setTenantLimit(app.runtime.orm.em.fork(), acme.tenantId, 'brands', 2);
    const over = await app.request('POST', '/v1/brandings', {
      token: acme.serviceKey,
      body: { key: 'third', values: { name: 'Third' }, sender: {} },
    });
    expect(over.status).toBe(402);
    const sent = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'news', recipients: ['cap-1'], brand: 'second' },
    });
    expect(sent.status).toBe(202);
    expect(await waitForFinal(app, [sent.body.events[0].event_id])).toEqual([
      expect.objectContaining({ status: 'delivered' }),
    ]);
  });
});

describe('POST /v1/contacts/bulk across tenants', () => {
  it("creates the contact in the caller's tenant and leaves another tenant's contact with that external_id untouched", async () => {
    await ok('POST', '/v1/contacts', acme.serviceKey, {
      external_id: 'shared-1',
      email: 'acme@example.test',
      name: 'Acme person',
    });
    const res = await ok('POST', '/v1/contacts/bulk', globex.serviceKey, {
      contacts: [{ external_id: 'shared-1', email: 'globex@example.test' }],
    });
    expect(res).toMatchObject({ created: 1, updated: 0, errors: [] });
    expect(
      await sqlOne(app, `SELECT email, name FROM contacts WHERE tenant_id = $1 AND external_id = 'shared-1'`, [
        acme.tenantId,
      ]),
    ).toEqual({
      email: 'acme@example.test',
      name: 'Acme person',
    });
    expect(
      await sqlOne(app, `SELECT email FROM contacts WHERE tenant_id = $1 AND external_id = 'shared-1'`, [
        globex.tenantId,
      ]),
    ).toEqual({ email: 'globex@example.test' });
  });
});
