// The batched remote run: the delivery stages over a fetched batch of new events of types without a
// workflow, with remote deliveries (email, push, web push) to send now. It first takes the events it
// may: locked (in id order, skipping those another run holds) and loaded (or taken as the batched inbox
// run loaded them, which that run has just done without a lock). Then, whatever the batch's size:
// - when none of the events has a local delivery (the inbox) to make, in that one transaction: the
//   remote deliveries sent side by side through their channels, then every delivery stored with its
//   outcome and the events rolled up, in one statement (stages/store.ts storeBatch); committed. Each
//   delivery is written once, and no row is written before the sends: the event locks are what keeps
//   a second worker from sending them too. Holding them over the sends delays nobody's inbox.
// - otherwise in two, so that the inbox items do not wait for the sends:
//   1. plan: every plan stored in one statement, the local deliveries delivered under savepoints, the
//      events rolled up; committed;
//   2. send: the planned remote deliveries claimed in one statement (row locks, SKIP LOCKED, only
//      while 'pending'), sent side by side, and their outcomes recorded in one statement; committed;
//      then the events rolled up again.
// What the per-event run (run-event.ts) guarantees holds here too: a plan is stored once per (event,
// channel, destination); a delivery is sent only under a lock that a second worker holding the same
// jobs waits for or skips, and only while nothing final is stored for it, so that worker never sends
// it twice; a retryable failure stays pending and fails the event's job, whose retry (then a planned
// event) takes the per-event run; one waiting for a provider's pause gets a run of its own
// (pauses.ts). Events the batch cannot take (a workflow, quiet hours holding them,
// variables that cannot be read, already started, held by another run, nothing remote to send) are
// left to the per-event run, untouched.
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../base/ids.ts';
import { wakeWebhookDispatch } from '../../webhooks/wake.ts';
import { isLocalChannel } from '../../channels/registry.ts';
import type { DeliveryOutcome, DeliveryRow, RunLookups, ChannelContext } from '../../channels/types.ts';
import { countOutcome, countSkipped } from '../metrics.ts';
import { noteRetry, quietHoldUntil, settleLocal } from './round.ts';
import { deferDeliveries, noteDeferral, type Deferral } from '../pauses.ts';
import {
  claimLoadedNewEventsWithoutWorkflow,
  claimNewEventsWithoutWorkflow,
  type LoadedEvent,
} from '../stages/load.ts';
import { planEvent, type PlannedDelivery } from '../stages/plan.ts';
import { newTemplateCache, readVariables, type TemplateCache } from '../../channels/render-delivery.ts';
import { rollupEvents } from '../stages/rollup.ts';
import { sendRemoteBatch, sendSideBySide, type SendInput } from '../stages/send.ts';
import { storeBatch, storedAttempt, storedRow, storedSkip, storePlans, type StoredDelivery } from '../stages/store.ts';

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
  runtime: ChannelContext,
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
  const deferrals: Deferral[] = [];
  const noteOutcomes = (sent: Array<RemoteSend & { outcome: DeliveryOutcome | null }>) => {
    for (const { event, input, outcome } of sent) {
      const errors: string[] = [];
      noteRetry(errors, input.delivery, outcome, input.finalAttempt);
      noteErrors(event.id, errors);
      noteDeferral(deferrals, event, input.delivery, outcome);
      countOutcome(runtime, event, input.delivery.channel, outcome, input.finalAttempt);
    }
  };
  if (ids.length === 0) return { settled, retryErrors };
  const templates = newTemplateCache();
  const lookups: RunLookups = new Map();
  const em = runtime.orm.em.fork();

  const sends: RemoteSend[] = [];
  /** The one-transaction path's sends, once made: their events are this run's from then on, whatever happens. */
  const inPlace: { sent: SentRemote[] | null } = { sent: null };
  try {
    await em.transactional(async (tx) => {
      // Events it does not return (started, of a workflow, held by another run, final or deleted) are
      // left to the per-event run.
      const loaded = ids.every((id) => loadedWithoutLock.has(id))
        ? await claimLoadedNewEventsWithoutWorkflow(tx, ids, loadedWithoutLock)
        : await claimNewEventsWithoutWorkflow(tx, ids);
      const now = runtime.clock.now();
      const takes: Take[] = [];
      for (const event of loaded) {
        if (event.planned || !event.contact) continue;
        if (quietHoldUntil(event, now) !== null) continue;
        const variables = readVariables(runtime, event);
        if ('error' in variables) continue;
        const plan = planEvent(event);
        // Only events with a remote delivery to send: inbox-only ones stay with the runs made for them.
        if (plan.some((d) => d.status === 'pending' && !isLocal(d)))
          takes.push({ event, values: variables.values, plan });
      }
      if (takes.length === 0) return;
      for (const { event, plan } of takes) countSkipped(runtime, event, plan);
      const common = { runtime, templates, lookups, now };
      if (takes.every(({ plan }) => plan.every((d) => d.status !== 'pending' || !isLocal(d)))) {
        await sendAndStore(tx, takes, finalAttempt, common, (sent) => (inPlace.sent = sent));
      } else {
        sends.push(...(await storePlansAndSettleLocal(tx, takes, finalAttempt, common, noteErrors)));
      }
      for (const { event } of takes) settled.add(event.id);
    });
  } catch (error) {
    if (!inPlace.sent) throw error;
    // Sent, but nothing of it stored: the jobs' retries (the per-event run) deliver the events again.
    const message = error instanceof Error ? error.message : String(error);
    for (const { event } of inPlace.sent) {
      settled.add(event.id);
      noteErrors(event.id, [`storing the outcomes failed: ${message}`]);
    }
    wakeWebhookDispatch(runtime);
    return { settled, retryErrors };
  }
  if (inPlace.sent) noteOutcomes(inPlace.sent);

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
    noteOutcomes(sends.map((s, i) => ({ ...s, outcome: outcomes[i] ?? null })));
    const sent = [...new Set(sends.map((s) => s.event.id))];
    try {
      await rollupEvents(em, sent);
    } catch (error) {
      // Every outcome is recorded: the jobs' retries (the per-event run) roll the events up.
      const message = error instanceof Error ? error.message : String(error);
      for (const id of sent) noteErrors(id, [`roll-up failed: ${message}`]);
    }
  }
  try {
    await deferDeliveries(em, runtime, deferrals);
  } catch (error) {
    // Their deliveries are pending with no run to send them: the jobs' retries do.
    const message = error instanceof Error ? error.message : String(error);
    for (const { eventId } of deferrals) noteErrors(eventId, [`deferring for a provider's pause failed: ${message}`]);
  }
  wakeWebhookDispatch(runtime);
  return { settled, retryErrors };
}

