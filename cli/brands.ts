// herald brands: a tenant's brands (list, get: locally or remotely, the same request) and the plan's brand cap (default
// 10), shown, raised or lowered, or reset to the default. The cap only limits creating brands; sending
// never looks at it.
import { type Command } from 'commander';
import { BRAND_LIMIT, brandLimit, countBrands } from '../server/resources/brandings.ts';
import type { BrandingResponse } from '../server/schemas/brandings.ts';
import { PLAN_DEFAULTS, listTenantLimits, setTenantLimit } from '../server/resources/tenant-limits.ts';
import { configFrom, withDataDir, withLocalRuntime } from './support/context.ts';
import { print, printJson, printRecord, printTable, usageError } from './support/output.ts';
import { brandings } from './support/paths.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { resolveTenant } from './support/tenant-option.ts';
import { examples } from './support/examples.ts';

export function registerBrands(program: Command): void {
  const group = program
    .command('brands')
    .description("a tenant's brands (write them with the API or herald apply) and the plan's brand cap")
    .addHelpText(
      'after',
      examples(
        'herald brands list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'HERALD_URL=https://herald.acme.test HERALD_API_KEY=sk_... herald brands get default --json',
        'herald brands limit --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6          # show',
        'herald brands limit --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 25       # raise to 25',
        `herald brands limit --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --reset  # back to the default (${PLAN_DEFAULTS.brands})`,
      ),
    );

  withTarget(group.command('list'))
    .description('list the brands (the default brand first)')
    .addHelpText(
      'after',
      examples(
        'herald brands list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'HERALD_URL=https://herald.acme.test HERALD_API_KEY=sk_... herald brands list --json',
      ),
    )
    .action(async (options: TargetOptions) => {
      const brands = await onTarget(options, (client) => client.call<BrandingResponse[]>('GET', brandings.list()));
      if (options.json) return printJson(brands);
      printTable(
        brands.map((b) => ({
          ...b,
          name: b.values.name,
          from: b.sender.from_email ? `${b.sender.from_name ?? ''} <${b.sender.from_email}>`.trim() : null,
        })),
        ['key', 'name', 'from', 'is_default'],
      );
    });

  withTarget(group.command('get'))
    .description('show one brand: its values and sender')
    .argument('<key>', 'the brand key')
    .addHelpText(
      'after',
      examples(
        'herald brands get default --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald brands get shop --json | jq .values',
      ),
    )
    .action(async (key: string, options: TargetOptions) => {
      const brand = await onTarget(options, (client) => client.call<BrandingResponse>('GET', brandings.one(key)));
      if (options.json) return printJson(brand);
      printRecord(brand);
    });

  withDataDir(group.command('limit'))
    .description(
      `show or set how many brands a tenant may have (default ${PLAN_DEFAULTS.brands}, the default brand included)`,
    )
    .argument('[n]', 'the new cap (a whole number >= 0)')
    .option('--tenant <id>', "tenant id (default: the install's only tenant)")
    .option('--reset', `remove the override: back to the default of ${PLAN_DEFAULTS.brands}`)
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      examples(
        'herald brands limit                                                 # show (a single-tenant install)',
        'herald brands limit 25 --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6       # raise to 25',
        `herald brands limit --reset --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6  # back to the default (${PLAN_DEFAULTS.brands})`,
      ),
    )
    .action(
      async (
        n: string | undefined,
        options: { dataDir?: string; tenant?: string; reset?: boolean; json?: boolean },
      ) => {
        if (n !== undefined && options.reset) throw usageError('give a number or --reset, not both');
        if (n !== undefined && !/^\d{1,6}$/.test(n))
          throw usageError(`the cap must be a whole number >= 0, got "${n}"`);
        const result = await withLocalRuntime(configFrom(options), async (runtime) => {
          const em = runtime.orm.em.fork();
          const tenantId = (await resolveTenant(em, options.tenant)).id;
          if (options.reset) await setTenantLimit(em, tenantId, BRAND_LIMIT, null);
          else if (n !== undefined) await setTenantLimit(em, tenantId, BRAND_LIMIT, Number(n));
          const overridden = (await listTenantLimits(em, tenantId)).some((l) => l.name === BRAND_LIMIT);
          return {
            tenant_id: tenantId,
            limit: await brandLimit(em, tenantId),
            default: !overridden,
            brands: await countBrands(em, tenantId),
          };
        });
        if (options.json) return printJson(result);
        print(
          `Brand cap of tenant ${result.tenant_id}: ${result.limit}${result.default ? ' (default)' : ''}; ${result.brands} brand(s) in use.`,
        );
        if (result.brands > result.limit)
          print('The tenant has more brands than the cap: existing brands stay, new ones are refused (402).');
      },
    );
}
