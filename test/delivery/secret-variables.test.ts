// Secret variables reach the recipient in full and are masked everywhere else: the event status, the
// activity log, a data export of the tenant, the stored row and every log line the process wrote.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import {
  createTenantFixture,
  insertInboxTemplate,
  insertNotificationType,
  sqlOne,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';

const SECRET = 'otp-5521-secret-value';

let app: TestApp;
let acme: TenantFixture;
let eventId: string;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  await insertNotificationType(app, acme.tenantId, {
    key: 'login_code',
    channels: { inbox: true },
    variables: [{ name: 'code', required: true }],
  });
  await insertInboxTemplate(app, acme.tenantId, {
    type: 'login_code',
    title: 'Your code',
    content: 'Code {{ code }} for {{ device }}',
  });
  const res = await app.request('POST', '/v1/notifications', {
    token: acme.serviceKey,
    headers: { 'idempotency-key': 'login-code-1' },
    body: {
      type: 'login_code',
      recipients: ['ann'],
      variables: { device: 'Firefox' },
      secret_variables: { code: SECRET },
    },
  });
  expect(res.status).toBe(202);
  eventId = res.body.events[0].event_id;
  await waitForFinal(app, [eventId]);
});
afterAll(async () => {
  await app?.close();
});

describe('secret_variables', () => {
  it('reach the recipient in full', async () => {
    const item = await sqlOne<{ body: string }>(app, `SELECT body FROM inbox_items WHERE event_id = $1`, [eventId]);
    expect(item!.body).toBe(`Code ${SECRET} for Firefox`);
  });

  it('are masked in the event status and the activity log', async () => {
    const event = await app.request('GET', `/v1/notifications/${eventId}`, { token: acme.serviceKey });
    expect(event.body.variables).toEqual({ device: 'Firefox', code: '********' });
    const log = await app.request('GET', '/v1/notifications', { token: acme.serviceKey });
    expect(log.body.items.find((e: { event_id: string }) => e.event_id === eventId).variables).toEqual({
      device: 'Firefox',
      code: '********',
    });
    expect(event.text + log.text).not.toContain(SECRET);
  });

  it('are never stored in clear', async () => {
    const row = await sqlOne<Record<string, unknown>>(app, `SELECT * FROM events WHERE id = $1`, [eventId]);
    expect(JSON.stringify(row)).not.toContain(SECRET);
  });

  it('are absent from an export of the tenant', async () => {
    const filed = await app.request('POST', `/v1/auth/tenants/${acme.tenantId}/data-requests`, {
      token: acme.ownerToken,
      body: { kind: 'export' },
    });
    expect(filed.status).toBe(202);
    const status = await eventually(async () => {
      const read = (
        await app.request('GET', `/v1/auth/tenants/${acme.tenantId}/data-requests/${filed.body.id}`, {
          token: acme.ownerToken,
        })
      ).body;
      expect(read.status).toBe('completed');
      return read;
    });
    const download = await app.request('GET', status.download_url, { token: acme.ownerToken });
    expect(download.status).toBe(200);
    expect(download.body.tables.events.map((e: { id: string }) => e.id)).toContain(eventId);
    // The delivered item is exported, with its secret-bearing text masked.
    expect(download.body.tables.inbox_items.find((i: { event_id: string }) => i.event_id === eventId)).toMatchObject({
      title: '********',
      body: '********',
    });
    // The idempotency record is exported without its request hash (which covers the secret values).
    expect(download.body.tables.idempotency_keys).toEqual([expect.objectContaining({ key: 'login-code-1' })]);
    expect(download.body.tables.idempotency_keys[0]).not.toHaveProperty('request_hash');
    expect(download.text).not.toContain(SECRET);
  });

  it('never appear in a log line', () => {
    expect(app.logs.length).toBeGreaterThan(0);
    expect(app.logs.join('\n')).not.toContain(SECRET);
  });
});
