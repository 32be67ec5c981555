// The inbox channel: renders the inbox template and stores the item, which is its own 'notification'
// on the contact's stream (its stream id is drawn under the contact's stream lock, and the stream hub
// follows it with the contact's counts). delivery_id is UNIQUE on inbox_items, so a retried or
// duplicated job finds the item already there and never stores (or announces) a second one.
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../../base/db/sql.ts';
import { newId } from '../../base/ids.ts';
import { NEXT_STREAM_ID_SQL, streamLockSql, streamNoticesSql } from './events.ts';
import type { Context } from '../../base/context.ts';
import type { ContactRow } from '../../base/db/contacts.ts';
import { INBOX_COLUMNS, type InboxItemRow } from './inbox-items.ts';
import { renderInboxDelivery, type TemplateCache } from '../render-delivery.ts';
import type { ChannelSender, EventForDelivery } from '../types.ts';

export const inboxChannel: ChannelSender = {
  channel: 'inbox',
  local: true,
  async deliver({ runtime, em, delivery, event, contact, renderVariables, templates }) {
    const item = await inboxItemFor(runtime, em, event, contact, delivery.id, renderVariables, templates);
    if (!item) return { status: 'skipped', reason: 'no_template' };
    await storeInboxItem(em, item);
    return { status: 'delivered' };
  },
};

/** An inbox item, as both runs store it (this channel one by one, the batched run in its store statement). */
export interface NewInboxItem {
  id: string;
  tenant_id: string;
  contact_id: string;
  event_id: string;
  delivery_id: string;
  type_key: string;
  title: string;
  body: string;
  action_url: string | null;
  data: Record<string, unknown>;
}

/**
 * The one INSERT of inbox items, for both runs: `values` lists, in NEW_ITEM_COLUMNS order, what each row
 * of `from` stores, and the stream id is drawn last. The caller's `from` holds its contacts' stream locks
 * already, so that the ids are drawn under them; rows take their ids in `orderBy` (PostgreSQL computes a
 * volatile output column after the sort). The UNIQUE delivery_id makes a second item of a delivery
 * conflict: `onConflict` says whether to skip it or to fail the statement.
 */
export function insertInboxItemsSql(parts: {
  values: string;
  from: string;
  orderBy?: string;
  onConflict: 'skip' | 'fail';
  returning: string;
}): string {
  return `INSERT INTO inbox_items (${NEW_ITEM_COLUMNS.join(', ')}, stream_id)
       SELECT ${parts.values}, ${NEXT_STREAM_ID_SQL}
         FROM ${parts.from}${parts.orderBy ? `\n        ORDER BY ${parts.orderBy}` : ''}
       ${parts.onConflict === 'skip' ? 'ON CONFLICT (delivery_id) DO NOTHING\n       ' : ''}RETURNING ${parts.returning}`;
}

/** The columns an inserted item is given (its stream id aside), in insertInboxItemsSql's order. */
export const NEW_ITEM_COLUMNS = [
  'id',
  'tenant_id',
  'contact_id',
  'event_id',
  'delivery_id',
  'type_key',
  'title',
  'body',
  'action_url',
  'data',
] as const satisfies ReadonlyArray<keyof NewInboxItem>;

const STORE_ONE_ITEM = insertInboxItemsSql({
  values: '$1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::text, $7::text, $8::text, $9::text, $10::jsonb',
  from: 'locked',
  onConflict: 'skip',
  returning: INBOX_COLUMNS,
});

// The INSERT reads its row from the lock CTE, so the lock is held before the stream id is drawn.
const STORE_ITEM = `WITH locked AS (
       SELECT ${streamLockSql('$3::uuid')}
     ), stored AS (
       ${STORE_ONE_ITEM}
     )
     SELECT stored.*, ${streamNoticesSql('SELECT contact_id FROM stored')} AS notices FROM stored`;

/**
 * Renders a delivery's inbox item; null when no template fills it. Throws UnfilledSlotError or
 * TemplateError for a template that cannot render (a final failure naming the slot).
 */
export async function inboxItemFor(
  runtime: Context,
  em: EntityManager,
  event: EventForDelivery,
  contact: ContactRow,
  deliveryId: string,
  renderVariables: Record<string, unknown>,
  templates: TemplateCache,
): Promise<NewInboxItem | null> {
  const rendered = await renderInboxDelivery(em, event, contact, renderVariables, templates);
  if (!rendered) return null;
  return {
    id: newId(runtime.clock.now()),
    tenant_id: event.tenant_id,
    contact_id: contact.id,
    event_id: event.id,
    delivery_id: deliveryId,
    type_key: event.type_key,
    title: rendered.title,
    body: rendered.body,
    action_url: rendered.action_url,
    data: event.variables,
  };
}

/**
 * Stores an item with its stream id and announces it when the transaction commits; undefined when its
 * delivery already has one. (The batched run stores its items in its store statement, stages/store.ts.)
 */
export async function storeInboxItem(
  em: EntityManager,
  item: Pick<
    InboxItemRow,
    'id' | 'tenant_id' | 'contact_id' | 'event_id' | 'type_key' | 'title' | 'body' | 'action_url' | 'data'
  > & { delivery_id: string | null },
): Promise<InboxItemRow | undefined> {
  return queryOne<InboxItemRow>(em, STORE_ITEM, [
    item.id,
    item.tenant_id,
    item.contact_id,
    item.event_id,
    item.delivery_id,
    item.type_key,
    item.title,
    item.body,
    item.action_url,
    JSON.stringify(item.data),
  ]);
}
