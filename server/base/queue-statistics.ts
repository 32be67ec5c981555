// Keeps the planner's statistics of the job tables in step with their backlog.
//
// pg-boss's fetch takes a queue's next jobs in the order of its fetch index, reading no more than it
// takes, as long as PostgreSQL knows how many jobs are pending. Its statistics only know what the
// table held when it was last analysed. Planned with statistics from before a burst (a broadcast, a
// digest wave, a backlog left by an outage), the fetch reads every pending job of the queue and sorts
// them all, on every call, where the index alone would hand it the first few.
// Autovacuum analyses a table only at its next round (a minute apart by default, and whatever an
// external server is set to), so each worker process checks the job tables every few seconds and
// analyses one that has changed by as many rows as it held when last analysed (at least MIN_CHANGES).
// The check reads PostgreSQL's statistics counters only; an analysis samples at most 30,000 rows.
import type { PgBoss } from 'pg-boss';
import type { Logger } from './logger.ts';
import type { DatabaseAvailability } from './db/availability.ts';
import { BOSS_SCHEMA, startQueueCheck } from './queue.ts';

/** Fewer changed rows than this never make a fetch slow enough to matter. */
export const MIN_CHANGES = 5000;
const CHECK_EVERY_MS = 2000;

/** The queues' job tables changed since their last analysis by as many rows as they held then. */
const STALE_TABLES = `
  SELECT t.rel::text AS name
    FROM (SELECT DISTINCT to_regclass(format('%I.%I', '${BOSS_SCHEMA}', table_name)) AS rel FROM ${BOSS_SCHEMA}.queue) AS t
   WHERE pg_stat_get_mod_since_analyze(t.rel) >= greatest($1::bigint, (SELECT c.reltuples FROM pg_class c WHERE c.oid = t.rel)::bigint)`;

function analyzeSql(table: string): string {
  return `ANALYZE (SKIP_LOCKED) ${table}`;
}

/** Starts the check; returns its stop. */
export function startQueueStatistics(
  boss: PgBoss,
  logger: Logger,
  options: { availability?: DatabaseAvailability; everyMs?: number } = {},
): () => void {
  const db = boss.getDb();
  return startQueueCheck(
    'job table statistics check',
    options.everyMs ?? CHECK_EVERY_MS,
    logger,
    options.availability,
    async () => {
      const { rows } = await db.executeSql(STALE_TABLES, [MIN_CHANGES]);
      for (const { name } of rows as Array<{ name: string }>) {
        // SKIP_LOCKED: another worker, or autovacuum, is analysing it already.
        await db.executeSql(analyzeSql(name));
        logger.debug('job table analysed', { table: name });
      }
    },
  );
}
