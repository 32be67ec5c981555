// Completing delivery jobs inside the statement that stores their deliveries (stages/store.ts), so a
// batch commits once: the deliveries, the inbox items and the jobs' completion together. Left to
// pg-boss, the completion would be a write transaction of its own after the handler returns (a third
// commit per batch), and a crash between the two commits would leave delivered events' jobs active,
// to be fetched and settled again.
//
// The CTE is pg-boss's own completion statement for the queue (plans.completeJobsDistributed: the
// UPDATE that boss.complete() runs, without the count it wraps it in), fenced like boss.complete()
// to the attempts the worker fetched, so a job that expired and was fetched again elsewhere is left
// to that attempt. pg-boss still completes the batch when the handler returns; the jobs completed
// here are no longer active then, so that statement changes nothing and commits no write.
// pg-boss is pinned in package.json; should another version change that statement, the first batch
// throws (and the per-event path delivers) instead of completing wrongly.
import { attemptPairs, completeJobs, completeJobsDistributed } from 'pg-boss/dist/plans.js';
import { BOSS_SCHEMA, type PgBoss } from '../base/queue.ts';
import { DELIVER_EVENT_QUEUE } from './queues.ts';

/** A fetched job, as pg-boss's completion fence needs it. */
export interface FetchedJob {
  id: string;
  retryCount: number;
}

/** The id filter of pg-boss's completion, which the embedding narrows to the rows it could lock. */
const ID_FILTER = 'id = ANY($2::uuid[])';

/** The jobs of the queue's table that the completion may lock at once (deliveryJobsCompletionCte). */
function completableJobsSql(table: string): string {
  return `SELECT id FROM ${BOSS_SCHEMA}.${table} WHERE name = $1 AND ${ID_FILTER} ORDER BY id FOR UPDATE SKIP LOCKED`;
}

/**
 * CTEs to append to a WITH list: `completed_jobs` completes the delivery jobs that
 * completionParameters() binds (those still active under the attempt fetched) and returns their ids.
 * The statement's parameters are renumbered to start at `firstParameter`.
 *
 * Only jobs whose rows it can lock at once are completed (`completable_jobs`, in id order, SKIP
 * LOCKED): pg-boss refreshes the heartbeats of the same active jobs every second, in an order of its
 * own, and a transaction that waited on one of those rows while holding another could deadlock with
 * it. A job skipped here stays active, and pg-boss completes it when the handler returns.
 */
export async function deliveryJobsCompletionCte(boss: PgBoss, firstParameter: number): Promise<string> {
  const queue = await boss.getQueue(DELIVER_EVENT_QUEUE);
  if (!queue) throw new Error(`queue ${DELIVER_EVENT_QUEUE} does not exist`);
  const update = completeJobsDistributed(BOSS_SCHEMA, queue.table, false, true);
  const squash = (sql: string) => sql.replace(/\s+/g, ' ').trim();
  const numbers = [...new Set([...update.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))].sort();
  if (
    !squash(completeJobs(BOSS_SCHEMA, queue.table, false, true)).includes(squash(update)) ||
    numbers.join() !== '1,2,3,4' ||
    update.split(ID_FILTER).length !== 2
  ) {
    throw new Error('pg-boss completion statement changed: cannot embed it');
  }
  const renumber = (sql: string) => sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + firstParameter - 1}`);
  const completable = completableJobsSql(queue.table);
  const narrowed = update.replace(ID_FILTER, 'id = ANY(ARRAY(SELECT id FROM completable_jobs))');
  return `completable_jobs AS (${renumber(completable)}), completed_jobs AS (${renumber(narrowed)})`;
}

/**
 * The values of the completion's four parameters for `jobs`, in pg-boss's order: the queue, the job
 * ids, the output (none, as pg-boss gives a batch) and the attempt fence.
 */
export function completionParameters(jobs: FetchedJob[]): unknown[] {
  return [
    DELIVER_EVENT_QUEUE,
    jobs.map((j) => j.id),
    null,
    attemptPairs(
      jobs.map((j) => j.id),
      jobs.map((j) => j.retryCount),
    ),
  ];
}
