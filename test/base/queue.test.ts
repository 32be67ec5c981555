// Named prepared statements (db/prepared.ts) and the job queue's connections: pg-boss's own statements
// run as named prepared statements (parsed once per connection), as Herald's do.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { eventually } from '../support/eventually.ts';
import { planEachCall, prepareStatementsOf } from '../../server/base/db/prepared.ts';
import { LOST_JOB_INDEX, LOST_JOBS, startBoss, startLostJobIndexBuild, type PgBoss } from '../../server/base/queue.ts';
import { createLogger } from '../../server/base/logger.ts';
import { MIN_CHANGES, startQueueStatistics } from '../../server/base/queue-statistics.ts';
import { setTimeout as sleep } from 'node:timers/promises';

let database: TestDatabase;
let boss: PgBoss;

beforeAll(async () => {
  database = await createTestDatabase();
  // One connection, so the statements the queue ran and the check below share a session.
  boss = await startBoss(database.url, createLogger('error'), { poolMax: 1, supervise: false });
});
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true });
  await database?.drop();
});

it("prepares pg-boss's statements on its connections", async () => {
  await boss.createQueue('prepared-check');
  await boss.send('prepared-check', { n: 1 });
  const [job] = await boss.fetch('prepared-check');
  expect(job).toBeDefined();
  expect(await boss.fetch('prepared-check')).toEqual([]); // the fetch's text, sent a second time
  await boss.complete('prepared-check', job!.id);
  const { rows } = await boss
    .getDb()
    .executeSql(`SELECT name, statement FROM pg_prepared_statements WHERE statement LIKE '%job_common%'`);
  const names = rows.map((r: { name: string }) => r.name);
  const statements = rows.map((r: { statement: string }) => r.statement.replace(/\s+/g, ' '));
  // The completion is among them, under Herald's naming (a hash of the text).
  expect(rows.length).toBeGreaterThanOrEqual(1);
  for (const name of names) expect(name).toMatch(/^h_/);
  expect(statements.some((s: string) => s.includes('SET completed_on = pgboss.job_now()'))).toBe(true);
  // The fetch inlines its values (pg-boss passes it an empty values array): it is planned on each call.
  expect(statements.some((s: string) => s.includes('WITH next AS'))).toBe(false);
});

it('runs supervision pass after pass: its scripts of several statements are never prepared', async () => {
  await boss.createQueue('supervised');
  for (let pass = 0; pass < 3; pass++) {
    // Due again, so each pass sends the same monitoring script (a prepared statement holds one statement).
    await boss
      .getDb()
      .executeSql(`UPDATE pgboss.queue SET monitor_claim_on = NULL, monitor_on = NULL WHERE name = 'supervised'`);
    await boss.supervise('supervised');
  }
  const { rows } = await boss
    .getDb()
    .executeSql(`SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%;%'`);
  expect(rows).toEqual([]);
});

describe('prepareStatementsOf', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: database.url });
    await client.connect();
  });
  afterAll(async () => client?.end());

  const prepared = async () =>
    (
      await client.query<{ statement: string }>(
        `SELECT statement FROM pg_prepared_statements WHERE statement LIKE 'SELECT % AS probe%'`,
      )
    ).rows.map((r) => r.statement);

  it('names a parameterised statement from its first use; a text without values, or planned each call, runs unnamed', async () => {
    prepareStatementsOf(client);
    await client.query('SELECT $1::int AS probe_a', [1]);
    for (let i = 0; i < 3; i++) await client.query('SELECT 2 AS probe_b', []);
    const batch = planEachCall('SELECT $1::int[] AS probe_batch');
    for (let i = 0; i < 3; i++) await client.query(batch, [[1, 2]]);
    expect(await prepared()).toEqual(['SELECT $1::int AS probe_a']);
    // Several statements in one text run unnamed, however often (a prepared statement holds one).
    for (let i = 0; i < 3; i++) await client.query('SELECT 4 AS probe_script; SELECT 5 AS probe_script', []);
    expect(await prepared()).toEqual(['SELECT $1::int AS probe_a']);
  });
});

