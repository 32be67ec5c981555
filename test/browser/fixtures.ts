// Data for the browser tests: a tenant with a service key that sets up a notification type and its
// inbox template through the API, a contact obtained the way a tenant backend does it (mint a token;
// on 404 create the contact, then mint again), inbox items already there when the page opens, and
// triggers (POST /v1/notifications, delivered by the worker).
import { expect } from 'vitest';
import { newId } from '../../server/base/ids.ts';
import type { TestApp } from '../support/app.ts';
import { createTenantFixture, sql } from '../support/fixtures.ts';

export const TYPE_KEY = 'build_status';

export interface InboxContact {
  id: string;
  tenantId: string;
  externalId: string;
  serviceKey: string;
  token: string;
}

/** The recommended backend pattern, over HTTP with the service key: mint; on 404 create, mint again. */
export async function mintContactToken(
  app: TestApp,
  serviceKey: string,
  externalId: string,
): Promise<{ token: string; contact_id: string; expires_in: number }> {
  const mint = () =>
    app.request('POST', '/v1/contacts/tokens', { token: serviceKey, body: { external_id: externalId } });
  let minted = await mint();
  if (minted.status === 404) {
    const created = await app.request('POST', '/v1/contacts', {
      token: serviceKey,
      body: { external_id: externalId, name: 'Ann' },
    });
    expect(created.status).toBe(201);
    minted = await mint();
  }
  expect(minted.status).toBe(200);
  return minted.body;
}

/** A tenant set up as its backend would: a type and its inbox template through the API, then a contact token. */
export async function createInboxContact(app: TestApp, externalId: string): Promise<InboxContact> {
  const tenant = await createTenantFixture(app);
  const setup = async (path: string, body: unknown) => {
    const res = await app.request('POST', path, { token: tenant.serviceKey, body });
    expect(res.status, `${path}: ${res.text}`).toBe(201);
  };
  await setup('/v1/notification-types', {
    key: TYPE_KEY,
    channel_defaults: { inbox: true, email: false, push: false, web_push: false },
    variables: [
      { name: 'title', required: true },
      { name: 'body', required: true },
    ],
  });
  await setup('/v1/notification-types', {
    key: 'account_security',
    channel_defaults: { inbox: true, email: true },
    opt_out: false,
  });
  await setup('/v1/inbox-templates', { notification_type_key: TYPE_KEY, title: '{{ title }}', content: '{{ body }}' });
  const minted = await mintContactToken(app, tenant.serviceKey, externalId);
  return {
    id: minted.contact_id,
    tenantId: tenant.tenantId,
    externalId,
    serviceKey: tenant.serviceKey,
    token: minted.token,
  };
}

export interface ItemInput {
  title: string;
  body: string;
  read?: boolean;
  action_url?: string;
}

/** Items already in the inbox before the page opens (oldest first; spaced minutes apart). */
export async function seedInboxItems(app: TestApp, contact: InboxContact, inputs: ItemInput[]): Promise<void> {
  const now = Date.now();
  for (const [index, input] of inputs.entries()) {
    const createdAt = new Date(now - (inputs.length - index) * 17 * 60_000);
    await sql(
      app,
      `INSERT INTO inbox_items (id, tenant_id, contact_id, type_key, title, body, action_url, created_at, read_at, seen_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
      [
        newId(),
        contact.tenantId,
        contact.id,
        TYPE_KEY,
        input.title,
        input.body,
        input.action_url ?? null,
        createdAt,
        input.read ? createdAt : null,
      ],
    );
  }
}

/** Triggers a notification for the contact (POST /v1/notifications); the worker delivers it to the inbox. */
export async function triggerNotification(app: TestApp, contact: InboxContact, input: ItemInput): Promise<string> {
  const res = await app.request('POST', '/v1/notifications', {
    token: contact.serviceKey,
    body: {
      type: TYPE_KEY,
      recipients: [contact.externalId],
      variables: { title: input.title, body: input.body },
      channels: ['inbox'],
    },
  });
  expect(res.status).toBe(202);
  return res.body.events[0].event_id;
}
