// A contact's chat destinations over HTTP: POST/GET/DELETE /v1/contacts/{id}/chat-destinations. The
// webhook URL is a credential: stored encrypted, answered as a hint only (never whole: not in
// responses, logs, the audit log or a data export), and refused at write when it reaches only private
// addresses unless allowPrivateWebhookUrls. Each provider's fields are checked (422 naming the field),
// another tenant's contact or destination is 404, and deleting the contact removes its destinations.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  sql,
  sqlOne,
  type TenantFixture,
} from '../../support/fixtures.ts';
import { eventually } from '../../support/eventually.ts';
import { newId } from '../../../server/base/ids.ts';

const HOOK = 'https://hooks.slack.com/services/T0000/B0000/abcdefghijklmnopqrstWXYZ';

let app: TestApp;
let strict: TestApp;
let a: TenantFixture;
let b: TenantFixture;
let contactA: string;
let contactB: string;

beforeAll(async () => {
  // hooks.slack.com must not need DNS here: the permissive app allows any address, the strict one
  // is asked only about loopback and private literals.
  app = await startTestApp({ config: { allowPrivateWebhookUrls: true } });
  strict = await startTestApp();
  a = await createTenantFixture(app, 'Acme');
  b = await createTenantFixture(app, 'Globex');
  contactA = await a.contact('ann');
  contactB = await b.contact('bob');
});
afterAll(async () => {
  await Promise.all([app?.close(), strict?.close()]);
});

const path = (contactId: string) => `/v1/contacts/${contactId}/chat-destinations`;

