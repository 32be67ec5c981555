// Opening the database: MikroORM on the configured PostgreSQL, or on the embedded one in the data
// directory. Also the migration runner (advisory-locked, so N processes starting at once apply each
// migration exactly once).
import { MikroORM, type EntityManager } from '@mikro-orm/postgresql';
import { Migrator, type Migration } from '@mikro-orm/migrations';
import type { Config } from '../config.ts';
import type pg from 'pg';
import { prepareStatementsOf } from './prepared.ts';
import {
  clusterDirOf,
  secretFileOf,
  startEmbeddedPostgres,
  type EmbeddedDatabase,
  type EmbeddedState,
} from './embedded-postgres.ts';
import { migrations } from '../../../migrations/index.ts';

export type { EntityManager };

export interface Database {
  orm: MikroORM;
  /** The connection URL in use (contains credentials: never log it unmasked). */
  url: string;
  embedded: EmbeddedDatabase | null;
  close(): Promise<void>;
}

/** The embedded cluster's port in data directories whose herald.json does not name one. */
export const LEGACY_EMBEDDED_PORT = 54329;

const MIGRATION_LOCK_ID = 7_361_029_114; // arbitrary, fixed: pg_advisory_lock key for migrations
const MIGRATION_LOCK = 'SELECT pg_advisory_xact_lock(?)';

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
    // through server/base/db/sql.ts (set-based statements on hot paths), so no entities are mapped.
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
        discardBrokenConnections(pool);
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

/**
 * A connection that breaks while checked out (the server restarted or went away) leaves the pool at
 * once, whoever holds it, and its holder's own release later does nothing. Kysely (under MikroORM) never
 * releases a transaction's connection whose BEGIN, COMMIT or ROLLBACK throws (kysely-org/kysely#1990),
 * and on a broken connection they all throw: after a database restart under load every connection of
 * the pool would stay checked out by transactions long over, and every later query, the drain's pool
 * close among them, would wait for one forever. A broken connection can run nothing, so taking it from
 * its holder loses nothing; the pool opens a new one for whoever waits.
 */
function discardBrokenConnections(pool: pg.Pool): void {
  const checkedOut = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_error, client) => checkedOut.delete(client));
  pool.on('connect', (client) =>
    client.on('error', (error) => {
      // An idle connection that breaks is the pool's to discard, and it does.
      if (!checkedOut.has(client)) return;
      const release = client.release.bind(client);
      client.release = () => undefined;
      release(error);
    }),
  );
}

/** Connects to DATABASE_URL / the configured URL, or starts the embedded PostgreSQL first. */
export async function openDatabase(
  config: Config,
  options: {
    poolMax: number;
    /** Initialise the embedded cluster when the data directory has none yet (`herald init` only). */
    create?: boolean;
    onLog?: (line: string) => void;
    onNotice?: (message: string) => void;
    onStateChange?: (state: EmbeddedState, detail: string) => void;
  },
): Promise<Database> {
  let embedded: EmbeddedDatabase | null = null;
  let url = config.databaseUrl;
  if (!url) {
    // Connects to this data directory's cluster when a live Herald process runs it (admin commands
    // while Herald serves); otherwise starts it (and stops an orphan of a killed Herald first).
    embedded = await startEmbeddedPostgres({
      dir: clusterDirOf(config.dataDir, { choose: options.create }),
      port: config.embeddedPostgresPort ?? LEGACY_EMBEDDED_PORT,
      database: 'herald',
      secretFile: secretFileOf(config.dataDir),
      create: options.create ?? false,
      onLog: options.onLog,
      onNotice: options.onNotice,
      onStateChange: options.onStateChange,
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
    await tx.execute(MIGRATION_LOCK, [MIGRATION_LOCK_ID]);
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
