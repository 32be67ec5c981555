// The per-event run: the delivery stages for one event, in rounds. Each round is one transaction that
// locks and loads the event (load), plans what is due (plan), renders and stores its local deliveries
// (render, store), advances its workflow, and rolls its status up (roll-up); the remote deliveries it
// planned are sent after that commit (send), each under its own row lock, and the next round goes on
// from there. Every step is idempotent, so a job retried after a crash or a failure picks up where the
// last attempt stopped:
// - a plan is stored once (UNIQUE event_id + channel + destination; the event row is locked meanwhile);
// - a delivery is sent only while 'pending', under a row lock; a final status is never revisited;
// - the inbox item is keyed by delivery id (channels/inbox.ts);
// - a workflow step's progress commits with what the step did, in the same transaction.
//
// An event of a type without a workflow runs the default: every enabled channel at once. Remote
// channels (email, push, web push) wait for the end of the contact's quiet hours unless the type
// bypasses them; the inbox never waits.
import type { EntityManager } from '@mikro-orm/postgresql';
import { wakeWebhookDispatch } from '../../webhooks/wake.ts';
import type { DeliveryRow, ChannelContext } from '../../channels/types.ts';
import { noteRetry, quietHoldUntil, settleLocal, type RoundContext } from './round.ts';
import { scheduleRuns, wakeWhenDue, type HeldEvent } from '../schedule.ts';
import { deferDeliveries, noteDeferral, type Deferral } from '../pauses.ts';
import { countOutcome, countSkipped } from '../metrics.ts';
import { loadEventLocked, type LoadedEvent } from '../stages/load.ts';
import { planEvent } from '../stages/plan.ts';
import { newTemplateCache, readVariables, type TemplateCache } from '../../channels/render-delivery.ts';
import { rollupEvent } from '../stages/rollup.ts';
import { FINAL_EVENT_STATUSES } from '../../base/statuses.ts';
import { sendRemote } from '../stages/send.ts';
import { pendingDeliveries, storePlan } from '../stages/store.ts';
import { advanceWorkflow, digestOf } from '../workflow.ts';
import { MAX_WORKFLOW_STEPS } from '../../schemas/workflows.ts';

export class RetryableDeliveryError extends Error {
  override name = 'RetryableDeliveryError';
}

/** What one round decided: remote deliveries to send after its commit, and whether to go on. */
export interface Round {
  event: LoadedEvent;
  variables: Record<string, unknown> | null;
  remote: DeliveryRow[];
  /** Go on with the workflow once the remote deliveries are sent. */
  again: boolean;
  held: HeldEvent[];
  retryErrors: string[];
}

/**
 * Processes one event. Throws RetryableDeliveryError when a delivery failed in a way worth retrying
 * (the job is retried with backoff); `finalAttempt` turns such failures into final 'failed' statuses.
 */
export async function deliverEvent(
  runtime: ChannelContext,
  eventId: string,
  options: { finalAttempt: boolean },
): Promise<void> {
  const em = runtime.orm.em.fork();
  const templates = newTemplateCache();
  const retryErrors: string[] = [];
  const deferrals: Deferral[] = [];
  // A round ends at a remote send or a wait; a workflow has at most MAX_WORKFLOW_STEPS steps.
  for (let round = 0; round < MAX_WORKFLOW_STEPS + 2; round++) {
    const done = await em.transactional((tx) => runRound(runtime, tx, eventId, templates, options.finalAttempt));
    if (!done) break;
    retryErrors.push(...done.retryErrors);
    if (done.held.length > 0 && runtime.boss)
      wakeWhenDue(
        runtime.boss,
        runtime.logger,
        done.held.map((h) => h.runAt),
      );
    for (const delivery of done.remote) {
      const outcome = await sendRemote(em, {
        runtime,
        delivery,
        event: done.event,
        contact: done.event.contact!,
        renderVariables: done.variables!,
        templates,
        finalAttempt: options.finalAttempt,
      });
      noteRetry(retryErrors, delivery, outcome, options.finalAttempt);
      noteDeferral(deferrals, done.event, delivery, outcome);
      countOutcome(runtime, done.event, delivery.channel, outcome, options.finalAttempt);
    }
    if (done.remote.length > 0) await rollupEvent(em, eventId);
    // A workflow goes on once its step's deliveries are sent: a deferred one is not yet.
    if (!done.again || retryErrors.length > 0 || deferrals.length > 0) break;
  }
  await deferDeliveries(em, runtime, deferrals);
  wakeWebhookDispatch(runtime);
  if (retryErrors.length > 0) throw new RetryableDeliveryError(retryErrors.join('; '));
}

async function runRound(
  runtime: ChannelContext,
  tx: EntityManager,
  eventId: string,
  templates: TemplateCache,
  finalAttempt: boolean,
): Promise<Round | null> {
  const event = await loadEventLocked(tx, eventId);
  if (!event || FINAL_EVENT_STATUSES.has(event.status)) return null;
  const variables = readVariables(runtime, event);
  const context: RoundContext = {
    runtime,
    tx,
    event,
    contact: event.contact,
    variables,
    templates,
    finalAttempt,
    now: runtime.clock.now(),
    retryErrors: [],
  };
  const held: HeldEvent[] = [];
  let remote: DeliveryRow[] = [];
  let again = false;
  let final = false;
  if ('values' in variables && event.steps !== null) {
    const digest = await digestOf(tx, event);
    if (digest) context.variables = { values: { ...variables.values, digest } };
  }
  // What earlier rounds left pending first (a retried send, or remote deliveries held for quiet hours).
  if (event.planned) remote = await settleLocal(context, await pendingDeliveries(tx, event.id));
  const startsWorkflow = event.steps === null && !event.planned && event.workflow !== null;
  if (remote.length === 0 && (event.steps !== null || startsWorkflow)) {
    const step = await advanceWorkflow(context);
    remote = step.remote;
    again = step.again;
    held.push(...step.held);
    final = step.digestedInto !== null;
  } else if (!event.planned && event.steps === null) {
    const plan = planEvent(event);
    countSkipped(runtime, event, plan);
    remote = await settleLocal(context, await storePlan(tx, event, plan));
  } else if (remote.length > 0 && event.steps !== null) {
    again = true;
  }
  const holdUntil = remote.length > 0 ? quietHoldUntil(event, context.now) : null;
  if (holdUntil !== null) {
    held.push({ eventId: event.id, runAt: holdUntil, bulk: event.broadcast_id !== null });
    remote = [];
    again = false;
  }
  if (held.length > 0) await scheduleRuns(tx, runtime.boss!, held);
  if (!final) await rollupEvent(tx, event.id);
  return {
    event,
    variables: 'values' in context.variables ? context.variables.values : null,
    remote,
    again,
    held,
    retryErrors: context.retryErrors,
  };
}
