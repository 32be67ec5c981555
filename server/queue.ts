// The job queue: pg-boss on the same PostgreSQL, its schema managed by pg-boss itself, with
// LISTEN/NOTIFY on so workers wake as soon as a job commits. Queues and their workers are declared in
// server/jobs/index.ts; this module starts and stops them.
import { PgBoss } from 'pg-boss';
import type { Logger } from './logger.ts';

export type { PgBoss };

export const BOSS_SCHEMA = 'pgboss';

export async function startBoss(url: string, logger: Logger, options: { poolMax?: number; supervise: boolean }): Promise<PgBoss> {
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
  boss.on('error', (error: unknown) => logger.error('queue error', { error }));
  boss.on('warning', (warning: unknown) => logger.warn('queue warning', { warning }));
  await boss.start();
  return boss;
}

/** Stops fetching, waits for in-flight jobs (up to `timeoutMs`), then closes the pool. */
export async function stopBoss(boss: PgBoss, timeoutMs = 20_000): Promise<void> {
  await boss.stop({ graceful: true, close: true, timeout: timeoutMs });
}
