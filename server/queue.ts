// The job queue: pg-boss on the same PostgreSQL, its schema managed by pg-boss itself, with
// LISTEN/NOTIFY on so workers wake as soon as a job commits. Queues and their workers are declared in
// server/jobs/index.ts; this module starts and stops them.
import { PgBoss } from 'pg-boss';
import type pg from 'pg';
import type { Logger } from './logger.ts';
import { prepareStatementsOf } from './db/prepared.ts';

export type { PgBoss };

export const BOSS_SCHEMA = 'pgboss';

/**
 * The system-email queue (jobs/system-email.ts). Named here, at the bottom, because the list of encrypted
 * columns (crypto/encrypted-columns.ts) reads the sealed link tokens of its waiting jobs.
 */
export const SYSTEM_EMAIL_JOB = 'system-email';

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
 * pg-boss's own statements (the fetch, completion and failure; prepareStatementsOf says which) run as
 * named prepared statements too, as Herald's do: unnamed, PostgreSQL parses and plans the fetch and the
 * completion on every call, a large share of a delivery worker's work. pg-boss (pinned) opens its
 * default adapter's pool in start(): the adapter's open() is wrapped here so that every connection of
 * that pool is hooked from its first statement.
 */
function prepareBossStatements(boss: PgBoss): void {
  const db = boss.getDb() as unknown as { opened?: boolean; open?: () => Promise<void>; pool?: pg.Pool };
  if (typeof db.open !== 'function' || db.opened) throw new Error('pg-boss changed: its default database adapter is not as pinned');
  const open = db.open.bind(db);
  db.open = async () => {
    await open();
    db.pool!.on('connect', (client) => prepareStatementsOf(client, { emptyValues: true }));
  };
}
