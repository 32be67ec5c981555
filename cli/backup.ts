// herald backup / herald restore: a consistent online backup of the database (embedded or external)
// with herald.json (and the key file only when asked), and its restore into a fresh data directory.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadConfig, readConfigFile, writeConfigFile } from '../server/base/config.ts';
import { keyFilePath } from '../server/base/crypto/keyring.ts';
import { applyMigrations, openDatabase } from '../server/base/db/orm.ts';
import { freePort, openChoosingPortAgain } from '../server/base/db/embedded-postgres.ts';
import { readBackupHeader, restoreBackup, writeBackup } from '../server/base/db/backup.ts';
import { startBoss, stopBoss } from '../server/base/queue.ts';
import { createQueues } from '../server/app/runtime.ts';
import { createLogger } from '../server/base/logger.ts';
import { migrations } from '../migrations/index.ts';
import { CliError, print, printJson, usageError } from './support/output.ts';
import { withDataDir } from './support/context.ts';
import { notInitialised } from './support/initialised.ts';
import { examples } from './support/examples.ts';

export function registerBackup(program: Command): void {
  withDataDir(program.command('backup'))
    .description('write a consistent online backup of the database and herald.json to a file')
    .requiredOption('--out <file>', 'the backup file to write (gzip; mode 0600)')
    .option('--include-keys', 'also store the encryption key file (keep such a backup as safe as the keys)')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      examples(
        'herald backup --data-dir /var/lib/herald --out /backups/herald-$(date +%F).herald.gz',
        'herald backup --out herald.gz --include-keys      # a self-contained backup',
      ),
    )
    .action(async (options: { dataDir?: string; out: string; includeKeys?: boolean; json?: boolean }) => {
      const config = loadConfig({ dataDir: options.dataDir });
      const missing = notInitialised(config);
      if (missing) throw usageError(`not initialised: ${missing}`);
      let keys: unknown;
      if (options.includeKeys) {
        if (!existsSync(keyFilePath(config.dataDir)))
          throw new CliError(
            `--include-keys: the keys are not in ${keyFilePath(config.dataDir)} (HERALD_ENCRYPTION_KEYS is set): keep that value with the backup yourself`,
          );
        keys = JSON.parse(readFileSync(keyFilePath(config.dataDir), 'utf8'));
      }
      const { version } = (await import('../package.json', { with: { type: 'json' } })).default as { version: string };
      // The database URL stays out: a restore names its own database, and the URL may hold a password.
      const { databaseUrl: _url, ...fileConfig } = readConfigFile(config.dataDir);
      // So does the install SMTP's password: a backup holds no secret in clear, with or without the keys.
      const smtpUrl = typeof fileConfig.smtpUrl === 'string' ? fileConfig.smtpUrl : null;
      const smtpPasswordLeftOut = smtpUrl !== null && withoutPassword(smtpUrl) !== smtpUrl;
      if (smtpPasswordLeftOut) {
        const kept = withoutPassword(smtpUrl);
        if (kept) fileConfig.smtpUrl = kept;
        else delete fileConfig.smtpUrl;
      }
      const db = await openDatabase(config, { poolMax: 1 });
      const out = resolve(options.out);
      let result;
      try {
        result = await writeBackup(db.url, out, {
          herald_version: version,
          config: fileConfig,
          ...(keys ? { keys } : {}),
        });
      } finally {
        await db.close();
      }
      const summary = {
        file: out,
        tables: result.tables,
        rows: result.rows,
        keys_included: Boolean(keys),
        smtp_password_included: false,
      };
      if (options.json) printJson(summary);
      else {
        print(
          `Backup written to ${out} (${result.tables} tables, ${result.rows} rows${keys ? ', with the key file' : ''}).`,
        );
        if (!keys)
          print(`The key file is not in it: keep ${keyFilePath(config.dataDir)} safe apart from your backups.`);
        if (smtpPasswordLeftOut) print(SMTP_PASSWORD_NOTE);
      }
    });
}

const SMTP_PASSWORD_NOTE =
  "The install SMTP's password (smtpUrl) is not in it: after a restore, set it again (HERALD_SMTP_URL, or smtpUrl in herald.json).";

/** The URL as it is when it holds no password, without it when it does; null when it is no URL at all. */
function withoutPassword(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.password === '') return url;
  parsed.password = '';
  return parsed.toString();
}

