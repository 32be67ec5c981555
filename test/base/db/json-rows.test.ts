// JSON rows (server/base/db/json-rows.ts) as PostgreSQL reads them back: each column typed, JSON nulls and
// missing properties as NULL whatever the type, arrays of strings as text[], nested JSON kept as
// jsonb, names kept as written, and the rows' positions in `n`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../support/database.ts';
import { jsonRows, jsonRowsParameter, jsonRowsSql, type JsonRowColumns } from '../../../server/base/db/json-rows.ts';

let database: TestDatabase;
let client: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase();
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
  await database?.drop();
});

interface Row {
  id: string;
  count: number | null;
  tags: string[] | null;
  data: Record<string, unknown> | null;
  at: string | null;
  messageId?: string | null;
}

const COLUMNS = [
  ['id', 'uuid'],
  ['count', 'int'],
  ['tags', 'text[]'],
  ['data', 'jsonb'],
  ['at', 'timestamptz'],
  ['messageId', 'text'],
] as const satisfies JsonRowColumns<Row>;

const read = async (parameter: string) =>
  (
    await client.query(
      `SELECT id::text, count, tags, data, data IS NULL AS data_null, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS at, "messageId", n::int FROM ${jsonRowsSql('$1', COLUMNS)} AS x ORDER BY n`,
      [parameter],
    )
  ).rows;

describe('JSON rows', () => {
  it('reads each row back with its columns typed, in order, numbered from 1', async () => {
    const rows: Row[] = [
      {
        id: '0190a000-0000-7000-8000-000000000001',
        count: 3,
        tags: ['a', 'b "quoted"', 'c\\d'],
        data: { nested: [1, { x: null }] },
        at: '2026-11-28T10:00:00Z',
        messageId: 'm-1',
      },
      {
        id: '0190a000-0000-7000-8000-000000000002',
        count: 0,
        tags: [],
        data: {},
        at: '2026-11-28T11:30:00+01:00',
        messageId: 'Ünïcode ✓',
      },
    ];
    expect(await read(jsonRowsParameter(rows, COLUMNS))).toEqual([
      {
        id: rows[0]!.id,
        count: 3,
        tags: ['a', 'b "quoted"', 'c\\d'],
        data: { nested: [1, { x: null }] },
        data_null: false,
        at: '2026-11-28 10:00',
        messageId: 'm-1',
        n: 1,
      },
      {
        id: rows[1]!.id,
        count: 0,
        tags: [],
        data: {},
        data_null: false,
        at: '2026-11-28 10:30',
        messageId: 'Ünïcode ✓',
        n: 2,
      },
    ]);
  });

  it('reads a null or missing value as NULL, whatever its type', async () => {
    const row: Row = { id: '0190a000-0000-7000-8000-000000000003', count: null, tags: null, data: null, at: null };
    expect(await read(jsonRowsParameter([row], COLUMNS))).toEqual([
      { id: row.id, count: null, tags: null, data: null, data_null: true, at: null, messageId: null, n: 1 },
    ]);
  });

  it('leaves out trailing nulls only, and reads the positions past a row as NULL', async () => {
    const rows: Row[] = [
      { id: '0190a000-0000-7000-8000-000000000005', count: null, tags: ['x'], data: null, at: null, messageId: null },
      { id: '0190a000-0000-7000-8000-000000000006', count: null, tags: null, data: null, at: null, messageId: 'last' },
    ];
    const parameter = jsonRowsParameter(rows, COLUMNS);
    expect(JSON.parse(parameter)).toEqual([
      [rows[0]!.id, null, ['x']],
      [rows[1]!.id, null, null, null, null, 'last'],
    ]);
    expect(await read(parameter)).toEqual([
      { id: rows[0]!.id, count: null, tags: ['x'], data: null, data_null: true, at: null, messageId: null, n: 1 },
      { id: rows[1]!.id, count: null, tags: null, data: null, data_null: true, at: null, messageId: 'last', n: 2 },
    ]);
  });

  it('reads rows nested in a column of another row', async () => {
    const inner = [
      ['id', 'uuid'],
      ['count', 'int'],
    ] as const satisfies JsonRowColumns<Row>;
    const outer = [['data', 'jsonb']] as const satisfies JsonRowColumns<{ data: unknown }>;
    const parameter = jsonRowsParameter(
      [{ data: jsonRows([{ id: '0190a000-0000-7000-8000-000000000004', count: 7 }], inner) }],
      outer,
    );
    const { rows } = await client.query(
      `SELECT o.n AS outer_n, i.id::text, i.count, i.n AS inner_n FROM ${jsonRowsSql('$1', outer)} AS o CROSS JOIN LATERAL ${jsonRowsSql('o.data', inner)} AS i`,
      [parameter],
    );
    expect(rows).toEqual([{ outer_n: '1', id: '0190a000-0000-7000-8000-000000000004', count: 7, inner_n: '1' }]);
  });
});
