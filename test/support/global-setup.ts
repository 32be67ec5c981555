// Once per test run: a PostgreSQL server (the embedded one in a temporary directory, or DATABASE_URL
// when set) and a migrated template database, so each test file can clone its own database in
// milliseconds (CREATE DATABASE ... TEMPLATE).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import {
  freePort,
  openChoosingPortAgain,
  startEmbeddedPostgres,
  type EmbeddedDatabase,
} from '../../server/base/db/embedded-postgres.ts';
import { initOrm, applyMigrations } from '../../server/base/db/orm.ts';
import { PgBoss } from 'pg-boss';
import { BOSS_SCHEMA } from '../../server/base/queue.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
    /** A directory for the run's temporary files (test/support/tmp.ts), removed when the run ends. */
    tempRoot: string;
  }
}

let embedded: EmbeddedDatabase | null = null;
let workDir: string | null = null;
let tempRoot: string | null = null;
let adminUrl = '';
let templateDatabase = '';

export async function setup(project: TestProject): Promise<void> {
  tempRoot = mkdtempSync(join(tmpdir(), 'herald-test-run-'));
  project.provide('tempRoot', tempRoot);
  if (process.env.DATABASE_URL) {
    adminUrl = process.env.DATABASE_URL;
  } else {
    workDir = mkdtempSync(join(tmpdir(), 'herald-test-pg-'));
    const { chmodSync } = await import('node:fs');
    chmodSync(workDir, 0o711); // the embedded cluster runs as 'postgres' when tests run as root
    const dir = join(workDir, 'pg');
    const secretFile = join(workDir, 'pg-secret.json');
    let port = await freePort();
    embedded = await openChoosingPortAgain(
      () => startEmbeddedPostgres({ dir, port, database: 'postgres', secretFile, create: true }),
      (next) => (port = next),
    );
    adminUrl = embedded.url;
  }
  templateDatabase = `herald_template_${process.pid}_${Date.now().toString(36)}`;
  await admin(adminUrl, `CREATE DATABASE "${templateDatabase}"`);
  const templateUrl = withDatabase(adminUrl, templateDatabase);
  const orm = await initOrm(templateUrl, { poolMax: 2 });
  await applyMigrations(orm);
  await orm.close(true);
  // pg-boss creates its own schema on first start; do it once here so clones start fast.
  const boss = new PgBoss({
    connectionString: templateUrl,
    schema: BOSS_SCHEMA,
    supervise: false,
    schedule: false,
    max: 2,
  });
  await boss.start();
  await boss.stop({ graceful: false, close: true });
  project.provide('adminUrl', adminUrl);
  project.provide('templateDatabase', templateDatabase);
}

export async function teardown(): Promise<void> {
  if (adminUrl && templateDatabase)
    await admin(adminUrl, `DROP DATABASE IF EXISTS "${templateDatabase}" WITH (FORCE)`).catch(() => undefined);
  await embedded?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  if (tempRoot) rmSync(tempRoot, { recursive: true, force: true });
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
