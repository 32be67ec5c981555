// npm run schema:dump: migrates a scratch database on the server at DATABASE_URL (an admin
// connection) and writes its public schema to migrations/schema.sql.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { applyMigrations, initOrm } from '../server/base/db/orm.ts';
import { describeSchema, SCHEMA_FILE } from './schema.ts';

const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  console.error('DATABASE_URL must name a PostgreSQL server where a scratch database may be created');
  process.exit(2);
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

const name = `herald_schema_${randomBytes(6).toString('hex')}`;
const url = new URL(adminUrl);
url.pathname = `/${name}`;
await admin(`CREATE DATABASE "${name}"`);
try {
  const orm = await initOrm(url.toString(), { poolMax: 2 });
  try {
    await applyMigrations(orm);
  } finally {
    await orm.close(true);
  }
  writeFileSync(SCHEMA_FILE, await describeSchema(url.toString()));
  process.stdout.write(`wrote ${SCHEMA_FILE.pathname}\n`);
} finally {
  await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
