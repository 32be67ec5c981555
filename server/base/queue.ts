// The job queue: pg-boss on the same PostgreSQL, its schema managed by pg-boss itself, with
// LISTEN/NOTIFY on so workers wake as soon as a job commits. Queues and their workers are declared in
// server/jobs/index.ts; this module starts and stops them.
import type { PgBoss } from 'pg-boss';
import pg from 'pg';
import type { Logger } from './logger.ts';
import { prepareStatementsOf } from './db/prepared.ts';
import { isDatabaseUnavailable, type DatabaseAvailability } from './db/availability.ts';

export type { PgBoss };

export const BOSS_SCHEMA = 'pgboss';

/**
 * The system-email queue (jobs/system-email.ts). Named here, at the bottom, because the list of encrypted
 * columns (crypto/encrypted-columns.ts) reads the sealed link tokens of its waiting jobs.
 */
export const SYSTEM_EMAIL_JOB = 'system-email';

/** The partial index on pg-boss's table through which the lost-job check finds the active jobs it watches. */
export const LOST_JOB_INDEX = 'herald_job_common_heartbeat';

// The build of LOST_JOB_INDEX (startLostJobIndexBuild).
const LOST_JOB_INDEX_LOCK = `SELECT pg_advisory_lock(hashtextextended('herald:${LOST_JOB_INDEX}', 0))`;
const INDEX_VALID = `SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)`;
const DROP_LOST_JOB_INDEX = `DROP INDEX CONCURRENTLY ${BOSS_SCHEMA}.${LOST_JOB_INDEX}`;
const CREATE_LOST_JOB_INDEX = `CREATE INDEX CONCURRENTLY ${LOST_JOB_INDEX} ON ${BOSS_SCHEMA}.job_common (heartbeat_on)
   WHERE state = 'active' AND heartbeat_seconds IS NOT NULL`;

/** The active jobs whose heartbeat is older than $1 seconds (read through LOST_JOB_INDEX). */
export const LOST_JOBS = `SELECT name, id, retry_count FROM ${BOSS_SCHEMA}.job
   WHERE state = 'active' AND heartbeat_seconds IS NOT NULL
     AND heartbeat_on < ${BOSS_SCHEMA}.job_now() - make_interval(secs => $1)
   LIMIT 1000`;

/** Makes the retries $2 of queue $1 due now and wakes the queue's workers (pg-boss's notification channel). */
const RETRY_NOW = `WITH due AS (
           UPDATE ${BOSS_SCHEMA}.job SET start_after = ${BOSS_SCHEMA}.job_now()
            WHERE name = $1 AND id = ANY($2::uuid[]) AND state = 'retry' RETURNING 1)
         SELECT pg_notify(('pgboss_' || left(encode(sha224('${BOSS_SCHEMA}'::bytea), 'hex'), 24)), $1)
           FROM due LIMIT 1`;

export async function startBoss(
  url: string,
  logger: Logger,
  options: { poolMax?: number; supervise: boolean; availability?: DatabaseAvailability },
): Promise<PgBoss> {
  // Loaded here, not with this module: commands that only name the queue's schema need not load pg-boss.
  const { PgBoss } = await import('pg-boss');
  const boss = new PgBoss({
    connectionString: url,
    schema: BOSS_SCHEMA,
    application_name: 'herald-queue',
    max: options.poolMax ?? 10,
    useListenNotify: true,
    // Only worker processes run pg-boss maintenance and cron; API-only processes just enqueue.
    supervise: options.supervise,
    schedule: options.supervise,
  });
  // During a database outage every poll fails: that is one outage (logged once), not an error per poll.
  boss.on('error', (error: unknown) => {
    if (options.availability && isDatabaseUnavailable(error)) options.availability.markDown(error);
    else logger.error('queue error', { error });
  });
  boss.on('warning', (warning: unknown) => logger.warn('queue warning', { warning }));
  prepareBossStatements(boss);
  await boss.start();
  return boss;
}

/**
 * Memoises, per queue instance, a statement text that embeds pg-boss SQL for the queue's tables (read
 * from pg-boss once, on first use); a build that fails is tried again on the next call.
 */
export function statementPerQueue(build: (boss: PgBoss) => Promise<string>): (boss: PgBoss) => Promise<string> {
  const statements = new WeakMap<PgBoss, Promise<string>>();
  return (boss) => {
    let statement = statements.get(boss);
    if (!statement) {
      statement = build(boss);
      statement.catch(() => statements.delete(boss));
      statements.set(boss, statement);
    }
    return statement;
  };
}

/** Stops fetching, waits for in-flight jobs (up to `timeoutMs`), then closes the pool. */
export async function stopBoss(boss: PgBoss, timeoutMs = 20_000): Promise<void> {
  await boss.stop({ graceful: true, close: true, timeout: timeoutMs });
}