describe('POST /v1/contacts/{id}/chat-destinations', () => {
  it('stores a slack webhook encrypted and answers its hint only', async () => {
    const res = await app.request('POST', path(contactA), {
      token: a.serviceKey,
      body: { provider: 'slack', webhook_url: HOOK, label: 'Ops channel' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      provider: 'slack',
      label: 'Ops channel',
      webhook_url_hint: 'https://hooks.slack.com/.../WXYZ',
      channel: null,
      chat_id: null,
      created_at: expect.any(String),
    });
    expect(res.text).not.toContain('abcdefghijklmnopqrst');
    const row = await sqlOne<{ webhook_url_ciphertext: string }>(
      app,
      `SELECT webhook_url_ciphertext FROM chat_destinations WHERE id = $1`,
      [res.body.id],
    );
    expect(row!.webhook_url_ciphertext).not.toContain('hooks.slack.com');
    expect(
      app.runtime.keyRing.decrypt(
        row!.webhook_url_ciphertext,
        `chat_destinations/${a.tenantId}/${res.body.id}/webhook_url`,
      ),
    ).toBe(HOOK);
  });

  it('takes each provider with its own field, from a service key or a console admin', async () => {
    const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
      ['slack', { channel: 'C0123456789' }, { channel: 'C0123456789', webhook_url_hint: null }],
      ['teams', { webhook_url: 'https://acme.webhook.office.com/webhookb2/x/IncomingWebhook/y/z' }, {}],
      ['discord', { webhook_url: 'https://discord.com/api/webhooks/123/tok' }, {}],
      ['telegram', { chat_id: -1001234567890 }, { chat_id: '-1001234567890', webhook_url_hint: null }],
      ['mattermost', { webhook_url: 'https://chat.acme.test/hooks/abc' }, {}],
      ['google_chat', { webhook_url: 'https://chat.googleapis.com/v1/spaces/AAA/messages?key=k&token=t' }, {}],
    ];
    for (const [provider, fields, expected] of cases) {
      const res = await app.request('POST', path(contactA), { token: a.ownerToken, body: { provider, ...fields } });
      expect(res.status, provider).toBe(201);
      expect(res.body).toMatchObject({ provider, label: null, ...expected });
    }
  });

  it('answers 422 naming the field for missing, misplaced or malformed fields', async () => {
    const cases: Array<[Record<string, unknown>, Array<string | number>]> = [
      [{ provider: 'slack' }, ['body', 'webhook_url']],
      [{ provider: 'slack', webhook_url: HOOK, channel: 'C1' }, ['body', 'channel']],
      [{ provider: 'teams' }, ['body', 'webhook_url']],
      [{ provider: 'teams', channel: 'C1', webhook_url: HOOK }, ['body', 'channel']],
      [{ provider: 'discord', chat_id: '123', webhook_url: HOOK }, ['body', 'chat_id']],
      [{ provider: 'telegram' }, ['body', 'chat_id']],
      [{ provider: 'telegram', chat_id: '1', webhook_url: HOOK }, ['body', 'webhook_url']],
      [{ provider: 'telegram', chat_id: 'not a chat' }, ['body', 'chat_id']],
      [{ provider: 'slack', channel: 'has space' }, ['body', 'channel']],
      [{ provider: 'mattermost', webhook_url: 'ftp://example.com/x' }, ['body', 'webhook_url']],
      [{ provider: 'mattermost', webhook_url: 'http://example.com/hooks/x' }, ['body', 'webhook_url']],
      [{ provider: 'mattermost', webhook_url: 'https://user:pw@example.com/hooks/x' }, ['body', 'webhook_url']],
      [{ provider: 'pigeon', webhook_url: HOOK }, ['body', 'provider']],
      [{ provider: 'slack', webhook_url: HOOK, label: 'x'.repeat(201) }, ['body', 'label']],
    ];
    for (const [body, loc] of cases) {
      const res = await app.request('POST', path(contactA), { token: a.serviceKey, body });
      expectValidationError(res, loc);
    }
    const malformed = await app.request('POST', path(contactA), { token: a.serviceKey, rawBody: '{"provider":' });
    expect(malformed.status).toBe(422);
    expectValidationError(await app.request('POST', path('not-a-uuid'), { token: a.serviceKey, body: {} }), [
      'path',
      'id',
    ]);
  });

  it('refuses a webhook URL that reaches only private addresses unless allowPrivateWebhookUrls', async () => {
    const fx = await createTenantFixture(strict, 'Strict');
    const contact = await fx.contact('carla');
    for (const url of ['http://127.0.0.1:9/hooks/x', 'https://10.0.0.7/hooks/x', 'https://localhost/hooks/x']) {
      const res = await strict.request('POST', path(contact), {
        token: fx.serviceKey,
        body: { provider: 'mattermost', webhook_url: url },
      });
      expectValidationError(res, ['body', 'webhook_url']);
      expect(res.text).toContain('allowPrivateWebhookUrls');
    }
    expect(await sql(strict, `SELECT id FROM chat_destinations`)).toEqual([]);
    const allowed = await app.request('POST', path(contactA), {
      token: a.serviceKey,
      body: { provider: 'mattermost', webhook_url: 'http://127.0.0.1:9/hooks/x' },
    });
    expect(allowed.status).toBe(201);
  });

  it('answers 404 for another tenant contact and a contact that does not exist', async () => {
    const body = { provider: 'slack', webhook_url: HOOK };
    expect((await app.request('POST', path(contactB), { token: a.serviceKey, body })).status).toBe(404);
    expect((await app.request('POST', path(newId()), { token: a.serviceKey, body })).status).toBe(404);
  });

  it('is management only: 401 without a credential, 403 for a contact token (even its own) and outsiders', async () => {
    await expectManagementOnly(app, a, 'POST', path(contactA), { provider: 'slack', webhook_url: HOOK });
    const own = await app.request('POST', path(contactA), {
      token: a.tokenFor(contactA),
      body: { provider: 'slack', webhook_url: HOOK },
    });
    expect(own.status).toBe(403);
  });
});

