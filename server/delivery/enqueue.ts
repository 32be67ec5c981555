// Enqueuing delivery jobs inside the trigger's own statement. boss.insert() would give the trigger a
// transaction of several round trips (BEGIN, events, jobs, COMMIT) on the hottest route; instead the
// trigger embeds pg-boss's own insert statement for the queue (plans.insertJobs: exactly what
// boss.insert() runs, with the queue's table, policy and retry settings) as a data-modifying CTE.
// pg-boss is pinned in package.json; should another version change that statement,
// deliveryJobsCte() throws at the first trigger instead of enqueuing wrongly.
//
// The workers are woken after the commit (wakeDeliveryWorkers), not by a NOTIFY inside the trigger as
// boss.insert() does it: a PostgreSQL transaction that has issued NOTIFY takes a database-wide lock at
// commit and holds it until its commit record is flushed to disk, so each trigger's commit would wait
// for the previous one's; without it, concurrent commits share their disk flushes.
import { insertJobs, notifyQueue } from 'pg-boss/dist/plans.js';
import { BOSS_SCHEMA, type PgBoss } from '../base/queue.ts';
import type { Logger } from '../base/logger.ts';
import { BULK_JOB_PRIORITY, DELIVER_EVENT_QUEUE } from './queues.ts';

/** Where pg-boss's insert statement takes its jobs (a JSON text parameter). */
const JOBS_PARAMETER = '$1::text::json';

/** What pg-boss's insert statement takes at JOBS_PARAMETER: the jobs of `delivery_job_events`, a JSON array. */
function jobsJsonSql(bulk: boolean | undefined): string {
  const data = bulk
    ? `json_build_object('event_ids', event_ids, 'bulk', true)`
    : `json_build_object('event_ids', event_ids)`;
  const priority = bulk ? `, 'priority', ${BULK_JOB_PRIORITY}` : '';
  return `(SELECT coalesce(json_agg(json_build_object('id', id, 'data', ${data}, 'startAfter', start_after${priority})), '[]'::json)
                  FROM delivery_job_events)`;
}

/**
 * pg-boss's own wake-up for the delivery queue (plans.notifyQueue: the NOTIFY its workers LISTEN for),
 * as a statement of its own whose commit does not wait for the disk (set_config local to its
 * transaction): it changes no data, so a crash can lose nothing but the wake-up, which the workers'
 * polling (every 2 s) stands in for. The setting's value is a parameter, so that the statement is
 * prepared (db/prepared.ts) rather than parsed and planned on each of the many calls a busy API
 * process makes.
 */
const WAKE_UP = `WITH woken AS (${notifyQueue(BOSS_SCHEMA, DELIVER_EVENT_QUEUE)}) SELECT set_config('synchronous_commit', $1, true) FROM woken`;

/**
 * CTEs to append to a WITH list: `delivery_jobs` enqueues the rows of `eventsCte` (a CTE returning the
 * inserted events' `id`, `tenant_id`, `events_per_job` (how many of the type's events may share a job,
 * stages/plan.ts eventsPerJobSql) and `start_after` (when their first run is due, as RFC 3339 text;
 * NULL: now)) and returns the jobs' ids. Events of one tenant with the same `events_per_job`, due at
 * the same time, share jobs of up to that many events. `delivery_job_events` has each job's `id` and
 * `event_ids`, so the statement can check that every event went into a job. A job's id is the id of
 * its first event, so no event can be enqueued in two jobs. `bulk` jobs (a broadcast's) yield to the
 * jobs of triggers waiting in the same queue: pg-boss fetches them after those (BULK_JOB_PRIORITY), and
 * their data says so to the worker that fetched them (isBulkJob).
 */
export async function deliveryJobsCte(
  boss: PgBoss,
  eventsCte: string,
  options: { bulk?: boolean } = {},
): Promise<string> {
  const queue = await boss.getQueue(DELIVER_EVENT_QUEUE);
  if (!queue) throw new Error(`queue ${DELIVER_EVENT_QUEUE} does not exist`);
  const insert = insertJobs(BOSS_SCHEMA, {
    table: queue.table,
    name: DELIVER_EVENT_QUEUE,
    returnId: true,
    notify: false,
  });
  if (insert.split(JOBS_PARAMETER).length !== 2) throw new Error('pg-boss insert statement changed: cannot embed it');
  const jobs = jobsJsonSql(options.bulk);
  return `delivery_job_events AS MATERIALIZED (
    SELECT event_ids[1] AS id, event_ids, start_after
      FROM (SELECT array_agg(id ORDER BY id) AS event_ids, start_after
              FROM (SELECT id, tenant_id, events_per_job, start_after,
                           (row_number() OVER (PARTITION BY tenant_id, events_per_job, start_after ORDER BY id) - 1) / events_per_job AS chunk
                      FROM ${eventsCte}) AS numbered
             GROUP BY tenant_id, events_per_job, start_after, chunk) AS chunks
  ), delivery_jobs AS (${insert.replace(JOBS_PARAMETER, jobs)})`;
}

const wakers = new WeakMap<PgBoss, Waker>();

/**
 * Wakes the delivery workers: call it after a transaction that enqueued delivery jobs has committed.
 * Wake-ups coalesce per process: while one is on its way, further calls send one more after it, and
 * no wake-up begins sooner than WAKE_SPACING_MS after the last. So an ask after a quiet spell wakes the
 * workers at once, and under load a process sends at most one NOTIFY per spacing, not one per trigger
 * statement: each is a transaction of its own, and busy workers fetch again without one. Never throws;
 * a failed wake-up is logged, and the workers' polling finds the jobs anyway.
 */
export function wakeDeliveryWorkers(boss: PgBoss, logger: Logger): void {
  let waker = wakers.get(boss);
  if (!waker) {
    waker = new Waker(() => boss.getDb().executeSql(WAKE_UP, ['off']), logger);
    wakers.set(boss, waker);
  }
  waker.wake();
}

const WAKE_SPACING_MS = 10;

/**
 * Sends a wake-up when asked, one at a time and at least the spacing apart; asks made while one is on
 * its way, or waits for its turn, become one more. Exported for tests.
 */
export class Waker {
  private sending = false;
  private again = false;
  private lastBegan = -Infinity;
  private readonly send: () => Promise<unknown>;
  private readonly logger: Logger;
  private readonly spacingMs: number;

  constructor(send: () => Promise<unknown>, logger: Logger, spacingMs = WAKE_SPACING_MS) {
    this.send = send;
    this.logger = logger;
    this.spacingMs = spacingMs;
  }

  wake(): void {
    if (this.sending) {
      this.again = true;
      return;
    }
    this.sending = true;
    void this.drain();
  }

  private async drain(): Promise<void> {
    do {
      const wait = this.lastBegan + this.spacingMs - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      // Asks made until now are answered by this wake-up; asks made while it is on its way, by the next.
      this.again = false;
      this.lastBegan = performance.now();
      await this.send().catch((error: unknown) =>
        this.logger.warn('waking the delivery workers failed', {
          error: error instanceof Error ? error.message : String(error),
        }),
      );
    } while (this.again);
    this.sending = false;
  }
}
