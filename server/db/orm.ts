// Opening the database: MikroORM on the configured PostgreSQL, or on the embedded one in the data
// directory. Also the migration runner (advisory-locked, so N processes starting at once apply each
// migration exactly once).
import { join } from 'node:path';
import { MikroORM, type EntityManager } from '@mikro-orm/postgresql';
import { Migrator, type Migration } from '@mikro-orm/migrations';
import type { Config } from '../config.ts';
import pg from 'pg';
import { prepareStatementsOf } from './prepared.ts';
import { embeddedTcpUrl, embeddedUrl, startEmbeddedPostgres, type EmbeddedDatabase } from './embedded-postgres.ts';
import { migrations } from '../../migrations/index.ts';

export type { EntityManager };

export interface Database {
  orm: MikroORM;
  /** The connection URL in use (contains credentials: never log it unmasked). */
  url: string;
  embedded: EmbeddedDatabase | null;
  close(): Promise<void>;
}

const MIGRATION_LOCK_ID = 7_361_029_114; // arbitrary, fixed: pg_advisory_lock key for migrations

/** The connection pool of each ORM, for its metrics (captured when the driver creates it). */
const pools = new WeakMap<MikroORM, { pool: pg.Pool | null }>();

export function poolOf(orm: MikroORM): pg.Pool | null {
  return pools.get(orm)?.pool ?? null;
}

export async function initOrm(url: string, options: { poolMax: number }): Promise<MikroORM> {
  const holder: { pool: pg.Pool | null } = { pool: null };
  const orm = await MikroORM.init({
    clientUrl: url,
    // Herald uses MikroORM for connections, transactions and migrations; data access is explicit SQL
    // through server/db/sql.ts (set-based statements on hot paths), so no entities are mapped.
    entities: [],
    extensions: [Migrator],
    discovery: { warnWhenNoEntities: false },
    allowGlobalContext: false,
    forceUtcTimezone: true,
    debug: false,
    pool: { min: 0, max: options.poolMax },
    driverOptions: {
      onPoolCreated: (pool: pg.Pool) => {
        holder.pool = pool;
        pool.on('connect', (client) => prepareStatementsOf(client));
      },
    },
    migrations: {
      migrationsList: migrations,
      tableName: 'herald_migrations',
      snapshot: false,
      snapshotOnMigrate: false,
      transactional: true,
      allOrNothing: true,
      silent: true,
    },
  });
  pools.set(orm, holder);
  return orm;
}

/** Connects to DATABASE_URL / the configured URL, or starts the embedded PostgreSQL first. */
export async function openDatabase(config: Config, options: { poolMax: number; onLog?: (line: string) => void }): Promise<Database> {
  let embedded: EmbeddedDatabase | null = null;
  let url = config.databaseUrl;
  // The embedded cluster may already run under a Herald server of this data directory: then use it
  // (admin commands while the server runs) instead of starting a second postmaster.
  // A cluster whose socket is missing (its directory path is too long for one) is reached over TCP.
  const clusterDir = join(config.dataDir, 'postgres');
  if (!url) {
    for (const candidate of new Set([embeddedUrl(clusterDir, config.embeddedPostgresPort, 'herald'), embeddedTcpUrl(config.embeddedPostgresPort, 'herald')])) {
      if (await reachable(candidate)) {
        url = candidate;
        break;
      }
    }
  }
  if (!url) {
    embedded = await startEmbeddedPostgres({
      dir: clusterDir,
      port: config.embeddedPostgresPort,
      database: 'herald',
      onLog: options.onLog,
    });
    url = embedded.url;
  }
  let orm: MikroORM;
  try {
    orm = await initOrm(url, options);
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
  return {
    orm,
    url,
    embedded,
    async close() {
      await orm.close(true);
      await embedded?.stop();
    },
  };
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function pendingMigrations(orm: MikroORM): Promise<string[]> {
  const pending = await orm.migrator.getPending();
  return pending.map((m) => m.name);
}

export async function executedMigrations(orm: MikroORM): Promise<string[]> {
  const done = await orm.migrator.getExecuted();
  return done.map((m) => m.name);
}

/** Applies pending migrations while holding a session advisory lock; returns the names applied. */
export async function applyMigrations(orm: MikroORM): Promise<string[]> {
  const em = orm.em.fork();
  // A dedicated connection holds the lock for the duration: advisory locks belong to a session.
  return em.transactional(async (tx) => {
    await tx.execute('SELECT pg_advisory_xact_lock(?)', [MIGRATION_LOCK_ID]);
    const pending = await orm.migrator.getPending();
    if (pending.length === 0) return [];
    const applied = await orm.migrator.up({ transaction: tx.getTransactionContext() });
    return applied.map((m) => m.name);
  });
}

/** The SQL the pending migrations would run, without running it (`herald migrate --dry-run`). */
export async function pendingMigrationSql(orm: MikroORM): Promise<Array<{ name: string; sql: string[] }>> {
  const pendingNames = new Set(await pendingMigrations(orm));
  const driver = orm.em.getDriver();
  const out: Array<{ name: string; sql: string[] }> = [];
  for (const m of migrations) {
    if (!pendingNames.has(m.name)) continue;
    const instance = new m.class(driver as never, orm.config as never) as unknown as Migration;
    await instance.up();
    out.push({ name: m.name, sql: instance.getQueries().map((q) => String(q).trim()) });
  }
  return out;
}
