// The fast path for a batch of new events whose deliveries are all local (the inbox): one transaction
// and a handful of set-based statements for the whole batch (plan, store items, publish on the
// streams, record statuses, roll up), instead of a transaction and ~15 round trips per event.
// Anything unusual (an event already planned, a remote channel, any error) is left to the per-event
// path of worker.ts, which isolates failures per delivery and retries; both paths are idempotent.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, query } from '../db/sql.ts';
import { newId } from '../ids.ts';
import type { Runtime } from '../runtime.ts';
import { TemplateError, UnfilledSlotError } from '../templates/engine.ts';
import { renderInbox } from '../templates/render.ts';
import { inboxItemView, type InboxItemRow } from '../services/inbox.ts';
import { appendStreamEventsBulk } from '../stream/events.ts';
import { deliveryContext, deliveryTemplate } from './templates.ts';
import {
  FINAL_EVENT_STATUSES,
  loadContacts,
  lockEvents,
  planEvent,
  readVariables,
  rollupEvents,
  type LoadedEvent,
} from './worker.ts';

interface PlannedRow {
  id: string;
  event_id: string;
  channel: string;
  status: string;
}

interface Outcome {
  id: string;
  status: 'delivered' | 'failed' | 'skipped';
  reason: string | null;
  last_error: string | null;
}

/**
 * Delivers what it can of a batch in one transaction; returns the ids of the events it settled
 * (final, or nothing to do). The caller runs the per-event path for every other event.
 */
