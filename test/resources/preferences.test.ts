// The preference matrix: every live notification type x channel, the type's defaults, the contact's
// choices, the opt-out policy (choices dormant while it is off), credentials and scope.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture, insertNotificationType, type TenantFixture } from '../support/fixtures.ts';
import { enabledChannels } from '../../server/resources/preferences.ts';
import { execute } from '../../server/base/db/sql.ts';
import { CHANNELS } from '../../server/schemas/common.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  globex = await createTenantFixture(app, 'Globex');
  await insertNotificationType(app, acme.tenantId, {
    key: 'order_shipped',
    channels: { inbox: true, email: true, push: false, web_push: false },
  });
  await insertNotificationType(app, acme.tenantId, {
    key: 'security_alert',
    channels: { inbox: true, email: true, push: true, web_push: true },
    optOut: false,
  });
  await insertNotificationType(app, acme.tenantId, {
    key: 'old_type',
    channels: { inbox: true, email: true, push: false, web_push: false },
    deleted: true,
  });
  await insertNotificationType(app, globex.tenantId, {
    key: 'globex_type',
    channels: { inbox: true, email: true, push: false, web_push: false },
  });
});
afterAll(async () => {
  await app?.close();
});

type Entry = { type: string; channel: string; enabled: boolean; source: string; opt_out: boolean };
const entry = (list: Entry[], type: string, channel: string) =>
  list.find((e) => e.type === type && e.channel === channel)!;

describe('GET /v1/contacts/{id}/preferences', () => {
  it('lists every live type x channel with the type defaults', async () => {
    const id = await acme.contact('pref-1');
    const res = await app.request('GET', `/v1/contacts/${id}/preferences`, { token: acme.tokenFor(id) });
    expect(res.status).toBe(200);
    const list = res.body.preferences as Entry[];
    expect(list).toHaveLength(2 * CHANNELS.length);
    expect(new Set(list.map((e) => e.type))).toEqual(new Set(['order_shipped', 'security_alert']));
    expect(entry(list, 'order_shipped', 'email')).toEqual({
      type: 'order_shipped',
      channel: 'email',
      enabled: true,
      source: 'default',
      opt_out: true,
    });
    expect(entry(list, 'order_shipped', 'push')).toMatchObject({ enabled: false, source: 'default' });
    expect(entry(list, 'security_alert', 'web_push')).toMatchObject({ enabled: true, opt_out: false });
  });

  it('is readable with a service key and a console admin of the tenant too', async () => {
    const id = await acme.contact('pref-2');
    expect((await app.request('GET', `/v1/contacts/${id}/preferences`, { token: acme.serviceKey })).status).toBe(200);
    expect((await app.request('GET', `/v1/contacts/${id}/preferences`, { token: acme.ownerToken })).status).toBe(200);
    expect((await app.request('GET', `/v1/contacts/${id}/preferences`, { token: globex.ownerToken })).status).toBe(404);
  });

  it("answers 404 for another contact's token and across tenants, 422 for a bad id, 401 without credential", async () => {
    const id = await acme.contact('pref-3');
    const other = await acme.contact('pref-4');
    expect((await app.request('GET', `/v1/contacts/${id}/preferences`, { token: acme.tokenFor(other) })).status).toBe(
      404,
    );
    expect((await app.request('GET', `/v1/contacts/${id}/preferences`, { token: globex.serviceKey })).status).toBe(404);
    expect((await app.request('GET', `/v1/contacts/not-a-uuid/preferences`, { token: acme.serviceKey })).status).toBe(
      422,
    );
    expect((await app.request('GET', `/v1/contacts/${id}/preferences`)).status).toBe(401);
  });
});

