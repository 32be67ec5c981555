// Enqueuing delivery jobs inside the trigger's own statement. boss.insert() would give the trigger a
// transaction of several round trips (BEGIN, events, jobs, COMMIT) on the hottest route; instead the
// trigger embeds pg-boss's own insert statement for the queue (plans.insertJobs: exactly what
// boss.insert() runs, with the queue's table, policy and retry settings) as a data-modifying CTE,
// and wakes the workers on pg-boss's own NOTIFY channel, as boss.insert() does. pg-boss is pinned in
// package.json; should another version change that statement, deliveryJobCtes() throws at the first
// trigger instead of enqueuing wrongly.
import { insertJobs, notifyChannelSql } from 'pg-boss/dist/plans.js';
import { BOSS_SCHEMA, type PgBoss } from '../queue.ts';
import { DELIVER_EVENT_QUEUE } from './queues.ts';

/** Where pg-boss's insert statement takes its jobs (a JSON text parameter). */
const JOBS_PARAMETER = '$1::text::json';

/**
 * Two CTEs to append to a WITH list: `delivery_jobs` inserts one job per row of `eventsCte` (a CTE
 * returning the inserted events' `id`; the job id is the event id, so an event can never be enqueued
 * twice), `delivery_wakeup` notifies the workers. The statement must select from delivery_wakeup,
 * or PostgreSQL never evaluates it.
 */
export async function deliveryJobCtes(boss: PgBoss, eventsCte: string): Promise<string> {
  const queue = await boss.getQueue(DELIVER_EVENT_QUEUE);
  if (!queue) throw new Error(`queue ${DELIVER_EVENT_QUEUE} does not exist`);
  const insert = insertJobs(BOSS_SCHEMA, { table: queue.table, name: DELIVER_EVENT_QUEUE, returnId: true, notify: false });
  if (insert.split(JOBS_PARAMETER).length !== 2) throw new Error('pg-boss insert statement changed: cannot embed it');
  const jobs = `(SELECT coalesce(json_agg(json_build_object('id', id, 'data', json_build_object('event_id', id))), '[]'::json) FROM ${eventsCte})`;
  return `delivery_jobs AS (${insert.replace(JOBS_PARAMETER, jobs)}),
    delivery_wakeup AS (SELECT pg_notify(${notifyChannelSql(BOSS_SCHEMA)}, '${DELIVER_EVENT_QUEUE}') FROM delivery_jobs LIMIT 1)`;
}