/**
 * pg-boss's own parameterised statements (the completion, the failure, the heartbeat) run as named
 * prepared statements too, as Herald's do; its fetch, which inlines its values, is planned on each call
 * (prepareStatementsOf says why). pg-boss (pinned) opens its default adapter's pool in start(): the
 * adapter's open() is wrapped here so that every connection of that pool is hooked from its first
 * statement.
 */
function prepareBossStatements(boss: PgBoss): void {
  const db = boss.getDb() as unknown as { opened?: boolean; open?: () => Promise<void>; pool?: pg.Pool };
  if (typeof db.open !== 'function' || db.opened)
    throw new Error('pg-boss changed: its default database adapter is not as pinned');
  const open = db.open.bind(db);
  db.open = async () => {
    await open();
    db.pool!.on('connect', (client) => prepareStatementsOf(client));
  };
}

/**
 * A job whose worker has not refreshed its heartbeat for `lostAfterSeconds` (config lostWorkerSeconds,
 * 5 s by default) is taken to be lost (its process was killed) and is failed, so that its retry runs at
 * once elsewhere. pg-boss's own supervision accepts heartbeats of 10 s at least and checks them once
 * per supervise interval (a minute): a killed worker's jobs then waited about a minute. Live workers
 * refresh five times per lostAfterSeconds and the check runs as often, so only a process stalled that
 * long loses its jobs, and a dead one's jobs are back within about 1.2 lostAfterSeconds.
 */
export function heartbeatRefreshSeconds(lostAfterSeconds: number): number {
  return lostAfterSeconds / 5;
}

/**
 * Builds LOST_JOB_INDEX in the background unless it exists; returns a stop that ends the build's
 * connection. pg-boss has no index on active jobs, and completed jobs stay in its table for a week:
 * without this index the check reads the whole table every second in every worker, at a cost that
 * grows with the table. CONCURRENTLY, so an install that already holds millions of jobs goes on
 * enqueueing while it is built; in the background, because such a build waits for every older
 * transaction (a running backup, say) and the worker must not wait with it. Under a session advisory
 * lock, so workers starting together build it once; a build cut off half-way leaves an invalid index,
 * which the next start drops and builds again.
 */
export function startLostJobIndexBuild(url: string, logger: Logger): () => Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'herald-queue' });
  client.on('error', () => undefined); // a connection lost meanwhile fails the build below
  let stopped = false;
  const build = (async () => {
    await client.connect();
    await client.query(LOST_JOB_INDEX_LOCK);
    const { rows } = await client.query<{ valid: boolean }>(INDEX_VALID, [`${BOSS_SCHEMA}.${LOST_JOB_INDEX}`]);
    if (rows[0]?.valid) return;
    if (rows[0]) await client.query(DROP_LOST_JOB_INDEX);
    await client.query(CREATE_LOST_JOB_INDEX);
  })()
    .catch((error: unknown) => {
      if (!stopped) logger.warn('lost job index not built', { error: (error as Error).message });
    })
    .finally(() => client.end().catch(() => undefined));
  return async () => {
    stopped = true;
    await client.end().catch(() => undefined);
    await build;
  };
}

/** Every heartbeat refresh: fails the jobs of lost workers (fenced to the attempt seen) and wakes the workers. */
export function startLostJobReaper(
  boss: PgBoss,
  logger: Logger,
  lostAfterSeconds: number,
  availability?: DatabaseAvailability,
): () => void {
  const db = boss.getDb();
  return startQueueCheck(
    'lost job check',
    heartbeatRefreshSeconds(lostAfterSeconds) * 1000,
    logger,
    availability,
    async () => {
      const { rows } = await db.executeSql(LOST_JOBS, [lostAfterSeconds]);
      const byQueue = new Map<string, Array<{ id: string; retryCount: number }>>();
      for (const row of rows as Array<{ name: string; id: string; retry_count: number }>) {
        byQueue.set(row.name, [...(byQueue.get(row.name) ?? []), { id: row.id, retryCount: row.retry_count }]);
      }
      for (const [name, attempts] of byQueue) {
        await boss.fail(name, attempts, { message: `worker lost: no heartbeat for ${lostAfterSeconds} s` });
        // Their retry is due now, not after the backoff: the job did not fail, its worker died.
        await db.executeSql(RETRY_NOW, [name, attempts.map((a) => a.id)]);
        logger.warn('jobs of a lost worker retried', { queue: name, jobs: attempts.length });
      }
    },
  );
}

/**
 * Runs `check` every `everyMs`, never two at once, until the returned stop is called. A failure is
 * logged with `name`; during a database outage it only marks the outage (logged once).
 */
export function startQueueCheck(
  name: string,
  everyMs: number,
  logger: Logger,
  availability: DatabaseAvailability | undefined,
  check: () => Promise<void>,
): () => void {
  let busy = false;
  let stopped = false;
  const tick = async () => {
    if (busy || stopped) return;
    busy = true;
    try {
      await check();
    } catch (error) {
      if (stopped) return;
      if (availability && isDatabaseUnavailable(error)) availability.markDown(error);
      else logger.warn(`${name} failed`, { error: (error as Error).message });
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), everyMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
