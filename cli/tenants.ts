// herald tenants: local admin commands over the install's tenants (they talk to the database through
// the services, never through HTTP): list, create, rename, archive, unarchive, and per-tenant limits.
import type { Command } from 'commander';
import { parseInput } from '../server/base/validation.ts';
import { tenantName } from '../server/schemas/auth.ts';
import { email as emailSchema } from '../server/schemas/common.ts';
import {
  adminRenameTenant,
  adminSetTenantArchived,
  createTenant,
  findTenant,
  hasDefaultTenant,
  installHasTenant,
  listAllTenants,
  type TenantRow,
} from '../server/resources/tenants.ts';
import { findUserByEmail } from '../server/resources/users.ts';
import { listTenantLimits, setTenantLimit } from '../server/resources/tenant-limits.ts';
import { CliError, print, printJson, printTable, usageError } from './support/output.ts';
import { configFrom, withDataDir, withLocalRuntime } from './support/context.ts';
import { toIsoTimestamp } from '../server/base/timestamps.ts';
import { auditedWrite } from './support/audit.ts';
import { examples } from './support/examples.ts';

interface CommonOptions {
  dataDir?: string;
  json?: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Limit names: plan caps ("brands") and raised rate limits ("rate:<policy>", "rate:<policy>:burst"). */
const LIMIT_NAME = /^(brands|rate:[a-z_]+(:burst)?)$/;

function tenantJson(t: TenantRow) {
  return { id: t.id, name: t.name, archived: t.archived_at !== null, created_at: toIsoTimestamp(t.created_at) };
}

function tenantIdArg(id: string): string {
  if (!UUID.test(id)) throw usageError(`not a tenant id: ${id}`);
  return id;
}

function nameArg(name: string): string {
  try {
    return parseInput('body', tenantName, name);
  } catch {
    throw usageError('the tenant name must be 1 to 100 characters (after trimming)');
  }
}

function printTenant(t: TenantRow, json: boolean | undefined, verb: string): void {
  if (json) printJson(tenantJson(t));
  else print(`${verb} tenant ${t.name} (${t.id})${t.archived_at ? ' [archived]' : ''}`);
}

export function registerTenants(program: Command): void {
  const tenants = program
    .command('tenants')
    .description('manage tenants (local admin: talks to the database directly)')
    .addHelpText(
      'after',
      examples(
        'herald tenants list --json',
        'herald tenants create "Acme" --owner ops@acme.test',
        'herald tenants rename 0190f5e2-... "Acme Ltd"',
        'herald tenants archive 0190f5e2-...',
        'herald tenants limits 0190f5e2-... --set brands=25 --set rate:trigger=600',
      ),
    );

  withDataDir(tenants.command('list').description('list every tenant of the install'))
    .option('--json', 'print JSON')
    .addHelpText('after', examples('herald tenants list', 'herald tenants list --json | jq ".[].id"'))
    .action(async (options: CommonOptions) => {
      const rows = await withLocalRuntime(configFrom(options), (runtime) => listAllTenants(runtime.orm.em.fork()));
      if (options.json) printJson(rows.map(tenantJson));
      else printTable(rows.map(tenantJson), ['id', 'name', 'archived', 'created_at']);
    });

  withDataDir(
    tenants.command('create <name>').description('create a tenant (with its default brand) owned by an existing user'),
  )
    .requiredOption('--owner <email>', "the owner's email (create the user first with herald users create)")
    .option('--json', 'print JSON')
    .addHelpText('after', examples('herald tenants create "Acme" --owner ops@acme.test --json'))
    .action(async (name: string, options: CommonOptions & { owner: string }) => {
      const cleanName = nameArg(name);
      const config = configFrom(options);
      const tenant = await withLocalRuntime(config, async (runtime) => {
        const em = runtime.orm.em.fork();
        if (config.mode === 'single' && (await installHasTenant(em))) {
          throw new CliError(
            'this is a single-tenant install and it already has its tenant (set mode "multi" to host more)',
          );
        }
        const user = await findUserByEmail(em, options.owner);
        if (!user) throw new CliError(`no user with email ${options.owner}: create it with herald users create`);
        const hasDefault = await hasDefaultTenant(em, user.id);
        return auditedWrite(
          runtime,
          {
            tenantId: null,
            action: 'tenant.create',
            target: { kind: 'tenant' },
            changes: { name: cleanName, owner: user.email },
          },
          (tx) => createTenant(tx, { name: cleanName, ownerUserId: user.id, makeDefault: !hasDefault }),
          (tenant) => tenant.id,
        );
      });
      printTenant(tenant, options.json, 'Created');
    });

  withDataDir(tenants.command('rename <tenant-id> <name>').description("change a tenant's name"))
    .option('--json', 'print JSON')
    .addHelpText('after', examples('herald tenants rename 0190f5e2-... "Acme Ltd"'))
    .action(async (id: string, name: string, options: CommonOptions) => {
      const tenantId = tenantIdArg(id);
      const cleanName = nameArg(name);
      const tenant = await withLocalRuntime(configFrom(options), (runtime) =>
        auditedWrite(
          runtime,
          { tenantId, action: 'tenant.update', target: { kind: 'tenant', id: tenantId }, changes: { name: cleanName } },
          (tx) => adminRenameTenant(tx, tenantId, cleanName),
        ),
      );
      printTenant(tenant, options.json, 'Renamed');
    });

  for (const [verb, archived] of [
    ['archive', true],
    ['unarchive', false],
  ] as const) {
    withDataDir(
      tenants
        .command(`${verb} <tenant-id>`)
        .description(
          archived
            ? 'archive a tenant: it cannot send and is hidden from the switcher; its data is kept'
            : 'reactivate an archived tenant',
        ),
    )
      .option('--json', 'print JSON')
      .addHelpText('after', examples(`herald tenants ${verb} 0190f5e2-...`))
      .action(async (id: string, options: CommonOptions) => {
        const tenantId = tenantIdArg(id);
        const tenant = await withLocalRuntime(configFrom(options), (runtime) =>
          auditedWrite(
            runtime,
            { tenantId, action: `tenant.${verb}`, target: { kind: 'tenant', id: tenantId } },
            (tx) => adminSetTenantArchived(tx, tenantId, archived),
          ),
        );
        printTenant(tenant, options.json, archived ? 'Archived' : 'Unarchived');
      });
  }

  withDataDir(
    tenants
      .command('limits <tenant-id>')
      .description("show or change a tenant's limits (plan caps and raised rate limits)"),
  )
    .option(
      '--set <name=value>',
      'set a limit (repeatable): brands, rate:<policy> (per minute), rate:<policy>:burst',
      collect,
      [],
    )
    .option('--unset <name>', 'remove an override, back to the default (repeatable)', collect, [])
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      examples(
        'herald tenants limits 0190f5e2-...',
        'herald tenants limits 0190f5e2-... --set brands=25',
        'herald tenants limits 0190f5e2-... --set rate:trigger=600 --set rate:trigger:burst=1200',
        'herald tenants limits 0190f5e2-... --unset rate:trigger',
      ),
    )
    .action(async (id: string, options: CommonOptions & { set: string[]; unset: string[] }) => {
      const tenantId = tenantIdArg(id);
      const changes: Array<[string, number | null]> = [];
      for (const pair of options.set) {
        const match = /^([^=]+)=(\d+(?:\.\d+)?)$/.exec(pair);
        if (!match || !LIMIT_NAME.test(match[1]!))
          throw usageError(`--set expects name=value with a known name (brands, rate:<policy>[:burst]), got ${pair}`);
        changes.push([match[1]!, Number(match[2])]);
      }
      for (const name of options.unset) {
        if (!LIMIT_NAME.test(name)) throw usageError(`unknown limit name: ${name}`);
        changes.push([name, null]);
      }
      const limits = await withLocalRuntime(configFrom(options), async (runtime) => {
        const em = runtime.orm.em.fork();
        if (!(await findTenant(em, tenantId))) throw new CliError(`no tenant ${tenantId}`);
        if (changes.length > 0) {
          await auditedWrite(
            runtime,
            {
              tenantId,
              action: 'tenant.limits.update',
              target: { kind: 'tenant', id: tenantId },
              changes: Object.fromEntries(changes),
            },
            async (tx) => {
              for (const [name, value] of changes) await setTenantLimit(tx, tenantId, name, value);
            },
          );
        }
        return listTenantLimits(em, tenantId);
      });
      if (options.json)
        printJson({ tenant_id: tenantId, limits: Object.fromEntries(limits.map((l) => [l.name, l.value])) });
      else printTable(limits, ['name', 'value']);
    });
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Validates an email argument the same way the API does. */
export function emailArg(value: string): string {
  try {
    return parseInput('body', emailSchema, value);
  } catch {
    throw usageError(`not a valid email address: ${value}`);
  }
}