/** A remote delivery to send, with its event; once sent, with its outcome. */
interface RemoteSend {
  event: LoadedEvent;
  input: SendInput;
}
type SentRemote = RemoteSend & { outcome: DeliveryOutcome };

/** An event the run takes: its variables (secret ones included) and its plan. */
interface Take {
  event: LoadedEvent;
  values: Record<string, unknown>;
  plan: PlannedDelivery[];
}

interface RunCommon {
  runtime: ChannelContext;
  templates: TemplateCache;
  lookups: RunLookups;
  now: number;
}

const isLocal = (d: PlannedDelivery) => isLocalChannel(d.channel);

/**
 * The one-transaction path, inside the transaction holding the events: sends every planned remote
 * delivery, then stores every delivery with its outcome and rolls the events up, in one statement.
 * `onSent` hears of the sends before the store, which may fail.
 */
async function sendAndStore(
  tx: EntityManager,
  takes: Take[],
  finalAttempt: ReadonlyMap<string, boolean>,
  common: RunCommon,
  onSent: (sent: SentRemote[]) => void,
): Promise<void> {
  const { runtime, now } = common;
  const deliveries: StoredDelivery[] = [];
  const toSend: RemoteSend[] = [];
  for (const { event, values, plan } of takes) {
    for (const planned of plan) {
      const delivery: DeliveryRow = {
        id: newId(now),
        channel: planned.channel,
        destination: planned.destination,
        provider: planned.provider,
        attempts: 0,
      };
      if (planned.status === 'skipped') {
        deliveries.push(storedSkip(storedRow(event, delivery.id, planned), planned.reason));
      } else {
        toSend.push(remoteSend(common, event, values, delivery, finalAttempt.get(event.id)!));
      }
    }
  }
  const outcomes = await sendSideBySide(
    runtime,
    toSend.map((s) => s.input),
  );
  const sent: SentRemote[] = toSend.map((s, i) => ({ ...s, outcome: outcomes[i]! }));
  onSent(sent);
  for (const { event, input, outcome } of sent)
    deliveries.push({
      ...storedRow(event, input.delivery.id, input.delivery),
      ...storedAttempt(outcome, input.finalAttempt),
    });
  await storeBatch(tx, runtime.boss!, { deliveries, items: [], eventIds: takes.map((t) => t.event.id), jobs: [] });
}

/**
 * The two-transaction path's first, inside the transaction holding the events: stores every plan,
 * delivers the local deliveries under savepoints and rolls the events up; answers the remote
 * deliveries to send after the commit.
 */
async function storePlansAndSettleLocal(
  tx: EntityManager,
  takes: Take[],
  finalAttempt: ReadonlyMap<string, boolean>,
  common: RunCommon,
  noteErrors: (eventId: string, errors: string[]) => void,
): Promise<RemoteSend[]> {
  const { runtime, templates, now } = common;
  const sends: RemoteSend[] = [];
  const pending = await storePlans(tx, takes);
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
      sends.push(remoteSend(common, event, values, delivery, context.finalAttempt));
    }
  }
  await rollupEvents(
    tx,
    takes.map((t) => t.event.id),
  );
  return sends;
}

/** A delivery of a taken event to send through its channel, with what the run shares. */
function remoteSend(
  { runtime, templates, lookups }: RunCommon,
  event: LoadedEvent,
  values: Record<string, unknown>,
  delivery: DeliveryRow,
  finalAttempt: boolean,
): RemoteSend {
  return {
    event,
    input: {
      runtime,
      delivery,
      event,
      contact: event.contact!,
      renderVariables: values,
      templates,
      finalAttempt,
      lookups,
    },
  };
}