export async function deliverInboxBatch(runtime: Runtime, eventIds: string[]): Promise<Set<string>> {
  const em = runtime.orm.em.fork();
  return em.transactional(async (tx) => {
    const settled = new Set<string>();
    const events = await lockEvents(tx, eventIds);
    const found = new Set(events.map((e) => e.id));
    for (const id of eventIds) if (!found.has(id)) settled.add(id); // deleted since: nothing to do
    const fresh: LoadedEvent[] = [];
    for (const event of events) {
      if (FINAL_EVENT_STATUSES.has(event.status)) settled.add(event.id);
      else if (!event.planned) fresh.push(event);
    }
    if (fresh.length === 0) return settled;
    const contacts = await loadContacts(
      tx,
      fresh.flatMap((e) => (e.contact_id ? [e.contact_id] : [])),
      fresh.map((e) => e.type_key),
    );
    const plans = fresh.map((event) => {
      const contact = event.contact_id ? (contacts.get(event.contact_id) ?? null) : null;
      return { event, contact, plan: planEvent(event, contact) };
    });
    // Only events whose pending deliveries are all inbox take this path.
    const local = plans.filter((p) => p.plan.every((d) => d.status !== 'pending' || d.channel === 'inbox'));
    if (local.length === 0) return settled;
    const rows = local.flatMap((p) => p.plan.map((d) => ({ ...d, event_id: p.event.id, tenant_id: p.event.tenant_id })));
    const inserted =
      rows.length === 0
        ? []
        : await query<PlannedRow>(
            tx,
            `INSERT INTO deliveries (id, event_id, tenant_id, channel, destination, provider, status, reason)
             SELECT gen_random_uuid(), (d->>'event_id')::uuid, (d->>'tenant_id')::uuid, d->>'channel', d->>'destination', d->>'provider', d->>'status', d->>'reason'
               FROM jsonb_array_elements($1::jsonb) AS d
             ON CONFLICT (event_id, channel, destination) DO NOTHING
             RETURNING id, event_id, channel, status`,
            [JSON.stringify(rows)],
          );
    const pendingByEvent = new Map(inserted.filter((d) => d.status === 'pending').map((d) => [d.event_id, d.id]));

    // Render every inbox item; the template lookup is shared by events with the same type, brand and language.
    const templates = new Map<string, ReturnType<typeof deliveryTemplate<'inbox'>>>();
    const outcomes: Outcome[] = [];
    const items: Array<Record<string, unknown>> = [];
    for (const { event, contact } of local) {
      const deliveryId = pendingByEvent.get(event.id);
      if (!deliveryId || !contact) continue;
      const variables = readVariables(runtime, event);
      if ('error' in variables) {
        outcomes.push({ id: deliveryId, status: 'failed', reason: null, last_error: variables.error });
        continue;
      }
      const cacheKey = `${event.tenant_id}\u0000${event.type_key}\u0000${event.brand_key ?? ''}\u0000${contact.language ?? ''}`;
      let resolving = templates.get(cacheKey);
      if (!resolving) templates.set(cacheKey, (resolving = deliveryTemplate(tx, 'inbox', event, contact)));
      const resolved = await resolving;
      if (!resolved) {
        outcomes.push({ id: deliveryId, status: 'skipped', reason: 'no_template', last_error: null });
        continue;
      }
      try {
        const rendered = await renderInbox(resolved.template, deliveryContext(resolved.brand, variables.values, contact));
        items.push({
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
        });
        outcomes.push({ id: deliveryId, status: 'delivered', reason: null, last_error: null });
      } catch (error) {
        if (!(error instanceof UnfilledSlotError || error instanceof TemplateError)) throw error;
        outcomes.push({ id: deliveryId, status: 'failed', reason: null, last_error: error.message });
      }
    }
    if (items.length > 0) {
      const stored = await query<InboxItemRow>(
        tx,
        `INSERT INTO inbox_items (id, tenant_id, contact_id, event_id, delivery_id, type_key, title, body, action_url, data)
         SELECT x.id, x.tenant_id, x.contact_id, x.event_id, x.delivery_id, x.type_key, x.title, x.body, x.action_url, coalesce(x.data, '{}')
           FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, tenant_id uuid, contact_id uuid, event_id uuid, delivery_id uuid, type_key text,
                                                   title text, body text, action_url text, data jsonb)
         ON CONFLICT (delivery_id) DO NOTHING
         RETURNING id, tenant_id, contact_id, event_id, type_key, title, body, action_url, data, created_at, seen_at, read_at, archived_at`,
        [JSON.stringify(items)],
      );
      await appendStreamEventsBulk(
        tx,
        stored.map((item) => ({ tenantId: item.tenant_id, contactId: item.contact_id, kind: 'notification' as const, payload: inboxItemView(item) })),
      );
      await appendCountsBulk(tx, stored);
    }
    if (outcomes.length > 0) {
      await execute(
        tx,
        `UPDATE deliveries d
            SET status = x.status, reason = x.reason, last_error = x.last_error, attempts = d.attempts + 1, updated_at = now()
           FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, status text, reason text, last_error text)
          WHERE d.id = x.id AND d.status = 'pending'`,
        [JSON.stringify(outcomes)],
      );
    }
    const ids = local.map((p) => p.event.id);
    await rollupEvents(tx, ids);
    for (const id of ids) settled.add(id);
    return settled;
  });
}

/** One 'counts' stream event per contact that received items (the same counts as inboxCounts). */
async function appendCountsBulk(tx: EntityManager, items: InboxItemRow[]): Promise<void> {
  const contacts = new Map(items.map((i) => [i.contact_id, i.tenant_id]));
  if (contacts.size === 0) return;
  const counts = await query<{ contact_id: string; unread_count: number; unseen_count: number }>(
    tx,
    `SELECT contact_id::text,
            count(*) FILTER (WHERE read_at IS NULL)::int AS unread_count,
            count(*) FILTER (WHERE seen_at IS NULL AND read_at IS NULL)::int AS unseen_count
       FROM inbox_items
      WHERE contact_id = ANY($1::uuid[]) AND archived_at IS NULL
      GROUP BY contact_id`,
    [[...contacts.keys()]],
  );
  const byContact = new Map(counts.map((c) => [c.contact_id, c]));
  await appendStreamEventsBulk(
    tx,
    [...contacts].map(([contactId, tenantId]) => ({
      tenantId,
      contactId,
      kind: 'counts' as const,
      payload: { unread_count: byContact.get(contactId)?.unread_count ?? 0, unseen_count: byContact.get(contactId)?.unseen_count ?? 0 },
    })),
  );
}
