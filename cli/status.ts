// herald status: what this install is and whether its parts answer: config (secrets masked), database,
// migrations, queue, key ring and the listening URL. Read-only: it never starts the embedded database,
// runs initdb or creates a file. Exit codes for monitors: 0 healthy (Herald answers, its database too,
// no migration pending, the key ring loads), 1 unhealthy or not answering, 2 not initialised.
import { type Command } from 'commander';
import { loadConfig, publicBaseUrl, type Config } from '../server/base/config.ts';
import { safeUrl } from '../server/base/logger.ts';
import { initOrm, executedMigrations, pendingMigrations, LEGACY_EMBEDDED_PORT } from '../server/base/db/orm.ts';
import { runningClusterUrl } from '../server/base/db/embedded-postgres.ts';
import { notInitialised } from './support/initialised.ts';
import { loadKeyRing, NoKeyFileError } from '../server/base/crypto/keyring.ts';
import { missingKeyFileAdvice } from '../server/app/keys.ts';
import { databaseServerVersion, queueStatus, statusChecks } from '../server/app/status-checks.ts';
import { runningListener } from '../server/app/listening.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, print, printJson } from './support/output.ts';
import { examples } from './support/examples.ts';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('show configuration, database, migrations, queue and listening URL')
    .option('--data-dir <dir>', 'data directory')
    .option('--json', 'print the status as JSON')
    .addHelpText('after', examples('herald status', 'herald status --json | jq .database'))
    .action(async (options: { dataDir?: string; json?: boolean }) => {
      const config = loadConfig({ dataDir: options.dataDir });
      const missing = notInitialised(config);
      if (missing) {
        if (options.json) printJson({ initialised: false, healthy: false, data_dir: config.dataDir, error: missing });
        else print(`Herald is not initialised: ${missing}`);
        process.exitCode = EXIT_USAGE;
        return;
      }
      const status = await collectStatus(config);
      if (options.json) printJson(status);
      else printStatus(status);
      process.exitCode = status.healthy ? EXIT_OK : EXIT_FAILURE;
    });
}

interface Status {
  initialised: true;
  healthy: boolean;
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
    initialised: true,
    healthy: false,
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
    // The address a running `herald start` recorded (its port may come from its own environment), else the configured one.
    http: { url: runningListener(config.dataDir)?.url ?? configuredListeningUrl(config), reachable: false },
    warnings: [],
  };
  let missingKeyFile: NoKeyFileError | null = null;
  try {
    const ring = loadKeyRing({ dataDir: config.dataDir, encryptionKeys: config.encryptionKeys });
    status.key_ring = { active: ring.activeKeyId, keys: ring.keyIds() };
  } catch (error) {
    status.key_ring = { error: (error as Error).message };
    if (error instanceof NoKeyFileError) missingKeyFile = error;
  }
  status.http.reachable = await answersHealthz(status.http.url, 1500);
  await inspectDatabase(config, status, missingKeyFile);
  if (status.key_ring.error) status.warnings.unshift(`key ring: ${status.key_ring.error}`);
  status.healthy =
    status.database.reachable &&
    status.http.reachable &&
    status.migrations.pending.length === 0 &&
    !status.key_ring.error;
  return status;
}

/**
 * Whether GET <url>/healthz answers 2xx within `timeoutMs`. Over node:http, not fetch(): loading fetch's
 * implementation (undici) would cost a status run about as much CPU as its database checks. The module
 * comes from process.getBuiltinModule, whose namespace does not load undici as an import's does.
 */
function answersHealthz(url: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = process.getBuiltinModule('node:http').get(`${url}/healthz`, (res) => {
      res.resume();
      clearTimeout(timer);
      resolve(res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300);
    });
    const timer = setTimeout(() => req.destroy(), timeoutMs);
    req.on('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}

function configuredListeningUrl(config: Config): string {
  return `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
}

/** Connects to the database if it runs (never starting the embedded one) and reads what it holds. */
async function inspectDatabase(config: Config, status: Status, missingKeyFile: NoKeyFileError | null): Promise<void> {
  const url =
    config.databaseUrl ??
    runningClusterUrl(config.dataDir, config.embeddedPostgresPort ?? LEGACY_EMBEDDED_PORT, 'herald');
  if (!url) {
    status.database.error = 'the embedded PostgreSQL is not running (Herald is stopped)';
    return;
  }
  let orm;
  try {
    orm = await initOrm(url, { poolMax: 2 });
  } catch (error) {
    status.database.error = (error as Error).message.split('\n')[0];
    return;
  }
  try {
    const em = orm.em.fork();
    status.database.server_version = await databaseServerVersion(em);
    status.database.reachable = true;
    status.migrations.applied = await executedMigrations(orm);
    status.migrations.pending = await pendingMigrations(orm);
    if (status.migrations.pending.length > 0)
      status.warnings.push(`${status.migrations.pending.length} migration(s) pending: run 'herald migrate'`);
    status.queue = await queueStatus(em);
    if (missingKeyFile) status.key_ring.error = await missingKeyFileAdvice(em, missingKeyFile);
    if (status.migrations.pending.length === 0) status.warnings.push(...(await statusChecks(em, config)));
  } catch (error) {
    status.database.reachable = false;
    status.database.error = (error as Error).message.split('\n')[0];
  } finally {
    await orm.close(true);
  }
}

function printStatus(s: Status): void {
  print(`Herald ${s.version}`);
  print(`  data dir     ${s.config.data_dir}`);
  print(`  mode         ${s.config.mode}`);
  print(
    `  database     ${s.database.kind}, ${s.database.reachable ? `reachable (PostgreSQL ${s.database.server_version})` : `NOT reachable${s.database.error ? `: ${s.database.error}` : ''}`}`,
  );
  print(`  migrations   ${s.migrations.applied.length} applied, ${s.migrations.pending.length} pending`);
  print(
    `  queue        ${s.queue.installed ? `installed (schema ${s.queue.schema_version}, ${s.queue.queues} queues)` : 'not installed'}`,
  );
  print(
    `  key ring     ${s.key_ring.active ? `active ${s.key_ring.active} (${s.key_ring.keys?.length} key(s))` : `unavailable`}`,
  );
  print(`  listening    ${s.http.url} ${s.http.reachable ? '(up)' : '(not answering)'}`);
  for (const w of s.warnings) print(`  warning: ${w}`);
  print(s.healthy ? 'healthy' : 'UNHEALTHY');
}
