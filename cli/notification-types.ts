// herald types list|get: a tenant's notification types, locally (--tenant, or the only tenant) or
// remotely (--url and a service key). Types are written with the API or with herald apply.
import type { Command } from 'commander';
import type { NotificationTypeResponse } from '../server/schemas/notification-types.ts';
import { getNotificationType, listNotificationTypes, toNotificationTypeResponse } from '../server/services/notification-types.ts';
import { print, printJson, printRecord, printTable } from './support/output.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';

export function registerNotificationTypes(program: Command): void {
  const group = program
    .command('types')
    .description("a tenant's notification types (write them with the API or herald apply)")
    .addHelpText(
      'after',
      `
Examples:
  $ herald types list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6
  $ HERALD_URL=https://herald.acme.test HERALD_API_KEY=sk_... herald types get order_shipped --json`,
    );

  withTarget(group.command('list'))
    .description('list the live notification types (with --include-deleted, the deleted ones too)')
    .option('--include-deleted', 'also list deleted (restorable) types')
    .action(async (options: TargetOptions & { includeDeleted?: boolean }) => {
      const types = await onTarget<NotificationTypeResponse[]>(options, {
        local: async (runtime, tenantId) =>
          (await listNotificationTypes(runtime.orm.em.fork(), tenantId, options.includeDeleted ?? false)).map(toNotificationTypeResponse),
        remote: (client) => client.call('GET', `/v1/notification-types${options.includeDeleted ? '?include_deleted=true' : ''}`),
      });
      if (options.json) return printJson(types);
      printTable(
        types.map((t) => ({
          ...t,
          channels: Object.entries(t.channel_defaults)
            .filter(([, on]) => on)
            .map(([channel]) => channel)
            .join(','),
          variables: t.variables.map((v) => (v.required ? `${v.name}*` : v.name)).join(','),
        })),
        ['key', 'name', 'channels', 'opt_out', 'variables', 'deleted'],
      );
      if (types.some((t) => t.variables.some((v) => v.required))) print('(* required variable)');
    });

  withTarget(group.command('get'))
    .description('show one notification type (the live one, else the most recently deleted)')
    .argument('<key>', 'the type key')
    .action(async (key: string, options: TargetOptions) => {
      const type = await onTarget<NotificationTypeResponse>(options, {
        local: async (runtime, tenantId) => toNotificationTypeResponse(await getNotificationType(runtime.orm.em.fork(), tenantId, key)),
        remote: (client) => client.call('GET', `/v1/notification-types/${encodeURIComponent(key)}`),
      });
      if (options.json) return printJson(type);
      printRecord(type);
    });
}
