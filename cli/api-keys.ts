// herald api-keys: issue, list and revoke a tenant's service keys from the host (local admin: the
// API's routes in this process, as the host operator), e.g. to bootstrap a tenant's backend.
import { type Command } from 'commander';
import { isUuid } from '../server/base/ids.ts';
import type { ApiKeyResponse, IssuedApiKeyResponse } from '../server/schemas/api-keys.ts';
import { configFrom, withDataDir, withLocalRuntime } from './support/context.ts';
import { CliError, print, printJson, printTable, usageError } from './support/output.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { checkTenantId, resolveTenant } from './support/tenant-option.ts';
import { apiKeys } from './support/paths.ts';
import { ApiError } from './support/remote.ts';
import { withInProcessClient } from './support/target.ts';
import { examples } from './support/examples.ts';

const TENANT_OPTION = 'tenant id (default: the only tenant of the install, as in single mode)';

interface Common {
  dataDir?: string;
  tenant?: string;
  json?: boolean;
}

export function registerApiKeys(program: Command): void {
  const group = program
    .command('api-keys')
    .description("manage a tenant's service keys (sk_...) on this host")
    .addHelpText(
      'after',
      examples(
        'herald api-keys issue --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --name "billing backend"',
        'herald api-keys list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --json',
        'herald api-keys revoke 0190f5e3-0000-7000-8000-000000000001 --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --yes',
      ),
    );

  withDataDir(group.command('issue'))
    .description('issue a service key; it is printed once and cannot be shown again')
    .option('--tenant <id>', TENANT_OPTION)
    .option('--name <name>', 'a label for the key (which backend or script holds it)', 'herald-cli')
    .option('--json', 'print the key and its details as JSON')
    .addHelpText('after', examples('herald api-keys issue --tenant <tenant-id> --name ci --json | jq -r .key'))
    .action(async (options: Common & { name: string }) => {
      if (options.tenant !== undefined) checkTenantId(options.tenant);
      const name = options.name.trim();
      if (name.length < 1 || name.length > 100) throw usageError('--name must be 1 to 100 characters');
      const issued = await withLocalRuntime(configFrom(options), async (runtime) => {
        const tenant = await resolveTenant(runtime.orm.em.fork(), options.tenant);
        return withInProcessClient(runtime, tenant.id, (client) =>
          client.call<IssuedApiKeyResponse>('POST', apiKeys.list(), { body: { name } }),
        );
      });
      if (options.json) return printJson(issued);
      print(issued.key);
      process.stderr.write(
        `Issued service key "${issued.name}" (id ${issued.id}). Store it now: it is not shown again.\n`,
      );
    });

  withDataDir(group.command('list'))
    .description("list a tenant's live service keys (never the keys themselves)")
    .option('--tenant <id>', TENANT_OPTION)
    .option('--json', 'print the keys as JSON')
    .addHelpText(
      'after',
      examples(
        'herald api-keys list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald api-keys list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --json | jq -r ".[].id"',
      ),
    )
    .action(async (options: Common) => {
      if (options.tenant !== undefined) checkTenantId(options.tenant);
      const keys = await withLocalRuntime(configFrom(options), async (runtime) => {
        const tenant = await resolveTenant(runtime.orm.em.fork(), options.tenant);
        return withInProcessClient(runtime, tenant.id, (client) =>
          client.call<ApiKeyResponse[]>('GET', apiKeys.list()),
        );
      });
      if (options.json) return printJson(keys);
      printTable(keys, ['id', 'name', 'prefix', 'created_at', 'last_used_at']);
    });

  withDataDir(group.command('revoke'))
    .description('revoke a service key: it stops working at once')
    .argument('<api_key_id>', 'the id of the key (see herald api-keys list)')
    .option('--tenant <id>', TENANT_OPTION)
    .option('-y, --yes', 'revoke without asking')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      examples(
        'herald api-keys revoke 0190f5e3-0000-7000-8000-000000000001 --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --yes',
      ),
    )
    .action(async (apiKeyId: string, options: Common & { yes?: boolean }) => {
      if (options.tenant !== undefined) checkTenantId(options.tenant);
      if (!isUuid(apiKeyId)) throw usageError(`<api_key_id> must be a key id (a UUID), got "${apiKeyId}"`);
      await confirmUnlessYes(options.yes, {
        question: `Revoke service key ${apiKeyId}? Callers using it start failing at once.`,
        withoutTerminal: 'revoking a key cannot be undone: pass --yes to confirm',
        declined: 'not revoked',
        initialValue: false,
      });
      await withLocalRuntime(configFrom(options), async (runtime) => {
        const tenant = await resolveTenant(runtime.orm.em.fork(), options.tenant);
        try {
          await withInProcessClient(runtime, tenant.id, (client) => client.call('DELETE', apiKeys.one(apiKeyId)));
        } catch (error) {
          if (error instanceof ApiError && error.status === 404)
            throw new CliError(`no live service key ${apiKeyId} in tenant ${tenant.id}`);
          throw error;
        }
      });
      if (options.json) return printJson({ id: apiKeyId, revoked: true });
      print(`Revoked service key ${apiKeyId}.`);
    });
}