export function registerRestore(program: Command): void {
  program
    .command('restore <file>')
    .description('restore a backup into a new data directory (embedded PostgreSQL, or --database-url)')
    .requiredOption('--data-dir <dir>', 'the data directory to create (must not exist, or be empty)')
    .option('--database-url <url>', 'restore into this empty external PostgreSQL database instead of an embedded one')
    .option('--embedded-postgres-port <port>', 'port of the new embedded PostgreSQL (default: a free port)')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      examples(
        'herald restore /backups/herald-2026-01-31.herald.gz --data-dir /var/lib/herald-restored',
        'herald restore herald.gz --data-dir ./data2 --database-url postgres://herald@db/herald_restored',
      ),
    )
    .action(
      async (
        file: string,
        options: { dataDir: string; databaseUrl?: string; embeddedPostgresPort?: string; json?: boolean },
      ) => {
        if (options.embeddedPostgresPort !== undefined && !/^\d+$/.test(options.embeddedPostgresPort))
          throw usageError('--embedded-postgres-port must be a number');
        const dataDir = resolve(options.dataDir);
        if (existsSync(dataDir) && readdirSync(dataDir).length > 0)
          throw usageError(`${dataDir} is not empty: restore into a new data directory`);
        if (!existsSync(file)) throw usageError(`${file} does not exist`);
        const header = await readBackupHeader(file);
        const known = new Set(migrations.map((m) => m.name));
        const unknown = header.migrations.filter((m) => !known.has(m));
        if (unknown.length > 0 || header.migrations.length !== known.size) {
          throw new CliError(
            `the backup was written by Herald ${header.herald_version} (${header.migrations.length} migrations); restore it with that version, then upgrade`,
          );
        }
        mkdirSync(dataDir, { recursive: true, mode: 0o711 });
        const chosen: Record<string, unknown> = { ...header.config };
        delete chosen.databaseUrl;
        delete chosen.embeddedPostgresPort;
        if (options.databaseUrl) chosen.databaseUrl = options.databaseUrl;
        else
          chosen.embeddedPostgresPort = options.embeddedPostgresPort
            ? Number(options.embeddedPostgresPort)
            : await freePort();
        const portChosenHere = !options.databaseUrl && !options.embeddedPostgresPort;
        writeConfigFile(dataDir, chosen);
        if (header.keys) {
          writeFileSync(keyFilePath(dataDir), JSON.stringify(header.keys, null, 2) + '\n', { mode: 0o600 });
          chmodSync(keyFilePath(dataDir), 0o600);
        }
        // HERALD_* variables of this shell do not steer a restore: it goes where the flags say.
        let config = loadConfig({ ...(chosen as object), dataDir }, {});
        const db = await openChoosingPortAgain(
          () => openDatabase(config, { poolMax: 2, create: true }),
          portChosenHere
            ? (port) => {
                chosen.embeddedPostgresPort = port;
                config = loadConfig({ ...(chosen as object), dataDir }, {});
                writeConfigFile(dataDir, chosen);
              }
            : null,
        );
        let result;
        try {
          await applyMigrations(db.orm);
          const boss = await startBoss(db.url, createLogger('warn'), { supervise: false, poolMax: 2 });
          try {
            await createQueues(boss, config);
          } finally {
            await stopBoss(boss);
          }
          result = await restoreBackup(db.url, file);
        } finally {
          await db.close();
        }
        const summary = {
          data_dir: dataDir,
          tables: result.tables,
          rows: result.rows,
          keys_restored: Boolean(header.keys),
          backup_created_at: header.created_at,
        };
        if (options.json) printJson(summary);
        else {
          print(
            `Restored ${result.rows} rows (${result.tables} tables) from the backup of ${header.created_at} into ${dataDir}.`,
          );
          if (!header.keys)
            print(
              `The backup holds no key file: copy the original keys.json to ${keyFilePath(dataDir)} (or set HERALD_ENCRYPTION_KEYS) before 'herald start'.`,
            );
          if (typeof chosen.smtpUrl === 'string' && URL.canParse(chosen.smtpUrl)) {
            const smtp = new URL(chosen.smtpUrl);
            if (smtp.username && !smtp.password)
              print(
                `The install SMTP (${smtp.host}) has its user but no password: backups leave it out. Set it again (HERALD_SMTP_URL, or smtpUrl in ${join(dataDir, 'herald.json')}).`,
              );
          }
          print(`Next: herald start --data-dir ${dataDir}`);
        }
      },
    );
}