describe('PUT /v1/contacts/{id}/preferences', () => {
  it('stores one choice and answers the whole matrix with source "contact"', async () => {
    const id = await acme.contact('pref-5');
    const res = await app.request('PUT', `/v1/contacts/${id}/preferences`, {
      token: acme.tokenFor(id),
      body: { type: 'order_shipped', channel: 'email', enabled: false },
    });
    expect(res.status).toBe(200);
    const list = res.body.preferences as Entry[];
    expect(list).toHaveLength(2 * CHANNELS.length);
    expect(entry(list, 'order_shipped', 'email')).toMatchObject({ enabled: false, source: 'contact' });
    expect(entry(list, 'order_shipped', 'inbox')).toMatchObject({ enabled: true, source: 'default' });
    // An opt-in to a channel that defaults off counts too.
    const optIn = await app.request('PUT', `/v1/contacts/${id}/preferences`, {
      token: acme.serviceKey,
      body: { type: 'order_shipped', channel: 'push', enabled: true },
    });
    expect(entry(optIn.body.preferences, 'order_shipped', 'push')).toMatchObject({ enabled: true, source: 'contact' });
    expect(await enabledChannels(app.runtime.orm.em.fork(), acme.tenantId, id, 'order_shipped')).toEqual({
      inbox: true,
      email: false,
      push: true,
      web_push: false,
      sms: false,
      chat: false,
      http: false,
    });
  });

  it('keeps choices dormant while the opt-out policy is off, and applies them again when it is on', async () => {
    const id = await acme.contact('pref-6');
    const res = await app.request('PUT', `/v1/contacts/${id}/preferences`, {
      token: acme.tokenFor(id),
      body: { type: 'security_alert', channel: 'email', enabled: false },
    });
    expect(res.status).toBe(200);
    expect(entry(res.body.preferences, 'security_alert', 'email')).toEqual({
      type: 'security_alert',
      channel: 'email',
      enabled: true,
      source: 'default',
      opt_out: false,
    });
    expect((await enabledChannels(app.runtime.orm.em.fork(), acme.tenantId, id, 'security_alert'))!.email).toBe(true);
    await execute(
      app.runtime.orm.em.fork(),
      `UPDATE notification_types SET opt_out = true WHERE tenant_id = $1 AND key = 'security_alert'`,
      [acme.tenantId],
    );
    try {
      const after = await app.request('GET', `/v1/contacts/${id}/preferences`, { token: acme.tokenFor(id) });
      expect(entry(after.body.preferences, 'security_alert', 'email')).toMatchObject({
        enabled: false,
        source: 'contact',
        opt_out: true,
      });
    } finally {
      await execute(
        app.runtime.orm.em.fork(),
        `UPDATE notification_types SET opt_out = false WHERE tenant_id = $1 AND key = 'security_alert'`,
        [acme.tenantId],
      );
    }
  });

  it('answers 404 for an unknown or deleted type, and for a type of another tenant', async () => {
    const id = await acme.contact('pref-7');
    for (const type of ['no_such_type', 'old_type', 'globex_type']) {
      const res = await app.request('PUT', `/v1/contacts/${id}/preferences`, {
        token: acme.tokenFor(id),
        body: { type, channel: 'email', enabled: false },
      });
      expect(res.status).toBe(404);
    }
  });

  it('answers 422 for an unknown channel, a non-boolean, or a malformed type key', async () => {
    const id = await acme.contact('pref-8');
    const put = (body: unknown) =>
      app.request('PUT', `/v1/contacts/${id}/preferences`, { token: acme.tokenFor(id), body });
    const channel = await put({ type: 'order_shipped', channel: 'fax', enabled: false });
    expect(channel.status).toBe(422);
    expect(channel.body.detail[0].loc).toEqual(['body', 'channel']);
    expect((await put({ type: 'order_shipped', channel: 'email', enabled: 'no' })).status).toBe(422);
    expect((await put({ type: 'Bad Key!', channel: 'email', enabled: false })).status).toBe(422);
  });

  it("answers 404 for another contact's token and across tenants, 401 without credential", async () => {
    const id = await acme.contact('pref-9');
    const other = await acme.contact('pref-10');
    const body = { type: 'order_shipped', channel: 'email', enabled: false };
    expect(
      (await app.request('PUT', `/v1/contacts/${id}/preferences`, { token: acme.tokenFor(other), body })).status,
    ).toBe(404);
    expect(
      (await app.request('PUT', `/v1/contacts/${id}/preferences`, { token: globex.serviceKey, body })).status,
    ).toBe(404);
    expect((await app.request('PUT', `/v1/contacts/${id}/preferences`, { body })).status).toBe(401);
  });
});
