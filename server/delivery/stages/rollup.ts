// The roll-up stage: an event's status from its deliveries and its workflow's progress. Processing
// while any delivery is pending or a workflow step is still to run; failed when a step failed and
// nothing was delivered; skipped when all deliveries were
// skipped (or there were none); delivered when every one not skipped succeeded; failed when every one
// not skipped failed; partially_delivered otherwise. A final event drops its secret variables'
// ciphertext: they were needed only to render.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, queryOne } from '../../base/db/sql.ts';
import { planEachCall } from '../../base/db/prepared.ts';
import type { Context } from '../../base/context.ts';

/** The roll-up as an aggregate over the event's deliveries `d` (grouped by event; no rows: skipped). */
export const EVENT_STATUS_FROM_DELIVERIES = `CASE
                WHEN count(d.id) FILTER (WHERE d.status = 'pending') > 0 THEN 'processing'
                WHEN count(d.id) FILTER (WHERE d.status <> 'skipped') = 0 THEN 'skipped'
                WHEN count(d.id) FILTER (WHERE d.status IN ('sent', 'delivered')) = count(d.id) FILTER (WHERE d.status <> 'skipped') THEN 'delivered'
                WHEN count(d.id) FILTER (WHERE d.status = 'failed') = count(d.id) FILTER (WHERE d.status <> 'skipped') THEN 'failed'
                ELSE 'partially_delivered'
              END`;

/** SQL: whether the event `e` has a workflow step still to run. */
const OPEN_STEPS = `(e.steps IS NOT NULL AND jsonb_path_exists(e.steps, '$[*] ? (@.status == "pending" || @.status == "waiting")'))`;
/** SQL: a failed workflow step and nothing delivered fails the event (no delivery may say so). */
const FAILED_STEP_ONLY = `(e.steps IS NOT NULL AND jsonb_path_exists(e.steps, '$[*] ? (@.status == "failed")')
                AND count(d.id) FILTER (WHERE d.status IN ('sent', 'delivered')) = 0)`;

/** The roll-up of the events `events` selects (an SQL condition on `e`). */
function rollupSql(events: string): string {
  return `WITH s AS (
       SELECT e.id,
              CASE WHEN ${OPEN_STEPS} THEN 'processing' WHEN ${FAILED_STEP_ONLY} THEN 'failed' ELSE ${EVENT_STATUS_FROM_DELIVERIES} END AS status
         FROM events e LEFT JOIN deliveries d ON d.event_id = e.id
        WHERE ${events} AND e.status NOT IN ('canceled', 'digested')
        GROUP BY e.id
     )
     UPDATE events e
        SET status = s.status, updated_at = now(),
            secret_variables_ciphertext = CASE WHEN s.status = 'processing' THEN e.secret_variables_ciphertext ELSE NULL END
       FROM s
      WHERE e.id = s.id AND e.status IS DISTINCT FROM s.status`;
}

const ROLLUP = planEachCall(rollupSql('e.id = ANY($1::uuid[])'));
const ROLLUP_ONE = rollupSql('e.id = $1');

/** The dead-letter queue's statements (finaliseExhaustedEvent). */
const FAIL_PENDING_DELIVERIES = `UPDATE deliveries
    SET status = 'failed', last_error = coalesce(last_error, 'retries exhausted'), updated_at = now()
  WHERE event_id = $1 AND status = 'pending'`;
const FAIL_OPEN_STEPS = `UPDATE events
    SET steps = (SELECT jsonb_agg(CASE WHEN s->>'status' IN ('pending', 'waiting')
                                       THEN s || '{"status": "failed", "reason": "retries_exhausted"}'::jsonb ELSE s END ORDER BY n)
                   FROM jsonb_array_elements(steps) WITH ORDINALITY AS x(s, n))
  WHERE id = $1 AND steps IS NOT NULL`;
const ANY_DELIVERY = `SELECT 1 FROM deliveries WHERE event_id = $1 LIMIT 1`;
const FAIL_UNPLANNED_EVENT = `UPDATE events
    SET status = 'failed', secret_variables_ciphertext = NULL, updated_at = now()
  WHERE id = $1 AND status IN ('queued', 'scheduled', 'processing')`;

/** Rolls up a batch of events (planned on each call, as batches are: db/prepared.ts). */
export async function rollupEvents(em: EntityManager, eventIds: string[]): Promise<void> {
  await execute(em, ROLLUP, [eventIds]);
}

/** Rolls up one event (the per-event run): a prepared statement, planned once per connection. */
export async function rollupEvent(em: EntityManager, eventId: string): Promise<void> {
  await execute(em, ROLLUP_ONE, [eventId]);
}

/**
 * Retries exhausted (the dead-letter queue): whatever is still pending failed for good, keeping its
 * last error, and so did the workflow step that was running. An event that never got planned (every
 * attempt failed before) fails as a whole.
 */
export async function finaliseExhaustedEvent(runtime: Context, eventId: string): Promise<void> {
  const em = runtime.orm.em.fork();
  await em.transactional(async (tx) => {
    await execute(tx, FAIL_PENDING_DELIVERIES, [eventId]);
    await execute(tx, FAIL_OPEN_STEPS, [eventId]);
    const planned = await queryOne(tx, ANY_DELIVERY, [eventId]);
    if (planned) await rollupEvent(tx, eventId);
    else await execute(tx, FAIL_UNPLANNED_EVENT, [eventId]);
  });
}
