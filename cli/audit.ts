// herald audit: the audit log on the host (every tenant's management writes, and the install's own),
// newest first, with the API's filters.
import type { Command } from 'commander';
import { listAudit } from '../server/resources/audit-log.ts';
import { AuditListQuery, type AuditEntryResponse } from '../server/schemas/audit.ts';
import { configFrom, withDataDir, withLocalRuntime } from './support/context.ts';
import { printJson, printTable, usageError } from './support/output.ts';
import { checkTenantId } from './support/tenant-option.ts';
import { examples } from './support/examples.ts';

interface AuditOptions {
  dataDir?: string;
  tenant?: string;
  actor?: string;
  action?: string;
  since?: string;
  limit?: string;
  cursor?: string;
  json?: boolean;
}

export function registerAudit(program: Command): void {
  withDataDir(program.command('audit'))
    .description('show the audit log of management writes (API, console and CLI), newest first')
    .option('--tenant <id>', "only this tenant's entries")
    .option('--actor <id-or-email>', "only this actor's entries (a user's email or id, a service key's id)")
    .option('--action <action>', 'only this action (brand.create), or a prefix ending in * (brand.*)')
    .option('--since <time>', 'only entries at or after this RFC 3339 time')
    .option('--limit <n>', 'entries per page (1-200)', '50')
    .option('--cursor <cursor>', 'the next_cursor of a previous page')
    .option('--json', 'print the page as JSON ({items, next_cursor})')
    .addHelpText(
      'after',
      examples(
        "herald audit --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --action 'api_key.*'",
        'herald audit --actor ops@acme.example --since 2026-01-01T00:00:00Z --json',
      ),
    )
    .action(async (options: AuditOptions) => {
      const tenantId = options.tenant === undefined ? null : checkTenantId(options.tenant);
      const parsed = AuditListQuery.safeParse({
        actor: options.actor,
        action: options.action,
        since: options.since,
        limit: options.limit,
        cursor: options.cursor,
      });
      if (!parsed.success)
        throw usageError(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; '));
      const page = await withLocalRuntime(configFrom(options), (runtime) =>
        listAudit(runtime.orm.em.fork(), tenantId, parsed.data, tenantId === null),
      );
      if (options.json) return printJson(page);
      printTable(
        page.items.map((e) => ({
          at: e.at,
          tenant: e.tenant_id ?? '-',
          actor: `${e.actor.kind}:${actorLabel(e.actor)}`,
          action: e.action,
          target: `${e.target.kind}:${e.target.id ?? '-'}`,
          ip: e.ip ?? '-',
        })),
        ['at', 'tenant', 'actor', 'action', 'target', 'ip'],
      );
      if (page.next_cursor) process.stderr.write(`more: --cursor ${page.next_cursor}\n`);
    });
}

/** A user by email, a service key by name and id (the id is what --actor takes), the CLI by its account. */
function actorLabel(actor: AuditEntryResponse['actor']): string {
  if (actor.email) return actor.email;
  if (actor.name) return `${actor.name} (${actor.id})`;
  return actor.id ?? '-';
}
