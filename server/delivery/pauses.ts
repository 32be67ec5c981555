// Deliveries that wait for a provider's pause to end (a 429 with Retry-After: channels/failover.ts)
// run again when it ends, in a run of their own (schedule.ts), instead of on the retry schedule: a
// pause is the provider pacing the sender, not a failure, so it spends none of the job's retries, and
// the delivery goes out as soon as the provider takes messages again rather than minutes later. A
// provider that never stops pausing cannot hold a delivery forever: past PAUSED_ATTEMPTS_HONOURED
// attempts, its pauses count as ordinary retryable failures again.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from '../base/db/sql.ts';
import type { DeliveryOutcome, DeliveryRow, ChannelContext } from '../channels/types.ts';
import { scheduleRuns, wakeWhenDue, type HeldEvent } from './schedule.ts';

/** Attempts after which a delivery's pauses no longer defer it (about what a 1/s webhook serves a burst of 50). */
export const PAUSED_ATTEMPTS_HONOURED = 50;

/** A pending delivery, with its event's run that sends it when the pause ends. */
export interface Deferral extends HeldEvent {
  deliveryId: string;
}

const SHOW_NEXT_ATTEMPT = `UPDATE deliveries d SET next_attempt_at = to_timestamp(x.at / 1000.0)
    FROM unnest($1::uuid[], $2::float8[]) AS x(id, at)
   WHERE d.id = x.id AND d.status = 'pending'`;

/**
 * Whether an attempt's outcome leaves its delivery pending: a retryable failure unless its job is on
 * its last attempt, and one waiting for a provider's pause always (it spent no attempt).
 */
export function staysPending(outcome: DeliveryOutcome, finalAttempt: boolean): boolean {
  return outcome.status === 'failed' && outcome.retryable && (!finalAttempt || outcome.retryAt !== undefined);
}

/** The outcome as the run takes it: a pause past the delivery's budget is an ordinary retryable failure. */
export function withinPauseBudget(outcome: DeliveryOutcome, delivery: DeliveryRow): DeliveryOutcome {
  if (outcome.status !== 'failed' || outcome.retryAt === undefined) return outcome;
  if (delivery.attempts + 1 < PAUSED_ATTEMPTS_HONOURED) return outcome;
  const { retryAt: _retryAt, ...failure } = outcome;
  return failure;
}

/** Adds the delivery to `deferrals` when its outcome waits for a pause (and a later attempt may send it). */
export function noteDeferral(
  deferrals: Deferral[],
  event: { id: string; broadcast_id: string | null },
  delivery: DeliveryRow,
  outcome: DeliveryOutcome | null,
): void {
  if (outcome?.status !== 'failed' || outcome.retryAt === undefined || !outcome.retryable) return;
  deferrals.push({
    eventId: event.id,
    deliveryId: delivery.id,
    runAt: outcome.retryAt,
    bulk: event.broadcast_id !== null,
  });
}

/**
 * Enqueues the runs that send deferred deliveries when their pauses end, and shows that time on them
 * (next_attempt_at), in one transaction; then wakes the workers when the runs are due. Throws when the
 * runs could not be enqueued: the caller's job must then be retried, or the deliveries would wait forever.
 */
export async function deferDeliveries(
  em: EntityManager,
  runtime: ChannelContext,
  deferrals: Deferral[],
): Promise<void> {
  if (deferrals.length === 0) return;
  // Stopping (the queue is gone): the job must not complete, or nothing would ever send them.
  if (!runtime.boss) throw new Error('the delivery queue is stopping: deferred deliveries go with the job retry');
  const boss = runtime.boss;
  const byEvent = new Map<string, Deferral>();
  for (const deferral of deferrals) {
    const seen = byEvent.get(deferral.eventId);
    if (!seen || deferral.runAt < seen.runAt) byEvent.set(deferral.eventId, deferral);
  }
  const held = [...byEvent.values()].map(({ eventId, runAt, bulk }) => ({ eventId, runAt, bulk }));
  await em.transactional(async (tx) => {
    await scheduleRuns(tx, boss, held);
    await execute(tx, SHOW_NEXT_ATTEMPT, [deferrals.map((d) => d.deliveryId), deferrals.map((d) => d.runAt)]);
  });
  wakeWhenDue(
    boss,
    runtime.logger,
    held.map((h) => h.runAt),
  );
}
