// herald types list|get (locally with --tenant, or remotely) and herald types workflow get|set|remove
// (a type's workflow, remote mode), kept in a JSON file beside the code that triggers it and set from CI.
import type { Command } from 'commander';
import { readJsonObject } from './support/file-input.ts';
import { print, printJson, printRecord, printTable, usageError } from './support/output.ts';
import { remoteClient, withRemote, type RemoteOptions } from './support/remote.ts';
import type { NotificationTypeResponse } from '../server/schemas/notification-types.ts';
import { notificationTypes } from './support/paths.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { examples } from './support/examples.ts';

/** What `herald types workflow set -f` reads: the body of PUT /v1/notification-types/{key}/workflow. */
const WORKFLOW_FILE = `
A workflow file is {"steps": [...]} (every kind of step is in docs/workflows.md), for example:
  {"steps": [{"kind": "channel", "channel": "inbox"},
             {"kind": "delay", "seconds": 3600},
             {"kind": "channel", "channel": "email", "if": "inbox.read == false"}]}
`;

export function registerNotificationTypes(program: Command): void {
  const types = program
    .command('types')
    .description(
      "a tenant's notification types: list and get (local or remote), workflows (remote: --url/--api-key or HERALD_URL/HERALD_API_KEY)",
    )
    .addHelpText(
      'after',
      examples(
        'herald types list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'HERALD_URL=https://herald.acme.test HERALD_API_KEY=sk_... herald types get order_shipped --json',
      ),
    );
  addReadCommands(types);
  const workflow = types
    .command('workflow')
    .description("a type's workflow: channel steps with conditions, delays, digests, throttles")
    .addHelpText(
      'after',
      WORKFLOW_FILE +
        examples(
          'herald types workflow get comment_added --json',
          'herald types workflow set comment_added -f workflow.json',
          'herald types workflow remove comment_added',
        ),
    );
  withRemote(
    workflow
      .command('get')
      .description("show a type's workflow")
      .argument('<key>')
      .option('--json', 'print JSON')
      .addHelpText(
        'after',
        examples(
          'herald types workflow get comment_added',
          'herald types workflow get comment_added --json > workflow.json',
        ),
      ),
  ).action(async (key: string, options: RemoteOptions & { json?: boolean }) => {
    const type = await remoteClient(options).call<NotificationTypeResponse>('GET', notificationTypes.one(key));
    if (options.json) return printJson(type.workflow);
    if (!type.workflow) return print(`${key} has no workflow: every enabled channel at once`);
    printTable(
      type.workflow.steps.map((step, index) => ({ index, ...step })),
      ['index', 'kind', 'channel', 'if', 'seconds', 'until', 'window_seconds', 'key', 'max_events', 'limit'],
    );
  });
  withRemote(
    workflow
      .command('set')
      .description("set a type's workflow from a JSON file")
      .argument('<key>')
      .requiredOption('-f, --file <file>', 'the workflow as JSON ({"steps": [...]}), or \'-\' for stdin')
      .option('--json', 'print the type as JSON')
      .addHelpText(
        'after',
        WORKFLOW_FILE +
          examples(
            'herald types workflow set comment_added -f workflow.json',
            `echo '{"steps": [{"kind": "channel", "channel": "inbox"}]}' | herald types workflow set comment_added -f -`,
          ),
      ),
  ).action(async (key: string, options: RemoteOptions & { file: string; json?: boolean }) => {
    const body = readJsonObject(options.file, '--file');
    if (!Array.isArray(body.steps)) throw usageError('the workflow file must be a JSON object with a "steps" list');
    const type = await remoteClient(options).call<NotificationTypeResponse>('PUT', notificationTypes.workflow(key), {
      body,
    });
    if (options.json) return printJson(type);
    print(`workflow of ${key} set: ${type.workflow!.steps.length} step(s)`);
  });
  withRemote(
    workflow
      .command('remove')
      .description('back to the default: every enabled channel at once')
      .argument('<key>')
      .addHelpText('after', examples('herald types workflow remove comment_added')),
  ).action(async (key: string, options: RemoteOptions) => {
    await remoteClient(options).call('DELETE', notificationTypes.workflow(key));
    print(`workflow of ${key} removed`);
  });
}

/** herald types list|get: as the API answers them; write types with the API or herald apply. */
function addReadCommands(types: Command): void {
  withTarget(types.command('list'))
    .description('list the live notification types (with --include-deleted, the deleted ones too)')
    .option('--include-deleted', 'also list deleted (restorable) types')
    .addHelpText(
      'after',
      examples(
        'herald types list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald types list --include-deleted --json',
      ),
    )
    .action(async (options: TargetOptions & { includeDeleted?: boolean }) => {
      const list = await onTarget(options, (client) =>
        client.call<NotificationTypeResponse[]>('GET', notificationTypes.list(options.includeDeleted)),
      );
      if (options.json) return printJson(list);
      printTable(
        list.map((t) => ({
          ...t,
          channels: Object.entries(t.channel_defaults)
            .filter(([, on]) => on)
            .map(([channel]) => channel)
            .join(','),
          variables: t.variables.map((v) => (v.required ? `${v.name}*` : v.name)).join(','),
          workflow: t.workflow ? `${t.workflow.steps.length} step(s)` : null,
        })),
        ['key', 'name', 'channels', 'opt_out', 'variables', 'workflow', 'deleted'],
      );
      if (list.some((t) => t.variables.some((v) => v.required))) print('(* required variable)');
    });

  withTarget(types.command('get'))
    .description('show one notification type (the live one, else the most recently deleted)')
    .argument('<key>', 'the type key')
    .addHelpText(
      'after',
      examples('herald types get order_shipped', 'herald types get order_shipped --json | jq .variables'),
    )
    .action(async (key: string, options: TargetOptions) => {
      const type = await onTarget(options, (client) =>
        client.call<NotificationTypeResponse>('GET', notificationTypes.one(key)),
      );
      if (options.json) return printJson(type);
      printRecord(type);
    });
}