describe('startQueueStatistics', () => {
  it('analyses a job table once its backlog outgrows its statistics, and not before', async () => {
    await boss.createQueue('burst');
    const db = boss.getDb();
    // Autovacuum's own analysis would reset the changed count (and count in autoanalyze_count), leaving
    // the check nothing to do: on a slow run it can come first.
    await db.executeSql('ALTER TABLE pgboss.job_common SET (autovacuum_enabled = off)');
    await db.executeSql('ANALYZE pgboss.job_common');
    const stats = async () =>
      (
        await db.executeSql(
          `SELECT analyze_count::int AS analyses, n_mod_since_analyze::int AS changed FROM pg_stat_user_tables WHERE schemaname = 'pgboss' AND relname = 'job_common'`,
        )
      ).rows[0] as { analyses: number; changed: number };
    // A backend hands its table counts to pg_stat_user_tables at most once a second, and one that then
    // goes idle only after 10 s: the inserts' changes, then the analysis's own count, can each take that
    // long to show, longer on a loaded machine.
    const until = async (done: (s: { analyses: number; changed: number }) => boolean) => {
      await eventually(
        async () => {
          const s = await stats();
          if (!done(s)) throw new Error(`statistics still ${JSON.stringify(s)}`);
        },
        { timeoutMs: 25_000, intervalMs: 100 },
      );
    };
    const before = (await stats()).analyses;
    const stop = startQueueStatistics(boss, createLogger('error'), { everyMs: 100 });
    try {
      const jobs = (n: number) => Array.from({ length: n }, (_, i) => ({ data: { i } }));
      await boss.insert('burst', jobs(MIN_CHANGES / 5));
      // Once the statistics show the changes, a few more checks leave the table alone.
      await until((s) => s.changed >= MIN_CHANGES / 5);
      await sleep(500);
      expect((await stats()).analyses).toBe(before);
      await boss.insert('burst', jobs(MIN_CHANGES));
      await until((s) => s.analyses > before);
      expect((await stats()).changed).toBeLessThan(MIN_CHANGES);
    } finally {
      stop();
      await db.executeSql('ALTER TABLE pgboss.job_common RESET (autovacuum_enabled)');
    }
  });
});

describe('startLostJobIndexBuild', () => {
  it('gives the lost-job check an index, so it does not read the completed jobs', async () => {
    await boss.createQueue('indexed');
    const db = boss.getDb();
    // A week of completed jobs stays in the table.
    await boss.insert(
      'indexed',
      Array.from({ length: 5000 }, (_, i) => ({ data: { i } })),
    );
    await db.executeSql(
      `UPDATE pgboss.job_common SET state = 'completed', completed_on = now() WHERE name = 'indexed'`,
    );
    const stop = startLostJobIndexBuild(database.url, createLogger('error'));
    try {
      await eventually(
        async () => {
          const { rows } = await db.executeSql(
            `SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass('pgboss.${LOST_JOB_INDEX}')`,
          );
          return !!rows[0]?.valid;
        },
        { timeoutMs: 15_000, message: 'the index was not built' },
      );
    } finally {
      await stop();
    }
    await db.executeSql('ANALYZE pgboss.job_common');
    const { rows } = await db.executeSql(`EXPLAIN ${LOST_JOBS.replace('$1', '5')}`);
    const plan = rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain(LOST_JOB_INDEX);
    expect(plan).not.toContain('Seq Scan on job_common');
    // Built once: a second start finds it valid and leaves it.
    const stopAgain = startLostJobIndexBuild(database.url, createLogger('error'));
    await sleep(200);
    await stopAgain();
    const { rows: indexes } = await db.executeSql(
      `SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = 'pgboss' AND indexname = $1`,
      [LOST_JOB_INDEX],
    );
    expect(indexes[0].n).toBe(1);
  });

  it('drops an invalid index left by a build cut off half-way, and builds it again', async () => {
    const db = boss.getDb();
    await db.executeSql(`DROP INDEX IF EXISTS pgboss.${LOST_JOB_INDEX}`);
    // A concurrent build that fails leaves its index behind, invalid: many jobs share a queue name.
    await expect(
      db.executeSql(`CREATE UNIQUE INDEX CONCURRENTLY ${LOST_JOB_INDEX} ON pgboss.job_common (name)`),
    ).rejects.toThrow();
    const state = async () =>
      (
        await db.executeSql(
          `SELECT indisvalid AS valid, pg_get_indexdef(indexrelid) AS def FROM pg_index WHERE indexrelid = to_regclass('pgboss.${LOST_JOB_INDEX}')`,
        )
      ).rows[0] as { valid: boolean; def: string } | undefined;
    expect((await state())?.valid).toBe(false);
    const stop = startLostJobIndexBuild(database.url, createLogger('error'));
    try {
      await eventually(async () => !!(await state())?.valid, {
        timeoutMs: 15_000,
        message: 'the index was not built again',
      });
    } finally {
      await stop();
    }
    expect((await state())!.def).toContain('(heartbeat_on)');
  });
});