describe('GET and DELETE /v1/contacts/{id}/chat-destinations', () => {
  it('lists the contact destinations oldest first as a plain array, hints only', async () => {
    const contact = await a.contact('listing');
    const first = await app.request('POST', path(contact), {
      token: a.serviceKey,
      body: { provider: 'slack', webhook_url: HOOK },
    });
    const second = await app.request('POST', path(contact), {
      token: a.serviceKey,
      body: { provider: 'telegram', chat_id: '@acme_alerts' },
    });
    const res = await app.request('GET', path(contact), { token: a.ownerToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([first.body, second.body]);
    expect(res.text).not.toContain(HOOK);
    expect((await app.request('GET', path(contactB), { token: a.serviceKey })).status).toBe(404);
    expectValidationError(await app.request('GET', path('nope'), { token: a.serviceKey }), ['path', 'id']);
    await expectManagementOnly(app, a, 'GET', path(contact));
  });

  it('deletes one destination (204), 404 for it again, for another tenant and for another contact', async () => {
    const contact = await a.contact('deleting');
    const other = await a.contact('deleting-other');
    const created = await app.request('POST', path(contact), {
      token: a.serviceKey,
      body: { provider: 'discord', webhook_url: 'https://discord.com/api/webhooks/1/t' },
    });
    const id = created.body.id as string;
    await expectManagementOnly(app, a, 'DELETE', `${path(contact)}/${id}`);
    expect((await app.request('DELETE', `${path(contact)}/${id}`, { token: b.serviceKey })).status).toBe(404);
    expect((await app.request('DELETE', `${path(other)}/${id}`, { token: a.serviceKey })).status).toBe(404);
    expectValidationError(await app.request('DELETE', `${path(contact)}/xyz`, { token: a.serviceKey }), [
      'path',
      'destination_id',
    ]);
    expect((await app.request('DELETE', `${path(contact)}/${id}`, { token: a.serviceKey })).status).toBe(204);
    expect((await app.request('DELETE', `${path(contact)}/${id}`, { token: a.serviceKey })).status).toBe(404);
    expect((await app.request('GET', path(contact), { token: a.serviceKey })).body).toEqual([]);
  });

  it('deleting the contact removes its destinations', async () => {
    const contact = await a.contact('cascade');
    await app.request('POST', path(contact), { token: a.serviceKey, body: { provider: 'slack', webhook_url: HOOK } });
    expect((await app.request('DELETE', `/v1/contacts/${contact}`, { token: a.serviceKey })).status).toBe(204);
    expect(await sql(app, `SELECT id FROM chat_destinations WHERE contact_id = $1`, [contact])).toEqual([]);
  });
});

describe('the webhook URL stays secret', () => {
  it('is in no log line, audit entry or data export', async () => {
    const secretUrl = 'https://hooks.slack.com/services/T1/B1/verysecretpathtoken9876';
    const created = await app.request('POST', path(contactA), {
      token: a.serviceKey,
      body: { provider: 'slack', webhook_url: secretUrl },
    });
    expect(created.status).toBe(201);
    const audit = await app.request('GET', '/v1/audit-log', { token: a.ownerToken });
    expect(audit.status).toBe(200);
    expect(audit.text).toContain('https://hooks.slack.com/.../9876');
    expect(audit.text).not.toContain('verysecretpathtoken');
    const filed = await app.request('POST', `/v1/auth/tenants/${a.tenantId}/data-requests`, {
      token: a.ownerToken,
      body: { kind: 'export' },
    });
    expect(filed.status).toBe(202);
    const status = await eventually(async () => {
      const read = (
        await app.request('GET', `/v1/auth/tenants/${a.tenantId}/data-requests/${filed.body.id}`, {
          token: a.ownerToken,
        })
      ).body;
      expect(read.status).toBe('completed');
      return read;
    });
    const download = await app.request('GET', status.download_url, { token: a.ownerToken });
    expect(download.status).toBe(200);
    const exportedRow = download.body.tables.chat_destinations.find((d: { id: string }) => d.id === created.body.id);
    expect(exportedRow).toMatchObject({ webhook_url_hint: 'https://hooks.slack.com/.../9876' });
    expect(exportedRow).not.toHaveProperty('webhook_url_ciphertext');
    expect(download.text).not.toContain('verysecretpathtoken');
    expect(app.logs.join('\n')).not.toContain('verysecretpathtoken');
  });
});
