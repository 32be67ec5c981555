// When a delivery job that failed for now runs again: the install's retry schedule
// (deliveryRetrySchedule), not pg-boss's exponential backoff, whose waits end long before a relay or
// provider outage does. pg-boss fails the job (back to `retry`, or to the dead letters when its
// retries are spent); this then moves the job's start to the schedule's time and shows that time on
// the job's deliveries still pending.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../base/config.ts';
import { execute } from '../base/db/sql.ts';
import { BOSS_SCHEMA } from '../base/queue.ts';
import { DELIVER_EVENT_QUEUE } from './queues.ts';

/**
 * Fenced to the attempt that failed: a job already running again (or gone) is left alone. Its
 * retention window moves with its start, as pg-boss moves it: a job still waiting past its keep_until
 * is deleted by pg-boss's maintenance.
 */
const RESCHEDULE_RETRY = `WITH job AS (
    UPDATE ${BOSS_SCHEMA}.job
       SET start_after = now() + make_interval(secs => $3),
           keep_until = now() + make_interval(secs => $3) + (keep_until - start_after)
     WHERE name = '${DELIVER_EVENT_QUEUE}' AND id = $1 AND retry_count = $2 AND state = 'retry'
    RETURNING start_after)
  UPDATE deliveries d SET next_attempt_at = job.start_after
    FROM job
   WHERE d.event_id = ANY($4::uuid[]) AND d.status = 'pending'`;

/** How many times a delivery job is retried: once per entry of the schedule. */
export function deliveryRetryLimit(config: Config): number {
  return config.deliveryRetrySchedule.length;
}

/** The queue's own retry settings: the schedule's length, and its first wait should the reschedule not run. */
export function deliveryRetryPolicy(config: Config): { retryLimit: number; retryDelay: number; retryBackoff: false } {
  return { retryLimit: deliveryRetryLimit(config), retryDelay: config.deliveryRetrySchedule[0]!, retryBackoff: false };
}

/** The wait before the retry that follows attempt `retryCount` (0 for the first run). */
export function retryDelaySeconds(config: Config, retryCount: number): number {
  const schedule = config.deliveryRetrySchedule;
  return schedule[Math.min(retryCount, schedule.length - 1)]!;
}

/**
 * Moves a job that was just failed (its attempt `retryCount`) to its time on the schedule, and
 * records that time on its events' pending deliveries. Nothing happens for a job out of retries.
 */
export async function rescheduleRetry(
  em: EntityManager,
  config: Config,
  job: { id: string; retryCount: number },
  eventIds: string[],
): Promise<void> {
  await execute(em, RESCHEDULE_RETRY, [job.id, job.retryCount, retryDelaySeconds(config, job.retryCount), eventIds]);
}
