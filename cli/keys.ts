// herald keys list|rotate|retire: the encryption key ring that protects every stored secret.
import type { Command } from 'commander';
import type { Config } from '../server/base/config.ts';
import { listKeys, retireKey, rotateKeys } from '../server/app/keys.ts';
import { configFrom, withDataDir, withLocalRuntime } from './support/context.ts';
import { CliError, print, printJson, printTable, usageError } from './support/output.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { examples } from './support/examples.ts';

function refuseEnvironmentSource(config: Config, action: string): void {
  if (config.encryptionKeys) {
    throw new CliError(
      `cannot ${action} keys: HERALD_ENCRYPTION_KEYS is set, so the environment (not ${config.dataDir}/keys.json) is the key ring's source. ` +
        `To rotate, put a new key first in HERALD_ENCRYPTION_KEYS (keep the old ones after it), restart Herald, then run 'herald keys rotate --resume'; ` +
        `remove an old key from the variable only once 'herald keys list' shows it protects 0 secrets.`,
    );
  }
}

export function registerKeys(program: Command): void {
  const keys = program
    .command('keys')
    .description('manage the encryption key ring (keys.json in the data directory, or HERALD_ENCRYPTION_KEYS)')
    .addHelpText(
      'after',
      examples(
        'herald keys list',
        'herald keys rotate                 # add a key, make it active, re-wrap every secret',
        'herald keys retire k1a2b3c         # remove an old key nothing uses any more',
      ),
    );

  withDataDir(keys.command('list'))
    .description('list keys, the active one, and how many secrets each protects')
    .option('--json', 'print as JSON')
    .addHelpText('after', examples('herald keys list', 'herald keys list --json | jq .keys'))
    .action(async (options: { dataDir?: string; json?: boolean }) => {
      const config = configFrom({ dataDir: options.dataDir });
      const listing = await withLocalRuntime(config, (runtime) => listKeys(runtime.orm.em.fork(), runtime.keyRing));
      if (options.json) return printJson(listing);
      print(`source: ${listing.source === 'environment' ? 'HERALD_ENCRYPTION_KEYS' : `${config.dataDir}/keys.json`}`);
      printTable(
        listing.keys.map((k) => ({ id: k.id, active: k.active ? 'yes' : '', secrets: k.ciphertexts })),
        ['id', 'active', 'secrets'],
      );
      for (const m of listing.missing)
        print(`warning: ${m.ciphertexts} secret(s) use key ${m.id}, which is not in the key ring (unreadable)`);
    });

  withDataDir(keys.command('rotate'))
    .description('add a new key, make it active and re-wrap every stored secret under it (safe while Herald runs)')
    .option('--resume', 'do not add a key: finish re-wrapping secrets still under older keys')
    .option('--batch-size <n>', 'secrets re-wrapped per transaction', '200')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Running servers pick the new key up by themselves (they re-read keys.json). Back up keys.json after rotating.
` + examples('herald keys rotate', 'herald keys rotate --resume        # after an interrupted rotation'),
    )
    .action(async (options: { dataDir?: string; resume?: boolean; batchSize: string; json?: boolean }) => {
      const config = configFrom({ dataDir: options.dataDir });
      const batchSize = Number(options.batchSize);
      if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000)
        throw usageError('--batch-size must be an integer from 1 to 10000');
      if (!options.resume) refuseEnvironmentSource(config, 'rotate');
      const result = await withLocalRuntime(config, (runtime) =>
        rotateKeys(runtime.orm.em.fork(), runtime.keyRing, config.dataDir, { resume: options.resume, batchSize }),
      );
      if (options.json)
        return printJson({
          active: result.activeKeyId,
          added: result.added,
          rewrapped: result.rewrapped,
          unreadable: result.unreadable,
        });
      print(
        `${result.added ? 'added and activated' : 'active key'} ${result.activeKeyId}; re-wrapped ${result.rewrapped} secret(s)`,
      );
      if (result.unreadable > 0)
        print(
          `warning: ${result.unreadable} secret(s) could not be re-wrapped: their key is gone (credentials_unreadable)`,
        );
      if (result.added) print(`back up ${config.dataDir}/keys.json now: without it the secrets cannot be read`);
    });

  withDataDir(keys.command('retire <keyId>'))
    .description('remove an old key once no secret uses it')
    .option('--force', 'remove it even though secrets still use it (they become unreadable)')
    .option('-y, --yes', 'confirm --force without a prompt')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      examples(
        'herald keys retire k1a2b3c',
        'herald keys retire k1a2b3c --force --yes   # secrets under it become unreadable',
      ),
    )
    .action(async (keyId: string, options: { dataDir?: string; force?: boolean; yes?: boolean; json?: boolean }) => {
      const config = configFrom({ dataDir: options.dataDir });
      refuseEnvironmentSource(config, 'retire');
      if (options.force) {
        await confirmUnlessYes(options.yes, {
          question: `Remove key ${keyId} even if secrets still use it? They become unreadable.`,
          withoutTerminal: '--force makes secrets under the key unreadable: confirm with --yes',
        });
      }
      const result = await withLocalRuntime(config, (runtime) =>
        retireKey(runtime.orm.em.fork(), runtime.keyRing, config.dataDir, keyId, { force: options.force }),
      );
      if (options.json) return printJson(result);
      print(`retired key ${result.id}`);
      if (result.orphaned > 0)
        print(`warning: ${result.orphaned} secret(s) used it and are now unreadable: set those transports again`);
    });
}
