// Tenants with credentials and data for delivery-side tests: a tenant (through the real services), a
// service key row, notification types (plain SQL: their routes are built elsewhere), contacts,
// contact tokens, and inbox items written exactly as the delivery worker writes them.
import { randomBytes } from 'node:crypto';
import type { TestApp } from './app.ts';
import { createTenant } from '../../server/services/tenants.ts';
import { createUser } from '../../server/services/users.ts';
import { hashServiceKey } from '../../server/http/auth.ts';
import { newId } from '../../server/ids.ts';
import { query, queryOne } from '../../server/db/sql.ts';
import { appendStreamEvent } from '../../server/stream/events.ts';
import { appendCounts, inboxItemView, INBOX_COLUMNS, type InboxItemRow } from '../../server/services/inbox.ts';
import type { InboxItemResponse } from '../../server/schemas/inbox.ts';

export interface TenantFixture {
  tenantId: string;
  serviceKey: string;
  /** A console access token of the tenant's owner. */
  ownerToken: string;
  /** Mints a contact token directly (no rate limit charged). */
  tokenFor(contactId: string, ttlSeconds?: number): string;
  /** Creates a contact row; returns its id. */
  contact(externalId: string, fields?: { email?: string; name?: string }): Promise<string>;
}

export async function createTenantFixture(app: TestApp, name = 'Acme'): Promise<TenantFixture> {
  const em = app.runtime.orm.em.fork();
  const user = await createUser(em, { email: `owner-${randomBytes(4).toString('hex')}@example.test`, password: 'correct horse battery', verified: true });
  const tenant = await createTenant(em, { name, ownerUserId: user.id, makeDefault: true });
  const serviceKey = `sk_${randomBytes(24).toString('base64url')}`;
  await query(em, `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash) VALUES ($1, $2, 'test', $3, $4)`, [
    newId(),
    tenant.id,
    serviceKey.slice(0, 8),
    hashServiceKey(serviceKey),
  ]);
  return {
    tenantId: tenant.id,
    serviceKey,
    ownerToken: app.runtime.tokens.sign('access', user.id, tenant.id, 3600, app.runtime.clock.now()),
    tokenFor: (contactId, ttlSeconds = 3600) => app.runtime.tokens.sign('contact', contactId, tenant.id, ttlSeconds, app.runtime.clock.now()),
    contact: async (externalId, fields = {}) => {
      const row = await queryOne<{ id: string }>(
        app.runtime.orm.em.fork(),
        `INSERT INTO contacts (id, tenant_id, external_id, email, name) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
        [newId(), tenant.id, externalId, fields.email ?? null, fields.name ?? null],
      );
      return row!.id;
    },
  };
}

export async function insertNotificationType(
  app: TestApp,
  tenantId: string,
  key: string,
  options: { channelDefaults?: Record<string, boolean>; optOut?: boolean; deleted?: boolean } = {},
): Promise<void> {
  await query(
    app.runtime.orm.em.fork(),
    `INSERT INTO notification_types (id, tenant_id, key, name, channel_defaults, opt_out, deleted_at)
     VALUES ($1, $2, $3, $3, $4, $5, CASE WHEN $6 THEN now() END)`,
    [
      newId(),
      tenantId,
      key,
      JSON.stringify(options.channelDefaults ?? { inbox: true, email: true, push: false, web_push: false }),
      options.optOut ?? true,
      options.deleted ?? false,
    ],
  );
}

/**
 * Stores an inbox item and appends its 'notification' and 'counts' stream events in one transaction,
 * as the delivery worker's inbox channel does. `app` may be any process of the install.
 */
export async function deliverInboxItem(
  app: TestApp,
  tenantId: string,
  contactId: string,
  fields: { title?: string; body?: string; type?: string; data?: Record<string, unknown> } = {},
): Promise<InboxItemResponse> {
  return app.runtime.orm.em.fork().transactional(async (tx) => {
    const row = await queryOne<InboxItemRow>(
      tx,
      `INSERT INTO inbox_items (id, tenant_id, contact_id, type_key, title, body, data) VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING ${INBOX_COLUMNS}`,
      [newId(), tenantId, contactId, fields.type ?? 'order_shipped', fields.title ?? 'Shipped', fields.body ?? 'Your order shipped', JSON.stringify(fields.data ?? {})],
    );
    const item = inboxItemView(row!);
    await appendStreamEvent(tx, { tenantId, contactId, kind: 'notification', payload: { ...item } });
    await appendCounts(tx, tenantId, contactId);
    return item;
  });
}
