// herald migrate: applies pending database migrations (under an advisory lock), or prints their SQL.
import { type Command } from 'commander';
import { loadConfig } from '../server/base/config.ts';
import { openDatabase, applyMigrations, pendingMigrationSql } from '../server/base/db/orm.ts';
import { print, printJson } from './support/output.ts';
import { examples } from './support/examples.ts';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('apply pending database migrations')
    .option('--data-dir <dir>', 'data directory')
    .option('--dry-run', 'print the SQL of pending migrations without running it')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      examples('herald migrate --data-dir /var/lib/herald', 'herald migrate --dry-run > pending.sql'),
    )
    .action(async (options: { dataDir?: string; dryRun?: boolean; json?: boolean }) => {
      const config = loadConfig({ dataDir: options.dataDir });
      const db = await openDatabase(config, { poolMax: 2 });
      try {
        if (options.dryRun) {
          const pending = await pendingMigrationSql(db.orm);
          if (options.json) return printJson({ pending });
          if (pending.length === 0) return print('-- no pending migrations');
          for (const m of pending) {
            print(`-- migration ${m.name}`);
            for (const statement of m.sql) print(statement.endsWith(';') ? statement : `${statement};`);
          }
          return;
        }
        const applied = await applyMigrations(db.orm);
        if (options.json) return printJson({ applied });
        print(
          applied.length === 0
            ? 'Database is up to date.'
            : `Applied ${applied.length} migration(s): ${applied.join(', ')}`,
        );
      } finally {
        await db.close();
      }
    });
}
