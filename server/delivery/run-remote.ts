// The batched remote run: the delivery stages over a fetched batch of new events of types without a
// workflow, with remote deliveries (email, push, web push) to send now, in two transactions whatever
// the batch's size:
// 1. plan: the events it may take locked (in id order, skipping those another run holds) and loaded
//    (or taken as the batched inbox run loaded them, which that run has just done without a lock),
//    every plan stored in one statement, the local deliveries (the inbox) delivered under savepoints,
//    the events rolled up; committed;
// 2. send: the planned remote deliveries claimed in one statement (row locks, SKIP LOCKED, only while
//    'pending'), sent side by side through their channels, and their outcomes recorded in one
//    statement; committed; then the events rolled up again.
// What the per-event run (run-event.ts) guarantees holds here too: a plan is stored once per (event,
// channel, destination); a delivery is sent only while pending and under its row lock, so a second
// worker holding the same jobs never sends it twice; a retryable failure stays pending and fails the
// event's job, whose retry (then a planned event) takes the per-event run. Events the batch cannot take
// (a workflow, quiet hours holding them, variables that cannot be read, already started, held by another
// run, nothing remote to send) are left to the per-event run, untouched.
import type { Runtime } from '../runtime.ts';
import { wakeWebhookDispatch } from '../webhooks/wake.ts';
import type { DeliveryRow, RunLookups } from './channels/types.ts';
import { countOutcome, countSkipped } from './metrics.ts';
import { noteRetry, quietHoldUntil, settleLocal } from './round.ts';
import { claimLoadedNewEventsWithoutWorkflow, claimNewEventsWithoutWorkflow, type LoadedEvent } from './stages/load.ts';
import { planEvent } from './stages/plan.ts';
import { newTemplateCache, readVariables } from './stages/render.ts';
import { rollupEvents } from './stages/rollup.ts';
import { sendRemoteBatch, type SendInput } from './stages/send.ts';
import { storePlans } from './stages/store.ts';

export interface RemoteBatchResult {
  /** Events this run delivered, as far as they go now. */
  settled: Set<string>;
  /** Why an event's job should be retried (a retryable failure left a delivery pending). */
  retryErrors: Map<string, string[]>;
}

/**
 * Delivers what it can of `events` (ids, with whether their job is on its last attempt); the caller
 * runs the per-event run for every event not settled. Throws only before anything is sent; a failure
 * after that is a retry error of the events concerned (their jobs are retried with backoff).
 */
export async function deliverRemoteBatch(
  runtime: Runtime,
  events: Array<{ id: string; finalAttempt: boolean }>,
  /** These events as the batched run loaded them (run-batch.ts): when it has them all, they are locked, not loaded again. */
  loadedWithoutLock: ReadonlyMap<string, LoadedEvent> = new Map(),
): Promise<RemoteBatchResult> {
  const finalAttempt = new Map<string, boolean>();
  for (const e of events) finalAttempt.set(e.id, (finalAttempt.get(e.id) ?? false) || e.finalAttempt);
  const ids = [...finalAttempt.keys()];
  const settled = new Set<string>();
  const retryErrors = new Map<string, string[]>();
  const noteErrors = (eventId: string, errors: string[]) => {
    if (errors.length > 0) retryErrors.set(eventId, [...(retryErrors.get(eventId) ?? []), ...errors]);
  };
  if (ids.length === 0) return { settled, retryErrors };
  const templates = newTemplateCache();
  const lookups: RunLookups = new Map();
  const em = runtime.orm.em.fork();

  const sends: Array<{ input: SendInput; event: LoadedEvent }> = [];
  await em.transactional(async (tx) => {
    // Events it does not return (started, of a workflow, held by another run, final or deleted) are
    // left to the per-event run.
    const loaded = ids.every((id) => loadedWithoutLock.has(id))
      ? await claimLoadedNewEventsWithoutWorkflow(tx, ids, loadedWithoutLock)
      : await claimNewEventsWithoutWorkflow(tx, ids);
    const now = runtime.clock.now();
    let takes: Array<{ event: LoadedEvent; values: Record<string, unknown> }> = [];
    for (const event of loaded) {
      if (event.planned || !event.contact) continue;
      if (quietHoldUntil(event, now) !== null) continue;
      const variables = readVariables(runtime, event);
      if ('error' in variables) continue;
      takes.push({ event, values: variables.values });
    }
    // Only events with a remote delivery to send: inbox-only ones stay with the runs made for them.
    const plans = takes.map(({ event }) => ({ event, plan: planEvent(event) })).filter(({ plan }) => plan.some((d) => d.status === 'pending' && d.channel !== 'inbox'));
    takes = takes.filter(({ event }) => plans.some((p) => p.event === event));
    if (takes.length === 0) return;
    for (const { event, plan } of plans) countSkipped(runtime, event, plan);
    const pending = await storePlans(tx, plans);
    for (const { event, values } of takes) {
      const context = {
        runtime,
        tx,
        event,
        contact: event.contact,
        variables: { values },
        templates,
        finalAttempt: finalAttempt.get(event.id)!,
        now,
        retryErrors: [] as string[],
      };
      const remote: DeliveryRow[] = await settleLocal(
        context,
        pending.filter((d) => d.event_id === event.id).map(({ event_id: _eventId, ...d }) => d),
      );
      noteErrors(event.id, context.retryErrors);
      for (const delivery of remote) {
        sends.push({
          event,
          input: { runtime, delivery, event, contact: event.contact!, renderVariables: values, templates, finalAttempt: context.finalAttempt, lookups },
        });
      }
      settled.add(event.id);
    }
    await rollupEvents(
      tx,
      takes.map((t) => t.event.id),
    );
  });

  if (sends.length > 0) {
    let outcomes;
    try {
      outcomes = await sendRemoteBatch(
        runtime,
        sends.map((s) => s.input),
      );
    } catch (error) {
      // Nothing of the batch was recorded: its deliveries are still pending, for the jobs' retries.
      const message = error instanceof Error ? error.message : String(error);
      for (const { event } of sends) noteErrors(event.id, [`sending failed: ${message}`]);
      wakeWebhookDispatch(runtime);
      return { settled, retryErrors };
    }
    sends.forEach(({ event, input }, i) => {
      const outcome = outcomes[i] ?? null;
      const errors: string[] = [];
      noteRetry(errors, input.delivery, outcome, input.finalAttempt);
      noteErrors(event.id, errors);
      countOutcome(runtime, event, input.delivery.channel, outcome, input.finalAttempt);
    });
    const sent = [...new Set(sends.map((s) => s.event.id))];
    try {
      await rollupEvents(em, sent);
    } catch (error) {
      // Every outcome is recorded: the jobs' retries (the per-event run) roll the events up.
      const message = error instanceof Error ? error.message : String(error);
      for (const id of sent) noteErrors(id, [`roll-up failed: ${message}`]);
    }
  }
  wakeWebhookDispatch(runtime);
  return { settled, retryErrors };
}
