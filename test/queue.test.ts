// The job queue's connection to PostgreSQL: pg-boss's own statements run as named prepared statements
// (parsed once per connection), as Herald's do.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/database.ts';
import { startBoss, type PgBoss } from '../server/queue.ts';
import { createLogger } from '../server/logger.ts';

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
  await boss.complete('prepared-check', job!.id);
  const { rows } = await boss.getDb().executeSql(`SELECT name, statement FROM pg_prepared_statements WHERE statement LIKE '%job_common%'`);
  const names = rows.map((r: { name: string }) => r.name);
  const statements = rows.map((r: { statement: string }) => r.statement.replace(/\s+/g, ' '));
  // The fetch and the completion are among them, under Herald's naming (a hash of the text).
  expect(rows.length).toBeGreaterThanOrEqual(2);
  for (const name of names) expect(name).toMatch(/^h_/);
  // The fetch inlines its values (pg-boss passes it an empty values array); it is prepared all the same.
  expect(statements.some((s: string) => s.includes("WITH next AS ( SELECT j.id FROM pgboss.job_common j WHERE j.name = 'prepared-check'"))).toBe(true);
  expect(statements.some((s: string) => s.includes('SET completed_on = pgboss.job_now()'))).toBe(true);
});

it('still runs its multi-statement scripts (supervision), which cannot be prepared', async () => {
  await boss.createQueue('supervised');
  await expect(boss.supervise('supervised')).resolves.not.toThrow();
});
