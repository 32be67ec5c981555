// The inbox channel: renders the inbox template and stores the item, publishing it on the contact's
// stream in the same transaction (the stream hub follows it with the contact's counts). delivery_id
// is UNIQUE on inbox_items, so a retried or duplicated job finds the item already there and never
// stores (or publishes) a second one.
import { queryOne } from '../../db/sql.ts';
import { newId } from '../../ids.ts';
import { appendStreamEvent } from '../../stream/events.ts';
import { renderInbox } from '../../templates/render.ts';
import { inboxItemView, type InboxItemRow } from '../../services/inbox.ts';
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
    const item = await queryOne<InboxItemRow>(
      em,
      `INSERT INTO inbox_items (id, tenant_id, contact_id, event_id, delivery_id, type_key, title, body, action_url, data)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (delivery_id) DO NOTHING
       RETURNING id, tenant_id, contact_id, event_id, type_key, title, body, action_url, data, created_at, seen_at, read_at, archived_at`,
      [
        newId(runtime.clock.now()),
        event.tenant_id,
        contact.id,
        event.id,
        delivery.id,
        event.type_key,
        rendered.title,
        rendered.body,
        rendered.action_url,
        JSON.stringify(event.variables),
      ],
    );
    if (item) await appendStreamEvent(em, { tenantId: event.tenant_id, contactId: contact.id, kind: 'notification', payload: inboxItemView(item) });
    return { status: 'delivered' };
  },
};
