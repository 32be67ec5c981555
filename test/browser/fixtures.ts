// Data for the browser tests: a tenant with a contact and its contact token, inbox items, and a
// delivery to the inbox as the delivery worker makes it (item + stream events, one transaction).
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../../server/db/sql.ts';
import { newId } from '../../server/ids.ts';
import { createTenant } from '../../server/services/tenants.ts';
import { createUser } from '../../server/services/users.ts';
import { appendStreamEvent } from '../../server/stream/events.ts';
import type { TestApp } from '../support/app.ts';

export interface InboxContact {
  id: string;
  tenantId: string;
  externalId: string;
  token: string;
}

export async function createInboxContact(app: TestApp, externalId: string): Promise<InboxContact> {
  const em = app.runtime.orm.em.fork();
  const user = await createUser(em, { email: `owner-${newId()}@example.test`, password: 'correct horse battery', verified: true });
  const tenant = await createTenant(em, { name: 'Acme', ownerUserId: user.id, makeDefault: true });
  const contact = (await queryOne<{ id: string }>(em, `INSERT INTO contacts (id, tenant_id, external_id, name) VALUES ($1, $2, $3, 'Ann') RETURNING id`, [
    newId(),
    tenant.id,
    externalId,
  ]))!;
  const token = app.runtime.tokens.sign('contact', contact.id, tenant.id, 3600, Date.now());
  return { id: contact.id, tenantId: tenant.id, externalId, token };
}

export interface ItemInput {
  title: string;
  body: string;
  action_url?: string;
  read?: boolean;
  type?: string;
}

interface ItemRow {
  id: string;
  event_id: string | null;
  type_key: string;
  title: string;
  body: string;
  action_url: string | null;
  data: Record<string, unknown>;
  created_at: Date;
  seen_at: Date | null;
  read_at: Date | null;
  archived_at: Date | null;
}

async function insertItem(em: EntityManager, contact: InboxContact, input: ItemInput, createdAt: Date): Promise<ItemRow> {
  return (await queryOne<ItemRow>(
    em,
    `INSERT INTO inbox_items (id, tenant_id, contact_id, type_key, title, body, action_url, created_at, read_at, seen_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
     RETURNING id, event_id, type_key, title, body, action_url, data, created_at, seen_at, read_at, archived_at`,
    [newId(), contact.tenantId, contact.id, input.type ?? 'account', input.title, input.body, input.action_url ?? null, createdAt, input.read ? createdAt : null],
  ))!;
}

/** Items already in the inbox before the page opens (oldest first; spaced minutes apart). */
export async function seedInboxItems(app: TestApp, contact: InboxContact, inputs: ItemInput[]): Promise<void> {
  const em = app.runtime.orm.em.fork();
  const now = Date.now();
  for (const [index, input] of inputs.entries()) {
    await insertItem(em, contact, input, new Date(now - (inputs.length - index) * 17 * 60_000));
  }
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

/** Delivers to the inbox as the worker does: the item, its 'notification' and 'counts' stream events. */
export async function deliverInboxItem(app: TestApp, contact: InboxContact, input: ItemInput): Promise<string> {
  const em = app.runtime.orm.em.fork();
  return em.transactional(async (tx) => {
    const row = await insertItem(tx, contact, input, new Date());
    const item = {
      id: row.id,
      event_id: row.event_id,
      type: row.type_key,
      title: row.title,
      body: row.body,
      action_url: row.action_url,
      data: row.data,
      created_at: iso(row.created_at),
      seen_at: iso(row.seen_at),
      read_at: iso(row.read_at),
      archived_at: iso(row.archived_at),
    };
    await appendStreamEvent(tx, { tenantId: contact.tenantId, contactId: contact.id, kind: 'notification', payload: item });
    const counts = (await queryOne<{ unread_count: number; unseen_count: number }>(
      tx,
      `SELECT count(*) FILTER (WHERE read_at IS NULL)::int AS unread_count,
              count(*) FILTER (WHERE seen_at IS NULL AND read_at IS NULL)::int AS unseen_count
         FROM inbox_items WHERE contact_id = $1 AND archived_at IS NULL`,
      [contact.id],
    ))!;
    await appendStreamEvent(tx, { tenantId: contact.tenantId, contactId: contact.id, kind: 'counts', payload: counts });
    return row.id;
  });
}
