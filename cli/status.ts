// herald status: what this install is and whether its parts answer: config (secrets masked), database,
// migrations, queue, key ring and the listening URL. Exit 1 when the database cannot be reached.
import { type Command } from 'commander';
import { loadConfig, publicBaseUrl, type Config } from '../server/config.ts';
import { safeUrl } from '../server/logger.ts';
import { openDatabase, executedMigrations, pendingMigrations } from '../server/db/orm.ts';
import { loadKeyRing } from '../server/crypto/keyring.ts';
import { databaseServerVersion, queueStatus, statusChecks } from '../server/status-checks.ts';
import { print, printJson } from './support/output.ts';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('show configuration, database, migrations, queue and listening URL')
    .option('--data-dir <dir>', 'data directory')
    .option('--json', 'print the status as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ herald status
  $ herald status --json | jq .database`,
    )
    .action(async (options: { dataDir?: string; json?: boolean }) => {
      const config = loadConfig({ dataDir: options.dataDir });
      const status = await collectStatus(config);
      if (options.json) printJson(status);
      else printStatus(status);
      if (!status.database.reachable) process.exitCode = 1;
    });
}

interface Status {
  version: string;
  config: Record<string, unknown>;
  database: { kind: 'embedded' | 'external'; reachable: boolean; error?: string; server_version?: string };
  migrations: { applied: string[]; pending: string[] };
  queue: { installed: boolean; schema_version?: number | null; queues?: number };
  key_ring: { active?: string; keys?: string[]; error?: string };
  http: { url: string; reachable: boolean };
  warnings: string[];
}

async function collectStatus(config: Config): Promise<Status> {
  const { version } = (await import('../package.json', { with: { type: 'json' } })).default as { version: string };
  const status: Status = {
    version,
    config: {
      data_dir: config.dataDir,
      mode: config.mode,
      host: config.host,
      port: config.port,
      public_url: publicBaseUrl(config),
      database_url: safeUrl(config.databaseUrl) ?? '(embedded)',
      smtp_url: safeUrl(config.smtpUrl) ?? null,
      log_level: config.logLevel,
    },
    database: { kind: config.databaseUrl ? 'external' : 'embedded', reachable: false },
    migrations: { applied: [], pending: [] },
    queue: { installed: false },
    key_ring: {},
    http: { url: publicBaseUrl(config), reachable: false },
    warnings: [],
  };
  try {
    const ring = loadKeyRing({ dataDir: config.dataDir, encryptionKeys: config.encryptionKeys });
    status.key_ring = { active: ring.activeKeyId, keys: ring.keyIds() };
  } catch (error) {
    status.key_ring = { error: (error as Error).message };
    status.warnings.push(`key ring: ${(error as Error).message}`);
  }
  status.http.reachable = await fetch(`http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}/healthz`, {
    signal: AbortSignal.timeout(1500),
  })
    .then((r) => r.ok)
    .catch(() => false);
  let db;
  try {
    db = await openDatabase(config, { poolMax: 2 });
  } catch (error) {
    status.database.error = (error as Error).message.split('\n')[0];
    return status;
  }
  try {
    const em = db.orm.em.fork();
    status.database.server_version = await databaseServerVersion(em);
    status.database.reachable = true;
    status.migrations.applied = await executedMigrations(db.orm);
    status.migrations.pending = await pendingMigrations(db.orm);
    if (status.migrations.pending.length > 0) status.warnings.push(`${status.migrations.pending.length} migration(s) pending: run 'herald migrate'`);
    status.queue = await queueStatus(em);
    if (status.migrations.pending.length === 0) status.warnings.push(...(await statusChecks(em, config)));
  } catch (error) {
    status.database.error = (error as Error).message.split('\n')[0];
  } finally {
    await db.close();
  }
  return status;
}

function printStatus(s: Status): void {
  print(`Herald ${s.version}`);
  print(`  data dir     ${s.config.data_dir}`);
  print(`  mode         ${s.config.mode}`);
  print(`  database     ${s.database.kind}, ${s.database.reachable ? `reachable (PostgreSQL ${s.database.server_version})` : `NOT reachable${s.database.error ? `: ${s.database.error}` : ''}`}`);
  print(`  migrations   ${s.migrations.applied.length} applied, ${s.migrations.pending.length} pending`);
  print(`  queue        ${s.queue.installed ? `installed (schema ${s.queue.schema_version}, ${s.queue.queues} queues)` : 'not installed'}`);
  print(`  key ring     ${s.key_ring.active ? `active ${s.key_ring.active} (${s.key_ring.keys?.length} key(s))` : `unavailable`}`);
  print(`  listening    ${s.http.url} ${s.http.reachable ? '(up)' : '(not answering)'}`);
  for (const w of s.warnings) print(`  warning: ${w}`);
}
