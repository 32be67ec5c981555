// The batched run: the delivery stages over a whole fetched batch of new events whose deliveries are
// all local (the inbox), in three statements whatever the batch's size and no transaction around them:
// the load stage (one statement), the render stage (one template lookup per distinct type, brand and
// language), and the store stage (one statement that stores everything, rolls the events up and
// completes the jobs it settled, all or nothing on its own). The per-event run takes about fifteen
// round trips per event; at saturation PostgreSQL's per-statement work, not the rows, is most of the
// cost. A transaction around the batch, with the events locked from the load on, would add two round
// trips and a lock record per event and buy nothing the store statement does not check itself.
// Anything else (an event already planned, with a remote channel or a workflow, any error) is left
// to the per-event run, which isolates failures per delivery and retries; both runs are idempotent.
import type { ChannelContext } from '../../channels/types.ts';
import { wakeWebhookDispatch } from '../../webhooks/wake.ts';
import { TemplateError, UnfilledSlotError } from '../../base/template-engine.ts';
import { newId } from '../../base/ids.ts';
import { inboxItemFor } from '../../channels/inbox/channel.ts';
import { isLocalChannel } from '../../channels/registry.ts';
import { countStored } from '../metrics.ts';
import type { FetchedJob } from '../complete.ts';
import { eventIdsOf, type DeliverEventJob } from '../queues.ts';
import { loadEvents, type LoadedEvent } from '../stages/load.ts';
import { planEvent, type PlannedDelivery } from '../stages/plan.ts';
import { newTemplateCache, readVariables, type TemplateCache } from '../../channels/render-delivery.ts';
import { FINAL_EVENT_STATUSES } from '../../base/statuses.ts';
import { storeBatch, storedRow, storedSkip, truncate, type StoredDelivery, type StoredItem } from '../stages/store.ts';

/** Statuses of an event no run has started yet. */
const NOT_STARTED: ReadonlySet<string> = new Set(['queued', 'scheduled']);

export interface InboxBatchResult {
  /** The events it settled (final, or nothing to do). */
  settled: Set<string>;
  /**
   * The events it loaded and left, as loaded (without a lock): the batched remote run locks them and
   * takes them as they are still new (run-remote.ts), instead of loading them again.
   */
  left: Map<string, LoadedEvent>;
}

/**
 * Delivers what it can of a batch of delivery jobs, completing the jobs whose events it settled all of
 * in the statement that stores them. The caller runs the other runs for every event not settled.
 */
export async function deliverInboxBatch(
  runtime: ChannelContext,
  jobs: Array<FetchedJob & { data: DeliverEventJob }>,
): Promise<InboxBatchResult> {
  const boss = runtime.boss;
  if (!boss) throw new Error('the batched run needs the job queue');
  const eventIds = [...new Set(jobs.flatMap((j) => eventIdsOf(j.data)))];
  const em = runtime.orm.em.fork();
  const settled = new Set<string>();
  const left = new Map<string, LoadedEvent>();
  const events = await loadEvents(em, eventIds);
  const found = new Set(events.map((e) => e.id));
  for (const id of eventIds) if (!found.has(id)) settled.add(id); // deleted since: nothing to do
  const local: Array<{ event: LoadedEvent; plan: PlannedDelivery[] }> = [];
  for (const event of events) {
    if (FINAL_EVENT_STATUSES.has(event.status)) {
      settled.add(event.id);
      continue;
    }
    // Not started and unplanned: no run has stored anything yet (a run that plans always moves the status on).
    const plan = !NOT_STARTED.has(event.status) || event.planned || event.workflow !== null ? null : planEvent(event);
    // Only events whose pending deliveries are all local (the inbox) take this run.
    if (plan?.every((d) => d.status !== 'pending' || isLocalChannel(d.channel))) local.push({ event, plan });
    else left.set(event.id, event);
  }
  if (local.length === 0) return { settled, left };

  const templates = newTemplateCache();
  const deliveries: StoredDelivery[] = [];
  const items: StoredItem[] = [];
  for (const { event, plan } of local) {
    for (const planned of plan) {
      const id = newId(runtime.clock.now());
      const row = storedRow(event, id, planned);
      if (planned.status === 'skipped') {
        deliveries.push(storedSkip(row, planned.reason));
        continue;
      }
      const outcome = await inboxOutcome(runtime, em, event, id, templates);
      deliveries.push({
        ...row,
        status: outcome.status,
        reason: outcome.reason,
        last_error: outcome.lastError,
        attempts: 1,
      });
      if (outcome.item) items.push(outcome.item);
    }
  }
  const stored = local.map((p) => p.event.id);
  for (const id of stored) settled.add(id);
  const done = jobs.filter((j) => eventIdsOf(j.data).every((id) => settled.has(id)));
  await storeBatch(em, boss, { deliveries, items, eventIds: stored, jobs: done });
  const createdAt = new Map(local.map(({ event }) => [event.id, event.created_at]));
  countStored(
    runtime,
    deliveries.map((d) => ({ channel: d.channel, status: d.status, created_at: createdAt.get(d.event_id)! })),
  );
  wakeWebhookDispatch(runtime);
  return { settled, left };
}

type InboxOutcome = {
  status: 'delivered' | 'failed' | 'skipped';
  reason: 'no_template' | 'no_destination' | null;
  lastError: string | null;
  item: StoredItem | null;
};

/** What the inbox channel does for a delivery, minus the writes, which the store stage makes. */
async function inboxOutcome(
  runtime: ChannelContext,
  em: Parameters<typeof inboxItemFor>[1],
  event: LoadedEvent,
  deliveryId: string,
  templates: TemplateCache,
): Promise<InboxOutcome> {
  const { contact } = event;
  if (!contact) return { status: 'skipped', reason: 'no_destination', lastError: null, item: null }; // unreachable: planned as no_destination
  const variables = readVariables(runtime, event);
  if ('error' in variables) return { status: 'failed', reason: null, lastError: variables.error, item: null };
  try {
    const item = await inboxItemFor(runtime, em, event, contact, deliveryId, variables.values, templates);
    return item
      ? { status: 'delivered', reason: null, lastError: null, item }
      : { status: 'skipped', reason: 'no_template', lastError: null, item: null };
  } catch (error) {
    if (!(error instanceof UnfilledSlotError || error instanceof TemplateError)) throw error;
    // A template problem does not heal by retrying: final failure, naming the slot.
    return { status: 'failed', reason: null, lastError: truncate(error.message), item: null };
  }
}
