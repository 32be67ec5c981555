// The fast path for a batch of new events whose deliveries are all local (the inbox), in three
// statements whatever the batch's size, and no transaction around them: one that loads everything
// planning and rendering need (batch-load.ts), one template lookup per distinct (type, brand,
// language), and one that stores everything and completes the jobs it settled (batch-store.ts),
// all or nothing on its own. The per-event path of worker.ts takes ~15 round trips per event; at
// saturation PostgreSQL's per-statement work, not the rows, was most of the cost. A transaction around
// the batch, with the events locked from the load on, added two round trips (BEGIN, COMMIT) and a lock
// record per event, and bought nothing the store statement does not check itself: with it, a delivered
// item cost ~20% more CPU, worker and PostgreSQL together (npm run bench, 4 interleaved pairs).
// Anything unusual (an event already planned, a remote channel, any error) is left to the per-event
// path, which isolates failures per delivery and retries; both paths are idempotent.
import type { EntityManager } from '@mikro-orm/postgresql';
import { findTemplate, templateCandidates, type InboxTemplateRow } from '../templates/resolve.ts';
import { newId } from '../ids.ts';
import type { Runtime } from '../runtime.ts';
import { TemplateError, UnfilledSlotError } from '../templates/engine.ts';
import { renderInbox } from '../templates/render.ts';
import { deliveryContext } from './templates.ts';
import { loadBatch, type BatchEvent } from './batch-load.ts';
import { storeBatch, type StoredDelivery, type StoredItem } from './batch-store.ts';
import type { FetchedJob } from './complete.ts';
import { eventIdsOf, type DeliverEventJob } from './queues.ts';
import { FINAL_EVENT_STATUSES, planEvent, readVariables, truncate } from './worker.ts';

/**
 * Delivers what it can of a batch of delivery jobs, completing the jobs whose events it settled all of
 * in the statement that stores them; returns the ids of the events it settled (final, or nothing to
 * do). The caller runs the per-event path for every other event.
 */
export async function deliverInboxBatch(runtime: Runtime, jobs: Array<FetchedJob & { data: DeliverEventJob }>): Promise<Set<string>> {
  const boss = runtime.boss;
  if (!boss) throw new Error('the batch delivery path needs the job queue');
  const eventIds = [...new Set(jobs.flatMap((j) => eventIdsOf(j.data)))];
  const em = runtime.orm.em.fork();
  const settled = new Set<string>();
  const events = await loadBatch(em, eventIds);
  const found = new Set(events.map((e) => e.id));
  for (const id of eventIds) if (!found.has(id)) settled.add(id); // deleted since: nothing to do
  const local: Array<{ event: BatchEvent; plan: ReturnType<typeof planEvent> }> = [];
  for (const event of events) {
    if (FINAL_EVENT_STATUSES.has(event.status)) {
      settled.add(event.id);
      continue;
    }
    // 'queued' and unplanned: no attempt has stored anything yet (a planning attempt always moves the status on).
    if (event.status !== 'queued' || event.planned) continue;
    const plan = planEvent(event, event.contact);
    // Only events whose pending deliveries are all inbox take this path.
    if (plan.every((d) => d.status !== 'pending' || d.channel === 'inbox')) local.push({ event, plan });
  }
  if (local.length === 0) return settled;

  const templates = new Map<string, Promise<InboxTemplateRow | null>>();
  const deliveries: StoredDelivery[] = [];
  const items: StoredItem[] = [];
  for (const { event, plan } of local) {
    for (const planned of plan) {
      const id = newId(runtime.clock.now());
      const row = { id, event_id: event.id, tenant_id: event.tenant_id, channel: planned.channel, destination: planned.destination, provider: planned.provider };
      if (planned.status === 'skipped') {
        deliveries.push({ ...row, status: 'skipped', reason: planned.reason, last_error: null, attempts: 0 });
        continue;
      }
      const outcome = await deliverToInbox(runtime, em, event, id, templates);
      deliveries.push({ ...row, status: outcome.status, reason: outcome.reason, last_error: outcome.lastError, attempts: 1 });
      if (outcome.item) items.push(outcome.item);
    }
  }
  const stored = local.map((p) => p.event.id);
  for (const id of stored) settled.add(id);
  const done = jobs.filter((j) => eventIdsOf(j.data).every((id) => settled.has(id)));
  await storeBatch(em, boss, { deliveries, items, eventIds: stored, jobs: done });
  return settled;
}

type InboxOutcome = {
  status: 'delivered' | 'failed' | 'skipped';
  reason: 'no_template' | 'no_destination' | null;
  lastError: string | null;
  item: StoredItem | null;
};

/** Renders an event's inbox item (what the inbox channel does, minus the writes, which storeBatch makes). */
async function deliverToInbox(
  runtime: Runtime,
  em: EntityManager,
  event: BatchEvent,
  deliveryId: string,
  templates: Map<string, Promise<InboxTemplateRow | null>>,
): Promise<InboxOutcome> {
  const { contact, brand } = event;
  if (!contact) return { status: 'skipped', reason: 'no_destination', lastError: null, item: null }; // unreachable: planned as no_destination
  const variables = readVariables(runtime, event);
  if ('error' in variables) return { status: 'failed', reason: null, lastError: variables.error, item: null };
  if (!brand) return { status: 'skipped', reason: 'no_template', lastError: null, item: null };
  // The fallback chain of resolveTemplate, over the brand and defaults batch-load.ts looked up.
  const candidates = templateCandidates(brand.key, event.default_brand_key, contact.language, event.default_language);
  const cacheKey = JSON.stringify([event.tenant_id, event.type_key, candidates]);
  let resolving = templates.get(cacheKey);
  if (!resolving) {
    resolving = findTemplate(em, 'inbox', { tenantId: event.tenant_id, typeKey: event.type_key, ...candidates });
    templates.set(cacheKey, resolving);
  }
  const template = await resolving;
  if (!template) return { status: 'skipped', reason: 'no_template', lastError: null, item: null };
  let rendered;
  try {
    rendered = renderInbox(template, deliveryContext(brand, variables.values, contact));
  } catch (error) {
    if (!(error instanceof UnfilledSlotError || error instanceof TemplateError)) throw error;
    // A template problem does not heal by retrying: final failure, naming the slot.
    return { status: 'failed', reason: null, lastError: truncate(error.message), item: null };
  }
  const item = {
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
  return { status: 'delivered', reason: null, lastError: null, item };
}
