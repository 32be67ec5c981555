// The inbox channel: renders the inbox template and stores the item, which is its own 'notification'
// on the contact's stream (its stream id is drawn under the contact's stream lock, and the stream hub
// follows it with the contact's counts). delivery_id is UNIQUE on inbox_items, so a retried or
// duplicated job finds the item already there and never stores (or announces) a second one.
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../../db/sql.ts';
import { newId } from '../../ids.ts';
import { NEXT_STREAM_ID_SQL, streamLockSql, streamNoticesSql } from '../../stream/events.ts';
import { renderInbox } from '../../templates/render.ts';
import { INBOX_COLUMNS, type InboxItemRow } from '../../services/inbox.ts';
import { deliveryContext, deliveryTemplate } from '../templates.ts';
import type { ChannelSender } from './types.ts';

export const inboxChannel: ChannelSender = {
  channel: 'inbox',
  local: true,
  async deliver({ runtime, em, delivery, event, contact, renderVariables }) {
    const resolved = await deliveryTemplate(em, 'inbox', event, contact);
    if (!resolved) return { status: 'skipped', reason: 'no_template' };
    // Throws UnfilledSlotError (the worker records a final failure naming the slot).
    const rendered = renderInbox(resolved.template, deliveryContext(resolved.brand, renderVariables, contact));
    await storeInboxItem(em, {
      id: newId(runtime.clock.now()),
      tenant_id: event.tenant_id,
      contact_id: contact.id,
      event_id: event.id,
      delivery_id: delivery.id,
      type_key: event.type_key,
      title: rendered.title,
      body: rendered.body,
      action_url: rendered.action_url,
      data: event.variables,
    });
    return { status: 'delivered' };
  },
};

/**
 * Stores an item with its stream id and announces it when the transaction commits; undefined when its
 * delivery already has one. (The batch path stores its items in its own statement, batch-store.ts.)
 */
export async function storeInboxItem(
  em: EntityManager,
  item: Pick<InboxItemRow, 'id' | 'tenant_id' | 'contact_id' | 'event_id' | 'type_key' | 'title' | 'body' | 'action_url' | 'data'> & { delivery_id: string | null },
): Promise<InboxItemRow | undefined> {
  // The INSERT reads its row from the lock CTE, so the lock is held before the stream id is drawn.
  return queryOne<InboxItemRow>(
    em,
    `WITH locked AS (
       SELECT ${streamLockSql('$3::uuid')}
     ), stored AS (
       INSERT INTO inbox_items (id, tenant_id, contact_id, event_id, delivery_id, type_key, title, body, action_url, data, stream_id)
       SELECT $1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::text, $7::text, $8::text, $9::text, $10::jsonb, ${NEXT_STREAM_ID_SQL} FROM locked
       ON CONFLICT (delivery_id) DO NOTHING
       RETURNING ${INBOX_COLUMNS}
     )
     SELECT stored.*, ${streamNoticesSql('SELECT contact_id FROM stored')} AS notices FROM stored`,
    [item.id, item.tenant_id, item.contact_id, item.event_id, item.delivery_id, item.type_key, item.title, item.body, item.action_url, JSON.stringify(item.data)],
  );
}
