// The ORM's connection pool when the server ends connections under it: a transaction whose connection
// breaks gives that connection back (the pool discards it), so queries go on and the pool closes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';
import { createTestDatabase, type TestDatabase } from '../../support/database.ts';
import { eventually } from '../../support/eventually.ts';
import { initOrm, poolOf } from '../../../server/base/db/orm.ts';
import { query } from '../../../server/base/db/sql.ts';

const BACKEND_PID = 'SELECT pg_backend_pid() AS pid';
const TERMINATE = 'SELECT pg_terminate_backend($1)';
const ONE = 'SELECT 1 AS one';

let database: TestDatabase;
let admin: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase();
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

/** Connections of the pool held by someone (not idle). */
const checkedOut = (orm: MikroORM) => poolOf(orm)!.totalCount - poolOf(orm)!.idleCount;

describe('the ORM pool', () => {
  it('gets back the connection of every transaction the server cut, so queries go on and the pool closes', async () => {
    const poolMax = 2;
    const orm = await initOrm(database.url, { poolMax });
    // More cut transactions than the pool has connections: each one kept would leave one connection fewer.
    for (let i = 0; i < poolMax + 1; i++) {
      const failure = await orm.em
        .fork()
        .transactional(async (tx) => {
          const [{ pid }] = (await query<{ pid: number }>(tx, BACKEND_PID)) as [{ pid: number }];
          await admin.query(TERMINATE, [pid]);
          await eventually(async () => (await admin.query(TERMINATE, [pid])).rows[0].pg_terminate_backend === false);
          await query(tx, ONE);
        })
        .then(
          () => null,
          (error: Error) => error,
        );
      expect(failure).toBeInstanceOf(Error);
      await eventually(() => checkedOut(orm) === 0, { timeoutMs: 5000 });
    }
    const answers = await Promise.all(Array.from({ length: poolMax * 2 }, () => query(orm.em.fork(), ONE)));
    expect(answers.map((rows) => rows[0])).toEqual(Array(poolMax * 2).fill({ one: 1 }));
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      orm.close(true).then(() => 'closed'),
      new Promise((resolve) => (timer = setTimeout(() => resolve('still open'), 5000))),
    ]);
    clearTimeout(timer);
    expect(closed).toBe('closed');
  });
});
